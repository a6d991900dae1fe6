"""Batched generation on a transformers causal LM, a task prompt's KV held once for its group of rollouts.

An agent's prompt is mostly its system prompt and tool schemas (thousands of tokens, the same for every rollout of a
task and every step of an episode), and an episode only ever appends to its sequence. So `HFBackend`:

- keeps a row per episode between its steps (`cache.py`): a reference to its task prefix's KV, held once per group
  (and kept in a bounded store once no row holds it), plus the row's own tail; a step prefills only the new tokens,
  several rows' packed into forwards of at most `PREFILL_CHUNK` tokens (`step.py`), and a new prefix borrows the KV
  of the leading tokens it shares with another task's;
- decodes a call's rows in buckets of similar length, each step's attention one call per bucket and one per group
  of rows sharing a prefix (`attention.py`): a group of 8 reads its prompt once a step, not 8 times; a row that
  ends early is swapped behind the live rows (nothing copied);
- on CPU, gives the C heap's free pages back before each call (`step.give_back`).

Sampling goes through transformers' own logits warpers in `model.generate`'s order (`seal_hub.generation.sampling`),
so it draws from the distribution `model.generate` draws from; greedy decoding matches it token for token (the
merge of two partial softmaxes is exact up to rounding; the tests compare with `generate`). The draw runs on the
model's device, and a decode step copies its inputs to the device and its tokens and log-probs back once each. A
call cut short (an error, an interrupt) drops its rows, whose KV may be partial: the next call prefills them again.
With `synced` (ranks whose forwards are collectives, `seal_hub.generation.synced`), every forward first joins the
ranks' "any work left" all-reduce, and `finish` runs dummy forwards until every rank's rollouts are done.

`build_hf_backend(model, tokenizer, seed)` is the one way seal_hub builds it (the model's end-of-turn tokens, the
tokenizer's pad token). `timings` and the counters say where generation time goes, for the benchmarks. The KV is
in the model's dtype. Not covered: one attention call over several groups' prefixes (a kernel reading blocks in
place), speculative decoding, multi-GPU inference (use vLLM there).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import torch

from seal_hub.generation.backend import Generation, GenerationBackend, GenerationRequest, SamplingConfig
from seal_hub.generation.hf.attention import rows_attention
from seal_hub.generation.hf.cache import KVRows, PrefixStore, num_layers
from seal_hub.generation.hf.step import PREFILL_CHUNK, give_back, pack
from seal_hub.generation.sampling import Sampler
from seal_hub.generation.synced import SyncedSteps

SWAP_AFTER = 1  # a finished row leaves the decode batch (a row swap, which copies nothing) while steps remain


class HFBackend(GenerationBackend):
    """`GenerationBackend` for a (PEFT-wrapped or plain) `transformers` causal LM."""

    def __init__(
        self,
        model,
        eos_token_ids: Iterable[int],
        pad_token_id: int = 0,
        max_prefix_bytes: int = 512 * 2**20,
        seed: int = 0,
        synced: SyncedSteps | None = None,
    ) -> None:
        self.model = model
        self.synced = synced
        self.eos_token_ids = frozenset(int(i) for i in eos_token_ids)
        if not self.eos_token_ids:
            raise ValueError("HFBackend needs at least one end-of-turn token id (eos_token_ids)")
        if max_prefix_bytes < 0:
            raise ValueError(f"max_prefix_bytes must be >= 0 (0 keeps no prefix store), got {max_prefix_bytes}")
        self.pad_token_id = pad_token_id
        self.rows = KVRows(num_layers(model))
        self.prefixes = PrefixStore(max_prefix_bytes)
        self.seed = seed
        self._generator: torch.Generator | None = None  # on the model's device, made at the first sampled step
        self.prefilled_tokens = 0  # tokens run through the model to build caches
        self.reused_tokens = 0  # tokens whose KV came from a cache instead
        self.timings: dict[str, float] = dict.fromkeys(("layout", "prefill", "forward", "cache", "sampling"), 0.0)
        self.decode_steps = 0
        self.per_row_steps = 0  # decode steps whose few decoding rows each attended alone (step.PER_ROW_SHARE)
        self.positions_read = 0  # KV positions the decode steps' attention read (a prefix once a group, tails padded)
        self.positions_needed = 0  # the same with each distinct task prefix counted once per step (the floor)
        # the arithmetic floor (benchmarks/rollout_throughput.py): rows still generating summed over the decode
        # steps, the KV positions their queries attended to (a prefix once per row), and the (query, key) pairs
        # the prefill forwards' causal attention covered
        self.rows_decoded = 0
        self.positions_attended = 0
        self.prefill_pairs = 0

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def release(self, session: str) -> None:
        """The episode is over: its row stays only as a source of its prefix until the next call lays rows out."""
        self.rows.retire(session)

    @torch.no_grad()  # not inference_mode: a parameter ZeRO-3 gathers here must stay a normal tensor (TRL: same)
    def finish(self) -> None:
        """This rank's rollouts are done: in synced mode, keep stepping (dummy forwards) until every rank's are."""
        if self.synced is None:
            return
        was_training = self.model.training
        self.model.eval()
        token = torch.tensor([[self.pad_token_id]], device=self.device)
        try:
            self.synced.drain(lambda: self.model(input_ids=token, use_cache=False, logits_to_keep=1))
        finally:
            self.model.train(was_training)

    def _device_generator(self, device: torch.device) -> torch.Generator:
        """The sampler's random generator, on the model's device: the draw happens where the probabilities are
        (no ``[rows, vocab]`` copy to the host per token). Seeded once; it moves (re-seeded) only if the model does."""
        if self._generator is None or self._generator.device != device:
            self._generator = torch.Generator(device=device).manual_seed(self.seed)
        return self._generator

    def clear(self) -> None:
        """Drop every cache (call after the weights change: cached KV belongs to the old weights)."""
        self.rows = KVRows(self.rows.num_layers)
        self.prefixes.clear()

    # ----- caching -----

    def _forward(
        self, input_ids: torch.Tensor, cache, mask: torch.Tensor | None, positions: torch.Tensor
    ) -> torch.Tensor:
        """One forward pass that writes its KV into `cache`; returns the last position's logits."""
        if self.synced is not None:
            self.synced.step(True)
        out = self.model(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,  # only the last position's logits are ever used
            kv_rows=self.rows,  # read by the rows' prefill and decode attention (attention.py)
        )
        return out.logits[:, -1, :].float()

    def _prefill(self, targets: list[tuple[int, ...]], kept: list[int]) -> None:
        """Run each target's tokens from its `kept` on through the model into its row, several rows' tokens
        packed into one forward (`step.pack`: at most `PREFILL_CHUNK` tokens each)."""
        device = self.device
        rows = self.rows.rows
        work = [
            (row, have, len(target), rows[row].shared_length)
            for row, (target, have) in enumerate(zip(targets, kept, strict=True))
            if have < len(target)
        ]
        # the rows whose prefix borrows another task's start (`cache.py`) run after their lenders are filled
        borrowing = self.rows.borrowing(len(targets))
        self._prefill_forwards([w for w in work if w[0] not in borrowing], targets, device)
        if borrowing:
            self.rows.fill_borrowed(len(targets))
            self._prefill_forwards([w for w in work if w[0] in borrowing], targets, device)
        self.prefilled_tokens += sum(end - begin for _, begin, end, _ in work)
        self.prefill_pairs += sum((end - begin) * (begin + end + 1) // 2 for _, begin, end, _ in work)

    def _prefill_forwards(self, work: list[tuple[int, int, int, int]], targets, device: torch.device) -> None:
        for pieces in pack(work, PREFILL_CHUNK):
            ids = [token for p in pieces for token in targets[p.row][p.begin : p.end]]
            positions = [position for p in pieces for position in range(p.begin, p.end)]
            step_in = torch.tensor([ids, positions], device=device)  # one copy to the device
            try:
                self._forward(step_in[:1], self.rows.prefill_cache(pieces), None, step_in[1:])
            finally:
                self.rows.end_prefill()

    def _prepare(self, requests: list[GenerationRequest]) -> None:
        """Rows 0..n-1 hold the requests' sequences (all but their last token), ready for the decode loop."""
        start = time.perf_counter()
        targets = [r.token_ids[:-1] for r in requests]
        prefixes = [_shareable_prefix(r) for r in requests]
        kept = self.rows.layout([r.session for r in requests], targets, prefixes, self.prefixes)
        self.reused_tokens += sum(kept)
        self.timings["layout"] += time.perf_counter() - start
        start = time.perf_counter()
        self._prefill(targets, kept)  # a group's first row fills its shared prefix; the others read it
        for row, (request, target) in enumerate(zip(requests, targets, strict=True)):
            self.rows.set_ids(row, target, request.prefix_length)
        self.timings["prefill"] += time.perf_counter() - start

    # ----- the batched step -----

    @torch.no_grad()  # not inference_mode: a parameter ZeRO-3 gathers here must stay a normal tensor (TRL: same)
    def generate(self, requests: list[GenerationRequest], sampling: SamplingConfig) -> list[Generation]:
        if not requests:
            return []
        for request in requests:
            if not request.token_ids:
                raise ValueError(f"session {request.session}: empty prompt")
        if len({r.session for r in requests}) != len(requests):
            raise ValueError("one generate call got the same session twice: each live episode needs its own")
        was_training = self.model.training
        self.model.eval()
        try:
            with rows_attention(self.model):
                return self._generate(requests, sampling)
        except BaseException:  # a call cut short (an error, an interrupt): its rows' KV may be partial, drop them
            self.rows.forget({r.session for r in requests})
            raise
        finally:
            self.model.train(was_training)

    def _generate(self, requests: list[GenerationRequest], sampling: SamplingConfig) -> list[Generation]:
        limits = [r.max_new_tokens or sampling.max_new_tokens for r in requests]
        if self.device.type == "cpu":
            give_back()  # what the last call and the released rows freed, before this call's tensors are built
        self._prepare(requests)
        batch = self.rows.begin_decode(len(requests), limits)
        device = self.device
        n = len(requests)
        order = list(range(n))  # request index held by each batch row (rows move when finished ones swap out)
        lengths = [len(r.token_ids) - 1 for r in requests]  # cached tokens per row; the next input goes there
        inputs = [r.token_ids[-1] for r in requests]
        generated: list[list[int]] = [[] for _ in requests]
        logprobs: list[list[float]] = [[] for _ in requests]
        finished = [False] * n  # ended on an end-of-turn token
        done = [False] * n  # by request index: out of the batch's live rows (end of turn or token limit)
        active = n
        timings = self.timings
        sample = Sampler(sampling, self._device_generator(device))
        clock = _clock(device)
        prefixes = [_shareable_prefix(r) for r in requests]
        group_of = {p: k for k, p in enumerate(dict.fromkeys(prefixes))}
        groups = [group_of[p] for p in prefixes]  # rows with the same task prefix share a group
        prefix_lengths = [len(p) for p in prefixes]  # fixed for the call: not recounted every step
        while active:
            live = order[:active]
            held = sum(lengths[:active]) + active
            self.positions_needed += held - sum(prefix_lengths[i] for i in live)
            self.positions_needed += sum(prefix_lengths[i] for i in {groups[i]: i for i in live}.values())
            generating = [row for row in range(active) if not done[order[row]]]
            self.rows_decoded += len(generating)
            self.positions_attended += sum(lengths[row] + 1 for row in generating)
            start = clock()
            cache, mask = self.rows.decode_cache(lengths[:active], live, device)
            self.positions_read += batch.read
            self.per_row_steps += batch.per_row
            # the step's inputs and positions go to the device in one copy (positions stay Python ints here)
            step_in = torch.tensor([*inputs[:active], *lengths[:active]], device=device)[:, None]
            tokens_in, positions = step_in[:active], step_in[active:]
            forward_start = clock()
            logits = self._forward(tokens_in, cache, mask, positions)
            sample_start = clock()
            tokens, token_logprobs = sample(logits, tokens_in)
            # and the sampled tokens with their log-probs come back in one copy: one host sync per step (fp32
            # holds every token id exactly, ids being far below 2**24; the log-probs are fp32 already)
            packed = torch.cat([tokens.to(torch.float32), token_logprobs]).tolist()
            tokens_list, logprob_list = [int(t) for t in packed[:active]], packed[active:]
            for row in range(active):
                index = order[row]
                if done[index]:  # a finished row riding along: its output is not used
                    continue
                token = tokens_list[row]
                generated[index].append(token)
                logprobs[index].append(logprob_list[row])
                lengths[row] += 1  # the input just written (a row's last sampled token is never fed)
                if token in self.eos_token_ids or len(generated[index]) >= limits[index]:
                    done[index] = True
                    finished[index] = token in self.eos_token_ids
                else:
                    inputs[row] = token
            cache_start = clock()
            remaining = max((limits[i] - len(generated[i]) for i in order[:active] if not done[i]), default=0)
            for row in range(active - 1, -1, -1):  # from the end: trailing finished rows leave for free
                if not done[order[row]]:
                    continue
                last = active - 1
                if row != last:
                    if remaining < SWAP_AFTER:
                        continue  # it rides along: cheaper than moving two rows
                    self.rows.swap(row, last)
                    order[row], order[last] = order[last], order[row]
                    lengths[row], lengths[last] = lengths[last], lengths[row]
                    inputs[row], inputs[last] = inputs[last], inputs[row]
                active -= 1
            end = clock()
            timings["forward"] += sample_start - forward_start
            timings["sampling"] += cache_start - sample_start
            timings["cache"] += (forward_start - start) + (end - cache_start)
            self.decode_steps += 1
        for row, index in enumerate(order):
            covered = requests[index].token_ids + tuple(generated[index][:-1])
            self.rows.set_ids(row, covered, requests[index].prefix_length)
        start = clock()
        self.rows.end_decode()  # the tails back into their rows, each sized to its own
        timings["cache"] += clock() - start
        return [Generation(tuple(generated[i]), tuple(logprobs[i]), finished[i]) for i in range(n)]


def build_hf_backend(model, tokenizer, seed: int = 0, synced: SyncedSteps | None = None) -> HFBackend:
    """The batched backend for `model`: it stops on every end-of-turn token of the model and its tokenizer
    (`end_token_ids`) and pads with the tokenizer's pad token (0 when it has none); `seed` seeds its sampling."""
    from seal_hub.models.end_tokens import end_token_ids  # here: this module imports on a bare GPU machine

    return HFBackend(model, end_token_ids(model, tokenizer), tokenizer.pad_token_id or 0, seed=seed, synced=synced)


def _clock(device: torch.device):
    """`time.perf_counter`, after waiting for the device where it runs asynchronously (CUDA): otherwise a forward's
    time would be counted in whichever step next waits for its result."""
    if device.type != "cuda":
        return time.perf_counter

    def synced() -> float:
        torch.cuda.synchronize(device)
        return time.perf_counter()

    return synced


def _shareable_prefix(request: GenerationRequest) -> tuple[int, ...]:
    """The task prefix another row can lend `request`. A row holds all but its sequence's last token, so at an
    episode's first step (prefix = the whole prompt) that is the prompt less its last token."""
    if not 0 < request.prefix_length <= len(request.token_ids):
        return ()
    return request.token_ids[: min(request.prefix_length, len(request.token_ids) - 1)]
