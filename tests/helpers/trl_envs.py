"""Setups written the way TRL 1.16's docs write them for `GRPOTrainer(environment_factory=..., reward_funcs=...,
tools=...)`, for tests/test_trl_contract.py and the SealTrainer tests: a counter whose score a reward function reads
off the instances, a pair of environments for a dict of factories, async tools and rewards, a dataset-free game
whose `reset` makes the prompt, plain tool functions, and one bad reward function per way a reward can fail."""

from __future__ import annotations

import asyncio
import functools
import random
import time


class Counter:
    """Count up to the row's `goal`; `score` is how close the count came (TRL's examples read it in a reward
    function: `[env.score for env in environments]`); no `get_reward`."""

    def reset(self, goal: int = 1, **row) -> str:
        self.goal, self.count = goal, 0
        return f" (goal: {goal})"

    def increment(self, by: int = 1) -> str:
        """Add to the count.

        Args:
            by: how much to add
        """
        self.count += by
        return f"count: {self.count}"

    @property
    def score(self) -> float:
        return 1.0 if self.count == self.goal else 0.0


def counter_reward(environments, **kwargs) -> list[float]:
    """TRL's example form: the score each environment instance holds."""
    return [env.score for env in environments]


def make_counter() -> Counter:
    """A factory function (TRL takes any zero-argument callable)."""
    return Counter()


class Lamp:
    """One environment of a dict of factories: turn the lamp on."""

    def reset(self, **row) -> None:
        self.row, self.on = row, False

    def switch_on(self) -> str:
        """Turn the lamp on."""
        self.on = True
        return "on"

    def get_reward(self) -> float:
        return float(self.on)


class Safe:
    """The other environment of the dict: open the safe with the row's code."""

    def reset(self, code: str = "", **row) -> None:
        self.code, self.opened, self.row = code, False, row

    def open_safe(self, code: str) -> str:
        """Try a code.

        Args:
            code: the code to try
        """
        self.opened = code == self.code
        return "open" if self.opened else "wrong code"

    def get_reward(self) -> float:
        return float(self.opened)


ROOMS = {"lamp": Lamp, "safe": Safe}  # `--environment helpers.trl_envs:ROOMS`


class AsyncShop:
    """Async tools and an async `get_reward`, as TRL 1.16 accepts them; the loop they share persists."""

    def reset(self, **row) -> None:
        self.basket: list[str] = []
        self.loop = None

    async def buy(self, item: str) -> str:
        """Put an item in the basket.

        Args:
            item: what to buy
        """
        await asyncio.sleep(0.01)
        self.loop = asyncio.get_running_loop()
        self.basket.append(item)
        return f"bought {item}"

    async def wait(self, seconds: float) -> str:
        """Wait.

        Args:
            seconds: how long
        """
        await asyncio.sleep(seconds)
        return "waited"

    async def get_reward(self) -> float:
        await asyncio.sleep(0.01)
        return float(self.basket == ["milk"])


class Guess:
    """A dataset-free game: `reset` draws a secret from Python's `random` and makes the prompt."""

    def reset(self, **row) -> str:
        self.secret = random.randint(1, 1000)
        self.guessed = None
        return f"Guess my number. Hint: it is {self.secret}."

    def guess(self, number: int) -> str:
        """Guess the number.

        Args:
            number: your guess
        """
        self.guessed = number
        return "right" if number == self.secret else "wrong"

    def get_reward(self) -> float:
        return float(self.guessed == self.secret)


def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first number
        b: the second number
    """
    return a + b


def answer_is_5(completions, **kwargs) -> list[float]:
    """A reward over plain-tools rollouts: 1 when the last reply says 5."""
    return [1.0 if "5" in completion[-1]["content"] else 0.0 for completion in completions]


def partial_credit(completions, **kwargs) -> list[float]:
    """A continuous reward (a game score): 0.5 for any reply."""
    return [0.5 for _ in completions]


def not_mine(prompts, **kwargs) -> list[float | None]:
    """TRL's "not mine": None for every rollout."""
    return [None for _ in prompts]


async def async_reward(completions, **kwargs) -> list[float]:
    await asyncio.sleep(0.01)
    return [0.25 for _ in completions]


SEEN: list[dict] = []  # what `recording_reward` was called with


def recording_reward(prompts, completions, completion_ids, trainer_state, environments=None, **kwargs) -> list[float]:
    SEEN.append(
        dict(
            prompts=prompts,
            completions=completions,
            completion_ids=completion_ids,
            trainer_state=trainer_state,
            environments=environments,
            **kwargs,
        )
    )
    return [0.0 for _ in prompts]


# ----- bad reward functions: one per fault -----


def raises(**kwargs):
    raise RuntimeError("judge is down")


def hangs(**kwargs):
    time.sleep(30)
    return [1.0]


def gives_nan(prompts, **kwargs):
    return [float("nan") for _ in prompts]


def gives_string(prompts, **kwargs):
    return ["1.0" for _ in prompts]


def gives_two(prompts, **kwargs):
    return [1.0, 1.0]


def gives_float(prompts, **kwargs):
    return 1.0


PARTIAL_COUNTER = functools.partial(Counter)


STATES: list = []  # the trainer_state each call of `logging_reward` saw


def logging_reward(environments, log_metric, trainer_state, **kwargs) -> list[float]:
    """A reward that logs a metric and reads the trainer's state, as TRL's reward functions may."""
    STATES.append(trainer_state)
    for env in environments:
        log_metric("lamp/on", float(env.on))
    return [float(env.on) for env in environments]
