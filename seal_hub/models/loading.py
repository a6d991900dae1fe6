"""Load a policy and its tokenizer from a Hub id, a local directory, or the offline demo model.

`resolve_model(config)` decides where the weights come from, as a `ResolvedModel` record, without loading
anything: the short name `tiny` (a random model built once in the cache, `seal_hub.models.tiny`); an existing
local directory; the demo model's converted GGUF (`seal_hub.models.demo`) when
`config.demo_source` says so or when the Hub cannot serve the demo model; otherwise a Hub id at
`config.model_revision`. Whether the Hub can be reached is decided once per process (`seal_hub.hub_reach`: one
short probe, no retries); unreachable, the process reads only the Hub cache from then on, the demo model comes
from the cache or else the GGUF, and the fallback is said in one line. `resolve_model_name(name)` does the same
for a model named by one string (a trainer's `model`), and fails in one line for a Hub id neither the Hub nor its
cache can serve. `load_policy(config)` loads from there and returns ``(model, tokenizer)``:

- the base model, in `config.dtype`, 4-bit NF4 (QLoRA) or 8-bit when asked; it is *not* wrapped with LoRA:
  pass `lora_config(config)` to the TRL trainer as `peft_config` and TRL wraps it (the TRL convention);
- the tokenizer, padding on the left (batched generation), with a pad token, and a chat template TRL can
  parse tool calls with (`seal_hub.models.chat_templates`; `config.chat_template` decides).

User mistakes fail fast, before anything large is read, with a message that says what to do: a path that does
not exist or is not a model directory, a Hub id the Hub cannot serve (offline, unknown, gated), and
quantisation without a CUDA GPU (bitsandbytes' 4-bit and 8-bit layers only run on CUDA here).

Not covered: reference models, merging adapters, device placement beyond the one-GPU-per-process map that
quantised loading needs (accelerate places unquantised models), and publishing (`seal_hub.hub`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
from huggingface_hub import hf_hub_download, try_to_load_from_cache
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from seal_hub.console import notice_once
from seal_hub.hub_reach import hub_reach
from seal_hub.models.chat_templates import ensure_tool_template
from seal_hub.models.config import DEMO_MODEL_ID, PolicyConfig, quantization_config
from seal_hub.models.demo import DEMO_PACKAGE, demo_model_dir, is_converted, materialize_demo_model

logger = logging.getLogger(__name__)

Source = Literal["local", "hub", "demo_gguf"]
TINY_NAME = "tiny"  # seal_hub.models.tiny's random policy, built once in the cache


@dataclass(frozen=True)
class ResolvedModel:
    """Where a policy is read from: `path` is a local directory, or a Hub id read at `revision`."""

    source: Source
    path: str
    revision: str | None = None


def resolve_model(config: PolicyConfig) -> ResolvedModel:
    """Decide where `config`'s policy comes from (converting the demo GGUF if that is the answer)."""
    name = config.model_name_or_path
    if name == TINY_NAME:  # the short name every seal-hub command takes, like 'demo' (PolicyConfig maps that one)
        from seal_hub.models.tiny import tiny_policy_dir  # here: it trains a tokenizer on first use

        return ResolvedModel("local", str(tiny_policy_dir()))
    local = Path(name).expanduser()
    if local.exists():
        return ResolvedModel("local", str(_check_model_dir(local, name)))
    if _looks_like_path(name):
        raise FileNotFoundError(
            f"model_name_or_path={name!r} does not exist: give an existing model directory (one saved with "
            "save_pretrained, containing config.json), or a Hub id such as 'org/name' or 'org/name@revision'"
        )
    revision = config.model_revision
    unserved = _demo_unserved(config)
    if unserved is not None:
        if revision not in (None, "main"):
            raise ValueError(
                f"the Hub cannot serve {name}@{revision}, and the offline demo model only stands in for revision "
                "'main': set model_revision='main', or make the Hub reachable"
            )
        target = demo_model_dir()
        convert = "" if is_converted(target) else ", converting it once (about 20-40 s on a CPU)"
        why = f"{unserved}, so " if unserved else ""
        notice_once(
            "demo-fallback",
            f"{why}the demo model {name} comes from the GGUF in the PyPI package {DEMO_PACKAGE}{convert}: {target}",
        )
        return ResolvedModel("demo_gguf", str(materialize_demo_model()))
    return ResolvedModel("hub", name, revision)


def resolve_model_name(name: str, revision: str | None = None) -> tuple[str, ResolvedModel]:
    """`resolve_model` for a policy named by one string, as a trainer's `model` names it: `demo`, `tiny`, a Hub id
    ('org/name', or 'org/name@revision' where `revision` is not given) or a local directory.

    Returns the policy's id as records name it (the demo model's Hub id for `demo`, a Hub id without its revision)
    and where it is read from. A Hub id that neither the Hub nor its cache can serve fails here, in one line that
    says what to do, instead of in transformers."""
    config = PolicyConfig(model_name_or_path=name, model_revision=revision)
    resolved = resolve_model(config)
    if resolved.source == "hub":
        unserved = _hub_unserved(resolved.path, resolved.revision)
        if unserved is not None:
            raise OSError(_unserved_message(resolved.path, resolved.revision, unserved))
    return config.model_name_or_path, resolved


def load_policy(
    config: PolicyConfig, trust_remote_code: bool = False
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load the policy model and its tool-capable tokenizer as `config` says (see the module docstring).

    `trust_remote_code` lets a repository run its own modelling code; it is a parameter, not a `PolicyConfig`
    field, because TRL's training configs already carry `trust_remote_code` and a recipe parses both.
    """
    check_quantization_device(config)
    resolved = resolve_model(config)
    reach = hub_reach() if resolved.source == "hub" else None  # unreachable: only the cache is read from here on
    revision = resolved.revision if resolved.source == "hub" else None
    model_kwargs: dict[str, object] = {"revision": revision, "trust_remote_code": trust_remote_code}
    if config.dtype is not None:
        model_kwargs["dtype"] = config.dtype if config.dtype == "auto" else getattr(torch, config.dtype)
    if config.attn_implementation is not None:
        model_kwargs["attn_implementation"] = config.attn_implementation
    bnb = quantization_config(config)
    if bnb is not None:
        from accelerate import PartialState

        model_kwargs["quantization_config"] = bnb
        model_kwargs["device_map"] = {"": PartialState().local_process_index}  # whole model on this rank's GPU
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            resolved.path, revision=revision, trust_remote_code=trust_remote_code, padding_side="left"
        )
        model = AutoModelForCausalLM.from_pretrained(resolved.path, **model_kwargs)
    except OSError as error:
        if resolved.source != "hub":
            raise
        offline = reach.reason if reach is not None and not reach.online else ""
        raise OSError(f"{_unserved_message(resolved.path, revision, offline)}. Cause: {error}") from error
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    ensure_tool_template(tokenizer, model, mode=config.chat_template)
    if model.generation_config is not None and model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer


def load_for_inference(name: str):
    """(model, tokenizer, config) of a named policy, placed for generation: `tiny` (built once in the cache),
    `demo` (SmolLM2, offline from its GGUF), or a Hub id / local path."""
    from seal_hub.models.tiny import named_policy_config

    config = named_policy_config(name)
    model, tokenizer = load_policy(config)
    return place_for_inference(model, config), tokenizer, config


def place_for_inference(model, config: PolicyConfig):
    """The model on this process's GPU for generation outside a trainer (rollout, eval, the Space), when one exists.

    A trainer places its own model (and shards it under ZeRO-3), so `load_policy` leaves an unquantised model where
    `from_pretrained` put it (the CPU); quantised models are already placed on the GPU when loaded."""
    if torch.cuda.is_available() and not config.quantized:
        from accelerate import PartialState

        model.to(f"cuda:{PartialState().local_process_index}")
    return model


def check_quantization_device(config: PolicyConfig) -> None:
    """Fail fast when 4-bit (QLoRA) or 8-bit loading is asked for on a machine without a CUDA GPU."""
    if not config.quantized or torch.cuda.is_available():
        return
    flag = "load_in_4bit=True (QLoRA)" if config.load_in_4bit else "load_in_8bit=True"
    raise ValueError(
        f"{flag} needs a CUDA GPU: bitsandbytes' quantised layers only run on CUDA, and torch.cuda.is_available() "
        "is False on this machine. Set load_in_4bit=False and load_in_8bit=False (plain LoRA, use_peft=True, runs "
        "on a CPU), or run on a machine with an NVIDIA GPU."
    )


def _check_model_dir(path: Path, name: str) -> Path:
    if not path.is_dir():
        hint = (
            " (a GGUF file: load its directory with gguf_file, or convert it first)" if path.suffix == ".gguf" else ""
        )
        raise NotADirectoryError(
            f"model_name_or_path={name!r} is a file{hint}; give the directory of a model saved with save_pretrained"
        )
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"model_name_or_path={name!r} is a directory without config.json, so not a saved model; give the "
            "directory written by save_pretrained (config.json, *.safetensors, tokenizer files)"
        )
    return path.resolve()


def _looks_like_path(name: str) -> bool:
    """Whether `name` can only be a filesystem path (a Hub id is 'name' or 'org/name', without these marks)."""
    return name.startswith(("/", ".", "~", "\\")) or name.count("/") > 1 or "\\" in name or ":" in name


def _unserved_message(repo_id: str, revision: str | None, why: str) -> str:
    """What to do about a Hub id that cannot be loaded (`why`, when known, says why not), in one line."""
    why = f" ({why})" if why else ""
    return (
        f"could not load {repo_id!r} at revision {revision or 'main'!r} from the Hugging Face Hub{why}, and it is "
        f"not a local directory. Download it while online (`hf download {repo_id}`) and set HF_HUB_OFFLINE=1, pass "
        "the directory of a saved model, or check the id, revision and access rights"
    )


def _demo_unserved(config: PolicyConfig) -> str | None:
    """Why the demo model must come from the GGUF ("" when asked for), or ``None`` when it need not."""
    if config.model_name_or_path != DEMO_MODEL_ID or config.demo_source == "hub":
        return None
    if config.demo_source == "gguf":
        return ""
    return _hub_unserved(config.model_name_or_path, config.model_revision)


def _hub_unserved(repo_id: str, revision: str | None) -> str | None:
    """Why neither the Hub nor its local cache can give `repo_id`'s config at `revision`; ``None`` if one can.

    Unreachable (offline mode, or the one probe of `hub_reach` found no answer): only the cache is looked at, so no
    request is retried. Reachable: one download, whose failures are HTTP answers (unknown repo or revision, gated).
    """
    reach = hub_reach()
    if not reach.online:
        cached = try_to_load_from_cache(repo_id, "config.json", revision=revision)
        return None if isinstance(cached, str) else f"{reach.reason} and no cached copy"
    try:
        hf_hub_download(repo_id, "config.json", revision=revision)
    except OSError as error:  # unknown repo or revision, gated, HTTP errors
        logger.info("the Hub cannot serve %s@%s: %s", repo_id, revision, error)
        return f"the Hub cannot serve {repo_id}@{revision or 'main'} ({type(error).__name__})"
    return None
