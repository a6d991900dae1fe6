"""The replay Space's callbacks through `gradio_client`, against an in-process launch of the Space's app
(seal_hub/replay/space/app.py) on the scripted run in a temporary local registry: browse, filter, step, compare,
live, and bad input in the page."""

from __future__ import annotations

import json
import sys

import pytest
from helpers.space_app import browse, free_port, named, served_app

STEP_FIELDS = ["chat", "shown", "position", "status"]


@pytest.fixture(scope="module")
def space(tmp_path_factory, suite):
    from gradio_client import Client

    env = {"SEAL_REPLAY_LIVE_STEPS": "1"}
    with served_app(tmp_path_factory.mktemp("space"), suite, "seal_replay_app_under_test", env) as (app, url, world):
        yield {"client": Client(url, verbose=False), "app": app, **world}


def text(message: dict) -> str:
    """A chat message's text as the client receives it (Gradio 6 sends content as a list of typed parts)."""
    content = message["content"]
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def test_open_shows_the_latest_iteration_and_its_first_episode_whole(space):
    page = named(space["client"].predict("alice/demo", "", api_name="/open"))
    assert page["status"] == ""
    assert page["iteration"]["value"] == "iter-1" and page["revision"]["value"] == "main"
    assert page["counts"] == "3 of 3 episodes match"
    assert page["summary"].startswith("**multi_turn_base_0** (rollout 0, base) · ✅ passed")
    assert page["position"] == "step 8 of 8 · turn 4 of 4"  # the episode whole, the agent's last answer shown
    assert page["chat"][-1]["role"] == "assistant"
    users = [text(m) for m in page["chat"] if m["role"] == "user"]
    assert users[0].startswith("**Turn 1** · ✅ passed · `pass`") and users[-1].startswith("**Turn 4**")
    assert "#### Interface v1 (parent v0)" in page["shown"]
    tools = json.loads(page["tools"])
    assert tools and any("[required]" in json.dumps(tool) for tool in tools)  # v1's schema cues
    assert "?run=alice%2Fdemo" in page["link"] and "iter=iter-1" in page["link"]


def test_filters_pick_the_failed_episode_and_the_choices_follow(space):
    client = space["client"]
    page = named(client.predict(*browse(client, iteration="iter-0", outcome="failed"), api_name="/show"))
    assert page["task"]["value"] == "multi_turn_base_1" and [c[0] for c in page["task"]["choices"]] == [
        "multi_turn_base_1"
    ]
    assert page["counts"] == "1 of 3 episodes match" and "❌ failed" in page["summary"]
    labels = [c[0] for c in page["label"]["choices"]]
    assert labels == ["all", "missing_tool_call", "pass"]
    page = named(client.predict(*browse(client, iteration="iter-0", search="base_2"), api_name="/show"))
    assert page["task"]["value"] == "multi_turn_base_2"
    page = named(client.predict(*browse(client, iteration="iter-1", outcome="failed"), api_name="/show"))
    assert page["status"] == "⚠️ no episode matches the filters (3 in iter-1)"


def test_stepping_forward_back_first_and_last_walks_the_frames(space):
    client = space["client"]
    chosen = browse(client, iteration="iter-0", task="multi_turn_base_1")
    start = named(client.predict(*chosen, 0, api_name="/first"), STEP_FIELDS)
    one = named(client.predict(*chosen, 0, api_name="/forward"), STEP_FIELDS)
    assert start["position"] == "step 0 of 6 · turn 1 of 4" and one["position"] == "step 1 of 6 · turn 1 of 4"
    assert len(one["chat"]) > len(start["chat"]) and one["chat"][: len(start["chat"])] == start["chat"]
    titles = [(m.get("metadata") or {}).get("title") for m in one["chat"]]
    assert "🛠️ ls()" in titles and "↳ ls returned" in titles
    end = named(client.predict(*chosen, 0, api_name="/last"), STEP_FIELDS)
    assert end["position"] == "step 6 of 6 · turn 4 of 4"
    back = named(client.predict(*chosen, 6, api_name="/back"), STEP_FIELDS)
    assert back["position"] == "step 5 of 6 · turn 4 of 4" and len(back["chat"]) < len(end["chat"])


def test_side_by_side_aligns_two_iterations_of_the_task(space):
    client = space["client"]
    values = client.predict(*browse(client, iteration="iter-0", task="multi_turn_base_1"), "", "", "iter-1", 0,
                            api_name="/compare")  # fmt: skip
    title, alignment, changes, html, status = values
    assert status == "" and title.startswith("**A: alice/demo iter-0 (v0)** vs **B: alice/demo iter-1 (v1)**")
    assert "| 2 | ❌ `missing_tool_call`<br>*no call* | ✅ `pass`" in alignment
    assert "- **~** schema_cues.enabled: off -> on" in changes and "interface v1" in html
    values = client.predict(*browse(client, iteration="iter-0"), "", "", "", 0, api_name="/compare")
    assert values[-1] == "⚠️ choose episode B: another iteration, revision or run"
    values = client.predict(*browse(client, iteration="iter-0"), "alice/ghost", "", "iter-1", 0, api_name="/compare")
    assert values[-1].startswith("⚠️ run 'alice/ghost': no repository")


def test_an_evaluation_directory_compares_with_a_training_iteration(space):
    client = space["client"]
    evaluation = str(space["root"] / "eval")
    page = named(client.predict(evaluation, "", api_name="/open"))
    assert page["status"] == "" and page["iteration"]["value"] == "evaluation"
    values = client.predict(*browse(client, run=evaluation, iteration="evaluation", task="multi_turn_base_1"),
                            "alice/demo", "", "iter-1", 0, api_name="/compare")  # fmt: skip
    assert values[-1] == "" and "B: alice/demo iter-1 (v1)" in values[0]


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ("alice/nothing", "⚠️ run 'alice/nothing': no repository alice/nothing-trajectories in the local registry"),
        ("bad ref!", "⚠️ run 'bad ref!'"),
    ],
)
def test_an_unknown_run_is_a_message_in_the_page(space, run, message):
    page = named(space["client"].predict(run, "", api_name="/open"))
    assert page["status"].startswith(message) and "Traceback" not in page["status"]


def test_an_unknown_revision_or_version_and_a_corrupt_file_are_messages(space, tmp_path):
    client = space["client"]
    page = named(client.predict(*browse(client, rev="iter-9"), api_name="/show"))
    assert page["status"].startswith("⚠️ run 'alice/demo'") and "iter-9" in page["status"]
    page = named(client.predict(*browse(client, version="v7"), api_name="/show"))
    assert page["status"] == "⚠️ environment version 'v7' is not in alice/demo (versions: v0, v1)"
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "trajectories.parquet").write_bytes(b"not parquet at all")
    page = named(client.predict(str(broken), "", api_name="/open"))
    assert page["status"].startswith("⚠️ trajectories.parquet is not a readable Parquet file")
    # the page still works afterwards
    page = named(client.predict("alice/demo", "", api_name="/open"))
    assert page["status"] == "" and page["chat"]


def test_live_streams_steps_and_stops_at_its_limit(space):
    client = space["client"]
    job = client.submit("tiny", "multi_turn_base_0", "v1", "alice/demo", "", api_name="/live")
    updates = list(job)
    statuses = [status for _, status in updates]
    assert statuses[0].startswith("⏳ started: multi_turn_base_0 under interface v1")
    assert statuses[-1].startswith("⏹ stopped: reached the live limit of 1 model steps; episode failed")
    chat = job.outputs()[-1][0]
    assert chat[0]["metadata"]["title"] == "📋 system prompt" and text(chat[1]).startswith("**Turn 1**")
    bad = list(client.submit("tiny", "multi_turn_base_9999", "v0", "alice/demo", "", api_name="/live"))
    assert bad[-1][1] == "⚠️ task 'multi_turn_base_9999' is not a BFCL task"


def test_seal_hub_space_refuses_an_unknown_run_and_a_bad_port_in_one_line(space, capsys):
    from seal_hub.cli import main

    assert main(["space", "--run", "alice/ghost"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seal-hub: error: run 'alice/ghost': no repository alice/ghost-trajectories")
    assert main(["space", "--run", "alice/demo", "--port", "70000"]) == 2
    assert capsys.readouterr().err == "seal-hub: error: --port must be in 1..65535, got 70000\n"
    assert main(["space", "--public"]) == 2
    assert capsys.readouterr().err.startswith("seal-hub: error: --public needs --run NS/RUN")


@pytest.mark.slow
def test_seal_hub_space_serves_the_app_for_a_run(space):
    import os
    import subprocess
    import time
    from urllib.error import URLError
    from urllib.request import urlopen

    from gradio_client import Client

    port = free_port()
    command = [sys.executable, "-m", "seal_hub.cli", "space", "--run", "alice/demo", "--port", str(port)]
    server = subprocess.Popen(command, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            try:
                with urlopen(f"http://127.0.0.1:{port}/", timeout=5):
                    break
            except (URLError, OSError):
                assert server.poll() is None, server.stdout.read().decode()[-3000:]
                time.sleep(1)
        page = named(Client(f"http://127.0.0.1:{port}/", verbose=False).predict("alice/demo", "", api_name="/open"))
        assert page["status"] == "" and page["counts"] == "3 of 3 episodes match"
    finally:
        server.terminate()
        server.wait(timeout=30)
