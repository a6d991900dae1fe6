"""SEAL on TRL: a `GRPOTrainer` whose rollouts come from SEAL's multi-turn engine (through TRL's `rollout_func`) and
whose advantages the diagnosis reweights, with the learning interface evolving as training goes.

`SealTrainer` takes `GRPOTrainer`'s arguments in its order and meaning (TRL 1.16), so a GRPO script whose only
changes are `GRPOTrainer -> SealTrainer` and `GRPOConfig -> SealConfig` trains with SEAL: its environment, reward
functions, tools and datasets become a suite (`trl_args.trl_suite`; `eval_dataset`'s rows are the held-out tasks).
SEAL's own keywords follow: a built-in `suite=` with `train_tasks` and `held_out_tasks`, a starting `interface`,
`policy_id`, `backend_factory`, `held_out_at_end`. What it refuses, each in one line that says why, is
`trl_args.refuse_unsupported`'s.

Why `rollout_func`: TRL's environment loop runs one user message per episode, while a task may have several user
turns, tools revealed mid-episode and a verdict per turn. The engine runs whole episodes and hands TRL the token
view: prompt and completion ids, sampled log-probabilities and `env_mask` (0 for tool output and user turns, which
TRL leaves out of the loss).

Each generation step: the step's tasks (TRL's draw, or `task_sampler: frontier`) -> rollouts, and with
`dynamic_sampling` more draws until the groups are informative (`groups.py`) -> one label per turn (`Suite.diagnose`)
-> rho updated over the epoch's window -> w_j per rollout with that rho -> every `evolve_every` generations a new
environment version. TRL trains this rank's share of the chosen groups, its advantages multiplied by w_j. With
`env_adaptation`, `reweighting` and `closed_loop` all off it is vanilla GRPO on the same budget.

Around the loop, each part in its own module: the generation backend (`step_backend.py`), the held-out evaluation
(`held_out.HeldOutEvaluation`), the loop state in checkpoints (`loop_state.py`), the run's records
(`run_records.py`), publishing (`seal_hub.hub.callback.PublishCallback`, given in `callbacks`). The private TRL
members it touches are listed, with why, in `trl_private.py`. A relaunch of a run that already reached its budget
trains nothing: `train` loads the last checkpoint, publishes what is unpublished and sets `completed_at`.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from accelerate.utils import gather_object
from datasets import Dataset
from transformers import TrainerCallback, TrainerState
from transformers.trainer_utils import TrainOutput
from trl import GRPOTrainer

from seal_hub.console import acknowledge_rollout_func
from seal_hub.diagnosis import FailureProfile, Label
from seal_hub.envs.builtin import load_suite, require_trainable
from seal_hub.envs.episode import EpisodeSettings
from seal_hub.envs.suite import Suite, SuiteTask
from seal_hub.generation import SamplingConfig
from seal_hub.hub.callback import PublishedRun, publishing_last
from seal_hub.interface import InterfaceSnapshot
from seal_hub.interface.evolve import evolve, starting_interface
from seal_hub.interface.rho import RhoWindow
from seal_hub.interface.store import SnapshotStore
from seal_hub.rollout import PolicyInfo, RolloutConfig, RolloutEngine
from seal_hub.training.config import SealConfig
from seal_hub.training.groups import Group, StepPlan, groups_of, plan_step
from seal_hub.training.held_out import HeldOutEvaluation, HeldOutResult
from seal_hub.training.loop_state import (
    LoopStateBinder,
    SealLoopState,
    export_loop_state,
    import_loop_state,
    kill_point,
)
from seal_hub.training.run_records import (
    iteration_metrics,
    last_checkpoint,
    load_state,
    prune_after,
    read_iteration,
    read_metrics,
    write_iteration,
    write_run_config,
)
from seal_hub.training.sampler import EpochRepeatSampler, SamplerEpoch
from seal_hub.training.shared_prompt import shared_prompt_logps, shares_prompts, whole_groups
from seal_hub.training.step_backend import BackendFactory, StepBackends
from seal_hub.training.task_sampler import TaskSampler
from seal_hub.training.trl_args import model_name, refuse_unsupported, trl_model, trl_suite

if TYPE_CHECKING:
    from seal_hub.hub.artifacts import PublishConfig

# what a checkpoint holds besides the model that `save_model` writes: the state a resume needs
TRAINING_STATE_FILES = ("optimizer.pt", "scheduler.pt", "scaler.pt", "trainer_state.json")


RANK_SEED_STRIDE = 1_000_003  # rank r samples with seed + r * this (+ step): far from the steps' own offsets


def verified_reward(prompts, completions, seal_reward, **kwargs) -> list[float]:
    """The verifier's verdict for each rollout (1.0 only if every turn passed), computed during the rollout."""
    return list(seal_reward)


def suite_and_tasks(
    args: SealConfig, trl: tuple, suite: Suite | str | None, train_tasks: Any, held_out_tasks: Any
) -> tuple[Suite, list[SuiteTask], list[SuiteTask]]:
    """What SealTrainer trains on: TRL's arguments `trl` (reward_funcs, train and eval datasets, tools,
    environment_factory) as a suite (`trl_suite`), or the built-in `suite` (by name or object; its train split unless
    `train_tasks`); its training and held-out tasks. Refused in one line when they cannot train."""
    if suite is None:
        suite, train_tasks, held_out_tasks = trl_suite(args, *trl, train_tasks, held_out_tasks)
    else:
        if any(x is not None for x in trl):
            raise ValueError(
                "suite= is a built-in suite with its own tasks and verifier: give it without reward_funcs, "
                "environment_factory, tools or datasets (or give those without suite=)"
            )
        suite = load_suite(suite) if isinstance(suite, str) else suite
        if train_tasks is None:
            train_tasks = suite.select(suite.split_ids("train"))
    require_trainable(suite)  # a suite that cannot train says why, in one line
    if not train_tasks:
        raise ValueError(f"train_tasks is empty: give the {suite.name} tasks to train on")
    if args.eval_every_steps and not held_out_tasks:
        raise ValueError(
            "eval_every_steps > 0 needs held-out tasks: give eval_dataset (TRL's form) or held_out_tasks "
            "(seal_hub.training.held_out.held_out_tasks of the test split)"
        )
    return suite, list(train_tasks), list(held_out_tasks or [])


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
    # TRL's model-card metadata: the cards TRL writes (`create_model_card`, at every checkpoint and on
    # `push_to_hub`) name the method and cite its paper; the model is tagged with `_tag_names`
    _tag_names = ["trl", "grpo", "seal"]
    _name = "SEAL"
    _paper = {
        "title": "SEAL: Synergistic Co-Evolution of Agents and Learning Environments",
        "id": "2605.24426",
        "citation": textwrap.dedent("""\
            @article{hu2026seal,
                title        = {{SEAL: Synergistic Co-Evolution of Agents and Learning Environments}},
                author       = {Yihao Hu and Zhihao Wen and Xiujin Liu and Pan Wang and Xin Zhang and Wei Wu},
                year         = 2026,
                eprint       = {arXiv:2605.24426},
            }"""),
    }

    def __init__(
        self,
        model: Any,
        reward_funcs: Any = None,
        args: SealConfig | None = None,
        train_dataset: Any = None,
        eval_dataset: Any = None,
        processing_class: Any = None,
        reward_processing_classes: Any = None,
        callbacks: list | None = None,
        optimizers: tuple[Any, Any] = (None, None),
        quantization_config: Any = None,
        peft_config: Any = None,
        tools: list[Callable[..., Any]] | None = None,
        rollout_func: Callable[..., Any] | None = None,
        environment_factory: Any = None,
        *,
        suite: Suite | str | None = None,
        train_tasks: Sequence[SuiteTask] | None = None,
        held_out_tasks: Sequence[SuiteTask] | None = None,
        interface: InterfaceSnapshot | None = None,
        policy_id: str | None = None,
        backend_factory: BackendFactory | None = None,
        held_out_at_end: bool = True,
    ) -> None:
        args = args if args is not None else SealConfig(f"{model_name(model)}-SEAL")
        refuse_unsupported(args, rollout_func, reward_processing_classes)
        trl = (reward_funcs, train_dataset, eval_dataset, tools, environment_factory)
        self.suite, train_tasks, held_out_tasks = suite_and_tasks(args, trl, suite, train_tasks, held_out_tasks)
        model, resolved_id = trl_model(model, args)  # a name: resolved as seal-hub commands resolve it
        self.policy_id = policy_id or resolved_id or model_name(model)
        self._start_loop(args, interface, train_tasks)
        self.held_out = HeldOutEvaluation(self, held_out_tasks, at_end=held_out_at_end)
        self.held_out_tasks = self.held_out.tasks
        self._sampler_epoch = SamplerEpoch()  # sets the training sampler's epoch (sampler.py)
        self.completed_at: int | None = None  # set by `train` when the checkpoint already reached the budget
        self._completed_checkpoint: Path | None = None
        own = [SealLoopState(self), LoopStateBinder(self), _EpochWindow(self), self.held_out, self._sampler_epoch]
        callbacks, self.publisher = publishing_last([*(callbacks or []), *own])
        acknowledge_rollout_func()  # TRL's "rollout_func is experimental" warning, said once in our words
        super().__init__(
            model=model,
            reward_funcs=verified_reward,
            args=args,
            train_dataset=Dataset.from_list([{"prompt": task.id} for task in train_tasks]),
            processing_class=processing_class,
            callbacks=callbacks,
            optimizers=optimizers,
            quantization_config=quantization_config,
            peft_config=peft_config,
            rollout_func=self._rollout,
        )
        self.backends = StepBackends(self, backend_factory)  # None: vLLM under use_vllm, else the HF engine
        self.synced = self.backends.synced
        self._bind_publisher()
        if self.accelerator.is_main_process:
            if self.interface.parent is None or self.interface.parent in self.store:  # it starts a lineage
                self.store.put(self.interface)
            write_run_config(args.output_dir, self.policy_id, args)

    def _start_loop(self, args: SealConfig, interface: InterfaceSnapshot | None, train_tasks: list[SuiteTask]) -> None:
        """SEAL's loop at its start: the interface (given, or the suite's starting one) and how it evolves, the
        closed-loop window, the store of environment versions, and the task sampler over `train_tasks`."""
        suite, defaults = self.suite, self.suite.schema_defaults  # a user environment's schemas carry defaults
        self.interface = interface or starting_interface(
            suite.name,
            args.interface_mode,
            args.env_adaptation,
            default_values=defaults,
            user_environment=suite.record(),  # a user environment's record (None for a built-in suite)
        )
        self.evolve_config = args.evolve_config(tool_errors=suite.tool_errors, default_values=defaults)
        self.window = RhoWindow(args.rho_settings(), rho=dict(self.interface.rho))  # a published start's rho
        self.window_epoch = 0
        self.store = SnapshotStore(Path(args.output_dir) / "interfaces")
        self._weights: list[float] | None = None
        self._generations = 0
        self.train_ids = [task.id for task in train_tasks]
        self.task_sampler = TaskSampler(
            args.task_sampler, args.num_generations or 8, {task.id: task.category for task in train_tasks}
        )

    # ----- one generation step -----

    @property
    def sampling_seed(self) -> int:
        """The rollouts' sampling seed on this rank (before adding the step): `seed` on rank 0, and apart on every
        other rank. TRL's sampler can put copies of one prompt on several ranks (num_generations 4 over 2 ranks of
        2 rollouts: both ranks get the prompt twice); with one seed, both ranks would draw the same rollouts."""
        return self.args.seed + RANK_SEED_STRIDE * self.accelerator.process_index

    def _rollout(self, prompts: list[str], trainer: GRPOTrainer) -> dict[str, list]:
        """One generation step: this rank's share of the step's groups (`_draw_step`), each rank's rollouts gathered,
        the loop updated from all of them, and this rank's slots of the trained groups handed to TRL."""
        args: SealConfig = self.args
        step = self.state.global_step
        interface = self.interface
        self._bind_reward_context()
        with self.backends.at(step) as backend:
            engine = RolloutEngine(
                backend,
                self.processing_class,
                self.suite,
                self._rollout_config(step),
                PolicyInfo(self.policy_id),
                interface,
            )
            pool, plan = self._draw_step(engine, list(prompts), step)
        all_trajectories, all_diagnoses = pool
        # the released order: observe the batch (every group drawn), update rho, then weight it with the new rho
        rho = self.window.step(all_diagnoses)
        self.task_sampler.observe((t.task_id, t.passed) for t in all_trajectories)
        all_weights = self.window.weights(all_diagnoses)
        everyone = all_trajectories, all_diagnoses, all_weights
        self._update_loop(all_trajectories)
        if self.accelerator.is_main_process:
            metrics = iteration_metrics(*everyone, rho, interface) | {"groups": plan.metrics()}
            metrics["task_sampler"] = self.task_sampler.summary()  # what this iteration was teaching
            write_iteration(args.output_dir, step + 1, everyone[0], everyone[1], metrics, rho)
            kill_point("rollout")
        self._log_seal_metrics(*everyone, rho, interface, plan)  # every rank's batch: the logged values are global
        positions, masked = self._slots(plan, len(prompts))
        trajectories = [all_trajectories[i] for i in positions]
        self._weights = [all_weights[i] for i in positions]
        # TRL does not cut rollout_func completions: the trained part of an episode (policy and environment tokens
        # after the prompt) stops at max_completion_length, as verl's response length does; the reward stays the
        # whole episode's verdict, and the trajectory records keep every token. A masked slot (dynamic sampling
        # found no informative group for it) trains nothing: its mask is zero, so its tokens leave the loss and its
        # normaliser.
        end = args.max_completion_length
        return {
            "prompt_ids": [t.token_ids[: t.prompt_length] for t in trajectories],
            "completion_ids": [t.token_ids[t.prompt_length :][:end] for t in trajectories],
            "logprobs": [t.logprobs[t.prompt_length :][:end] for t in trajectories],
            "env_mask": [
                [0] * len(t.token_mask[t.prompt_length :][:end]) if off else t.token_mask[t.prompt_length :][:end]
                for t, off in zip(trajectories, masked, strict=True)
            ],
            "seal_reward": [t.reward for t in trajectories],
        }

    def _bind_reward_context(self) -> None:
        """What a user's reward functions receive from the trainer, as TRL passes it: this run's `trainer_state`,
        `log_metric` onto the training log, and the tokenizer behind `completion_ids`."""
        context = self.suite.reward_context  # a user setup's (seal_hub.envs.user.rewards); None for the others
        if context is not None:
            context.trainer_state = self.state
            context.log_metric = self._log_metric
            context.tokenizer = getattr(self.processing_class, "tokenizer", self.processing_class)

    def _rollout_config(self, step: int) -> RolloutConfig:
        args: SealConfig = self.args
        return RolloutConfig(
            num_generations=1,  # TRL already repeated each prompt num_generations times
            max_live_episodes=args.max_live_episodes,
            max_context_tokens=args.max_context_tokens,
            parser_style=args.parser_style,
            sampling=SamplingConfig(
                args.temperature, args.top_p, args.max_new_tokens, self.sampling_seed + step, args.top_k
            ),
            # the multi-turn suites' step limits; a suite with its own limits (bfcl-single: one answer) ignores them
            episode=EpisodeSettings(
                max_steps_per_turn=args.max_steps_per_turn, max_steps_per_episode=args.max_steps_per_episode
            ),
        )

    def _draw_step(self, engine: RolloutEngine, prompts: list[str], step: int) -> tuple[tuple[list, list], StepPlan]:
        """The step's groups: TRL's draw (or, `task_sampler: frontier`, the frontier's draw of as many tasks), and
        under `dynamic_sampling` extra draws until the step's slots hold informative groups (`groups.plan_step`).
        Returns every rank's rollouts and diagnoses of every draw, in draw order, and the plan over them."""
        args: SealConfig = self.args
        size, world, rank = args.num_generations, self.accelerator.num_processes, self.accelerator.process_index
        layout = gather_object(list(prompts)) if world > 1 else list(prompts)  # the step's rollouts, every rank's
        if args.task_sampler != "uniform":
            tasks = self.task_sampler.draw(self.train_ids, len(layout) // size, args.seed, step, 0)
            layout = [task_id for task_id in tasks for _ in range(size)]
        trajectories: list = []
        diagnoses: list = []

        def run(task_ids: list[str]) -> tuple[list, list]:
            mine = engine.run(self.suite.select(task_ids))
            found = [self.suite.diagnose(t, self.suite.task(t.task_id)) for t in mine]
            return gather_object(mine), gather_object(found)

        local = len(prompts)
        first, found = run(layout[rank * local : (rank + 1) * local])
        trajectories += first
        diagnoses += found

        def draw_more(count: int, draw: int) -> list[Group]:
            seen = {t.task_id for t in trajectories}
            tasks = self.task_sampler.draw(self.train_ids, count, args.seed, step, draw, exclude=seen)
            more, found = run([task_id for task_id in tasks[rank::world] for _ in range(size)])
            offset = len(trajectories)
            trajectories.extend(more)
            diagnoses.extend(found)
            return groups_of([t.task_id for t in more], [t.reward for t in more], size, offset)

        groups = groups_of([t.task_id for t in first], [t.reward for t in first], size)
        plan = plan_step(groups, args.dynamic_sampling, args.max_extra_draws, draw_more, world)
        return (trajectories, diagnoses), plan

    def _slots(self, plan: StepPlan, local: int) -> tuple[list[int], list[bool]]:
        """This rank's share of the trained slots: pool positions and whether each is masked. A masked slot is
        filled with the group first drawn in it (any rollouts of the right shape would do: none of it trains)."""
        positions: list[int] = []
        masked: list[bool] = []
        first = plan.groups[: len(plan.slots)]
        for index, group in enumerate(plan.slots):
            chosen = group if group is not None else first[index]
            positions += chosen.positions
            masked += [group is None] * len(chosen.positions)
        start = self.accelerator.process_index * local
        return positions[start : start + local], masked[start : start + local]

    def _update_loop(self, trajectories: Sequence[Any] = ()) -> None:
        """Maybe the next environment version, from the window that now holds this batch (same on every rank: the
        batch's `trajectories` are every rank's, for a suite that names the exception classes its tools raised)."""
        self._generations += 1
        if self.args.env_adaptation and self._generations % self.args.evolve_every == 0:
            raised = self.suite.raised(trajectories)
            evolved = evolve(
                self.interface, self.window.profile(), self.evolve_config, rho=self.window.rho, raised=raised
            )
            if evolved is not self.interface:
                self.interface = evolved
                if self.accelerator.is_main_process:
                    self.store.put(evolved)

    def _log_seal_metrics(
        self,
        trajectories,
        diagnoses,
        weights: list[float],
        rho: dict[Label, float],
        interface: InterfaceSnapshot,
        plan: StepPlan,
    ) -> None:
        metrics = self._metrics["train"]
        for name, value in plan.metrics().items():
            metrics[f"seal/groups/{name}"].append(float(value))
        metrics["seal/success_rate"].append(sum(t.passed for t in trajectories) / len(trajectories))
        metrics["seal/mean_weight"].append(sum(weights) / len(weights))
        metrics["seal/interface_version"].append(float(interface.version.lstrip("v") or 0))
        profile = FailureProfile.of(diagnoses)
        for label in Label:
            metrics[f"seal/rho/{label}"].append(rho[label])
            metrics[f"seal/prevalence/{label}"].append(profile.get(label).prevalence)

    def evaluate_held_out(self) -> HeldOutResult:
        """The held-out evaluation now (`held_out.HeldOutEvaluation.evaluate`: every rank runs it), logged as
        `eval_...` on the trainer log and written to `held_out/` by the main process."""
        return self.held_out.evaluate()

    # ----- TRL's private methods SEAL overrides (each listed, with why, in trl_private.py) -----

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        output = super()._generate_and_score_completions(inputs)
        if self._weights is not None and self.model.training:
            advantages = output["advantages"]
            weights = torch.tensor(self._weights, dtype=advantages.dtype, device=advantages.device)
            output["advantages"] = advantages * (weights if advantages.dim() == 1 else weights[:, None])
        self._weights = None
        kill_point("update")
        return output

    def _prepare_inputs(self, generation_batch):
        """TRL's buffering of a generation's micro-batches; with the shared-prompt forward and one optimizer step per
        generation, each micro-batch then holds whole groups (`shared_prompt.whole_groups`: the same gradient, each
        prompt run once instead of once per micro-batch it landed in). Not under losses whose value depends on how
        rows fall into micro-batches (`bnpo` normalises by a micro-batch's tokens; a top-entropy mask is taken per
        micro-batch)."""
        args = self.args
        fresh = self.model.training and (
            self._buffered_inputs is None or self._step % (args.steps_per_generation * self.num_iterations) == 0
        )
        inputs = super()._prepare_inputs(generation_batch)
        if (
            fresh
            and args.share_prompt_forward
            and args.steps_per_generation == args.gradient_accumulation_steps
            and args.steps_per_generation > 1
            and args.loss_type != "bnpo"
            and args.top_entropy_quantile == 1.0
        ):
            self._buffered_inputs = whole_groups(self._buffered_inputs)
            inputs = self._buffered_inputs[self._step % args.steps_per_generation]
        return inputs

    def _get_per_token_logps_and_entropies(
        self, model, input_ids, attention_mask, logits_to_keep, batch_size=None, compute_entropy=False, **kwargs
    ):
        """TRL's per-token log-probs, with each distinct prompt run once (`shared_prompt`) where that applies."""
        text_only = all(value is None for name, value in kwargs.items() if name != "compute_aux_loss")
        if (
            self.args.share_prompt_forward
            and text_only
            and not kwargs.get("compute_aux_loss")
            and not self.args.gradient_checkpointing  # it turns the model's cache off
            and shares_prompts(input_ids, attention_mask, logits_to_keep)
        ):
            with self.accelerator.autocast():
                logps, entropies = shared_prompt_logps(
                    model, input_ids, attention_mask, logits_to_keep, compute_entropy
                )
            return logps, entropies, None
        return super()._get_per_token_logps_and_entropies(
            model, input_ids, attention_mask, logits_to_keep, batch_size, compute_entropy, **kwargs
        )

    def _get_train_sampler(self, dataset: Dataset | None = None) -> EpochRepeatSampler:
        """TRL's sampler, but each epoch's order a function of (seed, epoch): a resumed run trains on the tasks, in
        the order, that the uninterrupted run would have (`seal_hub.training.sampler`)."""
        return self._sampler_epoch.track(EpochRepeatSampler.like(super()._get_train_sampler(dataset)))

    # ----- checkpoints and resume -----

    def seal_state(self) -> dict[str, Any]:
        """The loop state a checkpoint records (`seal_hub.training.loop_state`)."""
        return export_loop_state(self)

    def load_seal_state(self, state: dict[str, Any]) -> None:
        """Continue from a checkpoint's loop state (`seal_state`'s data)."""
        import_loop_state(self, state)

    @property
    def publish(self) -> PublishConfig | None:
        """Where the run publishes: the `PublishCallback`'s config, None without one."""
        return self.publisher.config if self.publisher is not None else None

    def publish_pending(self) -> list[int]:
        """Publish every checkpointed iteration not yet in the registry (`PublishCallback.publish_pending`; nothing
        without a `PublishCallback`)."""
        return self.publisher.publish_pending(self.state.global_step) if self.publisher is not None else []

    def _bind_publisher(self) -> None:
        """Hand the `PublishCallback`, if any, what it reads of this run: hub/ does not import training/."""
        if self.publisher is not None:
            out, main = self.args.output_dir, self.accelerator.is_main_process
            readers = partial(read_metrics, out), partial(read_iteration, out)
            self.publisher.bind(PublishedRun(Path(out), self.store, *readers, self.base_model_name, main))

    def train(self, resume_from_checkpoint: str | bool | None = None, **kwargs):
        kill_point("startup")
        if not resume_from_checkpoint:
            if self.accelerator.is_main_process and last_checkpoint(self.args.output_dir) is None:
                # records of a run killed before its first checkpoint: this run makes them again
                kept = {s.version for s in self.store.lineage(self.interface, stored_only=True)}
                prune_after(self.args.output_dir, 0, self.store, kept)
            return super().train(**kwargs)
        folder, seal = self._restore(resume_from_checkpoint)
        state = TrainerState.load_from_json(str(folder / "trainer_state.json"))
        if state.global_step < self._budget():
            # transformers restores SEAL's loop state with the other stateful callbacks (training/loop_state.py)
            return super().train(resume_from_checkpoint=str(folder), **kwargs)
        self.load_seal_state(seal)  # no training loop runs, so no callback restores it
        return self._complete(folder, state)

    def _budget(self) -> int:
        """Optimizer steps this run may take: `max_steps`, else what `num_train_epochs` comes to."""
        if self.args.max_steps > 0:
            return self.args.max_steps
        return self.set_initial_training_values(self.args, self.get_train_dataloader())[-1]

    def _complete(self, folder: Path, state: TrainerState) -> TrainOutput:
        """A relaunch of a run that reached its budget: train nothing, finish what a kill may have cut short.

        The checkpoint's weights are loaded (where transformers loads them before its loop: not under
        DeepSpeed or FSDP) and `save_model` copies the checkpoint's model files, so the final model is the
        last checkpoint's under every backend; checkpointed iterations not yet published are published.
        """
        self.state = state
        if not (self.is_deepspeed_enabled or self.is_fsdp_enabled):
            self._load_from_checkpoint(str(folder))
        self._completed_checkpoint = folder
        self.completed_at = state.global_step
        self.publish_pending()
        return TrainOutput(state.global_step, 0.0, {})

    def save_model(self, output_dir: str | None = None, _internal_call: bool = False) -> None:
        if self._completed_checkpoint is None or _internal_call:
            super().save_model(output_dir, _internal_call)
        elif self.args.should_save:  # a completed run: the final model is its last checkpoint's
            target = Path(output_dir or self.args.output_dir)
            target.mkdir(parents=True, exist_ok=True)
            for path in self._completed_checkpoint.iterdir():
                if path.is_file() and path.name not in TRAINING_STATE_FILES and not path.name.startswith("rng_state"):
                    shutil.copy2(path, target / path.name)
        self._correct_card(output_dir or self.args.output_dir)

    def push_to_hub(self, *args, **kwargs):
        """Refused: transformers' push of output_dir would publish an unversioned copy under another name; a SEAL
        run publishes its three artifacts per checkpoint (`callbacks=[PublishCallback(PublishConfig(...))]`)."""
        raise ValueError(
            "SealTrainer.push_to_hub: seal_hub does not use transformers' push of output_dir; give the trainer "
            "callbacks=[PublishCallback(PublishConfig(run='namespace/name', backend='hub'))] (seal-hub train "
            "--publish_run) instead"
        )

    def create_model_card(self, *args, **kwargs) -> None:
        super().create_model_card(*args, **kwargs)
        self._correct_card(self.args.output_dir)

    def _correct_card(self, folder: str | Path) -> None:
        """The README.md TRL and PEFT wrote into `folder`, its base model named by Hub id, its quick start loading
        the run's published policy, and no host path in it (`seal_hub.hub.cards.correct_training_card`)."""
        if self.is_world_process_zero():
            from seal_hub.hub.cards import correct_training_card

            policy = self.publish.repos.adapter if self.publish is not None else None
            correct_training_card(folder, self.base_model_name(), policy)

    def base_model_name(self) -> str | None:
        """What the policy was trained from, as its cards name it: `PublishConfig.base_model`, else the model's own
        ``name_or_path``."""
        named = self.publish.base_model if self.publish is not None else None
        return named or getattr(self.model.config, "name_or_path", None) or None

    def _restore(self, checkpoint: str | bool) -> tuple[Path, dict[str, Any]]:
        """The checkpoint to resume (True: the last complete one) and its SEAL state; later records are removed."""
        folder = last_checkpoint(self.args.output_dir) if checkpoint is True else Path(checkpoint)
        if folder is None:
            raise ValueError(
                f"resume_from_checkpoint=True but {self.args.output_dir} holds no complete checkpoint-N folder"
            )
        state = load_state(folder)
        step = int(folder.name.rsplit("-", 1)[1])
        if self.accelerator.is_main_process:
            prune_after(self.args.output_dir, step, self.store, set(state["interface_versions"]))
        return folder, state
