"""Replay Space under load, in deployed mode: many visitors browsing while several live episodes run at once.

A temporary local registry gets one run, ``bench/visitors``: an iteration of real tiny-policy rollouts (as
`space_load.py` makes them) and `--adapters` LoRA adapters on the tiny model, so the live allowlist
(`seal_hub.replay.access.space_policies`) offers more policies than the loaded-policy LRU keeps
(`--policy-count`, `--policy-mb`) and live episodes evict and reload them. The server is ``seal-hub space
--public`` in its own process, driven over loopback with `gradio_client`, one client (one session) per visitor:

- `--browsers` visitors each open the run, then step forward `--steps` times and back once, all at once;
- `--live` visitors each run `--rounds` live episodes (each round a different policy from the allowlist), all at
  once with the browsers; the most episodes seen running at the same time is printed.

An error is a raised client error, a reply whose status starts with the warning sign, or a live episode that does
not end with its final frame. Memory is the server's resident set (``VmRSS``; peak ``VmHWM``) read from /proc:
the baseline after one visitor opened the run, then the peak under load, checked against the baseline plus the
LRU budget plus `MARGIN_MB`, the measured cost of live episodes beyond their weights (torch and transformers
loaded, four tiny episodes generating at once, 32 browsing sessions). Latency is per browse request, client side.
Last line exactly: `space load test: V visitors, E errors, p95 X.XX s, peak RSS Y MB`.

Measured (2 shared CPU cores, defaults): `space load test: 36 visitors, 0 errors, p95 5.54 s, peak RSS 824 MB`;
256 browse requests in 39 s (median 3.05 s), 8 live episodes with at most 4 at once, baseline 626 MB.

    python benchmarks/space_visitors.py [--browsers 32] [--live 4] [--steps 6] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.request import urlopen

RUN = "bench/visitors"
# measured on a 2-core CPU box: 32 browsing sessions, 8 live episodes (4 at once) over 5 allowlisted policies with
# the LRU evicting took the server from 626 MB (one visitor) to a peak of 824 MB, 198 MB; the margin doubles it
MARGIN_MB = 400


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def memory_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for process {pid}")


def publish_run(root: Path, adapters: int) -> None:
    """The run: one iteration of real tiny-policy rollouts and `adapters` LoRA adapters on the tiny model."""
    import torch
    from peft import LoraConfig, get_peft_model
    from space_load import real_records, synthetic_iteration
    from transformers import AutoModelForCausalLM

    from seal_hub.hub import get_registry, publish_policy, publish_trajectories

    registry = get_registry("local")
    suite, trajectories, rows = real_records(root, 2)
    episodes, episode_rows = synthetic_iteration(trajectories, rows, 40)
    publish_trajectories(f"{RUN}-trajectories", 0, episodes, episode_rows, registry=registry)
    for k in range(adapters):
        model = AutoModelForCausalLM.from_pretrained(root / "tiny")
        lora = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
        with torch.no_grad():
            for name, param in lora.named_parameters():
                if "lora_" in name:
                    param.normal_(0, 0.02, generator=torch.Generator().manual_seed(k))
        lora.save_pretrained(root / f"adapter-{k}")
        publish_policy(f"{RUN}-adapter", k, root / f"adapter-{k}", registry=registry)


def serve(root: Path, port: int, args: argparse.Namespace) -> subprocess.Popen:
    env = os.environ | {
        "SEAL_REPLAY_LIVE_STEPS": str(args.live_steps),
        "SEAL_REPLAY_POLICY_COUNT": str(args.policy_count),
        "SEAL_REPLAY_POLICY_MB": str(args.policy_mb),
        "SEAL_REPLAY_LIVE_CONCURRENCY": str(args.live),
    }
    command = [sys.executable, "-m", "seal_hub.cli", "space", "--public", "--run", RUN, "--port", str(port)]
    log = (root / "server.log").open("wb")
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            with urlopen(f"http://127.0.0.1:{port}/", timeout=5):
                return server
        except OSError:
            if server.poll() is not None:
                raise RuntimeError((root / "server.log").read_text()[-3000:]) from None
            time.sleep(1)
    server.kill()
    raise RuntimeError("the Space did not start in 300 s")


class Tally:
    """Latencies, errors and live-episode intervals from all visitor threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.live: list[tuple[float, float, str]] = []

    def timed(self, call):
        start = time.perf_counter()
        try:
            result = call()
        except Exception as exc:  # noqa: BLE001 - a visitor's failure is counted, not raised
            with self.lock:
                self.errors.append(f"{type(exc).__name__}: {str(exc)[:200]}")
            return None
        with self.lock:
            self.latencies.append(time.perf_counter() - start)
        return result

    def check(self, status: str, what: str) -> None:
        if status.startswith("⚠️"):
            with self.lock:
                self.errors.append(f"{what}: {status[:200]}")


def browser(url: str, steps: int, tally: Tally, start: threading.Barrier) -> None:
    from gradio_client import Client

    client = Client(url, verbose=False)
    start.wait()
    page = tally.timed(lambda: client.predict(RUN, "", api_name="/open"))
    if page is None:
        return
    tally.check(page[13], "open")
    chosen = [RUN, "", page[1]["value"], "episode's own", "all", "all", "all", "", page[5]["value"], "0"]
    frame = 0
    for name in ["forward"] * steps + ["back"]:
        reply = tally.timed(lambda name=name, frame=frame: client.predict(*chosen, frame, api_name=f"/{name}"))
        if reply is None:
            return
        tally.check(reply[3], name)
        frame = int(reply[2].split()[1])  # "step N of M · ..."


def live_visitor(url: str, policies: list[str], rounds: int, index: int, tally: Tally, start) -> None:
    from gradio_client import Client

    client = Client(url, verbose=False)
    start.wait()
    for r in range(rounds):
        policy = policies[(index + r) % len(policies)]
        began = time.perf_counter()
        try:
            updates = list(client.submit(policy, "multi_turn_base_0", "v0", RUN, "", api_name="/live"))
        except Exception as exc:  # noqa: BLE001
            with tally.lock:
                tally.errors.append(f"live {policy}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        status = updates[-1][1] if updates else "no reply"
        with tally.lock:
            tally.live.append((began, time.perf_counter(), policy))
            if not status.startswith("⏹"):
                tally.errors.append(f"live {policy}: {status[:200]}")


def most_at_once(intervals: list[tuple[float, float, str]]) -> int:
    events = sorted([(s, 1) for s, _, _ in intervals] + [(e, -1) for _, e, _ in intervals])
    running = best = 0
    for _, change in events:
        running += change
        best = max(best, running)
    return best


def load(url: str, policies: list[str], args: argparse.Namespace) -> Tally:
    tally = Tally()
    start = threading.Barrier(args.browsers + args.live)
    threads = [threading.Thread(target=browser, args=(url, args.steps, tally, start)) for _ in range(args.browsers)]
    threads += [
        threading.Thread(target=live_visitor, args=(url, policies, args.rounds, i, tally, start))
        for i in range(args.live)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--browsers", type=int, default=32)
    parser.add_argument("--live", type=int, default=4)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2, help="live episodes per live visitor")
    parser.add_argument("--live-steps", type=int, default=4, help="model steps of one live episode")
    parser.add_argument("--adapters", type=int, default=3)
    parser.add_argument("--policy-count", type=int, default=2)
    parser.add_argument("--policy-mb", type=int, default=64)
    args = parser.parse_args()

    root = Path(tempfile.mkdtemp(prefix="seal_hub-space-visitors-"))
    os.environ.update(
        SEAL_HUB_REGISTRY=str(root / "registry"),
        SEAL_HUB_BACKEND="local",
        HF_DATASETS_CACHE=str(root / "datasets-cache"),
        GRADIO_ANALYTICS_ENABLED="False",
    )
    os.environ.pop("SPACE_ID", None)
    publish_run(root, args.adapters)
    from seal_hub.replay.access import space_policies

    policies = list(space_policies(RUN))
    print(f"allowlist: {len(policies)} policies; LRU: {args.policy_count} policies, {args.policy_mb} MB")
    port = free_port()
    server = serve(root, port, args)
    url = f"http://127.0.0.1:{port}/"
    try:
        from gradio_client import Client

        Client(url, verbose=False).predict(RUN, "", api_name="/open")
        baseline = memory_mb(server.pid)
        began = time.perf_counter()
        tally = load(url, policies, args)
        seconds = time.perf_counter() - began
        peak, after = memory_mb(server.pid, "VmHWM"), memory_mb(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)
    visitors, errors = args.browsers + args.live, len(tally.errors)
    for error in tally.errors[:10]:
        print(f"error: {error}")
    p95 = statistics.quantiles(tally.latencies, n=20)[-1] if len(tally.latencies) >= 2 else float("nan")
    bound = baseline + args.policy_mb + MARGIN_MB
    durations = [end - start for start, end, _ in tally.live]
    median = statistics.median(tally.latencies) if tally.latencies else float("nan")
    print(f"browse requests: {len(tally.latencies)} in {seconds:.1f} s, median {median:.2f} s")
    print(f"live episodes: {len(tally.live)}, at most {most_at_once(tally.live)} at once, "
          f"median {statistics.median(durations) if durations else float('nan'):.1f} s each")  # fmt: skip
    print(f"server RSS: baseline {baseline:.0f} MB after one visitor, {after:.0f} MB after the load")
    verdict = "within" if peak <= bound else "OVER"
    print(f"rss bound: peak {peak:.0f} MB {verdict} baseline {baseline:.0f} + LRU budget {args.policy_mb} + "
          f"margin {MARGIN_MB} = {bound:.0f} MB")  # fmt: skip
    print(f"space load test: {visitors} visitors, {errors} errors, p95 {p95:.2f} s, peak RSS {peak:.0f} MB")


if __name__ == "__main__":
    main()
