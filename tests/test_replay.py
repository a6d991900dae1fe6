"""The replay Space's library (`seal_hub.replay`) without a browser: loading runs and directories, filtering,
episodes as chat with frames, what the agent was shown, side-by-side alignment, deep links, and bad input."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers.extras import require_bfcl
from helpers.replay_data import replay_world

from seal_hub.replay import EpisodeFilter, ReplayError, Selection, Viewer, deep_link, open_replay_source
from seal_hub.replay.chat import FAILED, PASSED, render_episode
from seal_hub.replay.compare import align, alignment_markdown, interface_changes, shown_diff_html
from seal_hub.replay.page import EPISODE_VERSION
from seal_hub.replay.shown import agent_view, task_tools


@pytest.fixture(scope="module")
def world(tmp_path_factory, suite):
    with pytest.MonkeyPatch.context() as patch:
        yield replay_world(tmp_path_factory.mktemp("replay"), suite, patch)


@pytest.fixture
def env(world, monkeypatch):
    for name, value in {
        "SEAL_HUB_REGISTRY": str(world["root"] / "registry"),
        "SEAL_HUB_BACKEND": "local",
    }.items():
        monkeypatch.setenv(name, value)
    return world


def test_a_published_run_opens_with_its_iterations_revisions_and_versions(env):
    source = open_replay_source("local://alice/demo")
    assert list(source.iterations) == ["iter-0", "iter-1"]
    assert source.revisions == ("main", "iter-0", "iter-1") and source.versions() == ("v0", "v1")
    table = source.episodes("iter-0")
    trajectories, rows = env["published"]["iter-0"]
    assert [s.task_id for s in table.summaries] == [t.task_id for t in trajectories]
    assert [list(s.labels) for s in table.summaries] == [r["labels"] for r in rows]
    assert table.trajectory(1).turns == trajectories[1].turns
    # a revision pins what the run held then: iter-0 has only the first iteration
    assert list(open_replay_source("alice/demo", "iter-0").iterations) == ["iter-0"]
    assert list(open_replay_source("alice/demo@iter-0").iterations) == ["iter-0"]


def test_the_interface_versions_come_from_the_environment_repository(env):
    from helpers.replay_data import interfaces

    source = open_replay_source("alice/demo")
    v0, v1 = interfaces()
    assert source.interface("v1").content_hash == v1.content_hash
    assert source.interface("v0").is_null


def test_filters_select_by_label_category_outcome_and_task_search(env):
    table = open_replay_source("alice/demo").episodes("iter-0")
    failed = table.select(EpisodeFilter(outcome="failed"))
    assert [s.task_id for s in failed] == ["multi_turn_base_1"] and not failed[0].passed
    assert table.tasks(EpisodeFilter(label="missing_tool_call")) == ["multi_turn_base_1"]
    assert table.tasks(EpisodeFilter(outcome="passed")) == ["multi_turn_base_0", "multi_turn_base_2"]
    assert table.tasks(EpisodeFilter(search="BASE_2")) == ["multi_turn_base_2"]
    assert table.tasks(EpisodeFilter(category="long_context")) == []
    assert table.labels() == ["missing_tool_call", "pass"] and table.categories() == ["base"]
    assert table.rollouts("multi_turn_base_0") == [0]
    with pytest.raises(ValueError, match="outcome"):
        EpisodeFilter(outcome="maybe")


def test_an_episode_renders_as_chat_with_calls_nesting_their_results_and_a_badge_per_turn(env):
    trajectories, rows = env["published"]["iter-0"]
    trajectory, labels = trajectories[1], tuple(rows[1]["labels"])
    view = render_episode(trajectory, labels)
    users = [m for m in view.messages if m["role"] == "user"]
    assert len(users) == len(trajectory.turns)
    assert users[0]["content"].startswith(f"**Turn 1** · {PASSED} · `pass`")
    assert users[1]["content"].startswith(f"**Turn 2** · {FAILED} · `missing_tool_call`")
    calls = [m for m in view.messages if m.get("metadata", {}).get("id")]
    results = [m for m in view.messages if m.get("metadata", {}).get("parent_id")]
    assert [c["metadata"]["title"].split("(")[0] for c in calls] == [
        f"🛠️ {c.name}" for turn in trajectory.turns for step in turn.steps for c in step.tool_calls
    ]
    assert calls[1]["metadata"]["title"] == "🛠️ ls(a=true)"
    assert {r["metadata"]["parent_id"] for r in results} == {c["metadata"]["id"] for c in calls}
    assert all(c["metadata"]["status"] == "done" for c in calls)  # closed, so the turn's answer stays in view
    # frames: one per model step after the first; each frame shows more than the one before
    assert len(view.frames) == trajectory.num_steps + 1
    assert list(view.frames) == sorted(set(view.frames)) and view.frames[-1] == len(view.messages)
    assert view.at(0)[-1] == users[0] and view.at(10**6) == list(view.messages)
    assert view.at(view.frame_of_turn(2))[-1]["content"].startswith("**Turn 3**")


def test_a_tool_error_shows_its_kind_and_the_hint_of_the_interface_the_agent_ran_under(env, suite):
    trajectories, _ = env["published"]["iter-0"]
    with_error = next(
        t for t in trajectories if any(r.error_kind for turn in t.turns for s in turn.steps for r in s.results)
    )
    view = render_episode(with_error)
    errors = [m for m in view.messages if m.get("metadata", {}).get("title", "").startswith("⚠️")]
    assert errors and errors[0]["metadata"]["title"] == "⚠️ missing_argument"
    parent = errors[0]["metadata"]["parent_id"]
    failed_call = next(m for m in view.messages if m.get("metadata", {}).get("id") == parent)
    assert failed_call["metadata"]["title"].endswith(" → ⚠️ missing_argument")  # readable with the call closed
    assert "Hint:" not in errors[0]["content"]  # it ran under v0: no recovery feedback
    source = open_replay_source("alice/demo")
    tools = task_tools(suite, with_error.task_id)
    under_v0 = agent_view(source.interface("v0"), tools, with_error, view.last_frame)
    under_v1 = agent_view(source.interface("v1"), tools, with_error, view.last_frame)
    assert under_v0.system_prompt is None and not under_v0.cues and under_v0.errors[0].hint is None
    assert "no hint (recovery feedback off)" in under_v0.markdown()
    assert under_v1.errors[0].hint and "Hint: " + under_v1.errors[0].hint in under_v1.errors[0].shown
    assert (
        under_v1.guidelines
        and under_v1.system_prompt
        and all(g in under_v1.system_prompt for g in under_v1.guidelines)
    )
    assert any(c.added == "[required]" for c in under_v1.cues)
    assert "The episode ran under v0" in under_v1.markdown()
    assert agent_view(source.interface("v1"), tools, with_error, 0).errors == ()  # nothing has failed yet


def test_side_by_side_aligns_turns_and_diffs_the_interfaces(env, suite):
    (a, rows_a), (b, rows_b) = env["published"]["iter-0"], env["published"]["iter-1"]
    pairs = align(a[1], rows_a[1]["labels"], b[1], rows_b[1]["labels"])
    assert [p.turn for p in pairs] == list(range(len(a[1].turns)))
    assert pairs[0].same_verdict and not pairs[1].same_verdict
    assert (pairs[1].a.label, pairs[1].b.label) == ("missing_tool_call", "pass")
    assert pairs[1].a.calls == () and pairs[1].b.calls
    table = alignment_markdown(pairs, "A", "B")
    assert table.count("\n") == len(pairs) + 1 and "**differ**" in table
    source = open_replay_source("alice/demo")
    v0, v1 = source.interface("v0"), source.interface("v1")
    changes = interface_changes(v0, v1)
    assert "~ schema_cues.enabled: off -> on" in changes and any(c.startswith("+ hint [") for c in changes)
    assert interface_changes(v1, v1) == [f"v1 and v1 are the same interface ({v1.content_hash[:12]})"]
    html = shown_diff_html(v0, v1, task_tools(suite, a[1].task_id))
    assert "interface v0" in html and "interface v1" in html and "[required]" in html
    with pytest.raises(ValueError, match="one task"):
        align(a[0], (), a[1], ())


def test_an_evaluation_directory_and_a_training_directory_open_like_runs(env, tmp_path):
    source = open_replay_source(str(env["root"] / "eval"))
    assert list(source.iterations) == ["evaluation"] and source.kind == "directory"
    table = source.episodes("evaluation")
    trajectories, rows = env["evaluation"]
    assert len(table) == len(trajectories) and [list(s.labels) for s in table.summaries] == [r["labels"] for r in rows]
    from helpers.replay_data import interfaces

    run = tmp_path / "out"
    for k, name in enumerate(("step_000001", "step_000002")):
        (run / "iterations" / name).mkdir(parents=True)
        shutil.copy(env["root"] / "eval" / "trajectories.parquet", run / "iterations" / name)
        if k:
            shutil.copy(env["root"] / "eval" / "diagnoses.parquet", run / "iterations" / name)
    (run / "interfaces").mkdir()
    for snapshot in interfaces():
        snapshot.save(run / "interfaces" / f"{snapshot.version}.json")
    training = open_replay_source(str(run))
    assert list(training.iterations) == ["step_000001", "step_000002"] and training.versions() == ("v0", "v1")
    assert training.episodes("step_000001").summaries[0].labels == ()  # no diagnoses file: no labels
    assert training.interface("v1").content_hash == interfaces()[1].content_hash


def test_deep_links_round_trip_through_the_query(env):
    a = Selection(run="alice/demo", revision="iter-1", iteration="iter-0", task="multi_turn_base_1", turn=2)
    b = Selection(run="alice/demo", iteration="iter-1", task="multi_turn_base_1", rollout=0)
    link = deep_link(a, b)
    from urllib.parse import parse_qsl, urlsplit

    params = dict(parse_qsl(urlsplit(link).query))
    assert params["turn"] == "3" and params["b_iter"] == "iter-1"
    assert Selection.from_query(params) == a
    assert Selection.from_query(params, prefix="b_") == b
    with pytest.raises(ReplayError, match="rollout=.x. is not a number"):
        Selection.from_query({"run": "alice/demo", "rollout": "x"})


def test_the_viewer_repairs_a_selection_and_opens_a_turn(env):
    viewer = Viewer()
    browse = viewer.browse(Selection(run="alice/demo", outcome="failed"))
    assert browse.selection.iteration == "iter-1" and browse.matching == 0 and browse.selection.task == ""
    browse = viewer.browse(Selection(run="alice/demo", iteration="iter-0", outcome="failed"))
    assert browse.selection.task == "multi_turn_base_1" and browse.versions[0] == EPISODE_VERSION
    replay = viewer.replay(replace_turn(browse.selection, 1))
    assert replay.messages[-1]["content"].startswith("**Turn 2**") and "turn 2 of 4" in replay.position
    later = viewer.replay(browse.selection, replay.frame + 1)
    assert len(later.messages) > len(replay.messages)
    shown_v1 = viewer.replay(Selection(run="alice/demo", iteration="iter-0", task="multi_turn_base_1", version="v1"))
    assert "#### Interface v1 (parent v0)" in shown_v1.shown_markdown
    # no turn named: the episode whole, the agent's last answer shown, every turn above it
    assert shown_v1.frame == shown_v1.view.last_frame > 0 and shown_v1.messages[-1]["role"] == "assistant"
    assert shown_v1.messages == shown_v1.view.at(shown_v1.view.last_frame) and "turn 4 of 4" in shown_v1.position


def replace_turn(selection: Selection, turn: int) -> Selection:
    from dataclasses import replace

    return replace(selection, turn=turn)


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (Selection(run="alice/nothing"), "run 'alice/nothing': no repository alice/nothing-trajectories"),
        (Selection(run="alice/demo", revision="iter-9"), "iter-9"),
        (Selection(run="alice/demo", iteration="iter-7"), "iteration 'iter-7' is not in"),
        (Selection(run="alice/demo", version="v9"), "environment version 'v9' is not in alice/demo"),
        (Selection(run="alice/demo", task="multi_turn_base_99"), "task 'multi_turn_base_99' is not in"),
        (Selection(run="not a run"), "run 'not a run'"),
        (Selection(run="/no/such/dir"), "/no/such/dir: no such directory"),
        (Selection(run=""), "no run given"),
    ],
)
def test_bad_selections_fail_with_one_readable_line(env, selection, message):
    with pytest.raises(ReplayError) as caught:
        Viewer().browse(selection)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_a_corrupt_parquet_file_and_a_missing_interface_version_are_named(env, tmp_path):
    folder = tmp_path / "eval"
    shutil.copytree(env["root"] / "eval", folder)
    (folder / "trajectories.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(ReplayError, match="trajectories.parquet is not a readable Parquet file"):
        open_replay_source(str(folder)).episodes("evaluation")
    (folder / "trajectories.parquet").unlink()
    shutil.copy(env["root"] / "eval" / "trajectories.parquet", folder)
    (folder / "diagnoses.parquet").write_bytes(b"")
    with pytest.raises(ReplayError, match="diagnoses.parquet is not a readable Parquet file"):
        open_replay_source(str(folder)).episodes("evaluation")
    # a training directory whose interface file is gone: the version is not offered, asking for it says so
    run = tmp_path / "run"
    (run / "iterations" / "step_000001").mkdir(parents=True)
    shutil.copy(env["root"] / "eval" / "trajectories.parquet", run / "iterations" / "step_000001")
    (run / "interfaces").mkdir()
    (run / "interfaces" / "v1.json").write_text(json.dumps({"version": "v1", "rho": {}}))
    source = open_replay_source(str(run))
    with pytest.raises(ReplayError, match="v1.json"):
        source.interface("v1")
    with pytest.raises(ReplayError, match="environment version 'v3' is not in run"):
        source.interface("v3")


def test_live_plays_a_published_adapter_under_a_version_and_stops_at_its_limit(env, suite, tmp_path):
    from helpers.hub_artifacts import adapter

    from seal_hub.hub import get_registry, publish_policy
    from seal_hub.replay.live import LiveLimits, LiveRequest, LiveRunner

    base = env["tiny"]
    publish_policy(
        "alice/demo-adapter", 0, adapter(base, tmp_path / "adapter", seed=1), registry=get_registry("local")
    )
    runner = LiveRunner(suite, LiveLimits(max_steps=1, max_new_tokens=4))
    v1 = open_replay_source("alice/demo").interface("v1")
    frames = list(runner.stream(LiveRequest("local://alice/demo-adapter@iter-0", "multi_turn_base_0", v1)))
    assert frames[0].status == "started: multi_turn_base_0 under interface v1" and not frames[0].done
    assert frames[0].messages[0]["metadata"]["title"] == "📋 system prompt"  # v1's system prompt was shown
    assert frames[-1].done and frames[-1].status.startswith("stopped: reached the live limit of 1 model steps")
    trajectory = frames[-1].trajectory
    assert trajectory.interface_version == "v1" and trajectory.num_steps == 1 and not trajectory.passed
    from peft import PeftModel

    assert isinstance(runner.policy("local://alice/demo-adapter@iter-0")[0], PeftModel)
    with pytest.raises(ReplayError, match="policy 'local://alice/ghost-adapter' cannot be loaded"):
        runner.policy("local://alice/ghost-adapter")
    with pytest.raises(ReplayError, match="task 'multi_turn_base_9999' is not a BFCL task"):
        next(runner.stream(LiveRequest("tiny", "multi_turn_base_9999", v1)))


def test_the_space_repository_installs_this_package_and_its_readme_pins_the_gradio_it_pins():
    """spaces/replay/ is pushed as it is: requirements.txt installs seal_hub (with the bfcl extra: the Space shows
    BFCL runs) at this version, which pins the stack; the README's front matter names the gradio that pins."""
    import tomllib
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[1]
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    lines = (root / "spaces" / "replay" / "requirements.txt").read_text().splitlines()
    assert [line for line in lines if line and not line.startswith("#")] == [f"seal_hub[bfcl]=={project['version']}"]
    front = yaml.safe_load((root / "spaces" / "replay" / "README.md").read_text().split("---", 2)[1])
    assert f"gradio=={front['sdk_version']}" in project["dependencies"]
    assert front["sdk"] == "gradio" and front["app_file"] == "app.py" and front["title"] == "SEAL replay"
    app = (root / "spaces" / "replay" / "app.py").read_text()
    assert "from seal_hub.replay.space_app import" in app and "def " not in app  # the page is the package's


def test_an_episode_shows_the_tools_of_its_own_suites_task():
    """A bfcl-single run's episodes list the functions their question offered (its snapshots name the suite)."""
    require_bfcl()  # its suite is BFCL's
    from seal_hub.envs.builtin import load_suite
    from seal_hub.replay.page import Viewer

    viewer = Viewer()
    single = load_suite("bfcl-single")
    task = single.select(single.split_ids("test"))[0]
    tools = viewer._tools("bfcl-single", task.id)
    assert tools and {t["function"]["name"] for t in tools} == {f["name"] for f in task.functions}
    assert viewer._tools("bfcl-single", "no_such_task") == [] and viewer._tools("no-such-suite", task.id) == []


def test_the_runs_offered_are_the_local_registrys_newest_first_or_the_deployed_allowlist(tmp_path, monkeypatch):
    """What the Space's run list holds, the run it opens with none given at the top: the local registry's runs
    (a -trajectories dataset with a version) newest first, or the deployed run and the runs of its allowlist."""
    import os

    from seal_hub.hub.local import LocalRegistry
    from seal_hub.replay.access import Access
    from seal_hub.replay.runs import local_runs, offered_runs

    monkeypatch.setenv("SEAL_HUB_BACKEND", "local")
    registry = LocalRegistry(tmp_path / "registry")
    files = tmp_path / "files"
    files.mkdir()
    (files / "rows.json").write_text("{}")
    for run in ("alice/old", "bob/new"):
        registry.push(f"{run}-trajectories", "dataset", files, tag="iter-0", message="rows")
    registry.push("alice/old-env", "dataset", files, tag="v0", message="an environment, not a run")
    registry.create_repo("carol/empty-trajectories", "dataset")  # no version yet: not a run to show
    old = registry.path("alice/old-trajectories", "dataset")
    for path in [old / "packed-refs", *(old / "refs").rglob("*")]:
        if path.exists():
            os.utime(path, (1, 1))  # published long ago
    assert local_runs(registry) == ["bob/new", "alice/old"]
    assert offered_runs("", Access(), registry) == ["bob/new", "alice/old"]
    assert offered_runs("alice/old", Access(), registry) == ["alice/old", "bob/new"]  # the given run first
    deployed = Access(public=True, runs=("alice", "bob/new"), policies=("tiny",))
    assert offered_runs("alice/demo", deployed, registry) == ["alice/demo", "bob/new"]  # a namespace is not listed
    monkeypatch.setenv("SEAL_HUB_BACKEND", "hub")
    assert local_runs(registry) == ["local://bob/new", "local://alice/old"]  # named as `seal-hub space` takes them
    assert local_runs(LocalRegistry(tmp_path / "nothing here")) == []
