"""GRPOTrainer's arguments as SEAL reads them: what `SealTrainer` refuses (in one line that says why), and a TRL
setup (`environment_factory`, `reward_funcs`, `tools`, `train_dataset`, `eval_dataset`) turned into the suite, the
training tasks and the held-out tasks it trains with (`seal_hub.envs.user.trl_setup.user_suite_from_trl`), with the
`SealConfig` settings that shape them: `reward_weights`, `success_threshold`, and for a dataset-free environment
`max_steps` x the prompts of one step fresh training episodes and `eval_tasks` held-out ones, seeded by `seed`.

Why each refusal: `rollout_func` would run the episodes instead of SEAL's engine, hiding the turns SEAL labels and
reweights; reward models and `reward_processing_classes` score a batch of texts, and SEAL scores each rollout with
functions as its episode ends; `normalize_then_sum` normalises each source over a group, and SEAL sums the
weighted sources per rollout; TRL's own evaluation loop would call the rollout function on `eval_dataset`'s prompts,
where SEAL's held-out evaluation (`eval_every_steps`) scores those rows with its protocol; a plain `GRPOConfig`
lacks SEAL's fields.

A model named by a string is resolved as every seal-hub command resolves one (`trl_model`), so `demo`, `tiny` and the
demo model's Hub id load offline, and a name nothing can serve fails in one line before TRL reads it.

Not covered: the training loop (`seal_hub.training.trainer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seal_hub.envs.suite import Suite, SuiteTask
from seal_hub.training.config import SealConfig


def model_name(model: Any) -> str:
    """A model's name as TRL names a default output_dir: the id's last part, or its config's ``name_or_path``."""
    name = model if isinstance(model, str) else getattr(getattr(model, "config", None), "name_or_path", "") or "model"
    return str(name).rstrip("/").split("/")[-1]


def trl_model(model: Any, args: SealConfig) -> tuple[Any, str | None]:
    """What `model` TRL is given, and the policy's id for SEAL's records (``None`` for a model object).

    A string goes through the resolver every seal-hub command uses (`seal_hub.models.loading.resolve_model_name`):
    `demo`, `tiny`, the demo model's Hub id (from the packaged GGUF when the Hub cannot serve it), any other Hub id
    ('org/name@revision' too) or local path; TRL then loads the resolved directory or id with `model_init_kwargs`
    as it loads any string, their ``revision`` being the resolved one (none for a local directory)."""
    if not isinstance(model, str):
        return model, None
    from seal_hub.models.loading import resolve_model_name

    kwargs = dict(args.model_init_kwargs or {})
    policy_id, resolved = resolve_model_name(model, kwargs.pop("revision", None))
    if resolved.source == "hub" and resolved.revision is not None:
        kwargs["revision"] = resolved.revision
    if kwargs != (args.model_init_kwargs or {}):
        args.model_init_kwargs = kwargs or None
    return resolved.path, policy_id


def refuse_unsupported(args: Any, rollout_func: Any, reward_processing_classes: Any) -> None:
    """GRPOTrainer options SEAL cannot honour, each refused in one line that says why."""
    if not isinstance(args, SealConfig):
        raise TypeError(
            f"args is a {type(args).__name__}: SealTrainer takes a SealConfig (a GRPOConfig with SEAL's fields); "
            "write SealConfig(...) where the script writes GRPOConfig(...)"
        )
    if rollout_func is not None:
        raise ValueError(
            "rollout_func: SEAL runs each episode itself (its turns are what it labels and reweights); a rollout "
            "function would hide them. Give environment_factory, tools and reward_funcs instead"
        )
    if reward_processing_classes is not None:
        raise ValueError(
            "reward_processing_classes: they serve reward models, and SEAL scores each rollout with reward "
            "functions as its episode ends; call a reward model inside a reward function instead"
        )
    if args.multi_objective_aggregation != "sum_then_normalize":
        raise ValueError(
            f"multi_objective_aggregation={args.multi_objective_aggregation!r}: SEAL sums the weighted reward "
            "sources of each rollout as its episode ends (sum_then_normalize); leave it at that"
        )
    if str(getattr(args.eval_strategy, "value", args.eval_strategy)) != "no":
        raise ValueError(
            f"eval_strategy={args.eval_strategy!s}: SEAL's held-out evaluation replaces TRL's evaluation loop; set "
            "eval_every_steps N (it scores eval_dataset's rows every N steps) and leave eval_strategy 'no'"
        )


def trl_suite(
    args: SealConfig,
    reward_funcs: Any,
    train_dataset: Any,
    eval_dataset: Any,
    tools: Any,
    environment_factory: Any,
    train_tasks: Any,
    held_out_tasks: Any,
) -> tuple[Suite, Sequence[SuiteTask], Sequence[SuiteTask]]:
    """The suite of TRL's arguments (`user_suite_from_trl`): its training tasks (unless given) and held-out tasks
    (eval_dataset's rows or seeded episodes, unless given). `reward_weights` are read here and cleared from `args`:
    TRL's own check counts them against the trainer's one internal reward (the episode's)."""
    from seal_hub.envs.user.trl_setup import user_suite_from_trl

    if environment_factory is None and not tools:
        raise ValueError(
            "SealTrainer trains tool use: give environment_factory (TRL's environment class) or tools (plain "
            "functions) with your reward_funcs, or suite= for a built-in suite"
        )
    weights, args.reward_weights = args.reward_weights, None
    steps = args.max_steps if args.max_steps > 0 else 0
    setup = user_suite_from_trl(
        environment_factory,
        reward_funcs,
        tools,
        train_dataset,
        eval_dataset,
        reward_weights=weights,
        success_threshold=args.success_threshold,
        train_episodes=steps * (args.generation_batch_size // args.num_generations),
        held_out_episodes=args.eval_tasks,
        episode_seed=args.seed,
    )
    return (
        setup.suite,
        list(train_tasks) if train_tasks is not None else list(setup.train_tasks),
        list(held_out_tasks) if held_out_tasks is not None else list(setup.held_out_tasks),
    )
