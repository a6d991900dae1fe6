"""A small smart home, written the way TRL's `GRPOTrainer(environment_factory=...)` takes an environment.

Its public methods are the tools (their names, type hints and docstrings are the schemas the model sees),
`reset(**row)` starts an episode from one row of `tasks.jsonl`, and `get_reward()` scores the finished episode
from the home's state: 1.0 when every device the row's `target` names is as asked and nothing else changed,
0.0 otherwise; a request that asks for nothing (`expects_call` false) also scores 0.0 if a tool was called, so a
model is not paid for fiddling with the home unasked. Nothing here knows seal_hub; the same class trains
unchanged under TRL.

A task asks for a change in plain words ("Make the office 23 degrees", "It's too dark in the kitchen") or for
none at all ("Thanks, that's all": `expects_call` false, the home must stay as it was). Tools refuse a room
that does not exist or a temperature out of range with a `ValueError` whose message lists what is valid, so a
model can recover in the next step.
"""

from __future__ import annotations

from typing import Literal

Room = Literal["kitchen", "bedroom", "living_room", "office", "bathroom"]
ROOMS: tuple[str, ...] = ("kitchen", "bedroom", "living_room", "office", "bathroom")
START_TEMPERATURE = 20
LOWEST, HIGHEST = 10, 30


class SmartHome:
    """Five rooms, each with a light and a thermostat; a task's row says how they start."""

    def reset(
        self, start: dict | None = None, target: dict | None = None, expects_call: bool = True, **row
    ) -> str | None:
        """Start an episode: every light off and every thermostat at 20, except what `start` says; `target` is
        the state the task asks for. Both read {"lights": {room: bool}, "celsius": {room: int}}; a device they do
        not name stays as it started. `expects_call` false: the request asks for no tool at all."""
        start = start or {}
        self.start = {
            "lights": {**dict.fromkeys(ROOMS, False), **start.get("lights", {})},
            "celsius": {**dict.fromkeys(ROOMS, START_TEMPERATURE), **start.get("celsius", {})},
        }
        self.lights = dict(self.start["lights"])
        self.celsius = dict(self.start["celsius"])
        self.target = target or {}
        self.expects_call = expects_call
        self.calls = 0
        return None

    def set_light(self, room: Room, on: bool) -> str:
        """Turn the light of one room on or off.

        Args:
            room: The room whose light to switch.
            on: True to turn the light on, False to turn it off.
        """
        self._called(room)
        self.lights[room] = bool(on)
        return f"The {room} light is now {'on' if on else 'off'}."

    def set_temperature(self, room: Room, celsius: int) -> str:
        """Set the thermostat of one room.

        Args:
            room: The room whose thermostat to set.
            celsius: The temperature in degrees Celsius, from 10 to 30.
        """
        self._called(room)
        if not isinstance(celsius, int) or isinstance(celsius, bool) or not LOWEST <= celsius <= HIGHEST:
            raise ValueError(f"celsius must be a whole number from {LOWEST} to {HIGHEST}, got {celsius!r}")
        self.celsius[room] = celsius
        return f"The {room} thermostat is now set to {celsius} degrees."

    def get_status(self, room: Room) -> str:
        """Read the light and the thermostat of one room.

        Args:
            room: The room to read.
        """
        self._called(room)
        light = "on" if self.lights[room] else "off"
        return f"The {room} light is {light} and the thermostat is at {self.celsius[room]} degrees."

    def get_reward(self) -> float:
        """1.0 when the home is exactly in the target state (named devices as asked, the rest as they started) and,
        for a request that asks for nothing, no tool was called."""
        if not self.expects_call and self.calls:
            return 0.0
        lights = {**self.start["lights"], **self.target.get("lights", {})}
        celsius = {**self.start["celsius"], **self.target.get("celsius", {})}
        return float(self.lights == lights and self.celsius == celsius)

    def _called(self, room: str) -> None:
        """Count a call into the home (for the reward), and refuse a room that does not exist."""
        self.calls += 1
        if room not in ROOMS:
            raise ValueError(f"there is no room {room!r}; the rooms are: {', '.join(ROOMS)}")
