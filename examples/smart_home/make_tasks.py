"""Writes `tasks.jsonl`, the smart home's tasks: one row per request, seeded, so the file is reproducible.

Each row has the columns `SmartHome.reset` takes (`start`, `target`, `expects_call`) plus `id`, `category`,
`prompt` and `reference_calls` (the answer key, step by step: what the SFT warm-up teaches and
`seal-hub eval --model oracle` replays) and `split`. Categories: `light` (switch one light), `temperature` (set one
thermostat), `both` (a light and a thermostat in one request), `relative` (warmer or cooler than now: read the
room first, then set it) and `no_change` (a remark that asks for nothing: no tool call, the home as it was).

Three splits, so that a learning curve can be read without touching what it is judged on:
- `test` (`TEST_COUNTS`, 300 rows): every request worded with a template no other row uses (each list's `test`
  templates), and temperatures and steps no training row asks for (`TEST_CELSIUS`, `TEST_DELTAS`); no two test rows
  ask the same thing (prompt and starting state). Read once per trained policy, at the end.
- `dev` (`DEV_PER_CATEGORY` a category): cut from the rows worded like training rows, never trained on; what
  learning curves and every choice of setting read.
- `train`: the rest.

    python examples/smart_home/make_tasks.py      # rewrites examples/smart_home/tasks.jsonl
"""

from __future__ import annotations

import json
import random
from pathlib import Path

ROOMS = ("kitchen", "bedroom", "living_room", "office", "bathroom")
SPOKEN = {"living_room": "living room"}
START_TEMPERATURE = 20
TRAIN_CELSIUS = tuple(c for c in range(16, 27) if c != START_TEMPERATURE)
TEST_CELSIUS = tuple(c for c in range(12, 30) if c != START_TEMPERATURE)  # 12-15 and 27-29: never trained on
TRAIN_DELTAS, TEST_DELTAS = (1, 2, 3), (1, 2, 3, 4)  # a 4-degree step: never trained on

# Each list: (training templates, test templates). A template is worded once, in one split.
LIGHT_ON = (
    (
        "Switch the light in the {room} on, please.",
        "It's too dark in the {room}.",
        "Could you light up the {room}?",
        "I need some light in the {room}.",
        "Lights on in the {room}.",
    ),
    (
        "Turn on the {room} light.",
        "Can you switch on the {room} light for me?",
        "I can't see a thing in the {room}, put the light on.",
        "Please make the {room} bright.",
        "The {room} needs its light on.",
        "Get the light going in the {room}.",
    ),
)
LIGHT_OFF = (
    (
        "Switch off the light in the {room}, please.",
        "The {room} light is still on; I'm done in there.",
        "Please turn the {room} light off.",
        "Lights off in the {room}.",
    ),
    (
        "Turn off the {room} light.",
        "Kill the light in the {room}.",
        "No one is in the {room}, switch its light off.",
        "Can you put the {room} light out?",
        "I'm leaving the {room}; light off please.",
        "Darken the {room}.",
    ),
)
TEMPERATURE = (
    (
        "Make the {room} {celsius} degrees Celsius.",
        "I'd like the {room} at {celsius} degrees.",
        "Change the {room} thermostat to {celsius}.",
        "Please heat the {room} to {celsius} degrees.",
        "Thermostat in the {room}: {celsius}.",
    ),
    (
        "Set the {room} to {celsius} degrees.",
        "Could you put the {room} thermostat on {celsius} degrees?",
        "I want the {room} at exactly {celsius} degrees Celsius.",
        "Adjust the {room} temperature to {celsius}.",
    ),
)
BOTH = (
    (
        "Light up the {room} and make it {celsius} degrees.",
        "I'm going to the {room}: light on and {celsius} degrees, please.",
        "Switch on the {room} light and set the thermostat there to {celsius}.",
    ),
    (
        "Turn on the {room} light and set it to {celsius} degrees.",
        "Please get the {room} ready: the light on and the heating at {celsius} degrees.",
        "{celsius} degrees and the light on in the {room}, please.",
    ),
)
WARMER = (
    ("Make the {room} {delta} degrees warmer.", "Raise the {room} thermostat by {delta} degrees."),
    ("Turn the {room} up by {delta} degrees.", "The {room} feels cold; bump it up {delta} degrees."),
)
COOLER = (
    ("The {room} is too warm; lower it by {delta} degrees.", "Make the {room} {delta} degrees cooler."),
    ("Turn the {room} down by {delta} degrees.", "Cool the {room} off by {delta} degrees, please."),
)
NO_CHANGE = (
    (
        "Thanks, that's all for now.",
        "The {room} looks great as it is.",
        "Good night!",
        "I just got home.",
        "Is it nice weather outside today?",
        "Never mind, leave the {room} as it is.",
    ),
    (
        "Hello there!",
        "What a long day it has been.",
        "Don't change anything in the {room}.",
        "The {room} is just right, thank you.",
        "I'm only checking in, nothing to do.",
        "Keep the {room} the way it is.",
        "Forget what I said about the {room}.",
        "I love how the {room} looks today.",
        "Nothing needed in the {room} right now.",
        "I'll be in the {room} later.",
        "My friend painted the {room} last week.",
        "The {room} is my favourite room.",
        "Leave the {room} alone tonight.",
        "Thank you, goodbye!",
        "I'm heading out for a walk.",
    ),
)
TRAIN_COUNTS = {"light": 90, "temperature": 90, "both": 45, "relative": 45, "no_change": 45}
TEST_COUNTS = {"light": 60, "temperature": 75, "both": 60, "relative": 60, "no_change": 45}
DEV_PER_CATEGORY = 15


def spoken(room: str) -> str:
    return SPOKEN.get(room, room)


def call(name: str, **arguments) -> dict:
    return {"name": name, "arguments": arguments}


def row(category: str, rng: random.Random, test: bool) -> dict:
    """One request of `category`, worded with a template of the training or the test side of its list."""
    side = 1 if test else 0
    room = rng.choice(ROOMS)
    start: dict = {}
    target: dict = {}
    steps: list[list[dict]] = []
    celsius = rng.choice(TEST_CELSIUS if test else TRAIN_CELSIUS)
    if category == "light":
        on = rng.random() < 0.6
        prompt = rng.choice((LIGHT_ON if on else LIGHT_OFF)[side]).format(room=spoken(room))
        if not on:
            start = {"lights": {room: True}}
        target = {"lights": {room: on}}
        steps = [[call("set_light", room=room, on=on)]]
    elif category in ("temperature", "both"):  # set a thermostat; `both` also turns the light on, in one step
        templates = (TEMPERATURE if category == "temperature" else BOTH)[side]
        prompt = rng.choice(templates).format(room=spoken(room), celsius=celsius)
        light = category == "both"
        target = {**({"lights": {room: True}} if light else {}), "celsius": {room: celsius}}
        calls = [call("set_light", room=room, on=True)] if light else []
        steps = [[*calls, call("set_temperature", room=room, celsius=celsius)]]
    elif category == "relative":
        now = rng.choice([c for c in range(17, 25) if c != START_TEMPERATURE])
        delta = rng.choice(TEST_DELTAS if test else TRAIN_DELTAS)
        sign = rng.choice((-1, 1))
        prompt = rng.choice((WARMER if sign > 0 else COOLER)[side]).format(room=spoken(room), delta=delta)
        start = {"celsius": {room: now}}
        target = {"celsius": {room: now + sign * delta}}
        steps = [[call("get_status", room=room)], [call("set_temperature", room=room, celsius=now + sign * delta)]]
    else:
        prompt = rng.choice(NO_CHANGE[side]).format(room=spoken(room))
    return {
        "category": category,
        "prompt": prompt,
        "start": start,
        "target": target,
        "expects_call": category != "no_change",
        "reference_calls": steps,
    }


def test_rows(category: str, count: int, rng: random.Random) -> list[dict]:
    """`count` distinct test requests of `category` (greedy decoding answers a repeated request the same way, so a
    repeat would count one outcome twice)."""
    rows: dict[str, dict] = {}
    for _ in range(100 * count):
        if len(rows) == count:
            break
        made = row(category, rng, test=True)
        rows.setdefault(json.dumps([made["prompt"], made["start"]]), made)
    if len(rows) < count:
        raise ValueError(f"{category}: {len(rows)} distinct test requests, {count} asked; add test templates")
    return list(rows.values())


def tasks(seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for category, count in TRAIN_COUNTS.items():
        rows = [row(category, rng, test=False) for _ in range(count)]
        dev = set(rng.sample(range(count), DEV_PER_CATEGORY))
        out += [{**r, "split": "dev" if i in dev else "train"} for i, r in enumerate(rows)]
    for category, count in TEST_COUNTS.items():
        out += [{**r, "split": "test"} for r in test_rows(category, count, rng)]
    counters: dict[str, int] = {}
    numbered = []
    for r in out:
        index = counters[r["category"]] = counters.get(r["category"], -1) + 1
        numbered.append({"id": f"{r['category']}_{index:03d}", "category": r["category"], "split": r["split"], **r})
    return numbered


if __name__ == "__main__":
    out = Path(__file__).with_name("tasks.jsonl")
    made = tasks()
    out.write_text("".join(json.dumps(r) + "\n" for r in made), encoding="utf-8")
    print(f"wrote {out} ({len(made)} tasks)")
