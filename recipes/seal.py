"""SEAL: train a tool-use policy and its learning environment together, on BFCL v3 multi-turn.

The `accelerate launch` entry of a checkout; the script itself is `seal_hub.scripts.seal` (also `seal-hub train`),
whose docstring lists every option. Launch (the CPU demo is the default when no --config is given; its config is
package data, seal_hub/scripts/configs/demo_cpu.yaml):

    accelerate launch recipes/seal.py
    accelerate launch recipes/seal.py --max_steps 4             # the demo's config, one flag overridden
    accelerate launch --config_file recipes/accelerate/single_gpu.yaml recipes/seal.py \
        --config recipes/configs/qwen2.5-7b-qlora.yaml
    accelerate launch --config_file recipes/accelerate/zero3.yaml recipes/seal.py \
        --config recipes/configs/paper_full_ft.yaml

Arguments: `SealScriptArguments`, `seal_hub.training.trainer.SealConfig` (TRL's GRPOConfig plus SEAL's fields),
`seal_hub.models.PolicyConfig` (TRL's ModelConfig), `TaskArguments` and `WarmupArguments`, parsed together by
`make_parser()`; YAML keys and flags are the field names.
"""

# ruff: noqa: E402 -- the two lines below run before the imports: peft logs a notice while it is imported
from __future__ import annotations

from seal_hub.console import quiet_library_notices  # isort: split

quiet_library_notices()  # library notices a user cannot act on stay out of the run's output (seal_hub.console)

import sys

from seal_hub.scripts.seal import (  # noqa: F401  (the recipe's names, for callers that load this file)
    DEFAULT_CONFIG,
    SealScriptArguments,
    main,
    make_parser,
    run,
)
from seal_hub.training.selection import TaskArguments, prompt_size, training_tasks  # noqa: F401
from seal_hub.training.warmup import WarmupArguments  # noqa: F401

if __name__ == "__main__":
    sys.exit(run(prog="seal.py"))
