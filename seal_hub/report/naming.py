"""How a run or an evaluation is called in tables and legends.

A run is named by its SEAL variant (from the ablation switches in `run_config.json`, spelled as the paper's
ablation table spells them: `SEAL`, `vanilla RL`, `w/o env adaptation`, ...) and its model's short name; an
evaluation by its model's short name and the adapter it loaded (`base` when none) and, when not the null
interface, the interface it was shown. Two sources that would get the same name are told apart by their
directory names. `NAME=DIR` on the command line overrides the derived name.

Not covered: anything about the content of the sources (`seal_hub.report.inputs`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from seal_hub.report.inputs import EvalRecord, RunRecord

SWITCHES = ("env_adaptation", "reweighting", "closed_loop")
# one switch off -> the paper's ablation name
_ONE_OFF = {
    "env_adaptation": "w/o env adaptation",
    "reweighting": "w/o reweighting",
    "closed_loop": "w/o closed loop",
}


@dataclass(frozen=True)
class Named:
    name: str
    source: RunRecord | EvalRecord


def model_short(model_id: str | None) -> str:
    """`Qwen/Qwen2.5-7B-Instruct` -> `Qwen2.5-7B-Instruct`; a local path -> its folder name."""
    if not model_id:
        return "unknown model"
    return Path(model_id.rstrip("/")).name or model_id


def variant(config: dict) -> str:
    """The paper's name for a run's switches; `unknown variant` when the run did not record them."""
    if not all(isinstance(config.get(s), bool) for s in SWITCHES):
        return "unknown variant"
    off = [s for s in SWITCHES if not config[s]]
    if not off:
        return "SEAL"
    if len(off) == len(SWITCHES):
        return "vanilla RL"
    if len(off) == 1:
        return _ONE_OFF[off[0]]
    return "w/o " + " + ".join(_ONE_OFF[s].removeprefix("w/o ") for s in off)


def run_name(run: RunRecord) -> str:
    kind = variant(run.config)
    return f"{run.path.name if kind == 'unknown variant' else kind} · {model_short(run.config.get('model'))}"


def eval_name(evaluation: EvalRecord) -> str:
    r = evaluation.results
    adapter = "base" if r.adapter is None else r.adapter.ref
    shown = "" if r.interface.version == "v0" or r.interface.ref == "null" else f" (interface {r.interface.version})"
    return f"{model_short(r.model.id)} · {adapter}{shown}"


def derived_name(source: RunRecord | EvalRecord) -> str:
    return run_name(source) if isinstance(source, RunRecord) else eval_name(source)


def name_sources(sources: Sequence[tuple[str | None, RunRecord | EvalRecord]]) -> list[Named]:
    """Names for (override or None, source) pairs: overrides kept, derived names made unique by directory."""
    names = [given or derived_name(source) for given, source in sources]
    derived = Counter(names)
    for i, (given, source) in enumerate(sources):
        if given is None and derived[names[i]] > 1:
            names[i] = f"{names[i]} [{source.path.name}]"
    counts, seen = Counter(names), Counter()
    for i, name in enumerate(list(names)):  # still equal (same directory name twice): number them
        if counts[name] > 1:
            seen[name] += 1
            names[i] = f"{name} #{seen[name]}"
    return [Named(name, source) for name, (_, source) in zip(names, sources, strict=True)]
