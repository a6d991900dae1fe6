"""A run name another output_dir already published under is refused before any work, not at the first publish."""

from __future__ import annotations

import pytest

from seal_hub.hub import HubError, PublishConfig
from seal_hub.hub.callback import PublishCallback
from seal_hub.hub.local import LocalRegistry


@pytest.fixture
def registry(tmp_path, monkeypatch):
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    return LocalRegistry(tmp_path / "registry")


def test_a_fresh_output_dir_under_a_published_run_name_is_refused_and_a_relaunch_passes(tmp_path, registry):
    callback = PublishCallback(PublishConfig(run="demo/taken", backend="local"))
    callback.check_unclaimed(tmp_path / "first")  # nothing published yet: free

    folder = tmp_path / "adapter"
    folder.mkdir()
    (folder / "README.md").write_text("an adapter\n")
    registry.push("demo/taken-adapter", "model", folder, tag="iter-1", message="iteration 1")

    with pytest.raises(HubError, match=r"run demo/taken is already published \(demo/taken-adapter\).*--publish_run"):
        callback.check_unclaimed(tmp_path / "second")
    (tmp_path / "first" / "checkpoint-1").mkdir(parents=True)  # the output_dir that published it, relaunched
    callback.check_unclaimed(tmp_path / "first")
