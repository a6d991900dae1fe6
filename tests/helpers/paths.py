"""Where the tests find the checkout's files: tests never read files outside the repository."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the SEAL paper's split file, as the package ships it
PAPER_SPLIT = ROOT / "seal_hub" / "envs" / "bfcl" / "data" / "paper_split.json"
RECIPE_CONFIGS = ROOT / "recipes" / "configs"
# the multi-turn loop at a plumbing test's size (the demo trains bfcl-single and evaluates 300 episodes)
LOOP = ROOT / "tests" / "configs" / "loop_cpu.yaml"
