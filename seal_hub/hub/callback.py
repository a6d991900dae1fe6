"""Publishing a SEAL run's three artifacts as a `transformers.TrainerCallback`: switched on by giving it to the
trainer (`SealTrainer(..., callbacks=[PublishCallback(PublishConfig(run="ns/name"))])`, or `seal-hub train
--publish_run ns/name`, which adds it), never code inside the trainer.

After each checkpoint (`on_save`, once the trainer state with SEAL's loop state is written), every checkpointed
iteration not yet in the registry is published (`publish_pending`): its rollouts and diagnoses, the environment
version it trained against (and any unpublished ancestors), and the policy its checkpoint holds (the adapter of a
LoRA run, the whole model of a full fine-tune, `seal_hub.hub.policy`; the base it names: `PublishConfig.base_model`,
else the model's own ``name_or_path``). It is idempotent and catches up on what a crash left unpublished; the
cards name the published sources the run recorded in ``sources.json`` (`seal_hub.hub.sources.run_sources`).

The trainer hands the callback what it reads of the run (`bind`, a `PublishedRun`): its output_dir and environment
versions, readers of its iteration records, the base model's name. The callback never holds the trainer, and hub/
does not import `seal_hub.training` (nor know the run directory's layout: the readers do). Only the main process
publishes.

Not covered: what an artifact holds (`seal_hub.hub.artifacts`), where it goes (`seal_hub.hub.registry`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback

from seal_hub.hub.artifacts import PublishConfig

if TYPE_CHECKING:
    from seal_hub.interface.store import SnapshotStore
    from seal_hub.rollout.records import Trajectory


@dataclass(frozen=True)
class PublishedRun:
    """What the callback reads of the run it publishes, handed over by the trainer (`PublishCallback.bind`)."""

    output_dir: Path
    store: SnapshotStore  # the run's environment versions
    iterations: Callable[[], list[dict[str, Any]]]  # every finished iteration's metrics ("step" in each), in order
    records: Callable[[int], tuple[list[Trajectory], list[dict[str, Any]]]]  # step -> its rollouts, diagnosis rows
    base_model: Callable[[], str | None]  # what the policy was trained from, as its cards name it
    main_process: bool = True


class PublishCallback(TrainerCallback):
    """Publish each checkpointed iteration's three artifacts (module docstring)."""

    def __init__(self, config: PublishConfig) -> None:
        if not isinstance(config, PublishConfig):
            raise TypeError(
                f"PublishCallback takes a PublishConfig (run='namespace/name'), got {type(config).__name__}"
            )
        self.config = config
        self.run: PublishedRun | None = None

    def bind(self, run: PublishedRun) -> None:
        """The run whose records this callback publishes (`SealTrainer` calls it)."""
        self.run = run

    def check_unclaimed(self, output_dir: str | Path) -> None:
        """Refuse, before any work, a run name another output_dir already published under: its versions are
        immutable, so this run's first publish would fail after its first step. A relaunch (an output_dir holding a
        checkpoint) resumes its own run and passes."""
        if any(Path(output_dir).glob("checkpoint-*")):
            return
        registry, repos = self.config.registry(), self.config.repos
        kinds = ((repos.adapter, "model"), (repos.trajectories, "dataset"), (repos.environment, "dataset"))
        taken = [repo for repo, kind in kinds if registry.repo_exists(repo, kind) and registry.versions(repo, kind)]
        if taken:
            from seal_hub.hub.registry import HubError

            raise HubError(
                f"run {self.config.run} is already published ({', '.join(taken)}) and {output_dir} holds no "
                "checkpoint of it: relaunch in the output_dir that published it to resume, or name a new run "
                "with --publish_run NAMESPACE/NAME"
            )

    def on_save(self, args, state, control, **kwargs):
        if args.should_save:
            self.publish_pending(state.global_step)

    def publish_pending(self, global_step: int) -> list[int]:
        """Publish every iteration checkpointed by `global_step` not yet in the registry; the steps published."""
        run = self.run
        if run is None:
            raise ValueError("PublishCallback is not bound to a run: give it to SealTrainer(callbacks=[...])")
        if not run.main_process:
            return []
        from seal_hub.hub import iteration_tag, publish_interface, publish_iteration
        from seal_hub.hub.sources import RunSources

        registry, repos = self.config.registry(), self.config.repos
        sources = RunSources.read(run.output_dir).all()  # what the run started from, named on every card
        done = (
            {v.tag for v in registry.versions(repos.adapter, "model")}
            if registry.repo_exists(repos.adapter, "model")
            else set()
        )
        published = []
        for metrics in run.iterations():
            step = metrics["step"]
            checkpoint = Path(run.output_dir) / f"checkpoint-{step}"
            if step > global_step or iteration_tag(step) in done or not checkpoint.is_dir():
                continue
            snapshot = run.store.get(metrics["interface_version"])
            for ancestor in run.store.lineage(snapshot)[:-1]:
                publish_interface(repos.environment, ancestor, registry=registry, sources=sources)
            trajectories, diagnoses = run.records(step)
            publish_iteration(  # only the checkpoint's policy files go (no optimizer state, no training_args.bin)
                repos,
                step,
                trajectories=trajectories,
                diagnoses=diagnoses,
                snapshot=snapshot,
                teaching=metrics.get("task_sampler"),
                adapter_dir=checkpoint,
                base_model=run.base_model(),
                registry=registry,
                sources=sources,
            )
            published.append(step)
        return published


def publishing_last(callbacks: list[Any]) -> tuple[list[Any], PublishCallback | None]:
    """`callbacks` with the `PublishCallback` among them (if any) moved last, and that callback: at a checkpoint it
    publishes what the other callbacks have recorded."""
    publisher = next((c for c in callbacks if isinstance(c, PublishCallback)), None)
    return [c for c in callbacks if c is not publisher] + ([publisher] if publisher is not None else []), publisher
