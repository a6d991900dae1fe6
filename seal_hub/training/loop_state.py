"""SEAL's loop state in a checkpoint, through transformers' stateful callbacks.

What a resumed run needs besides the weights and the optimizer: the generation count (which decides when the
interface evolves next), the epoch the closed-loop window belongs to, rho, the window's diagnoses, the interface
the next rollouts are shown, the environment versions made so far, and the task sampler's pass-rate table
(`seal_hub.training.task_sampler`). `SealLoopState` is a `TrainerCallback` that is also transformers'
`ExportableState`: its `state()` goes into ``checkpoint-N/trainer_state.json`` under
``stateful_callbacks["SealLoopState"]``, written by transformers' own `_save_checkpoint` as the checkpoint's last
file, and restored on resume when `args.restore_callback_states_from_checkpoint` is True (`SealConfig` makes that
its default and refuses False).

Design choice: transformers restores a stateful callback by building a new instance,
``type(callback)(**state["args"])``, setting ``state["attributes"]`` on it and swapping it in, so the stored state
sits on an instance that knows no trainer. `LoopStateBinder`, a plain callback that does know it, finds that
instance at ``on_train_begin`` (before any rollout runs), hands the state to the trainer and binds the instance to
it, so the next checkpoint records the live state again.

Not covered: the environment versions themselves (``output_dir/interfaces/vN.json``, `seal_hub.interface.store`,
shared by every checkpoint of a run; the state records only which versions existed at its step), and a checkpoint
without this state (not a SEAL checkpoint: `seal_hub.training.run_records.load_state` refuses it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback
from transformers.trainer_callback import ExportableState

from seal_hub.diagnosis import Label, RolloutDiagnosis
from seal_hub.interface import InterfaceSnapshot

if TYPE_CHECKING:
    from seal_hub.training import SealTrainer


def kill_point(name: str) -> None:
    """The test-only hook (`seal_hub._kill_points`), imported only where a point is reached; the trainer's and the
    script's points call it here."""
    from seal_hub._kill_points import kill_point as kill_at

    kill_at(name)


def export_loop_state(trainer: SealTrainer) -> dict[str, Any]:
    """The trainer's loop state as JSON-ready data."""
    return {
        "generations": trainer._generations,
        "window_epoch": trainer.window_epoch,
        "rho": {str(k): v for k, v in trainer.window.rho.items()},
        "window": [
            {"task_id": d.task_id, "reward": d.reward, "labels": [None if x is None else str(x) for x in d.labels]}
            for d in trainer.window.diagnoses
        ],
        "interface": trainer.interface.model_dump(mode="json"),
        "interface_versions": trainer.store.versions(),
        "task_sampler": trainer.task_sampler.state(),
    }


def import_loop_state(trainer: SealTrainer, data: dict[str, Any]) -> None:
    """Set the trainer's loop state from `export_loop_state`'s data (the interface store is pruned elsewhere)."""
    trainer._generations = int(data["generations"])
    trainer.window_epoch = int(data["window_epoch"])
    trainer.window.rho = {Label(k): float(v) for k, v in data["rho"].items()}
    trainer.window.diagnoses = [
        RolloutDiagnosis(d["task_id"], d["reward"], tuple(None if x is None else Label(x) for x in d["labels"]))
        for d in data["window"]
    ]
    trainer.interface = InterfaceSnapshot.model_validate(data["interface"])
    trainer.task_sampler.load_state(data.get("task_sampler", {}))  # checkpoints before the task sampler: none seen


class SealLoopState(TrainerCallback, ExportableState):
    """The loop state as a transformers stateful callback (saved in `trainer_state.json`, restored on resume).

    Bound (`trainer` set) it reports the trainer's live state; as transformers restores it (unbound) it holds the
    checkpoint's state in `seal` until `LoopStateBinder` hands that to the trainer.
    """

    def __init__(self, trainer: SealTrainer | None = None) -> None:
        self.trainer = trainer
        self.seal: dict[str, Any] | None = None

    def state(self) -> dict[str, Any]:
        trainer = self.trainer
        if trainer is None:
            return {"args": {}, "attributes": {"seal": self.seal}}
        control = getattr(trainer, "control", None)
        if control is not None and control.should_save:  # a checkpoint: its files written, its trainer state not
            kill_point("checkpoint")
        return {"args": {}, "attributes": {"seal": export_loop_state(trainer)}}


class LoopStateBinder(TrainerCallback):
    """At train begin: a `SealLoopState` that transformers restored from a checkpoint gives the trainer its state."""

    def __init__(self, trainer: SealTrainer) -> None:
        self.trainer = trainer

    def on_train_begin(self, args, state, control, **kwargs):
        for callback in self.trainer.callback_handler.callbacks:
            if isinstance(callback, SealLoopState) and callback.trainer is not self.trainer:
                if callback.seal is not None:
                    import_loop_state(self.trainer, callback.seal)
                callback.trainer, callback.seal = self.trainer, None
