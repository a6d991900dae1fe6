"""Writes `tasks.jsonl`, the smart home's tasks: one row per request, seeded, so the file is reproducible.

Each row has the columns `SmartHome.reset` takes (`start`, `target`, `expects_call`) plus `id`, `category`,
`prompt` and `reference_calls` (the answer key, step by step: what the SFT warm-up teaches and
`seal-hub eval --model oracle` replays) and `split` (`test` for the rows asked in each list's first phrasing,
never trained on; `train` for the rest). Categories: `light` (switch one light), `temperature` (set one
thermostat), `both` (a light and a thermostat in one request), `relative` (warmer or cooler than now: read the
room first, then set it) and `no_change` (a remark that asks for nothing: no tool call, the home as it was).

    python examples/smart_home/make_tasks.py      # rewrites examples/smart_home/tasks.jsonl
"""

from __future__ import annotations

import json
import random
from pathlib import Path

ROOMS = ("kitchen", "bedroom", "living_room", "office", "bathroom")
SPOKEN = {"living_room": "living room"}
START_TEMPERATURE = 20

LIGHT_ON = (
    "Turn on the {room} light.",
    "Switch the light in the {room} on, please.",
    "It's too dark in the {room}.",
    "Could you light up the {room}?",
    "I need some light in the {room}.",
)
LIGHT_OFF = (
    "Turn off the {room} light.",
    "Switch off the light in the {room}, please.",
    "The {room} light is still on; I'm done in there.",
    "Please turn the {room} light off.",
)
TEMPERATURE = (
    "Set the {room} to {celsius} degrees.",
    "Make the {room} {celsius} degrees Celsius.",
    "I'd like the {room} at {celsius} degrees.",
    "Change the {room} thermostat to {celsius}.",
    "Please heat the {room} to {celsius} degrees.",
)
BOTH = (
    "Turn on the {room} light and set it to {celsius} degrees.",
    "Light up the {room} and make it {celsius} degrees.",
    "I'm going to the {room}: light on and {celsius} degrees, please.",
)
RELATIVE = (
    "Make the {room} {delta} degrees warmer.",
    "Raise the {room} thermostat by {delta} degrees.",
    "The {room} is too warm; lower it by {delta} degrees.",
    "Make the {room} {delta} degrees cooler.",
)
NO_CHANGE = (
    "Thanks, that's all for now.",
    "The {room} looks great as it is.",
    "Good night!",
    "I just got home.",
    "Is it nice weather outside today?",
    "Never mind, leave the {room} as it is.",
)
COUNTS = {"light": 90, "temperature": 90, "both": 45, "relative": 45, "no_change": 45}


def spoken(room: str) -> str:
    return SPOKEN.get(room, room)


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def phrase(templates: tuple[str, ...], rng: random.Random) -> tuple[str, bool]:
    """A template, and whether it is held out: the first template of every list is asked only in the test split,
    so held-out success measures requests phrased in words the model never trained on."""
    index = rng.randrange(len(templates))
    return templates[index], index == 0


def row(category: str, rng: random.Random) -> dict:
    room = rng.choice(ROOMS)
    start: dict = {}
    target: dict = {}
    steps: list[list[dict]] = []
    if category == "light":
        on = rng.random() < 0.6
        template, test = phrase(LIGHT_ON if on else LIGHT_OFF, rng)
        prompt = template.format(room=spoken(room))
        if not on:
            start = {"lights": {room: True}}
        target = {"lights": {room: on}}
        steps = [[call("set_light", room=room, on=on)]]
    elif category in ("temperature", "both"):  # set a thermostat; `both` also turns the light on, in one step
        celsius = rng.choice([c for c in range(16, 27) if c != START_TEMPERATURE])
        template, test = phrase(TEMPERATURE if category == "temperature" else BOTH, rng)
        prompt = template.format(room=spoken(room), celsius=celsius)
        light = category == "both"
        target = {**({"lights": {room: True}} if light else {}), "celsius": {room: celsius}}
        calls = [call("set_light", room=room, on=True)] if light else []
        steps = [[*calls, call("set_temperature", room=room, celsius=celsius)]]
    elif category == "relative":
        now = rng.choice([c for c in range(17, 25) if c != START_TEMPERATURE])
        delta = rng.choice((1, 2, 3))
        template, test = phrase(RELATIVE, rng)
        sign = -1 if ("lower" in template or "cooler" in template) else 1
        prompt = template.format(room=spoken(room), delta=delta)
        start = {"celsius": {room: now}}
        target = {"celsius": {room: now + sign * delta}}
        steps = [[call("get_status", room=room)], [call("set_temperature", room=room, celsius=now + sign * delta)]]
    else:
        template, test = phrase(NO_CHANGE, rng)
        prompt = template.format(room=spoken(room))
    return {
        "category": category,
        "split": "test" if test else "train",
        "prompt": prompt,
        "start": start,
        "target": target,
        "expects_call": category != "no_change",
        "reference_calls": steps,
    }


def tasks(seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    rows = [row(category, rng) for category, count in COUNTS.items() for _ in range(count)]
    return [{"id": f"{r['category']}_{i:03d}", **r} for i, r in enumerate(rows)]


if __name__ == "__main__":
    out = Path(__file__).with_name("tasks.jsonl")
    out.write_text("".join(json.dumps(r) + "\n" for r in tasks()), encoding="utf-8")
    print(f"wrote {out} ({len(tasks())} tasks)")
