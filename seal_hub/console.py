"""What a person sees on the console of a run: seal_hub's own one-line notices, without library noise.

What entry points (the recipe, the CLI) apply, and the one thing importing seal_hub applies itself:

- `notice(text)` writes one line ``seal_hub: <text>`` to stderr from the main process only (``RANK`` unset or 0),
  so an 8-GPU run says it once; `notice_once(key, text)` says it at most once per process. seal_hub's own
  warnings (`warnings.warn`, ``logging``) are untouched: they stay visible.
- `quiet_library_notices()` drops a fixed list of notices that come from inside the pinned libraries and that a
  user of the recipe cannot act on: each is matched by its origin (the logger, or the module a warning is
  attributed to), its category and the start of its message (`LIBRARY_NOTICES`), so a new or different
  message from the same place still shows. Call it before ``peft`` is imported: bitsandbytes logs one of
  them while ``import peft`` imports it. It also turns off the progress bars of `datasets` (a bar per one-row
  parquet file each iteration writes, and per warm-up preprocessing pass), unless
  ``HF_DATASETS_DISABLE_PROGRESS_BARS`` is set already; the trainer's own progress bar stays.
- `quiet_import_notices()`: only the notices a dependency prints while it is being imported (``at_import``), so
  that ``import seal_hub`` and ``from seal_hub import SealTrainer`` print nothing; `seal_hub/__init__.py` calls
  it. It filters those notices (today one, bitsandbytes') and changes nothing else (no other filter, no
  environment variable, no progress bar).
- `acknowledge_rollout_func()`: TRL warns, every time a trainer is built, that ``rollout_func`` is experimental.
  SEAL depends on that API on purpose (pinned TRL version, tests over it); this replaces TRL's notice with one
  line in our words, once per process.

Not covered: other progress bars (they show work a person waits for), the ``accelerate launch`` launcher's own notice
about missing launch settings (printed by another process before any seal_hub code runs; pass
``--config_file recipes/accelerate/cpu.yaml`` or run ``accelerate config`` to set them), and errors.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import warnings
from dataclasses import dataclass

PREFIX = "seal_hub: "

ROLLOUT_FUNC_MESSAGE = r"You are using 'rollout_func', which is an experimental feature"
ROLLOUT_FUNC_NOTE = (
    "SEAL runs whole multi-turn episodes through TRL's rollout_func, an API TRL marks experimental; seal_hub pins "
    "the TRL version it is tested with"
)

_said: set[str] = set()  # keys already said by notice_once in this process


@dataclass(frozen=True)
class LibraryNotice:
    """A notice from inside a library that a recipe user cannot act on, matched by origin, category and text."""

    origin: str  # the logger name (logging) or the module the warning is attributed to (warnings), exactly
    message: str  # a regular expression matched at the start of the message
    category: type[Warning] | None = None  # None: a logging record (any level)
    why: str = ""
    at_import: bool = False  # printed while the library is imported: `import seal_hub` filters it too


LIBRARY_NOTICES: tuple[LibraryNotice, ...] = (
    LibraryNotice(
        "bitsandbytes.backends.cpu.ops",
        r"Failed to load CPU gemm_4bit_forward from kernels-community",
        why="logged on `import peft` on CPUs with AVX512-BF16 when the optional `kernels` package is missing; "
        "4-bit layers only run on CUDA in seal_hub, so the CPU kernel is never used",
        at_import=True,
    ),
    LibraryNotice(
        "transformers.training_args",
        r"`gradient_checkpointing` is deprecated",
        FutureWarning,
        why="TrainingArguments warns about its own field while TRL's config is built, whatever the user sets",
    ),
    LibraryNotice(
        "transformers.modeling_utils",
        r"`(?:is_gradient_checkpointing|gradient_checkpointing_enable|gradient_checkpointing_disable)` is deprecated",
        FutureWarning,
        why="TRL and PEFT call the deprecated aliases while wrapping the model and around each generation",
    ),
)


def is_main_process() -> bool:
    """Whether this process speaks for the run (``RANK`` as set by accelerate/torchrun; unset: a single process)."""
    return os.environ.get("RANK", "0") == "0"


def notice(text: str) -> None:
    """One line ``seal_hub: text`` on stderr, from the main process only."""
    if is_main_process():
        print(PREFIX + " ".join(text.split()), file=sys.stderr, flush=True)


def notice_once(key: str, text: str) -> None:
    """`notice(text)` the first time `key` is given in this process; later calls say nothing."""
    if key in _said:
        return
    _said.add(key)
    notice(text)


class _DropMessages(logging.Filter):
    """Drops the records of one logger whose message starts with one of `patterns`."""

    def __init__(self, patterns: list[str]) -> None:
        super().__init__()
        self.patterns = patterns
        self.pattern = re.compile("|".join(f"(?:{p})" for p in patterns))

    def filter(self, record: logging.LogRecord) -> bool:
        return self.pattern.match(record.getMessage()) is None


def quiet_library_notices(notices: tuple[LibraryNotice, ...] = LIBRARY_NOTICES) -> None:
    """Install precise filters for `notices` (idempotent); call it before peft, TRL and transformers are imported."""
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")  # read when `datasets` is imported
    _filter(notices)


def quiet_import_notices() -> None:
    """Filter the notices a dependency prints while it is imported (`LibraryNotice.at_import`), nothing else."""
    _filter(tuple(item for item in LIBRARY_NOTICES if item.at_import))


def _filter(notices: tuple[LibraryNotice, ...]) -> None:
    """A warnings filter per warning notice; per logger, one filter for its notices and those it dropped already."""
    by_logger: dict[str, list[str]] = {}
    for item in notices:
        if item.category is None:
            by_logger.setdefault(item.origin, []).append(item.message)
        else:
            warnings.filterwarnings(
                "ignore", message=item.message, category=item.category, module=re.escape(item.origin)
            )
    for name, patterns in by_logger.items():
        logger = logging.getLogger(name)
        for old in [f for f in logger.filters if isinstance(f, _DropMessages)]:
            logger.removeFilter(old)
            patterns = [*old.patterns, *patterns]
        logger.addFilter(_DropMessages(list(dict.fromkeys(patterns))))


def acknowledge_rollout_func() -> None:
    """Replace TRL's per-trainer "rollout_func is experimental" warning with one line of ours, once per process."""
    warnings.filterwarnings("ignore", message=ROLLOUT_FUNC_MESSAGE, category=UserWarning)
    if os.environ.get("TRL_EXPERIMENTAL_SILENCE", "0") != "1":  # the user asked TRL for silence: ours too
        notice_once("rollout_func", ROLLOUT_FUNC_NOTE)
