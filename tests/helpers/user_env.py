"""Environments in TRL's `environment_factory` form that seal_hub has never seen, for tests/test_user_env.py: a
pantry to stock (the good one) and one bad environment per way an environment can misbehave; and their JSONL."""

from __future__ import annotations

import json
import time
from enum import Enum
from pathlib import Path
from typing import Literal


class OutOfStock(Exception):  # noqa: N818 -- an environment's own exception, named as a user would
    """The pantry holds fewer of that item than asked for."""


class Shelf(Enum):
    TOP = "top"
    BOTTOM = "bottom"


class Pantry:
    """Stock a pantry until it holds the row's `target` counts; the reward is 1 when it does, else 0."""

    def reset(self, target: dict | None = None, start: dict | None = None, **row) -> str:
        self.items = dict(start or {})
        self.target = dict(target or {})
        return f" (pantry now: {json.dumps(self.items, sort_keys=True)})"

    def add_item(self, name: str, count: int = 1, shelf: Shelf = Shelf.TOP) -> str:
        """Put items in the pantry.

        Args:
            name: the item's name
            count: how many to add
            shelf: where they go
        """
        self.items[name] = self.items.get(name, 0) + int(count)
        return f"{name}: {self.items[name]}"

    def take_item(self, name: str, count: int = 1) -> dict:
        """Take items out of the pantry.

        Args:
            name: the item's name
            count: how many to take
        """
        if name not in self.items:
            raise KeyError(name)
        if self.items[name] < count:
            raise OutOfStock(f"only {self.items[name]} {name} left")
        self.items[name] -= count
        return {"name": name, "left": self.items[name]}

    def weigh(self, unit: Literal["g", "kg"]) -> float:
        """The pantry's weight (every item weighs 100 g).

        Args:
            unit: the unit of the answer
        """
        grams = 100.0 * sum(self.items.values())
        return grams if unit == "g" else grams / 1000

    def get_reward(self) -> float:
        return 1.0 if all(self.items.get(k, 0) == v for k, v in self.target.items()) else 0.0

    def _helper(self) -> None:  # private: not a tool
        raise AssertionError("never offered")


PANTRY = "helpers.user_env:Pantry"
PANTRY_ROWS = (
    [
        {"id": f"stock-{i}", "prompt": f"Put {i} apples in the pantry.", "target": {"apple": i}, "category": "stock"}
        for i in range(1, 5)
    ]
    + [
        {
            "id": f"take-{i}",
            "prompt": [
                {"role": "system", "content": "You keep a pantry."},
                {"role": "user", "content": "Take one pear."},
            ],
            "start": {"pear": i},
            "target": {"pear": i - 1},
            "category": "take",
        }
        for i in range(1, 5)
    ]
    + [{"id": "chat", "prompt": "Say hello.", "expects_call": False, "category": "chat"}]
)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


# ----- bad environments: one per fault -----


class _Base:
    def reset(self, **row) -> None:
        self.row = row

    def get_reward(self) -> float:
        return 0.0


class Raises(_Base):
    def explode(self) -> str:
        """Always raises."""
        raise ValueError("the tool broke")


class Hangs(_Base):
    def wait(self, seconds: float) -> str:
        """Sleeps.

        Args:
            seconds: how long
        """
        time.sleep(seconds)
        return "woke up"


class NotText(_Base):
    def numbers(self) -> dict:
        """A dict."""
        return {"a": [1, 2.5, None]}

    def thing(self) -> object:
        """An object JSON cannot write."""
        return object()

    def huge(self) -> str:
        """Half a million characters."""
        return "x" * 500_000


class Prints(_Base):
    def chatty(self) -> str:
        """Prints, then returns."""
        print("DEBUG from the tool")
        return "quiet result"


MODULE_LOG: list[str] = []  # module state the class mutates: shared between episodes, as under TRL


class Stateful(_Base):
    def reset(self, **row) -> None:
        self.notes: list[str] = []
        self.row = row

    def note(self, text: str) -> int:
        """Keep a note.

        Args:
            text: the note
        """
        self.notes.append(text)
        MODULE_LOG.append(text)
        return len(self.notes)

    def get_reward(self) -> float:
        return float(len(self.notes) == 1)


class ResetFails(_Base):
    def reset(self, **row) -> None:
        if row.get("id") == "bad":
            raise RuntimeError("row bad cannot start")
        self.row = row

    def ping(self) -> str:
        """Pong."""
        return "pong"

    def get_reward(self) -> float:
        return 1.0


class BadReward(_Base):
    def ping(self) -> str:
        """Pong."""
        return "pong"

    def get_reward(self):
        kind = self.row.get("reward")
        if kind == "raise":
            raise ZeroDivisionError("no score")
        return {"nan": float("nan"), "string": "1.0", "none": None}.get(kind, 0.5)


class NoDocstring(_Base):
    def tool(self, x):
        return x
