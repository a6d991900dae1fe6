"""Whether the Hugging Face Hub can be reached: decided once per process, then every Hub call in it agrees.

Without a route to the Hub, a download through `huggingface_hub` that finds nothing in the cache retries with
exponential backoff (five retries, about 25 s) and logs one line per retry before it fails; every later lookup
(transformers' config, tokenizer and generation-config files, PEFT's file checks, TRL's telemetry) then pays its
own failed request. `hub_reach()` asks once instead:

- offline mode already on (``HF_HUB_OFFLINE=1`` or ``TRANSFORMERS_OFFLINE=1``): offline, no request made;
- otherwise one ``HEAD`` request to the endpoint (``$HF_ENDPOINT`` or huggingface.co) through the Hub client's
  own session (so its proxy settings apply), no retries, `PROBE_TIMEOUT_S` seconds at most. Any HTTP answer,
  whatever its status, means reachable; no answer (name resolution, refused connection, timeout, proxy or TLS
  failure) means unreachable, and the process is switched to the Hub client's offline mode (`go_offline`), so
  every later call reads the local cache and fails fast instead of retrying.

The decision is kept per endpoint for the life of the process. Callers choose what to do instead: the demo
model falls back to its packaged GGUF (`seal_hub.models.loading`), publishing with backend 'auto' goes to the
local registry (`seal_hub.hub.artifacts`), and a Hub registry says why it is switched off (`offline_reason`).

It sits at the package's top, below both `seal_hub.models` and `seal_hub.hub`, which both ask it.

Not covered: a Hub that answers but is slow or failing mid-run (the client's own retries handle that), and a
network that comes back during a run (the process stays offline; relaunch it).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

PROBE_TIMEOUT_S = 5.0
OFFLINE_SET = "HF_HUB_OFFLINE=1 is set"

_decided: dict[str, HubReach] = {}  # endpoint -> what the probe found, once per process
_switched_by_probe: list[str] = []  # why this process switched itself offline (empty: it did not)


@dataclass(frozen=True)
class HubReach:
    """What `hub_reach` found: `online`, the `endpoint` asked, and `reason` (why not; empty when online)."""

    online: bool
    endpoint: str
    reason: str = ""


def endpoint_url(endpoint: str | None = None) -> str:
    from huggingface_hub import constants

    return (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def hub_reach(endpoint: str | None = None) -> HubReach:
    """Whether the Hub at `endpoint` can be reached (see the module docstring); at most one request per process."""
    from huggingface_hub import constants

    url = endpoint_url(endpoint)
    if constants.HF_HUB_OFFLINE:
        return HubReach(False, url, offline_reason())
    if url not in _decided:
        error = probe(url)
        _decided[url] = HubReach(error is None, url, f"no answer from {url} ({error})" if error else "")
        if error:
            go_offline(_decided[url].reason)
    return _decided[url]


def probe(url: str, timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """One HEAD request to `url`, no retries: ``None`` if anything answered, else a short description of why not."""
    from huggingface_hub import get_session

    try:
        get_session().head(url, timeout=timeout, follow_redirects=False)
    except Exception as error:  # any failure to get an HTTP answer means "not reachable"
        return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return None


def go_offline(reason: str) -> None:
    """Switch this process (and the processes it starts) to the Hub client's offline mode, remembering why."""
    from huggingface_hub import constants

    os.environ["HF_HUB_OFFLINE"] = "1"  # read by PEFT directly, and inherited by child processes
    constants.HF_HUB_OFFLINE = True  # read by huggingface_hub, transformers and TRL at every call
    datasets_config = sys.modules.get("datasets.config")  # datasets keeps its own copy, read at import
    if datasets_config is not None:
        datasets_config.HF_HUB_OFFLINE = True
    _switched_by_probe[:] = [reason]


def offline_reason() -> str:
    """Why the Hub client is offline in this process: the probe's finding, or the user's HF_HUB_OFFLINE."""
    return f"the Hub could not be reached at start: {_switched_by_probe[0]}" if _switched_by_probe else OFFLINE_SET
