"""Publishing a SEAL run's three artifacts as a `transformers.TrainerCallback`: switched on by giving it to the
trainer (`SealTrainer(..., callbacks=[PublishCallback(PublishConfig(run="ns/name"))])`, or `seal-hub train
--publish_run ns/name`, which adds it), never code inside the trainer.

After each checkpoint (`on_save`, once the trainer state with SEAL's loop state is written), every checkpointed
iteration not yet in the registry is published (`publish_pending`): its rollouts and diagnoses, the environment
version it trained against (and any unpublished ancestors), and the policy its checkpoint holds (the adapter of a
LoRA run, the whole model of a full fine-tune, `seal_hub.hub.policy`; the base it names: `PublishConfig.base_model`,
else the model's own ``name_or_path``). It is idempotent and catches up on what a crash left unpublished; the
cards name the published sources the run recorded in ``sources.json`` (`seal_hub.hub.sources.run_sources`).

The trainer binds itself to the callback (`bind`) when it is given one: the callback reads the run's records
(output_dir, the interface store, the checkpoint folders) through it. Only the main process publishes.

Not covered: what an artifact holds (`seal_hub.hub.artifacts`), where it goes (`seal_hub.hub.registry`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback

from seal_hub.hub.artifacts import PublishConfig

if TYPE_CHECKING:
    from seal_hub.training.trainer import SealTrainer


class PublishCallback(TrainerCallback):
    """Publish each checkpointed iteration's three artifacts (module docstring)."""

    def __init__(self, config: PublishConfig) -> None:
        if not isinstance(config, PublishConfig):
            raise TypeError(
                f"PublishCallback takes a PublishConfig (run='namespace/name'), got {type(config).__name__}"
            )
        self.config = config
        self.trainer: SealTrainer | None = None

    def bind(self, trainer: SealTrainer) -> None:
        """The trainer whose records this callback publishes (`SealTrainer` calls it)."""
        self.trainer = trainer

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
            self.publish_pending()

    def publish_pending(self) -> list[int]:
        """Publish every checkpointed iteration not yet in the registry; the steps published."""
        trainer = self.trainer
        if trainer is None:
            raise ValueError("PublishCallback is not bound to a trainer: give it to SealTrainer(callbacks=[...])")
        if not trainer.accelerator.is_main_process:
            return []
        import pyarrow.parquet as pq

        from seal_hub.hub import iteration_tag, publish_interface, publish_iteration
        from seal_hub.hub.sources import RunSources
        from seal_hub.rollout.records import read_trajectories
        from seal_hub.training.run_records import iteration_dir, read_metrics

        output_dir = trainer.args.output_dir
        registry, repos = self.config.registry(), self.config.repos
        sources = RunSources.read(output_dir).all()  # what the run started from, named on every card
        done = (
            {v.tag for v in registry.versions(repos.adapter, "model")}
            if registry.repo_exists(repos.adapter, "model")
            else set()
        )
        published = []
        for metrics in read_metrics(output_dir):
            step = metrics["step"]
            checkpoint = Path(output_dir) / f"checkpoint-{step}"
            if step > trainer.state.global_step or iteration_tag(step) in done or not checkpoint.is_dir():
                continue
            snapshot = trainer.store.get(metrics["interface_version"])
            for ancestor in trainer.store.lineage(snapshot)[:-1]:
                publish_interface(repos.environment, ancestor, registry=registry, sources=sources)
            folder = iteration_dir(output_dir, step)
            publish_iteration(  # only the checkpoint's policy files go (no optimizer state, no training_args.bin)
                repos,
                step,
                trajectories=read_trajectories(folder / "trajectories.parquet"),
                diagnoses=pq.read_table(folder / "diagnoses.parquet").to_pylist(),
                snapshot=snapshot,
                teaching=metrics.get("task_sampler"),
                adapter_dir=checkpoint,
                base_model=trainer.base_model_name(),
                registry=registry,
                sources=sources,
            )
            published.append(step)
        return published


def publish_callback(callbacks: list[Any] | None) -> PublishCallback | None:
    """The `PublishCallback` among `callbacks`, if any."""
    return next((c for c in callbacks or () if isinstance(c, PublishCallback)), None)
