"""The recipe as the tests drive it: recipes/seal.py loaded as a module, and its parser run on a config."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from helpers.paths import ROOT


def recipe_module():
    if "seal_recipe" not in sys.modules:  # recipes/ is not a package: load the script as a module, once
        spec = importlib.util.spec_from_file_location("seal_recipe", ROOT / "recipes" / "seal.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["seal_recipe"] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules["seal_recipe"]


def parse(config: Path, *flags: str, gpu: bool = False, monkeypatch=None):
    """The recipe's (script, training, model, task, warm-up) arguments for `config` and `flags`, as its parser
    (TrlParser) reads them."""
    recipe = recipe_module()
    if gpu:  # everything the YAML says, but bf16 (which needs the GPU this machine lacks)
        flags = (*flags, "--bf16", "false", "--use_cpu", "true")
    parser = recipe.make_parser()
    monkeypatch.setattr(sys, "argv", ["seal.py", "--config", str(config), *flags])
    return parser.parse_args_and_config()
