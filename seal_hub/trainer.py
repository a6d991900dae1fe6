"""SEAL on TRL: a `GRPOTrainer` whose rollouts come from the multi-turn engine and whose advantages the
diagnosis reweights, with the learning interface evolving as training goes.

Why `rollout_func` and not `environment_factory`: TRL's environment loop runs one user message per episode
and calls tools it finds on the environment object, while a BFCL task has several user turns, tools revealed
mid-episode, and a verdict per turn. `rollout_func` lets our engine run whole episodes (batched, KV-cached)
and hand TRL the token view: prompt ids, completion ids, sampled log-probabilities and `env_mask` (1 for
policy tokens, 0 for tool output and user turns, which TRL then leaves out of the loss). Fact of TRL 1.16:
`rollout_func` receives the prompts already repeated `num_generations` times and returns one completion per
entry; each prompt here is a task id.

Each generation step: rollouts (reward = the verifier's verdict) -> one label per turn -> w_j per rollout
with the current rho -> rho updated by the closed-loop rule over the epoch's window -> every `evolve_every`
generations a new interface version for the next rollouts. `_generate_and_score_completions` multiplies TRL's
group-normalised advantages by w_j (sign kept). Switches for the paper's ablations: `env_adaptation`,
`reweighting`, `closed_loop`; all three off is vanilla GRPO on the same budget.

Not covered: vLLM generation inside the trainer (on GPUs, TRL's own vLLM integration plus the rollout
engine's `VLLMBackend`; see the paper config). Publishing: with `publish`, every checkpointed iteration's
three artifacts go to the registry (`seal_hub.hub`), catching up on any a crash left unpublished; their cards
name the published sources the run recorded in ``sources.json`` (`seal_hub.hub.sources.run_sources`).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import torch
from accelerate.utils import gather_object
from datasets import Dataset
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from seal_hub.diagnosis import Label, RolloutDiagnosis, diagnose
from seal_hub.envs.bfcl import BfclSuite, EpisodeConfig, Task
from seal_hub.evolve import EvolveConfig, RhoWindow, evolve
from seal_hub.interface import InterfaceSnapshot
from seal_hub.rollout import GenerationBackend, HFBackend, PolicyInfo, RolloutConfig, RolloutEngine, SamplingConfig
from seal_hub.rollout.records import read_trajectories
from seal_hub.run_records import (
    iteration_dir,
    iteration_metrics,
    load_state,
    prune_after,
    read_metrics,
    save_state,
    write_iteration,
)
from seal_hub.snapshot_store import SnapshotStore

if TYPE_CHECKING:
    from seal_hub.hub import PublishConfig

# what a published adapter holds: PEFT's files and the tokenizer with its tool-capable chat template
ADAPTER_FILES = (
    "adapter_config.json",
    "adapter_model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "special_tokens_map.json",
)


@dataclass
class SealConfig(GRPOConfig):
    """GRPO's settings plus SEAL's (DESIGN.md section 2 holds the paper's values)."""

    env_adaptation: bool = field(default=True, metadata={"help": "Evolve the learning interface from diagnoses."})
    reweighting: bool = field(default=True, metadata={"help": "Multiply GRPO advantages by the rollout weight."})
    closed_loop: bool = field(default=True, metadata={"help": "Update rho every step from the failure window."})
    evolve_every: int = field(default=1, metadata={"help": "Generation steps between interface evolutions (K)."})
    max_new_tokens: int = field(default=256, metadata={"help": "Tokens one model step (one reply) may generate."})
    max_context_tokens: int = field(default=8192, metadata={"help": "Longest token sequence of one episode."})
    max_steps_per_turn: int = field(default=20, metadata={"help": "Calling steps allowed in one user turn."})
    max_live_episodes: int = field(default=16, metadata={"help": "Episodes generated together in one batch."})
    parser_style: str = field(default="hermes", metadata={"help": "Tool-call format: hermes, llama3, pythonic."})
    rho_beta: float = field(default=0.25, metadata={"help": "EMA step of the closed-loop rho update."})

    def __post_init__(self) -> None:
        if self.bf16 is None and not torch.cuda.is_available():
            self.bf16 = False  # TRL's default (bf16=True) fails on a CPU
        elif self.bf16 and not torch.cuda.is_available() and not torch.backends.mps.is_available():
            raise ValueError("bf16=True needs a GPU; on a CPU set bf16=False (--bf16 false, or `bf16: false` in YAML)")
        positive = ("evolve_every", "max_new_tokens", "max_context_tokens", "max_steps_per_turn", "max_live_episodes")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 < self.rho_beta <= 1:
            raise ValueError(f"rho_beta must be in (0, 1], got {self.rho_beta}")
        super().__post_init__()
        if self.num_generations is not None and self.num_generations < 2:
            raise ValueError("num_generations must be >= 2: GRPO's advantages compare rollouts of the same task")


def verified_reward(prompts, completions, seal_reward, **kwargs) -> list[float]:
    """The verifier's verdict for each rollout (1.0 only if every turn passed), computed during the rollout."""
    return list(seal_reward)


def hf_backend(model, tokenizer, step: int, seed: int = 0) -> HFBackend:
    """A fresh batched backend per generation step: cached KV belongs to the weights of one step."""
    eos = {tokenizer.convert_tokens_to_ids(tokenizer.eos_token)}
    return HFBackend(model, eos, tokenizer.pad_token_id or 0, seed=seed + step)


class _EpochWindow(TrainerCallback):
    """The closed-loop statistics window resets every epoch."""

    def __init__(self, trainer: SealTrainer) -> None:
        self.trainer = trainer

    def on_epoch_begin(self, args, state, control, **kwargs):
        epoch = int(state.epoch or 0)  # a resumed run re-enters its epoch: its window is kept
        if epoch != self.trainer.window_epoch:
            self.trainer.window.reset()
            self.trainer.window_epoch = epoch


class SealTrainer(GRPOTrainer):
    def __init__(
        self,
        model,
        args: SealConfig,
        suite: BfclSuite,
        train_tasks: list[Task],
        processing_class,
        peft_config=None,
        interface: InterfaceSnapshot | None = None,
        policy_id: str = "policy",
        callbacks: list | None = None,
        backend_factory: Callable[[Any, Any, int], GenerationBackend] | None = None,
        publish: PublishConfig | None = None,
    ) -> None:
        if not train_tasks:
            raise ValueError("train_tasks is empty: give the BFCL tasks to train on")
        self.suite = suite
        self.policy_id = policy_id
        self.publish = publish
        self.backend_factory = backend_factory or self._default_backend
        self.interface = interface or InterfaceSnapshot.null(suite.name)
        self.evolve_config = EvolveConfig(closed_loop_rho=args.closed_loop, rho_beta=args.rho_beta)
        self.window = RhoWindow(self.evolve_config, rho=dict(self.interface.rho))  # a published start's rho
        self.window_epoch = 0
        self.store = SnapshotStore(Path(args.output_dir) / "interfaces")
        self._weights: list[float] | None = None
        self._generations = 0
        dataset = Dataset.from_list([{"prompt": task.id} for task in train_tasks])
        super().__init__(
            model=model,
            reward_funcs=verified_reward,
            args=args,
            train_dataset=dataset,
            processing_class=processing_class,
            peft_config=peft_config,
            rollout_func=self._rollout,
            callbacks=[*(callbacks or []), _EpochWindow(self)],
        )
        starts_lineage = self.interface.parent is None or self.interface.parent in self.store
        if self.accelerator.is_main_process and starts_lineage:
            self.store.put(self.interface)

    # ----- one generation step -----

    def _default_backend(self, model, tokenizer, step: int) -> GenerationBackend:
        """TRL's colocated vLLM engine when `use_vllm` (TRL syncs its weights each step), else batched HF."""
        if self.use_vllm:
            from seal_hub.rollout.vllm_backend import VLLMBackend

            llm = getattr(self.vllm_generation, "llm", None)
            if llm is None:
                raise ValueError("SEAL generates through vLLM in-process: set vllm_mode='colocate' (not 'server')")
            return VLLMBackend.from_llm(llm, {tokenizer.convert_tokens_to_ids(tokenizer.eos_token)})
        return hf_backend(model, tokenizer, step, self.args.seed)

    def _rollout(self, prompts: list[str], trainer: GRPOTrainer) -> dict[str, list]:
        args: SealConfig = self.args
        tasks = self.suite.select(prompts)
        tokenizer = self.processing_class
        step = self.state.global_step
        backend = self.backend_factory(self.accelerator.unwrap_model(self.model), tokenizer, step)
        config = RolloutConfig(
            num_generations=1,  # TRL already repeated each prompt num_generations times
            max_live_episodes=args.max_live_episodes,
            max_context_tokens=args.max_context_tokens,
            parser_style=args.parser_style,
            sampling=SamplingConfig(args.temperature, args.top_p, args.max_new_tokens, args.seed + step),
            episode=EpisodeConfig(max_steps_per_turn=args.max_steps_per_turn),
        )
        interface = self.interface
        engine = RolloutEngine(backend, tokenizer, self.suite, config, PolicyInfo(self.policy_id), interface)
        trajectories = engine.run(tasks)
        diagnoses = [diagnose(t, self.suite.task(t.task_id)) for t in trajectories]
        rho = dict(self.window.rho)
        self._weights = [d.weight(rho) if args.reweighting else 1.0 for d in diagnoses]
        # every rank's rollouts: the loop updates from all of them, the records keep all of them
        everyone = gather_object(trajectories), gather_object(diagnoses), gather_object(self._weights)
        self._update_loop(everyone[1])
        if self.accelerator.is_main_process:
            metrics = iteration_metrics(*everyone, rho, interface)
            write_iteration(args.output_dir, step + 1, everyone[0], everyone[1], metrics, rho)
        self._log_seal_metrics(trajectories, rho, interface)
        return {
            "prompt_ids": [t.token_ids[: t.prompt_length] for t in trajectories],
            "completion_ids": [t.token_ids[t.prompt_length :] for t in trajectories],
            "logprobs": [t.logprobs[t.prompt_length :] for t in trajectories],
            "env_mask": [t.token_mask[t.prompt_length :] for t in trajectories],
            "seal_reward": [t.reward for t in trajectories],
        }

    def _update_loop(self, diagnoses: list[RolloutDiagnosis]) -> None:
        """rho from the window (closed loop), then maybe the next interface version (same on every rank)."""
        self.window.step(diagnoses)
        self._generations += 1
        if self.args.env_adaptation and self._generations % self.args.evolve_every == 0:
            evolved = evolve(self.interface, self.window.profile(), self.evolve_config, rho=self.window.rho)
            if evolved is not self.interface:
                self.interface = evolved
                if self.accelerator.is_main_process:
                    self.store.put(evolved)

    def _log_seal_metrics(self, trajectories, rho: dict[Label, float], interface: InterfaceSnapshot) -> None:
        metrics = self._metrics["train"]
        metrics["seal/success_rate"].append(sum(t.passed for t in trajectories) / len(trajectories))
        metrics["seal/mean_weight"].append(sum(self._weights) / len(self._weights))
        metrics["seal/interface_version"].append(float(interface.version.lstrip("v") or 0))
        for label in (Label.MISSING_TOOL_CALL, Label.INVALID_TOOL_CALL, Label.SPURIOUS_TOOL_CALL):
            metrics[f"seal/rho/{label}"].append(rho[label])

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        if self._weights is not None and self.model.training:
            advantages = output["advantages"]
            weights = torch.tensor(self._weights, dtype=advantages.dtype, device=advantages.device)
            output["advantages"] = advantages * (weights if advantages.dim() == 1 else weights[:, None])
        self._weights = None
        return output

    # ----- checkpoints and resume -----

    def seal_state(self) -> dict[str, Any]:
        return {
            "generations": self._generations,
            "window_epoch": self.window_epoch,
            "rho": {str(k): v for k, v in self.window.rho.items()},
            "window": [
                {"task_id": d.task_id, "reward": d.reward, "labels": [None if x is None else str(x) for x in d.labels]}
                for d in self.window.diagnoses
            ],
            "interface": self.interface.model_dump(mode="json"),
            "interface_versions": self.store.versions(),
        }

    def _save_checkpoint(self, model, trial) -> None:
        super()._save_checkpoint(model, trial)
        if self.args.should_save:
            folder = Path(self._get_output_dir(trial=trial)) / f"checkpoint-{self.state.global_step}"
            save_state(folder, self.seal_state())
            self.publish_pending()

    def publish_pending(self) -> list[int]:
        """Publish every checkpointed iteration not yet in the registry (idempotent; catches up after a crash).

        Each iteration's three artifacts: its rollouts and diagnoses, the interface version it trained against
        (and any unpublished ancestors), and the adapter of its checkpoint.
        """
        if self.publish is None or not self.accelerator.is_main_process:
            return []
        from seal_hub.hub import iteration_tag, publish_interface, publish_iteration
        from seal_hub.hub.sources import RunSources

        registry, repos = self.publish.registry(), self.publish.repos
        sources = RunSources.read(self.args.output_dir).all()  # what the run started from, named on every card
        done = (
            {v.tag for v in registry.versions(repos.adapter, "model")}
            if registry.repo_exists(repos.adapter, "model")
            else set()
        )
        published = []
        for metrics in read_metrics(self.args.output_dir):
            step = metrics["step"]
            checkpoint = Path(self.args.output_dir) / f"checkpoint-{step}"
            if step > self.state.global_step or iteration_tag(step) in done or not checkpoint.is_dir():
                continue
            snapshot = self.store.get(metrics["interface_version"])
            for ancestor in self._lineage(snapshot)[:-1]:
                publish_interface(repos.environment, ancestor, registry=registry, sources=sources)
            folder = iteration_dir(self.args.output_dir, step)
            with tempfile.TemporaryDirectory() as adapter:
                for name in ADAPTER_FILES:
                    if (checkpoint / name).is_file():
                        shutil.copy2(checkpoint / name, Path(adapter) / name)
                publish_iteration(
                    repos,
                    step,
                    trajectories=read_trajectories(folder / "trajectories.parquet"),
                    diagnoses=pq.read_table(folder / "diagnoses.parquet").to_pylist(),
                    snapshot=snapshot,
                    adapter_dir=adapter,
                    base_model=self.publish.base_model,
                    registry=registry,
                    sources=sources,
                )
            published.append(step)
        return published

    def _lineage(self, snapshot: InterfaceSnapshot) -> list[InterfaceSnapshot]:
        chain = [snapshot]
        while chain[-1].parent is not None:
            chain.append(self.store.get(chain[-1].parent))
        return chain[::-1]

    def train(self, resume_from_checkpoint: str | bool | None = None, **kwargs):
        if resume_from_checkpoint:
            self._restore(resume_from_checkpoint)
        return super().train(resume_from_checkpoint=resume_from_checkpoint, **kwargs)

    def _restore(self, checkpoint: str | bool) -> None:
        from transformers.trainer_utils import get_last_checkpoint

        folder = get_last_checkpoint(self.args.output_dir) if checkpoint is True else checkpoint
        if folder is None:
            raise ValueError(f"resume_from_checkpoint=True but {self.args.output_dir} holds no checkpoint-N folder")
        state = load_state(folder)
        step = int(Path(folder).name.rsplit("-", 1)[1])
        self._generations = state["generations"]
        self.window_epoch = state["window_epoch"]
        self.window.rho = {Label(k): float(v) for k, v in state["rho"].items()}
        self.window.diagnoses = [
            RolloutDiagnosis(d["task_id"], d["reward"], tuple(None if x is None else Label(x) for x in d["labels"]))
            for d in state["window"]
        ]
        self.interface = InterfaceSnapshot.model_validate(state["interface"])
        if self.accelerator.is_main_process:
            prune_after(self.args.output_dir, step, self.store, set(state["interface_versions"]))
