"""A vLLM server behind the `GenerationBackend` interface: SEAL's rollouts with `vllm_mode: server`.

Generation runs on other GPUs or another node, in the server users start with `vllm serve` (the command TRL 1.16's
`trl vllm-serve` now only forwards to; `SERVER_COMMAND`). Each request is one `/v1/completions` call of the
OpenAI-compatible API with the episode's whole token sequence as a token-id prompt, `return_token_ids` and the
sampled token's log-probability, the same body TRL's `VLLMClient.generate` sends.

Why our own client and not TRL's `VLLMClient`: TRL generates in server mode from the main process only, gathering
every rank's prompts into one collective call, while SEAL's engine steps each rank's episodes on their own: ranks make
different numbers of generate calls as episodes end, so a collective per call would deadlock. Every rank therefore
opens its own connection and submits its own episodes; the server batches all ranks' requests continuously. Our
client also needs no vLLM in the trainer's environment (TRL's refuses to start without it) and reads the
`finish_reason` that TRL's drops. The weights stay TRL's business: before each generation step TRL's
`VLLMGeneration.sync_weights` gathers the parameters on every rank, the main process streams them to the server over
NCCL and resets the server's prefix cache (`seal_hub.training.trainer`).

Prefix caching (`--enable-prefix-caching`) does what `HFBackend`'s per-session caches do: a later step of an episode
re-sends the whole sequence, and the server reuses the KV of every full block it already holds (the previous step's
prompt and completion, and the task prefix shared by a group's rollouts), so only the tokens after the last cached
block are prefilled again. Requests of one step run concurrently; they share cached blocks from the next step on.

Sampling: with a temperature above 0 each request carries a seed derived from the run's seed, the session and the
sequence length, so rollouts repeat under a fixed server, and the rollouts of one prompt (same tokens, different
sessions) differ. Log-probabilities are the sampled distribution's only where the server runs with
`--logprobs-mode processed_logprobs`; where the server exposes its configuration (`VLLM_SERVER_DEV_MODE=1`, which
TRL's weight sync needs anyway), another mode is refused at connection.

Not covered: images, `n > 1` (every rollout is its own request, as the engine runs it).
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from seal_hub.generation.backend import Generation, GenerationBackend, GenerationRequest, SamplingConfig

SERVER_COMMAND = (
    "VLLM_SERVER_DEV_MODE=1 vllm serve MODEL --enable-prefix-caching --logprobs-mode processed_logprobs "
    '--weight-transfer-config \'{"backend": "nccl"}\' --max-logprobs -1'
)
MAX_CONCURRENT_REQUESTS = 64  # TRL's VLLMClient default generation concurrency


class ServerError(RuntimeError):
    """The vLLM server refused a request or answered something that is not a completion."""


def server_url(base_url: str | None, host: str, port: int) -> str:
    """TRL's rule: `vllm_server_base_url` when given, else `http://{vllm_server_host}:{vllm_server_port}`."""
    return (base_url or f"http://{host}:{port}").rstrip("/")


def request_seed(seed: int, session: str, length: int) -> int:
    """A per-request sampling seed: stable across processes (no `hash()` randomisation), distinct per session."""
    digest = hashlib.blake2b(f"{seed}:{session}:{length}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & 0x7FFF_FFFF


class VLLMServerBackend(GenerationBackend):
    def __init__(
        self,
        base_url: str,
        eos_token_ids: list[int] | tuple[int, ...],
        *,
        timeout: float = 600.0,
        max_concurrent_requests: int = MAX_CONCURRENT_REQUESTS,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.eos_token_ids = sorted({int(i) for i in eos_token_ids})
        self.max_concurrent_requests = max_concurrent_requests
        limits = httpx.Limits(max_connections=max_concurrent_requests)
        transport = transport or httpx.HTTPTransport(retries=3, limits=limits)  # retries connection failures
        self.client = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport)
        self.model, self.max_model_len = self._served_model()
        self.logprobs_mode = self._logprobs_mode()
        if self.logprobs_mode not in (None, "processed_logprobs"):
            raise ValueError(
                f"the vLLM server at {self.base_url} runs with --logprobs-mode {self.logprobs_mode}: its log-probs "
                "are not those of the distribution SEAL samples from (after temperature, top-k, top-p); restart it "
                f"with --logprobs-mode processed_logprobs: {SERVER_COMMAND}"
            )

    def _get(self, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self.client.get(path, **kwargs)
        except httpx.TransportError as error:
            raise ConnectionError(
                f"no vLLM server answers at {self.base_url} ({error}): start one with {SERVER_COMMAND} and point "
                "vllm_server_host/vllm_server_port (or vllm_server_base_url) at it"
            ) from error

    def _served_model(self) -> tuple[str, int | None]:
        """The served model's name and context length (`--max-model-len`; None where the server does not say)."""
        response = self._get("/v1/models")
        if response.status_code != 200:
            raise ServerError(f"{self.base_url}/v1/models answered {response.status_code}: {response.text[:300]}")
        try:
            served = response.json()["data"][0]
            length = served.get("max_model_len")
            return str(served["id"]), int(length) if length is not None else None
        except (ValueError, KeyError, IndexError, TypeError) as error:
            raise ServerError(f"{self.base_url}/v1/models lists no model: {response.text[:300]}") from error

    def _logprobs_mode(self) -> str | None:
        """The server's `--logprobs-mode`, where it exposes its configuration (dev mode); else None (unknown)."""
        response = self._get("/server_info", params={"config_format": "json"})
        if response.status_code != 200:
            return None
        try:
            return response.json()["vllm_config"]["model_config"]["logprobs_mode"]
        except (ValueError, KeyError, TypeError):
            return None

    def check_context(self, max_context_tokens: int) -> None:
        """An episode may grow to `max_context_tokens`; a server serving fewer would refuse it mid-run."""
        if self.max_model_len is not None and max_context_tokens > self.max_model_len:
            raise ValueError(
                f"max_context_tokens={max_context_tokens} but the vLLM server at {self.base_url} serves "
                f"{self.model} with --max-model-len {self.max_model_len}: lower max_context_tokens or restart the "
                f"server with --max-model-len {max_context_tokens}"
            )

    def release(self, session: str) -> None:
        """The server evicts cached blocks itself."""

    def payload(self, request: GenerationRequest, sampling: SamplingConfig) -> dict[str, Any]:
        """The `/v1/completions` body of one request (what TRL's `VLLMClient.generate` sends, plus stop tokens)."""
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": list(request.token_ids),
            "max_tokens": request.max_new_tokens or sampling.max_new_tokens,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "top_k": sampling.top_k,  # 0 disables it, as in TRL
            "logprobs": 0,  # the sampled token's own log-prob
            "stop_token_ids": self.eos_token_ids,
            "skip_special_tokens": False,
            "return_token_ids": True,
            "return_tokens_as_token_ids": True,
        }
        if sampling.temperature > 0:
            body["seed"] = request_seed(sampling.seed, request.session, len(request.token_ids))
        return body

    def _complete(self, body: dict[str, Any]) -> Generation:
        try:
            response = self.client.post("/v1/completions", json=body)
        except httpx.TransportError as error:
            raise ConnectionError(f"the vLLM server at {self.base_url} went away mid-rollout: {error}") from error
        if response.status_code != 200:
            raise ServerError(
                f"{self.base_url}/v1/completions refused a {len(body['prompt'])}-token prompt "
                f"({response.status_code}): {response.text[:500]}"
            )
        return self.parse(response.json())

    def parse(self, answer: Any) -> Generation:
        """One completion choice as a `Generation`; anything else is a `ServerError` that says what was missing."""
        try:
            choice = answer["choices"][0]
            ids = tuple(int(i) for i in choice["token_ids"])
            logprobs = tuple(float(x) for x in choice["logprobs"]["token_logprobs"])
            reason = choice.get("finish_reason")
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise ServerError(
                f"{self.base_url}/v1/completions answered without token ids and log-probs ({error!r}); a vLLM "
                "older than 0.10 does not return token ids"
            ) from error
        if len(ids) != len(logprobs):
            raise ServerError(f"{self.base_url} returned {len(ids)} tokens but {len(logprobs)} log-probs")
        # an end-of-turn the server stopped on but did not return is not invented: the engine appends it (mask 0)
        finished = reason == "stop" and bool(ids) and ids[-1] in self.eos_token_ids
        return Generation(ids, logprobs, finished)

    def generate(self, requests: list[GenerationRequest], sampling: SamplingConfig) -> list[Generation]:
        bodies = [self.payload(r, sampling) for r in requests]
        if len(bodies) <= 1:
            return [self._complete(b) for b in bodies]
        with ThreadPoolExecutor(max_workers=min(len(bodies), self.max_concurrent_requests)) as pool:
            return list(pool.map(self._complete, bodies))

    def close(self) -> None:
        self.client.close()
