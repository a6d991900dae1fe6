"""SEAL training on TRL: `SealConfig` (config.py) and `SealTrainer` (trainer.py), as TRL pairs them, with what
only training uses beside them: the loop state a checkpoint carries (loop_state.py), the training sampler whose
epochs a resume repeats (sampler.py), the held-out evaluation during training (held_out.py), the SFT warm-up
(warmup.py), and the training script's steps: the tasks chosen once (selection.py), the held-out comparison
(comparison.py) and the printed summary (summary.py).

Imported lazily: `import seal_hub.training` loads neither torch nor TRL until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seal_hub._lazy import lazy_exports

if TYPE_CHECKING:
    from seal_hub.training.config import SealConfig
    from seal_hub.training.trainer import SealTrainer

_LAZY = {"SealConfig": "seal_hub.training.config", "SealTrainer": "seal_hub.training.trainer"}
__all__ = ["SealConfig", "SealTrainer"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
