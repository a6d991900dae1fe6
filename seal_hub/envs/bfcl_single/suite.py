"""The BFCL single-turn suite (`bfcl-single`): tasks, splits, episodes, and the answer key as an oracle.

The oracle replays BFCL's answer key: per expected call, each argument takes the first accepted value, and an
argument whose first accepted value is `""` (BFCL's "may be omitted") is left out. The irrelevance
categories' oracle makes no call. live_relevance has no key (any call passes there), so its oracle is a
script, and says so: it calls the first offered function with placeholder values for the required arguments.

Splits: `train` and `test` are the shipped half split (`splits.py`: half of every category, seed 0), `all`
is every task, a category name is all of that category; `split_file` takes a split JSON by path, or
'stratified' for the same kind of split made with another seed.

The suite trains: its one turn is labelled by `labels.py`; its warm-up teaches the answer key's calls (an
abstention where no call belongs), only where the checker passes them; its answers never run, so there are no tool
errors (and no recovery hints); cards call it single-turn tool calling.

Not covered: executing answers (they are checked, never run: `checker.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from seal_hub.envs.bfcl_single.episode import SingleEpisode
from seal_hub.envs.bfcl_single.labels import diagnose_answer
from seal_hub.envs.bfcl_single.splits import PACKAGED, PACKAGED_DEV, fraction_split, packaged_dev_split, packaged_split
from seal_hub.envs.bfcl_single.tasks import (
    ABSTAIN_CATEGORIES,
    CATEGORIES,
    RELEVANCE_CATEGORIES,
    SingleTask,
    load_tasks,
)
from seal_hub.envs.protocol import Action, ToolCall
from seal_hub.envs.reference import ABSTAIN, WarmupScript
from seal_hub.envs.suite import SuiteCard, SuiteError
from seal_hub.envs.task_table import WHOLE_SPLITS, TaskTable

if TYPE_CHECKING:
    from seal_hub.diagnosis import RolloutDiagnosis
    from seal_hub.rollout.records import Trajectory

_PLACEHOLDER = {"string": "example", "integer": 1, "float": 1.0, "number": 1.0, "boolean": True}


def _choose(accepted_by_key: dict[str, Any], required: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Per key, the first accepted value (recursively for dict answers); a key whose first accepted value is
    `""` (may be omitted) is left out, unless the function requires it: then its first other accepted value."""
    chosen = {}
    for key, accepted in accepted_by_key.items():
        values = [v for v in accepted if v != ""] if key in required else accepted[:1]
        if values and values[0] != "":
            chosen[key] = _value(values[0])
    return chosen


def _value(value: Any) -> Any:
    """An accepted value; BFCL writes dict values (also inside lists) as keys -> lists of accepted values."""
    if isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
        return _choose(value)
    if isinstance(value, list):
        return [_value(item) for item in value]
    return value


def key_calls(task: SingleTask) -> tuple[ToolCall, ...]:
    """The answer key as calls: the first accepted value of every argument, optional ones left out."""
    calls = []
    for expected in task.possible_answer or ():
        [(name, arguments)] = expected.items()
        doc = next((d for d in task.functions if d.get("name") == name), {})
        required = frozenset(doc.get("parameters", {}).get("required", ()))
        calls.append(ToolCall(name, _choose(arguments, required)))
    return tuple(calls)


def relevance_script_call(task: SingleTask) -> ToolCall:
    """A call of the first offered function with placeholders for its required arguments (no key exists)."""
    doc = task.functions[0]
    parameters: dict[str, Any] = doc.get("parameters", {})
    properties = parameters.get("properties", {})
    arguments = {
        name: _PLACEHOLDER.get(properties.get(name, {}).get("type"), "example")
        for name in parameters.get("required", ())
    }
    return ToolCall(doc["name"], arguments)


class BfclSingleSuite(TaskTable):
    """BFCL single-turn: the AST categories and the relevance categories (see `tasks.py`)."""

    name = "bfcl-single"
    categories: tuple[str, ...] = CATEGORIES
    turn_labels = True
    tool_errors = False  # answers are checked, never run
    not_trainable = None
    card = SuiteCard("bfcl-single", "bfcl-single", "Single-turn tool calling")

    def __init__(self, tasks: dict[str, SingleTask] | None = None, categories: tuple[str, ...] = CATEGORIES) -> None:
        self.tasks: dict[str, SingleTask] = tasks if tasks is not None else load_tasks(categories)

    def split_ids(self, split: str, split_file: str | None = None, seed: int = 0) -> tuple[str, ...]:
        """`train` / `test`: the shipped half split (`split_file` None or 'packaged'), or with `split_file`
        'stratified' the half split seeded by `seed`, or a split file's lists; with `split_file` 'packaged-dev' also
        `dev`, cut from the shipped training half (`packaged_dev_split`); `all`: every task; a category: all of its
        tasks."""
        if split_file == PACKAGED_DEV and split in ("train", "dev", "test"):
            dev = packaged_dev_split({task_id: task.category for task_id, task in self.tasks.items()})
            return tuple(task_id for task_id in dev.ids(split) if task_id in self.tasks)
        if split in ("train", "test"):
            if split_file is None or split_file == PACKAGED:
                return tuple(task_id for task_id in packaged_split().ids(split) if task_id in self.tasks)
            if split_file == "stratified":
                return fraction_split(self.tasks, seed=seed).ids(split)
        elif split not in WHOLE_SPLITS and split not in self.categories:
            choices = ", ".join(self.categories)
            raise SuiteError(
                f"unknown split {split!r} for suite {self.name}; choose train, test, all or a category: {choices}"
            )
        if split_file in (None, PACKAGED, "stratified"):
            return super().split_ids(split)
        return super().split_ids(split, split_file, seed)

    def oracle_steps(self, task: SingleTask) -> list[list[Action]]:
        """One turn: the answer key's calls (none for irrelevance; the scripted call for live_relevance)."""
        if task.category in ABSTAIN_CATEGORIES:
            return [[]]
        if task.category in RELEVANCE_CATEGORIES:
            return [[Action(tool_calls=(relevance_script_call(task),))]]
        return [[Action(tool_calls=key_calls(task))]]

    def episode(self, task: SingleTask | str, config: Any = None) -> SingleEpisode:
        """A new episode of `task`; `config` (the multi-turn suite's episode settings) does not apply here."""
        task = self.task(task) if isinstance(task, str) else task
        return SingleEpisode(task, config)

    def diagnose(self, trajectory: Trajectory, task: SingleTask) -> RolloutDiagnosis:
        """The one turn's label (`seal_hub.envs.bfcl_single.labels`)."""
        return diagnose_answer(trajectory, task)

    def warmup_script(self, task: SingleTask) -> WarmupScript | None:
        """The answer key's calls (the abstention where no call belongs), kept only if the checker passes them;
        None where there is no key to teach (live_relevance: any call passes)."""
        if task.expects_calls and task.possible_answer is None:
            return None
        [actions] = self.oracle_steps(task)
        answer = actions[0] if actions else Action(content=ABSTAIN)
        return WarmupScript(self.episode(task), (answer,), must_pass=True)
