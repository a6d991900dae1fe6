"""A finished rollout's reward, from the sources TRL 1.16's `GRPOTrainer` reads: the user's `reward_funcs` and each
environment class's `get_reward`.

The sources and their weights are TRL's: every reward function, weighted by `reward_weights` (one per function;
all 1 when unset), then, for each environment class that defines `get_reward`, one more source of weight 1 that
scores only rollouts whose instance is exactly that class (TRL: `type(e) is _env_type`). A source's None means "not
mine" and is left out (TRL turns it into NaN and sums with `nansum`); the reward is the weighted sum of the rest. A
rollout every source leaves out is unscorable: TRL zeroes its advantage; SEAL scores it 0 and says so in one line
(`UNSCORED`, no label: nothing to judge the model by).

A reward function is called as TRL calls it, with lists of one (SEAL scores each rollout as its episode ends, not
a batch at once): `prompts` (the prompt messages, `reset`'s text appended), `completions` (the messages after the
prompt: the model's replies with their `tool_calls`, and the tools' results), `completion_ids` (the token ids of
the model's replies, re-encoded from their text by the tokenizer the trainer gives; [] without one), every dataset
column but `prompt` (a dataset-free environment has none), `trainer_state` (the trainer's `TrainerState`, None
outside training), `log_extra` and `log_metric` (`RewardContext`), and `environments` when the setup has an
environment factory. Sync or async (awaited on `seal_hub.envs.user.calls`' loop), under the call time limit.

A source that raises, runs past the time limit, or returns NaN, a string, no list, or a list of the wrong length
is a fault: the rollout scores 0, its verdict says `REWARD_INVALID` (no label), and one line names the function and
the row. Nothing raises out of here.

Not covered: when a rollout is scored (`seal_hub.envs.user.episode`), what passes (`success_threshold`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from seal_hub.envs.user.calls import as_text, run_limited
from seal_hub.envs.user.factory import Environment, callable_name
from seal_hub.envs.user.load import EnvironmentError

OMITTED_COLUMNS = ("prompt", "completion", "completion_ids")  # the columns TRL does not pass as keywords


@dataclass
class RewardContext:
    """What a reward function receives from the trainer (`trainer_state`, `log_metric`, `log_extra`, the tokenizer
    behind `completion_ids`); the trainer fills it, outside training it stays empty. `log_extra` is accepted and
    dropped: TRL's completions table is per batch, and SEAL's records keep every rollout."""

    trainer_state: Any = None
    log_metric: Callable[[str, float], None] = lambda name, value: None
    log_extra: Callable[[str, list], None] = lambda column, values: None
    tokenizer: Any = None


@dataclass(frozen=True)
class RewardSource:
    """One source: its name (the function's, or the class's for `get_reward`), what to call, its weight, and for a
    `get_reward` source the class whose rollouts it scores."""

    name: str
    function: Callable[..., Any] | None = field(compare=False)
    weight: float = 1.0
    env_class: type | None = None


@dataclass(frozen=True)
class Scored:
    """A rollout's reward: the weighted sum, and the fault line when a source failed or none scored it."""

    reward: float
    fault: str | None = None
    unscored: bool = False
    per_source: Mapping[str, float | None] = field(default_factory=dict)


def reward_sources(
    reward_funcs: Any, environments: Mapping[str | None, Environment], weights: Sequence[float] | None = None
) -> tuple[RewardSource, ...]:
    """TRL's sources, in TRL's order (module docstring); a reward that is not a callable (a reward model's id or
    module: SEAL scores one rollout at a time, as its episode ends) or weights of the wrong number is one line."""
    funcs = (
        []
        if reward_funcs is None
        else list(reward_funcs)
        if isinstance(reward_funcs, list | tuple)
        else [reward_funcs]
    )
    for func in funcs:
        if isinstance(func, str) or not callable(func) or _is_module(func):
            raise EnvironmentError(
                f"reward_funcs: {func!r} is not a reward function; SEAL calls functions (sync or async) with each "
                "finished rollout; reward models (a model id or module) are not supported: call one inside a function"
            )
    if weights is not None and len(weights) != len(funcs):
        raise EnvironmentError(
            f"reward_weights has {len(weights)} weight(s) for {len(funcs)} reward function(s): give one per function"
        )
    sources = [
        RewardSource(callable_name(func), func, float(w))
        for func, w in zip(funcs, weights or [1.0] * len(funcs), strict=True)
    ]
    seen: list[type] = []
    for environment in environments.values():
        if environment.owns_reward and environment.cls not in seen:
            seen.append(environment.cls)
            sources.append(RewardSource(environment.cls.__name__, None, 1.0, environment.cls))
    if not sources:
        raise EnvironmentError(
            "no reward source: pass reward_funcs, or an environment_factory whose environment defines get_reward()"
        )
    return tuple(sources)


def _is_module(func: Any) -> bool:
    try:
        import torch.nn

        return isinstance(func, torch.nn.Module)
    except ImportError:  # pragma: no cover - torch is a dependency
        return False


def _value(value: Any) -> float | None | str:
    """A finite number, None ("not mine"), or why the value is no reward."""
    if value is None:
        return None
    if isinstance(value, numbers.Real):
        number = float(value)
        return number if math.isfinite(number) else f"returned {as_text(repr(value), 60)} (not a finite number)"
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:  # a 0-d tensor or array
        return _value(value.item())
    return f"returned {as_text(repr(value), 60)} (not a finite number)"


def score(
    sources: Sequence[RewardSource],
    *,
    instance: Any,
    has_factory: bool,
    prompt: list[dict[str, Any]],
    completion: list[dict[str, Any]],
    completion_ids: list[int],
    row: Mapping[str, Any],
    context: RewardContext,
    timeout_s: float,
) -> Scored:
    """The rollout's reward from `sources` (module docstring)."""
    kwargs: dict[str, Any] = {key: [value] for key, value in row.items() if key not in OMITTED_COLUMNS}
    kwargs |= {
        "trainer_state": context.trainer_state,
        "log_extra": context.log_extra,
        "log_metric": context.log_metric,
    }
    if has_factory:
        kwargs["environments"] = [instance]
    values: dict[str, float | None] = {}
    total, counted = 0.0, 0
    for source in sources:
        if source.env_class is not None:
            if instance is None or type(instance) is not source.env_class:
                values[source.name] = None
                continue
            outcome = run_limited(instance.get_reward, {}, timeout_s)
            what, raw = "get_reward", [outcome.value]
        else:
            call = {"prompts": [prompt], "completions": [completion], "completion_ids": [completion_ids], **kwargs}
            outcome = run_limited(source.function, call, timeout_s)
            what, raw = f"reward function {source.name}", outcome.value
        if outcome.timed_out:
            return Scored(0.0, f"{what} ran past {timeout_s:g} s", per_source=values)
        if outcome.error is not None:
            message = " ".join(str(outcome.error).split())
            return Scored(
                0.0, f"{what} raised {outcome.error_class}{': ' + message if message else ''}", per_source=values
            )
        if isinstance(raw, str | bytes) or not isinstance(raw, Sequence):
            return Scored(0.0, f"{what} returned {type(raw).__name__}, not a list of one reward per completion")
        if len(raw) != 1:
            return Scored(0.0, f"{what} returned {len(raw)} rewards for 1 completion", per_source=values)
        value = _value(raw[0])
        if isinstance(value, str):
            return Scored(0.0, f"{what} {value}", per_source=values)
        values[source.name] = value
        if value is not None:
            total += source.weight * value
            counted += 1
    if not counted:
        names = ", ".join(source.name for source in sources)
        return Scored(0.0, f"no reward source scored it (every one of {names} returned None)", True, values)
    return Scored(total, per_source=values)
