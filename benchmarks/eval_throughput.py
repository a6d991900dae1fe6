"""Held-out evaluation throughput: the batched engine against one task at a time, through the eval harness.

Both score the same BFCL held-out tasks (the paper's test split, the same number from each category) with the
same tiny random policy under the paper's evaluation protocol (`EvalProtocol`: greedy, null interface,
bfcl-eval's step limit, withheld tools executable), through `evaluate_policy`, in one process:

- batched: `HFBackend`, up to `--max_live_episodes` episodes in one decode batch, each episode's KV kept between
  its steps and a task prefix's KV shared;
- sequential (the baseline): one task at a time, `SequentialBackend` (`model.generate` on the whole
  sequence at every step, no cache kept), which is how a plain evaluation loop runs a local model.

Greedy decoding makes both produce the same tokens and verdicts, which the script checks before it reports
a figure. Prints tasks/s for both; last line exactly `eval speedup batched vs sequential: X.XXx`.

    python benchmarks/eval_throughput.py [--per-category 8] [--max-new-tokens 128] [--max_live_episodes 32]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from baselines import SequentialBackend  # beside this script
from transformers import AutoModelForCausalLM, AutoTokenizer

from seal_hub.envs.bfcl import BfclSuite
from seal_hub.evaluation import EvalProtocol, EvalSpec, evaluate_policy, interface_record
from seal_hub.generation import HFBackend
from seal_hub.interface import InterfaceSnapshot
from seal_hub.models import build_tiny_model, end_token_ids
from seal_hub.rollout import PolicyInfo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-category", type=int, default=8, help="held-out tasks per BFCL category")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--max_live_episodes", type=int, default=32)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = build_tiny_model(tmp)
        model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    model.eval()
    suite = BfclSuite()
    test = suite.split_ids("test")
    ids = [i for c in suite.categories for i in [x for x in test if suite.task(x).category == c][: args.per_category]]
    tasks = suite.select(ids)
    eos, pad = end_token_ids(model, tokenizer), tokenizer.pad_token_id
    interface = InterfaceSnapshot.null(suite.name)
    runs = {}
    with tempfile.TemporaryDirectory() as out:
        for name, backend, batch in (
            ("batched", HFBackend(model, eos, pad), args.max_live_episodes),
            ("sequential", SequentialBackend(model, eos, pad), 1),
        ):
            protocol = EvalProtocol(max_new_tokens=args.max_new_tokens, max_live_episodes=batch)
            spec = EvalSpec(
                suite.name, "test", "paper", {"id": "tiny", "revision": None}, None, interface_record(interface)
            )
            start = time.perf_counter()
            policy = PolicyInfo("tiny")
            result = evaluate_policy(
                backend, tokenizer, policy, suite, tasks, protocol, interface, spec, Path(out) / name
            )
            seconds = time.perf_counter() - start
            runs[name] = (result, seconds)
            steps = sum(t.num_steps for t in result.trajectories)
            tokens = sum(t.num_generated_tokens for t in result.trajectories)
            print(
                f"{name:10s}: {len(tasks)} tasks, {steps} steps, {tokens} generated tokens in {seconds:.2f} s "
                f"= {len(tasks) / seconds:.2f} tasks/s (avg {result.scores.average:.2f})"
            )
    batched, sequential = runs["batched"][0], runs["sequential"][0]
    pairs = list(zip(batched.trajectories, sequential.trajectories, strict=True))
    if not all(a.token_ids == b.token_ids and a.turns == b.turns and a.passed == b.passed for a, b in pairs):
        raise SystemExit("the two runs produced different tokens or verdicts: the comparison would be meaningless")
    if batched.results["scores"] != sequential.results["scores"]:
        raise SystemExit("the two runs scored differently: the comparison would be meaningless")
    print("both runs produced identical tokens, verdicts and scores")
    print(f"eval speedup batched vs sequential: {runs['sequential'][1] / runs['batched'][1]:.2f}x")


if __name__ == "__main__":
    main()
