"""`SealConfig`: GRPO's settings plus SEAL's, as TRL pairs a config with its trainer (`GRPOConfig` ->
`GRPOTrainer`). The defaults are the paper's where it gives one (docs/method.md). Its fields are flat, as TRL's
configs are: the ones of the rho update (`closed_loop`, `reweighting`, `rho_*`) build the frozen `RhoSettings` the
trainer's rho window follows (`rho_settings()`, `seal_hub.interface.rho`, where the formula is), and those of
interface evolution (`type_hints`, `hint_kinds`, `guideline_*`, `max_guidelines`, with `interface_mode`) the frozen
`EvolveConfig` (`evolve_config()`, `seal_hub.interface.evolve`). Both are built at parse time too, so an invalid
value is refused there. Cross-field checks raise `ValueError` naming the field and the fix.

Not covered: the training script's own arguments (`seal_hub.scripts.seal`) and the policy's (`PolicyConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from trl import GRPOConfig

from seal_hub.config_checks import require_at_least_one
from seal_hub.defaults import EVAL_MAX_NEW_TOKENS, MAX_CONTEXT_TOKENS, MAX_LIVE_EPISODES
from seal_hub.envs.episode import MAX_STEPS_PER_TURN
from seal_hub.envs.protocol import ErrorKind
from seal_hub.generation.weights import GenerationWeights, check_generation_dtype, cpu_has_bf16
from seal_hub.interface.evolve import INTERFACE_MODES, EvolveConfig, evolve_config_for
from seal_hub.interface.rho import RhoSettings
from seal_hub.interface.snapshot import MAX_GUIDELINES
from seal_hub.models.toolcalls import check_parser_style
from seal_hub.training.groups import DYNAMIC_SAMPLING
from seal_hub.training.task_sampler import TASK_SAMPLERS


@dataclass
class SealConfig(GRPOConfig):
    """GRPO's settings plus SEAL's (docs/method.md holds the paper's values), flat; `rho_settings()` and
    `evolve_config()` are the records the rho update and interface evolution follow."""

    env_adaptation: bool = field(default=True, metadata={"help": "Evolve the learning interface from diagnoses."})
    reweighting: bool = field(default=True, metadata={"help": "Multiply GRPO advantages by the rollout weight."})
    closed_loop: bool = field(default=True, metadata={"help": "Update rho every step from the failure window."})
    evolve_every: int = field(default=1, metadata={"help": "Generation steps between interface evolutions (K)."})
    dynamic_sampling: str = field(
        default="none",
        metadata={
            "help": "Informative groups (seal_hub.training.groups). 'none': train on the groups drawn (the paper); "
            "'filter': keep groups whose rewards differ, draw more (max_extra_draws) until the step is full, mask "
            "slots still empty out of the loss; 'replace': the same draws, empty slots filled with copies of kept "
            "groups.",
            "choices": list(DYNAMIC_SAMPLING),
        },
    )
    max_extra_draws: int = field(
        default=2,
        metadata={"help": "Extra generation rounds a step may make under dynamic_sampling (0: the step's own only)."},
    )
    task_sampler: str = field(
        default="uniform",
        metadata={
            "help": "Which training tasks a step draws (seal_hub.training.task_sampler). 'uniform': TRL's shuffled "
            "order (the paper); 'frontier': weighted by each task's latest pass rate toward tasks whose groups "
            "disagree (always-passed and never-passed tasks drawn about 20x less).",
            "choices": list(TASK_SAMPLERS),
        },
    )
    type_hints: bool = field(default=False, metadata={"help": "Schema cues also append each argument's type."})
    hint_kinds: list[str] = field(
        default_factory=lambda: [str(kind) for kind in ErrorKind],
        metadata={"help": "Error kinds that get a recovery hint (values of seal_hub.envs.protocol.ErrorKind)."},
    )
    guideline_min_prevalence: float = field(
        default=0.10, metadata={"help": "A capability guideline needs its label's prevalence >= this."}
    )
    guideline_min_count: int = field(
        default=8, metadata={"help": "A capability guideline needs at least this many turns with its label."}
    )
    guideline_max_mean_reward: float = field(
        default=0.6, metadata={"help": "A capability guideline needs its label's mean reward < this."}
    )
    max_guidelines: int = field(
        default=MAX_GUIDELINES,
        metadata={"help": f"Capability guidelines kept, best score first (at most {MAX_GUIDELINES})."},
    )
    rho_beta: float = field(default=0.25, metadata={"help": "EMA step of the closed-loop rho update, in (0, 1]."})
    rho_count_scale: float = field(
        default=32, metadata={"help": "Turn count at which a label's evidence in the rho update is full."}
    )
    rho_min: float = field(default=0.5, metadata={"help": "Lower clamp of a label's rho target."})
    rho_max: float = field(default=2.0, metadata={"help": "Upper clamp of a label's rho target."})
    max_new_tokens: int = field(default=256, metadata={"help": "Tokens one model step (one reply) may generate."})
    max_context_tokens: int = field(
        default=MAX_CONTEXT_TOKENS, metadata={"help": "Longest token sequence of one episode."}
    )
    max_steps_per_turn: int = field(
        default=MAX_STEPS_PER_TURN, metadata={"help": "Calling steps allowed in one user turn."}
    )
    max_steps_per_episode: int | None = field(
        default=None,
        metadata={"help": "Model steps allowed in a whole training episode (the paper: 20); unset: no cap."},
    )
    max_live_episodes: int = field(
        default=MAX_LIVE_EPISODES, metadata={"help": "Episodes generated together in one batch."}
    )
    parser_style: str | None = field(
        default=None,
        metadata={"help": "Tool-call format: hermes, llama3, pythonic; unset: inferred from the chat template."},
    )
    interface_mode: str = field(
        default="full",
        metadata={
            "help": "'released': the paper's released runs, schema cues on from step 0 and nothing else evolved; "
            "'full': the method as the paper's text describes it, schema cues, recovery hints and capability "
            "guidelines evolved from the diagnosis. Only with env_adaptation.",
            "choices": list(INTERFACE_MODES),
        },
    )
    eval_every_steps: int = field(
        default=0,
        metadata={
            "help": "Held-out evaluation every N optimizer steps (test-split subset, null interface, greedy), "
            "logged as eval/success_rate and eval/success_rate/<category>; 0: off."
        },
    )
    eval_max_new_tokens: int = field(
        default=EVAL_MAX_NEW_TOKENS,
        metadata={"help": f"Tokens per model step in held-out evaluations (seal-hub eval's, {EVAL_MAX_NEW_TOKENS})."},
    )
    eval_tasks: int = field(
        default=16, metadata={"help": "Test-split tasks in each held-out evaluation (categories taken in turn)."}
    )
    share_prompt_forward: bool = field(
        default=True,
        metadata={
            "help": "In the loss forward, run each distinct prompt of a micro-batch once and score its completions "
            "against that prompt's cache (the same log-probs and gradients as TRL's forward, less work; "
            "seal_hub.training.shared_prompt). False: TRL's forward, every row whole."
        },
    )
    merge_lora_for_generation: bool | None = field(
        default=None,
        metadata={
            "help": "Roll out and evaluate with LoRA merged into a copy of the adapted weights, the exact weights put "
            "back after (seal_hub.generation.weights: 0.77x the demo's evaluation time; one copy of the adapted "
            "weights' memory while generating). Unset: on for CPU runs, off on GPUs."
        },
    )
    generation_dtype: str = field(
        default="auto",
        metadata={
            "help": "The dtype rollouts and held-out evaluations generate in; training keeps the policy's own "
            "(seal_hub.generation.weights). auto: bfloat16 for an fp32 policy on a CPU with AMX or "
            "AVX512-BF16 (measured faster, docs/benchmarks.md), the policy's own dtype elsewhere.",
            "choices": ["auto", "float32", "bfloat16"],
        },
    )
    synced_generation: bool | None = field(
        default=None,
        metadata={
            "help": "Keep every rank's forward passes in step during rollouts (as generate(synced_gpus=True)), so "
            "ranks whose episodes end at different steps do not hang in sharded forwards. Unset: on exactly when "
            "several processes run FSDP, or DeepSpeed ZeRO-3 with ds3_gather_for_generation=False."
        },
    )
    success_threshold: float | None = field(
        default=None,
        metadata={
            "help": "A user environment's reward at or above which an episode passed (SEAL's labels, success rate); "
            "unset: 1.0, right for 0/1 rewards (a reward seen that is neither 0 nor 1 is then said once)."
        },
    )
    restore_callback_states_from_checkpoint: bool = field(
        default=True,
        metadata={
            "help": "Restore stateful callbacks on resume. SEAL's loop state (rho, its window, the interface) is "
            "one (seal_hub.training.loop_state), so it must stay True."
        },
    )

    def __post_init__(self) -> None:
        check_not_trainer_push(self)
        if self.merge_lora_for_generation is None:
            self.merge_lora_for_generation = not torch.cuda.is_available()
        if not torch.accelerator.is_available():
            self.dataloader_pin_memory = False  # pinning needs an accelerator: on a CPU torch warns and ignores it
        if self.bf16 is None and not torch.cuda.is_available():
            self.bf16 = False  # TRL's default (bf16=True) fails on a CPU
        elif self.bf16 and not (torch.cuda.is_available() or torch.backends.mps.is_available()):
            # a CPU with bf16 instructions trains under autocast; one without would convert every product slowly
            if not cpu_has_bf16():
                raise ValueError(
                    "bf16=True needs a GPU or a CPU with bf16 instructions (AMX or AVX512-BF16; this one lists neither"
                    " in /proc/cpuinfo): set bf16=False (--bf16 false, or `bf16: false` in YAML)"
                )
            if not self.use_cpu:
                raise ValueError(
                    "bf16=True with no GPU trains on this CPU's bf16 instructions only with use_cpu=True (--use_cpu "
                    "true); or set bf16=False (--bf16 false, or `bf16: false` in YAML)"
                )
        positive = (
            "evolve_every",
            "max_new_tokens",
            "max_context_tokens",
            "max_steps_per_turn",
            "max_live_episodes",
            "eval_tasks",
            "eval_max_new_tokens",
        )
        require_at_least_one(self, *positive)
        check_generation_dtype(self.generation_dtype)
        require_at_least_one(self, "max_steps_per_episode", optional=True)
        check_parser_style(self.parser_style)
        if self.min_p is not None or self.repetition_penalty != 1.0:
            raise ValueError(
                "min_p and repetition_penalty are not applied by SEAL's rollout engine (it samples with temperature, "
                "top_p and top_k); leave them unset"
            )
        if self.dynamic_sampling not in DYNAMIC_SAMPLING:
            raise ValueError(
                f"dynamic_sampling must be one of {', '.join(DYNAMIC_SAMPLING)}, got {self.dynamic_sampling!r}"
            )
        if self.max_extra_draws < 0:
            raise ValueError(f"max_extra_draws must be >= 0 (0: no extra generation), got {self.max_extra_draws}")
        if self.task_sampler not in TASK_SAMPLERS:
            raise ValueError(f"task_sampler must be one of {', '.join(TASK_SAMPLERS)}, got {self.task_sampler!r}")
        if self.interface_mode not in INTERFACE_MODES:
            raise ValueError(f"interface_mode must be 'released' or 'full', got {self.interface_mode!r}")
        self.rho_settings()  # the records, built here to check them: a bad threshold is refused with its name
        self.evolve_config()
        if not self.restore_callback_states_from_checkpoint:
            raise ValueError(
                "restore_callback_states_from_checkpoint=False would resume SEAL with a fresh rho window and the "
                "starting interface (its loop state is a stateful callback): leave it True"
            )
        if self.eval_every_steps < 0:
            raise ValueError(
                f"eval_every_steps must be >= 0 (0 turns held-out evaluation off), got {self.eval_every_steps}"
            )
        if self.use_vllm:
            check_vllm_settings(self)
        super().__post_init__()
        if self.num_generations is not None and self.num_generations < 2:
            raise ValueError("num_generations must be >= 2: GRPO's advantages compare rollouts of the same task")

    def rho_settings(self) -> RhoSettings:
        """The rho update's record (`seal_hub.interface.rho`): the ablation switches and the update's numbers."""
        return RhoSettings(
            closed_loop=self.closed_loop,
            reweighting=self.reweighting,
            rho_beta=self.rho_beta,
            rho_count_scale=self.rho_count_scale,
            rho_min=self.rho_min,
            rho_max=self.rho_max,
        )

    def generation_weights(self) -> GenerationWeights:
        """How the run's rollouts and held-out evaluations take the weights (`merge_lora_for_generation`,
        `generation_dtype`): `seal_hub.generation.weights`."""
        return GenerationWeights(bool(self.merge_lora_for_generation), self.generation_dtype)

    def evolve_config(self, *, tool_errors: bool = True, default_values: bool = False) -> EvolveConfig:
        """Interface evolution's record for `interface_mode` on a suite whose tools can fail (`tool_errors`) and
        whose schemas carry defaults (`default_values`), with this config's thresholds."""
        return evolve_config_for(
            self.interface_mode,
            tool_errors=tool_errors,
            default_values=default_values,
            type_hints=self.type_hints,
            hint_kinds=tuple(self.hint_kinds),
            guideline_min_prevalence=self.guideline_min_prevalence,
            guideline_min_count=self.guideline_min_count,
            guideline_max_mean_reward=self.guideline_max_mean_reward,
            max_guidelines=self.max_guidelines,
        )


def check_not_trainer_push(config) -> None:
    """Refuse transformers' own push of output_dir (`push_to_hub`, `hub_model_id`, `hub_private_repo`): a SEAL run
    publishes its three artifacts itself (`seal_hub.hub.PublishConfig`: `--publish_run`, `--publish_backend`,
    `--publish_private`), and a second, unversioned copy of the folder under another name would not link them."""
    if config.push_to_hub or config.hub_model_id or config.hub_private_repo:
        given = [name for name in ("push_to_hub", "hub_model_id", "hub_private_repo") if getattr(config, name)]
        raise ValueError(
            f"{', '.join(given)}: seal_hub does not use transformers' push of output_dir; set publish_run "
            "'namespace/name' instead (with publish_backend hub and publish_private true for a private Hub run)"
        )


def check_vllm_settings(config) -> None:
    """vLLM settings SEAL's own rollouts cannot run under, refused with the reason. Colocate mode: TRL 1.16's
    in-process engine. Server mode: `vllm serve` elsewhere, each rank submitting its own episodes over HTTP
    (`seal_hub.generation.vllm_server`); its parallelism and memory are the server's flags, not the trainer's."""
    if config.vllm_mode not in ("colocate", "server"):
        raise ValueError(f"vllm_mode must be 'colocate' or 'server', got {config.vllm_mode!r}")
    if config.vllm_mode == "server":
        return
    if config.vllm_enable_sleep_mode:
        raise ValueError(
            "vllm_enable_sleep_mode: TRL wakes vLLM's KV cache only inside its own generate, which SEAL's multi-turn "
            "rollouts and held-out evaluation do not call: they would run on a freed cache; set it false"
        )
    if config.vllm_tensor_parallel_size != 1:
        raise ValueError(
            f"vllm_tensor_parallel_size={config.vllm_tensor_parallel_size}: every rank of a tensor-parallel group "
            "must submit the same requests, and SEAL's engine submits its own rank's episodes (ranks make different "
            "numbers of generate calls as episodes end); set it 1 and add data-parallel ranks instead, or serve "
            "the model tensor-parallel in vllm_mode 'server' (vllm serve --tensor-parallel-size)"
        )
