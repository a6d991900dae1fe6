"""`seal-hub space deploy` against the loopback Hub double: the Space repository it creates (front matter, app,
requirements, the pinned run), a second deploy updating it, the refusals, and the deployed app itself reading the
run from the Hub at the pinned revision."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import yaml
from helpers.hub_double import TOKEN, HubDouble, talk_to
from helpers.replay_data import publish_scripted_run, tiny_model
from helpers.space_app import free_port, load_app, named

from seal_hub.cli import main

pytestmark = pytest.mark.hub
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def hub(tmp_path_factory, suite):
    from transformers import AutoTokenizer

    from seal_hub.hub import HubRegistry

    root = tmp_path_factory.mktemp("deploy")
    with HubDouble(token=TOKEN) as double, pytest.MonkeyPatch.context() as patch:
        talk_to(patch, double, root)
        tokenizer = AutoTokenizer.from_pretrained(tiny_model())
        published = publish_scripted_run("alice/demo", HubRegistry(), suite, tokenizer)
        yield {"double": double, "root": root, "published": published}


@pytest.fixture
def online(hub, monkeypatch):
    talk_to(monkeypatch, hub["double"], hub["root"])
    return hub


def front_matter(readme: str) -> dict:
    return yaml.safe_load(readme.split("---", 2)[1])


def test_deploy_creates_a_space_pinned_to_the_runs_latest_version(online, capsys):
    double = online["double"]
    assert main(["space", "deploy", "hf://alice/replay", "--run", "alice/demo"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("deployed ") and "alice/demo at iter-1" in out and "environment versions v0, v1" in out
    files = double.files_at("space", "alice/replay", "main")
    assert {"app.py", "requirements.txt", "README.md", "replay.json", "seal_hub/replay/page.py"} <= set(files)
    assert "seal_hub/envs/bfcl/data/paper_split.json" in files
    assert files["app.py"] == (ROOT / "spaces" / "replay" / "app.py").read_bytes()  # the Space repository's, as is
    metadata = front_matter(files["README.md"].decode())
    gradio_pin = next(d for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
                      if d.startswith("gradio=="))  # fmt: skip
    assert metadata["sdk"] == "gradio" and f"gradio=={metadata['sdk_version']}" == gradio_pin
    assert metadata["app_file"] == "app.py" and metadata["license"] == "apache-2.0"
    assert metadata["datasets"] == ["alice/demo-trajectories", "alice/demo-env"] and metadata["models"] == []
    assert {"title", "emoji", "colorFrom", "colorTo", "python_version", "short_description", "tags"} <= set(metadata)
    assert len(metadata["short_description"]) <= 60
    body = files["README.md"].decode().split("---", 2)[2]
    rules = body.split("## What a visitor can run here", 1)[1]
    assert "runs on the Hub under `alice/*`" in rules and "  - `tiny`\n" in rules
    assert "cannot open a directory of this machine, a run outside that list, or any other model" in rules
    pinned = json.loads(files["replay.json"])
    commit = double.repo("dataset", "alice/demo-trajectories").tags["iter-1"]
    assert pinned == {
        "run": "hf://alice/demo",
        "revision": "iter-1",
        "commit": commit,
        "environment_versions": ["v0", "v1"],
        "adapter_versions": [],
        "public": True,
        "runs": ["alice"],
        "policies": ["tiny"],
    }
    # the package travels beside app.py: its own pins are installed, not seal_hub from an index
    requirements = [line for line in files["requirements.txt"].decode().splitlines() if not line.startswith("#")]
    assert gradio_pin in requirements and "bfcl-eval==2026.3.23" in requirements
    assert all("==" in line and not line.startswith("seal_hub") and ";" not in line for line in requirements)


def test_a_second_deploy_updates_the_same_space_at_another_revision(online):
    double = online["double"]
    assert main(["space", "deploy", "hf://alice/replay2", "--run", "alice/demo"]) == 0
    first = double.repo("space", "alice/replay2").branches["main"]
    assert main(["space", "deploy", "hf://alice/replay2", "--run", "alice/demo@iter-0"]) == 0
    repo = double.repo("space", "alice/replay2")
    assert repo.branches["main"] != first
    assert json.loads(double.files_at("space", "alice/replay2", "main")["replay.json"])["revision"] == "iter-0"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--run", "local://alice/demo"], "a Space reads the Hub: copy it first with `seal-hub hub sync"),
        (["--run", "alice/ghost"], "run 'alice/ghost': no alice/ghost-trajectories on the Hub"),
        (["--run", "alice/demo@iter-9"], "run 'alice/demo': no version 'iter-9' (versions: iter-0, iter-1)"),
    ],
)
def test_deploy_refuses_what_it_cannot_pin_in_one_line(online, capsys, argv, message):
    assert main(["space", "deploy", "hf://alice/replay3", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("seal-hub: error: ") and message in err and err.count("\n") == 1


def test_the_deployed_app_shows_the_run_from_the_hub_at_its_pinned_revision(online, tmp_path, monkeypatch, suite):
    from gradio_client import Client

    double = online["double"]
    assert main(["space", "deploy", "hf://alice/replay4", "--run", "alice/demo@iter-0"]) == 0
    for name, data in double.files_at("space", "alice/replay4", "main").items():
        if name in ("app.py", "replay.json"):
            (tmp_path / name).write_bytes(data)
    monkeypatch.delenv("SEAL_REPLAY_RUN", raising=False)
    app = load_app(tmp_path / "app.py", "seal_replay_deployed_app")
    app.SPACE.viewer.add_suite(suite)
    settings = app.SPACE.settings
    assert (settings.run, settings.revision, settings.public) == ("hf://alice/demo", "iter-0", True)
    assert app.SPACE.access.runs == ("alice",) and app.SPACE.access.policies == ("tiny",)
    port = free_port()
    app.demo.launch(prevent_thread_lock=True, ssr_mode=False, quiet=True, server_port=port)
    try:
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        page = named(client.predict("hf://alice/demo", "iter-0", api_name="/open"))
        refused = named(client.predict(str(tmp_path), "", api_name="/open"))
    finally:
        app.demo.close()
    assert refused["status"] == "⚠️ run: this Space opens published runs (NS/RUN such as alice/RUN), not directories"
    assert page["status"] == "" and page["iteration"]["value"] == "iter-0"
    assert [c[0] for c in page["iteration"]["choices"]] == ["iter-0"]  # pinned: iter-1 is not there yet
    assert page["counts"] == "3 of 3 episodes match"
