"""What a recipe config asks of each GPU: the YAML the recipe reads, as a typed `TrainingPlan`.

The recipe parses its YAML into `SealConfig` (TRL's `GRPOConfig` plus SEAL's fields), `PolicyConfig` (TRL's
`ModelConfig`) and its script arguments. Building those dataclasses here would run their checks (bf16 needs a
GPU, ...) and tie the estimate to the recipe's script, so the YAML is read as a mapping and every key it does
not set takes the field default of `SealConfig` / `PolicyConfig`; keys neither knows (script arguments) are
ignored. An experiment config (``base_config`` + ``base`` overrides, `recipes/experiment.py`) is read as its
base config with the overrides applied: that is what each arm trains.

Launch settings come from an accelerate config (``--accelerate_config``, else the one the config's comment
launches it with, ``--config_file recipes/accelerate/X.yaml``): the number of processes (GPUs) and the
DeepSpeed ZeRO stage. The card's memory comes from ``--gpu-memory``, else a ``# card: N GB`` comment line,
else the first ``N GB`` in the config's leading comment (an experiment's own comment before its base's), else
`DEFAULT_CARD_GB` (the report says so). GB are the card's: 2^30 bytes, as cards are sold and tools report.

Not covered: command-line overrides of the recipe (give them in the YAML), FSDP, CPU offload.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

DEFAULT_CARD_GB = 80.0
CARD_COMMENT = re.compile(r"^#\s*card:\s*(\d+(?:\.\d+)?)\s*GB", re.IGNORECASE | re.MULTILINE)
ANY_GB = re.compile(r"(\d+(?:\.\d+)?)\s*GB\b")
LAUNCH_COMMENT = re.compile(r"--config_file\s+(\S+\.ya?ml)")


@dataclass(frozen=True)
class LaunchPlan:
    """How the recipe is launched: processes (one per GPU) and the DeepSpeed ZeRO stage (0: none)."""

    num_processes: int = 1
    zero_stage: int = 0
    source: str = "single process (no accelerate config)"


@dataclass(frozen=True)
class TrainingPlan:
    """The settings of one recipe config that its memory per GPU depends on."""

    config_path: str
    model: str
    model_revision: str | None
    dtype: str
    load_in_4bit: bool
    load_in_8bit: bool
    nested_quant: bool
    use_peft: bool
    lora_r: int
    lora_dropout: float
    lora_target_modules: tuple[str, ...] | None
    bf16: bool
    use_cpu: bool
    gradient_checkpointing: bool
    micro_batch: int
    gradient_accumulation_steps: int
    steps_per_generation: int | None
    generation_batch_size: int | None
    num_generations: int
    max_context_tokens: int
    max_completion_length: int
    max_live_episodes: int
    beta: float
    use_vllm: bool
    vllm_gpu_memory_utilization: float
    vllm_sleep: bool
    vllm_server: bool  # vllm_mode 'server': no vLLM memory on the training GPUs
    cast_lm_head_to_fp32: bool
    launch: LaunchPlan = field(default_factory=LaunchPlan)
    card_gb: float = DEFAULT_CARD_GB
    card_source: str = "default"

    @property
    def seq_len(self) -> int:
        """Longest training sequence: a whole episode (its prompt plus the trained completion) fits the context."""
        return self.max_context_tokens

    @property
    def scored_tokens(self) -> int:
        """Completion positions per sequence whose log-probabilities are computed."""
        return min(self.max_completion_length, self.max_context_tokens)

    @property
    def full_finetune(self) -> bool:
        return not self.use_peft

    def batch_arithmetic(self) -> dict[str, int]:
        """TRL 1.16's GRPOConfig rules: rollouts per generation and prompts per optimizer step."""
        world = self.launch.num_processes
        step_rollouts = self.micro_batch * world
        if self.generation_batch_size is not None:
            generation = self.generation_batch_size
        else:
            generation = step_rollouts * (self.steps_per_generation or self.gradient_accumulation_steps)
        optimizer_rollouts = step_rollouts * self.gradient_accumulation_steps
        return {
            "rollouts_per_generation": generation,
            "prompts_per_generation": generation // self.num_generations,
            "rollouts_per_optimizer_step": optimizer_rollouts,
            "prompts_per_optimizer_step": optimizer_rollouts // self.num_generations,
        }


def _defaults() -> dict[str, object]:
    from seal_hub.models import PolicyConfig
    from seal_hub.training import SealConfig

    values: dict[str, object] = {}
    for cls in (PolicyConfig, SealConfig):
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                values.setdefault(f.name, f.default)
            elif f.default_factory is not dataclasses.MISSING:
                values.setdefault(f.name, f.default_factory())
    return values


def read_config(path: str | Path) -> tuple[dict, list[str]]:
    """The recipe YAML as a mapping (an experiment config: its base with the overrides) and its texts, the
    config's own first, then its base's."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"config {path} does not exist")
    text = path.read_text()
    try:
        values = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"config {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(values, dict):
        raise ValueError(f"config {path} is not a mapping of settings")
    if "base_config" in values:
        base_path = (path.parent / str(values["base_config"])).resolve()
        base, base_texts = read_config(base_path)
        overrides = values.get("base") or {}
        if not isinstance(overrides, dict):
            raise ValueError(f"config {path}: 'base' must be a mapping of overrides, got {overrides!r}")
        return {**base, **overrides}, [text, *base_texts]
    return values, [text]


def read_launch(path: str | Path) -> LaunchPlan:
    """Processes and ZeRO stage of an accelerate config file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"accelerate config {path} does not exist")
    values = yaml.safe_load(path.read_text()) or {}
    if not isinstance(values, dict):
        raise ValueError(f"accelerate config {path} is not a mapping")
    stage = 0
    if str(values.get("distributed_type", "")).upper() == "DEEPSPEED":
        stage = int((values.get("deepspeed_config") or {}).get("zero_stage", 0))
    return LaunchPlan(num_processes=int(values.get("num_processes", 1)), zero_stage=stage, source=_shown(path))


def _shown(path: Path) -> str:
    """`path` relative to the working directory when it is under it (what a user typed), else as given."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _launch_from_comment(config_path: Path, text: str) -> LaunchPlan | None:
    match = LAUNCH_COMMENT.search(text)
    if not match:
        return None
    named = Path(match.group(1))
    # the comment names it from the repository root: recipes/configs/x.yaml -> recipes/accelerate/y.yaml
    for root in (Path.cwd(), *config_path.resolve().parents):
        if (root / named).is_file():
            return read_launch(root / named)
    return None


def _card(texts: list[str]) -> tuple[float, str] | None:
    for text in texts:  # the config's own comment first: an experiment may name another card than its base
        found = _card_in(text)
        if found:
            return found
    return None


def _card_in(text: str) -> tuple[float, str] | None:
    comment = "\n".join(line for line in text.splitlines() if line.lstrip().startswith("#"))
    match = CARD_COMMENT.search(comment)
    if match:
        return float(match.group(1)), "named in the config (# card:)"
    leading = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        leading.append(line)
    match = ANY_GB.search("\n".join(leading))
    return (float(match.group(1)), "named in the config's comment") if match else None


def load_plan(
    config: str | Path,
    accelerate_config: str | Path | None = None,
    gpus: int | None = None,
    gpu_memory_gb: float | None = None,
) -> TrainingPlan:
    """The `TrainingPlan` of a recipe config, with its launch and card (module doc for where each comes from)."""
    path = Path(config)
    values, texts = read_config(path)
    settings = {**_defaults(), **values}
    if accelerate_config is not None:
        launch = read_launch(accelerate_config)
    else:
        launch = _launch_from_comment(path, "\n".join(texts)) or LaunchPlan()
    if gpus is not None:
        if gpus < 1:
            raise ValueError(f"--gpus must be >= 1, got {gpus}")
        launch = dataclasses.replace(launch, num_processes=gpus)
    if gpu_memory_gb is not None:
        if gpu_memory_gb <= 0:
            raise ValueError(f"--gpu-memory must be > 0 GB, got {gpu_memory_gb}")
        card, card_source = gpu_memory_gb, "--gpu-memory"
    else:
        card, card_source = _card(texts) or (DEFAULT_CARD_GB, "default: the config names no card")
    targets = settings.get("lora_target_modules")
    if isinstance(targets, str):
        targets = [targets]
    try:
        return TrainingPlan(
            config_path=str(path),
            model=str(settings["model_name_or_path"]),
            model_revision=settings.get("model_revision"),
            dtype=str(settings.get("dtype") or "float32"),
            load_in_4bit=bool(settings.get("load_in_4bit")),
            load_in_8bit=bool(settings.get("load_in_8bit")),
            nested_quant=bool(settings.get("use_bnb_nested_quant")),
            use_peft=bool(settings.get("use_peft")),
            lora_r=int(settings["lora_r"]),
            lora_dropout=float(settings.get("lora_dropout") or 0.0),
            lora_target_modules=tuple(targets) if targets else None,
            bf16=bool(settings.get("bf16")),
            use_cpu=bool(settings.get("use_cpu")),
            gradient_checkpointing=bool(settings.get("gradient_checkpointing")),
            micro_batch=int(settings["per_device_train_batch_size"]),
            gradient_accumulation_steps=int(settings["gradient_accumulation_steps"]),
            steps_per_generation=_optional_int(settings.get("steps_per_generation")),
            generation_batch_size=_optional_int(settings.get("generation_batch_size")),
            num_generations=int(settings["num_generations"]),
            max_context_tokens=int(settings["max_context_tokens"]),
            max_completion_length=int(settings["max_completion_length"]),
            max_live_episodes=int(settings["max_live_episodes"]),
            beta=float(settings["beta"]),
            use_vllm=bool(settings.get("use_vllm")),
            vllm_gpu_memory_utilization=float(settings["vllm_gpu_memory_utilization"]),
            vllm_sleep=bool(settings.get("vllm_enable_sleep_mode")),
            vllm_server=settings.get("vllm_mode") == "server",
            cast_lm_head_to_fp32=bool(settings.get("cast_lm_head_to_fp32")),
            launch=launch,
            card_gb=card,
            card_source=card_source,
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"config {path}: a setting has the wrong type ({exc})") from None


def _optional_int(value: object) -> int | None:
    return None if value is None else int(value)
