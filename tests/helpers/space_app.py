"""The replay Space's app as the tests drive it: the app file loaded as a module, served in this process on the
scripted run (`helpers.replay_data.replay_world`), and what its endpoints return through `gradio_client`, by name."""

from __future__ import annotations

import importlib.util
import socket
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from helpers.paths import ROOT
from helpers.replay_data import replay_world

APP = ROOT / "spaces" / "replay" / "app.py"  # the Space repository's app, as `seal-hub space` serves it
# what /open and /show return, in order (the frame is session state, not an output)
FIELDS = [
    "revision", "iteration", "version", "label", "category", "task", "rollout", "counts", "summary", "chat",
    "shown", "position", "link", "status", "compare_title", "tools",
]  # fmt: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def load_app(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def named(values, fields=FIELDS) -> dict:
    assert len(values) == len(fields)
    return dict(zip(fields, values, strict=True))


def browse(client, **chosen):
    values = {
        "run": "alice/demo", "rev": "", "iteration": "", "version": "episode's own", "label": "all",
        "category": "all", "outcome": "all", "search": "", "task": "", "rollout": "0",
    } | chosen  # fmt: skip
    return list(values.values())


@contextmanager
def served_app(
    root: Path,
    suite,
    name: str,
    env: Mapping[str, str] | None = None,
    styled: bool = False,
    run: str | None = "alice/demo",
) -> Iterator[tuple[Any, str, dict]]:
    """The app (module `name`) on the scripted run ``alice/demo`` in `root`, launched on a free loopback port with
    `env` set and the session's `suite` shared with its viewer; yields the app, its URL and the run's world.
    `styled`: with the app's CSS and theme, as `seal-hub space` serves it (what a browser test looks at); `run`
    None: served with no run given, as `seal-hub space` without --run."""
    with pytest.MonkeyPatch.context() as patch:
        world = replay_world(root, suite, patch)
        if run is None:
            patch.delenv("SEAL_REPLAY_RUN", raising=False)
        else:
            patch.setenv("SEAL_REPLAY_RUN", run)
        for key, value in (env or {}).items():
            patch.setenv(key, value)
        app = load_app(APP, name)
        app.SPACE.viewer.add_suite(suite)
        port = free_port()
        style = {"css": app.CSS, "theme": app.THEME} if styled else {}
        app.demo.launch(prevent_thread_lock=True, ssr_mode=False, quiet=True, server_port=port, **style)
        try:
            yield app, f"http://127.0.0.1:{port}/", world
        finally:
            app.demo.close()
            sys.modules.pop(name, None)
