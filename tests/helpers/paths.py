"""Where the tests find the checkout's files: tests never read files outside the repository."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the SEAL paper's split file, as the package ships it
PAPER_SPLIT = ROOT / "seal_hub" / "envs" / "bfcl" / "data" / "paper_split.json"
RECIPE_CONFIGS = ROOT / "recipes" / "configs"
# the CPU demo's config: package data, its one copy (the default of `seal-hub train` and recipes/seal.py)
DEMO_CONFIG = ROOT / "seal_hub" / "scripts" / "configs" / "demo_cpu.yaml"
# the multi-turn loop at a plumbing test's size (the demo trains bfcl-single and evaluates 300 episodes)
LOOP = ROOT / "tests" / "configs" / "loop_cpu.yaml"
# the smart home example (examples/smart_home): a TRL-form environment of our own, its tasks and config
SMART_HOME = ROOT / "examples" / "smart_home"
