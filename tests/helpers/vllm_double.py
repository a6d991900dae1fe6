"""A loopback vLLM server for tests: the OpenAI-compatible endpoints SEAL's server mode and TRL's client call.

`VLLMDouble(model)` serves on 127.0.0.1 (a free port) from a thread; point clients at `double.url`. Completions come
from the HF model through the reference backend (`model.generate`, one request at a time), in vLLM 0.32's response
shape: ``choices[0]`` with ``token_ids``, ``prompt_token_ids``, ``logprobs`` (``tokens`` as ``token_id:N``,
``token_logprobs``) and ``finish_reason`` (``stop`` on a stop token, which is returned, else ``length``).

Implemented: ``GET /health``, ``GET /v1/models``, ``GET /server_info`` (404 without ``dev_mode``, as vLLM without
``VLLM_SERVER_DEV_MODE=1``), ``POST /v1/completions`` (token-id prompts only; ``n`` 1), ``POST /reset_prefix_cache``.
`bodies` records every completion request's JSON, `exchanges` each with its answer; `fail_next` makes the next
completion answer that status. Not a vLLM: no KV cache (so no prefix reuse to measure), no batching, no weight
transfer; the real server's numerics and caching are tested against a CPU vLLM in `tests/test_vllm_server.py`'s
slow part.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from baselines import SequentialBackend

from seal_hub.generation import GenerationRequest, SamplingConfig


class VLLMDouble:
    def __init__(
        self,
        model,
        name: str = "tiny",
        logprobs_mode: str = "processed_logprobs",
        dev_mode: bool = True,
        max_model_len: int = 32768,
    ) -> None:
        self.model = model
        self.name = name
        self.logprobs_mode = logprobs_mode
        self.dev_mode = dev_mode
        self.max_model_len = max_model_len
        self.bodies: list[dict] = []
        self.exchanges: list[tuple[dict, dict]] = []  # (request body, answer) of every completion served
        self.resets = 0
        self.fail_next: int | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> VLLMDouble:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def complete(self, body: dict) -> tuple[int, dict]:
        prompt = body.get("prompt")
        if not isinstance(prompt, list) or not all(isinstance(i, int) for i in prompt):
            return 400, {"error": {"message": "this double serves token-id prompts only"}}
        sampling = SamplingConfig(
            temperature=float(body.get("temperature", 1.0)),
            top_p=float(body.get("top_p", 1.0)),
            max_new_tokens=int(body["max_tokens"]),
            top_k=max(int(body.get("top_k", 0)), 0),
        )
        backend = SequentialBackend(self.model, body.get("stop_token_ids") or [], seed=int(body.get("seed", 0)))
        with self._lock:  # one generate at a time on the shared model
            generation = backend.generate([GenerationRequest("double", tuple(prompt))], sampling)[0]
        choice = {
            "index": 0,
            "text": "",
            "token_ids": list(generation.token_ids),
            "prompt_token_ids": prompt,
            "logprobs": {
                "tokens": [f"token_id:{t}" for t in generation.token_ids],
                "token_logprobs": list(generation.logprobs),
                "top_logprobs": [None] * len(generation.token_ids),
                "text_offset": [0] * len(generation.token_ids),
            },
            "finish_reason": "stop" if generation.finished else "length",
        }
        return 200, {"id": f"cmpl-{len(self.bodies)}", "object": "text_completion", "choices": [choice]}

    def _handler(self):
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                path = urlsplit(self.path).path
                if path == "/health":
                    self._send(200, {})
                elif path == "/v1/models":
                    served = {"id": double.name, "object": "model", "max_model_len": double.max_model_len}
                    self._send(200, {"object": "list", "data": [served]})
                elif path == "/server_info" and double.dev_mode:
                    config = {"model_config": {"logprobs_mode": double.logprobs_mode}, "weight_transfer_config": None}
                    self._send(200, {"vllm_config": config})
                else:
                    self._send(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                path = urlsplit(self.path).path
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if path == "/reset_prefix_cache" and double.dev_mode:
                    double.resets += 1
                    self._send(200, {"success": True})
                elif path == "/v1/completions":
                    double.bodies.append(body)
                    if double.fail_next is not None:
                        status, double.fail_next = double.fail_next, None
                        self._send(status, {"error": {"message": f"injected {status}"}})
                        return
                    status, answer = double.complete(body)
                    double.exchanges.append((body, answer))
                    self._send(status, answer)
                else:
                    self._send(404, {"detail": "Not Found"})

        return Handler
