"""The replay Space in deployed mode, as a stranger would try it: host paths, traversal, long strings, unknown and
oversized references, Hub ids outside the allowlist, through `gradio_client` against an in-process launch of
seal_hub/replay/space/app.py. Every refusal is one line, names no host path, repeats at most a short prefix of the
input, and loads nothing; what the deployed run offers still works. Also: the loaded-policy LRU, the per-visitor live
slot, the visitor rules and the deep link to a task the run does not hold."""

from __future__ import annotations

import copy
import json
import os
import re
import threading
from types import SimpleNamespace

import pytest
from helpers.space_app import FIELDS, browse, named, served_app

from seal_hub.replay.episodes import ReplayError

LONG = "x" * 3000
ABSOLUTE = re.compile(r"(?<![\w:/.~-])/(?:etc|tmp|root|home|usr|proc|var|work)\b")


@pytest.fixture(scope="module")
def deployed(tmp_path_factory, suite):
    from gradio_client import Client

    env = {"SEAL_REPLAY_PUBLIC": "1", "SEAL_REPLAY_POLICIES": "tiny", "SEAL_REPLAY_LIVE_STEPS": "1"}
    with served_app(tmp_path_factory.mktemp("hostile"), suite, "seal_replay_app_hostile", env) as (app, url, world):
        yield {"client": Client(url, verbose=False), "app": app, **world}


def assert_quiet(reply, world, status: str) -> None:
    """One ⚠️ line, no host path anywhere in the reply, no more than a short prefix of a long input."""
    dumped = json.dumps(reply, ensure_ascii=False)
    assert status.startswith("⚠️ ") and "\n" not in status and len(status) <= 250, status
    for folder in (str(world["root"]), os.path.expanduser("~"), os.getcwd(), str(world["tiny"])):
        assert folder not in dumped
    assert not ABSOLUTE.search(dumped), status
    assert "x" * 40 not in dumped and "Traceback" not in dumped


HOSTILE_RUNS = [
    ("/etc", "this Space opens published runs (NS/RUN such as alice/RUN), not directories"),
    ("../../../etc/passwd", "not directories"),
    ("~/.ssh", "not directories"),
    ("alice/../../etc", "not directories"),
    (LONG, "is 3000 characters long; at most 120 are read"),
    ("bob/secret", "'bob/secret' is not offered here (runs of: alice)"),
    ("hf://alice/demo", "this Space reads runs from the local registry only"),
    ("alice/demo@" + "9" * 100, "revision: not a revision name"),
    ("bad ref!", "'bad ref!' is not a run reference (NS/RUN)"),
    ("alice/ghost", "run 'alice/ghost': no repository alice/ghost-trajectories"),
    ("meta-llama/Llama-3.1-70B-Instruct", "is not offered here (runs of: alice)"),
]


@pytest.mark.parametrize(("run", "message"), HOSTILE_RUNS)
def test_a_hostile_run_is_refused_in_one_quiet_line(deployed, run, message):
    page = named(deployed["client"].predict(run, "", api_name="/open"))
    assert message in page["status"]
    assert_quiet(page, deployed, page["status"])


def test_the_directories_local_mode_opens_are_refused(deployed):
    evaluation = str(deployed["root"] / "eval")
    page = named(deployed["client"].predict(evaluation, "", api_name="/open"))
    assert page["status"] == "⚠️ run: this Space opens published runs (NS/RUN such as alice/RUN), not directories"
    values = deployed["client"].predict(*browse(None, iteration="iter-0"), evaluation, "", "iter-0", 0,
                                        api_name="/compare")  # fmt: skip
    assert "not directories" in values[-1] and "B: run" in values[-1]
    assert_quiet(values, deployed, values[-1])


@pytest.mark.parametrize(
    ("chosen", "message"),
    [
        ({"task": LONG}, "task 'xxxx"),
        ({"search": LONG}, "search 'xxxx"),
        ({"iteration": "../" * 30}, "iteration '[path]' is not in alice/demo"),
        ({"rollout": "9" * 5000}, "rollout '9999"),
        ({"rollout": "; rm -rf /"}, "rollout '; rm -rf /' is not a number"),
        ({"rev": "../../etc"}, "revision: not a revision name (letters, digits"),
        ({"rev": "iter-9"}, "iter-9"),
        ({"version": "v" + "9" * 200}, "version 'v999"),
    ],
)
def test_hostile_browse_fields_are_refused_in_one_quiet_line(deployed, chosen, message):
    page = named(deployed["client"].predict(*browse(None, **chosen), api_name="/show"))
    assert message in page["status"]
    assert_quiet(page, deployed, page["status"])


@pytest.mark.parametrize(
    ("policy", "task", "message"),
    [
        ("/etc", "multi_turn_base_0", "policy '/etc' is not offered here (choose one of: tiny)"),
        ("meta-llama/Llama-3.1-70B-Instruct", "multi_turn_base_0", "is not offered here (choose one of: tiny)"),
        ("local://alice/demo-adapter@iter-0", "multi_turn_base_0", "is not offered here"),
        ("../../tiny", "multi_turn_base_0", "is not offered here"),
        (LONG, "multi_turn_base_0", "is 3000 characters long"),
        ("tiny", LONG, "task 'xxxx"),
        ("tiny", "multi_turn_base_9999", "task 'multi_turn_base_9999' is not a BFCL task"),
    ],
)
def test_hostile_live_requests_load_nothing(deployed, policy, task, message):
    client, app = deployed["client"], deployed["app"]
    updates = list(client.submit(policy, task, "v1", "alice/demo", "", api_name="/live"))
    status = updates[-1][1]
    assert message in status.replace("[path]", "/etc")
    assert_quiet(updates, deployed, status)
    assert app.SPACE.live.policies.names() == []  # nothing was loaded


def test_the_deployed_run_and_its_policy_still_work(deployed):
    client = deployed["client"]
    page = named(client.predict("alice/demo", "", api_name="/open"))
    assert page["status"] == "" and page["counts"] == "3 of 3 episodes match"
    updates = list(client.submit("tiny", "multi_turn_base_0", "v1", "alice/demo", "", api_name="/live"))
    assert updates[-1][1].startswith("⏹ stopped: reached the live limit of 1 model steps")
    assert deployed["app"].SPACE.live.policies.names() == ["tiny"]
    assert {run for run, _ in deployed["app"].SPACE.viewer._sources} == {"alice/demo"}  # nothing else opened


def test_a_deep_link_to_a_missing_task_opens_the_run_and_says_which_task(deployed):
    app = deployed["app"]
    request = SimpleNamespace(query_params={"run": "alice/demo", "iter": "iter-1", "task": "multi_turn_base_77"})
    reply = app.PAGE.on_load(request)
    page = {name: reply.get(widget) for name, widget in zip(FIELDS, app.PAGE.shown_outputs, strict=False)}
    status = reply[app.PAGE.status]
    assert status == "⚠️ task 'multi_turn_base_77' is not in alice/demo iter-1 today; showing multi_turn_base_0 instead"
    assert page["task"]["value"] == "multi_turn_base_0" and page["iteration"]["value"] == "iter-1"
    assert page["chat"] and page["counts"] == "3 of 3 episodes match"
    hostile = app.PAGE.on_load(SimpleNamespace(query_params={"run": "/etc", "task": LONG}))
    status = hostile[app.PAGE.status]
    assert status == "⚠️ run: this Space opens published runs (NS/RUN such as alice/RUN), not directories"
    assert_quiet(status, deployed, status)


def test_the_policy_lru_is_bounded_by_count_and_bytes_and_loads_once():
    import torch

    from seal_hub.replay.policies import PolicyCache

    sizes = {"a": 1000, "b": 1000, "c": 2000, "huge": 10_000}  # float32 parameters
    loads: list[str] = []

    def load(name):
        loads.append(name)
        return torch.nn.Linear(sizes[name], 1, bias=False), None

    cache = PolicyCache(load, max_count=2, max_bytes=10_000)
    cache.get("a"), cache.get("b"), cache.get("a")
    assert cache.names() == ["b", "a"] and cache.nbytes == 8000
    cache.get("c")  # 8,000 bytes: count and bytes both force evictions, oldest first
    assert cache.names() == ["c"] and cache.nbytes == 8000
    with pytest.raises(ReplayError, match="policy 'huge' holds 0 MB of weights, more than this Space's policy"):
        cache.get("huge")
    assert cache.names() == ["c"]
    threads = [threading.Thread(target=cache.get, args=("a",)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert loads == ["a", "b", "c", "huge", "a"]  # eight concurrent visitors, one load


def test_a_visitor_holds_one_live_episode_at_a_time():
    from seal_hub.replay.live import LiveSlot

    slot = LiveSlot()
    with slot.hold():
        assert slot.busy
        with pytest.raises(ReplayError, match="your live episode is still running"), slot.hold():
            pass
        assert not copy.deepcopy(slot).busy  # a new session's copy is free
    assert not slot.busy


def test_local_mode_keeps_its_freedom_and_deployed_mode_needs_its_lists(tmp_path):
    from seal_hub.replay.access import Access
    from seal_hub.replay.quiet import quiet
    from seal_hub.replay.settings import SpaceSettings

    local = SpaceSettings.read(tmp_path, {}).access()
    assert not local.public and local.run(str(tmp_path)) == str(tmp_path) and local.policy("/models/x") == "/models/x"
    public = SpaceSettings.read(tmp_path, {"SPACE_ID": "alice/replay", "SEAL_REPLAY_RUN": "hf://alice/demo"}).access()
    assert public.public and public.runs == ("alice",) and public.backend == "hub" and public.policies == ("tiny",)
    assert public.run("alice/other@iter-2") == "hf://alice/other@iter-2"
    with pytest.raises(ValueError, match="deployed mode needs the run it shows"):
        SpaceSettings.read(tmp_path, {"SPACE_ID": "alice/replay"})
    with pytest.raises(ValueError, match="a deployed Space needs the runs it may show"):
        Access(public=True)
    with pytest.raises(ValueError, match="SEAL_REPLAY_POLICY_MB='lots' is not a whole number"):
        SpaceSettings.read(tmp_path, {"SEAL_REPLAY_POLICY_MB": "lots"})
    line = quiet(f"cannot read /srv/cache/x.json for {LONG}\nTraceback ...", [LONG])
    assert line == "cannot read [path] for " + "x" * 32 + "…"
    assert quiet("run 'hf://alice/demo' at C:\\Users\\bob\\x: no") == "run 'hf://alice/demo' at [path] no"
