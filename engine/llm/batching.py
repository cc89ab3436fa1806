"""Continuous batching: many generations decoded together, one forward pass of every live sequence a step.

A decode step against the KV cache does little arithmetic per weight it reads (one token's row times each
matrix), so on a CPU one sequence alone is bound by reading SmolLM2's 540 MB of float32 weights. Stacking the
new tokens of B sequences into one (B, 1) batch reads the weights once for all of them: here a step of 32 costs
about 3.5 steps of one and yields 32 tokens (vLLM's continuous batching, TGI, llama.cpp's parallel slots).
Sequences join between steps and leave as soon as they end, so nobody waits for a whole batch to finish.
Prompts joining together share their prefill: the prefix they share (the chat template's system turn) is read
once, then the rest of every prompt in one forward pass.

Layout: each sequence owns its cache, (layers, capacity, g, d) for K and for V, allocated when it joins for its
prompt plus its new tokens and filled in place. A step runs every matrix on the (B, 1, C) stack, each sequence
with its own RoPE angle; attention, per layer, over the sequences' caches padded into one stack, the padding
masked out of the scores, so each sequence reads only its own keys (002 §2: examples across the batch never
"talk" to each other). That stack is a copy, B × the longest sequence's keys and values of one layer, made and
dropped at every layer of every step of two or more; a pool padded in place would need no copy but would hold
B × the longest capacity for as long as the batch runs: memory held against traffic paid every step.

Exactness: a sequence's logits agree with generation.stream's alone within float32 rounding (only the matrices'
row counts and the order of a few sums differ), and so do its tokens, greedy or sampled (each sequence draws
with its own torch.Generator seeded as stream seeds one), unless that rounding tips a near-tie: two logits
within a few 1e-7 of each other, a uniform number on a cumulative probability, or probabilities tied exactly at
a nucleus's edge.

Memory: every sequence's cache is counted in tokens when it joins (prompt + new tokens, the most it can hold);
`fits` refuses one that would take the batch past `max_tokens` or `max_sequences` (002 §2.5: the cache grows
linearly with the length and the batch size).
"""
from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

from engine.efficiency.measure import own_thread_count
from engine.errors import InputError
from engine.llm.generation import Generated, check_request
from engine.llm.model import GGUF_PAIRING, Rope
from engine.llm.smollm import SmolLM
from engine.positions.rope import rope_cos_sin
from engine.transformer.model import draw_next

MAX_SEQUENCES = 32  # sequences decoded together at most: a class's worth, and the benchmark's batch
# tokens of KV cache the batch may hold by default (the app passes its own setting, ui/settings.py): 4,096 x 45 KiB
# = 180 MiB in float32, 32 requests of a short chat prompt and 60 new tokens with room to spare
MAX_TOKENS = 4096
PREFILL_TOKENS = 2048  # prompt positions read in one forward pass at most: (9 heads, T, T) scores stay small


@dataclass(frozen=True)
class Request:
    """One generation, as generation.stream takes it; ignore_eos keeps going past <|im_end|> (benchmarks)."""
    ids: tuple[int, ...]
    max_new_tokens: int
    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int = 0
    ignore_eos: bool = False

    @property
    def tokens(self) -> int:
        """Cache positions it can fill: the prompt and every new token."""
        return len(self.ids) + self.max_new_tokens


def cache_bytes_per_token(lm: SmolLM) -> int:
    """K and V of every layer for one token: 2 x 30 x 3 x 64 float32 = 46,080 bytes for SmolLM2."""
    cfg = lm.config
    return 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4


@dataclass(eq=False)
class Sequence:
    """A request inside the batch: its cache, its random generator and the tokens it has produced."""
    request: Request
    keys: torch.Tensor  # (layers, capacity, g, d) K after RoPE; positions past `length` unfilled
    values: torch.Tensor
    length: int  # cache positions filled
    logits: torch.Tensor  # (V,) the distribution of its next token, from its latest forward
    generator: torch.Generator
    steps: list[Generated] = field(default_factory=list)
    finished: bool = False


class _Padded:
    """One layer's view of the batch for LlamaAttention.

    A sequence alone writes its new key and value into its cache and attends over the cache itself: nothing is
    copied. Several are padded into one stack of their cached keys and values, the padding masked out of the
    scores, with the step's new key and value beside the stack rather than in it (keys are a set to attention,
    and a new key's RoPE angle is already in it): putting them in would copy the stack once more. They are
    written into each sequence's cache after the step."""

    def __init__(self, sequences: list[Sequence], layer: int, padding: torch.Tensor | None,
                 new: dict[str, list[torch.Tensor]]):
        self.sequences, self.layer, self.padding, self.new = sequences, layer, padding, new

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """q (B, H, 1, d) and k (B, g, 1, d) after RoPE, v (B, g, 1, d) -> (B, H, 1, d)."""
        B, H, _, d = q.shape
        g = k.shape[1]
        q = q.reshape(B, g, H // g, d)  # a group's query heads stacked as rows against its one K
        if B == 1:
            sequence, n = self.sequences[0], self.sequences[0].length
            sequence.keys[self.layer, n], sequence.values[self.layer, n] = k[0, :, 0], v[0, :, 0]
            keys, values = sequence.keys[self.layer, None, :n + 1], sequence.values[self.layer, None, :n + 1]
            scores = q @ keys.permute(0, 2, 3, 1) / math.sqrt(d)  # (1, g, H/g, n + 1)
            return (F.softmax(scores, dim=-1) @ values.transpose(1, 2)).reshape(B, H, 1, d)
        self.new["keys"].append(k[:, :, 0]), self.new["values"].append(v[:, :, 0])
        scores = torch.cat([q @ self._cached("keys").permute(0, 2, 3, 1), q @ k.transpose(2, 3)],
                           dim=-1) / math.sqrt(d)  # (B, g, H/g, longest + 1): the new key's score last
        if self.padding is not None:
            scores = scores.masked_fill(self.padding, float("-inf"))
        weights = F.softmax(scores, dim=-1)
        out = weights[..., :-1] @ self._cached("values").transpose(1, 2) + weights[..., -1:] * v  # (B, g, H/g, d)
        return out.reshape(B, H, 1, d)

    def _cached(self, cache: str) -> torch.Tensor:
        """The sequences' keys or values so far, padded to the longest: (B, longest, g, d)."""
        return pad_sequence([getattr(s, cache)[self.layer, :s.length] for s in self.sequences], batch_first=True)


class DecodeBatch:
    """The sequences being decoded together. Not thread-safe: one thread joins, steps and drops (serving.py)."""

    def __init__(self, lm: SmolLM, max_sequences: int = MAX_SEQUENCES, max_tokens: int = MAX_TOKENS):
        self.lm, self.max_sequences, self.max_tokens = lm, max_sequences, max_tokens
        self.sequences: list[Sequence] = []

    @property
    def tokens_held(self) -> int:
        """Cache positions reserved by the sequences in the batch (each for its prompt and all its new tokens)."""
        return sum(s.request.tokens for s in self.sequences)

    def fits(self, requests: list[Request]) -> bool:
        """Whether these requests can all join now without passing either cap."""
        return (len(self.sequences) + len(requests) <= self.max_sequences
                and self.tokens_held + sum(r.tokens for r in requests) <= self.max_tokens)

    def check(self, request: Request) -> None:
        """Refuse a request this batch could never take, or whose settings are out of range (InputError)."""
        check_request(self.lm, list(request.ids), request.max_new_tokens, request.temperature, request.top_k,
                      request.top_p)
        if request.tokens > self.max_tokens:
            raise InputError(f"{request.tokens:,} tokens of prompt and answer are more than the server's batch "
                             f"holds ({self.max_tokens:,}): shorten the prompt or ask for fewer new tokens")

    def join(self, request: Request) -> Sequence:
        """join_all of one request."""
        return self.join_all([request])[0]

    @torch.inference_mode()  # no autograd bookkeeping at all: 3-6% a decode step here
    def join_all(self, requests: list[Request]) -> list[Sequence]:
        """Read the requests' prompts (generation.stream's first forward), each into a cache of its own, and add
        them to the batch; their first tokens come at the next step. Prompts arriving together are read together,
        padded on the right to the longest, up to PREFILL_TOKENS positions a forward pass: a prompt is one
        (T, C) stack of rows already, but a few prompts' rows at once keep the weights busier still."""
        for request in requests:
            self.check(request)
        if not self.fits(requests):
            raise InputError("the batch is full: the request must wait for a sequence to leave")
        joined, chunk = [], []
        for request in requests:  # chunks of at most PREFILL_TOKENS padded positions (one prompt at least)
            if chunk and (len(chunk) + 1) * max(len(r.ids) for r in chunk + [request]) > PREFILL_TOKENS:
                joined += self._prefill(chunk)
                chunk = []
            chunk.append(request)
        if chunk:
            joined += self._prefill(chunk)
        self.sequences += joined
        return joined

    def _prefill(self, requests: list[Request]) -> list[Sequence]:
        """The prompts read together, padded on the right. The tokens every prompt begins with (the chat template's
        system turn: 25 of a short question's 36 tokens) are read once, in a forward pass of their own, and the
        rest of every prompt in a second over their keys and values: causal attention gives a prefix the same keys
        and values whatever follows it. Each prompt's cache then gets its own copy of them. This is a prefill
        shared by prompts that join together, not vLLM's automatic prefix caching, which keeps hashed blocks of
        keys and values for later requests to find. Each prompt keeps at least its last token to read, whose
        logits it needs."""
        cfg, model = self.lm.config, self.lm.model
        shared = min(len(r.ids) for r in requests) - 1
        for request in requests[1:]:
            shared = next((i for i, (a, b) in enumerate(zip(requests[0].ids[:shared], request.ids)) if a != b), shared)
        cache = None
        if len(requests) > 1 and shared > 0:
            prefix = model(torch.tensor([requests[0].ids[:shared]]), last_only=True).cache  # each (1, g, shared, d)
            cache = [(k.expand(len(requests), -1, -1, -1), v.expand(len(requests), -1, -1, -1)) for k, v in prefix]
        else:
            shared = 0
        lengths = torch.tensor([len(r.ids) - shared for r in requests])
        ids = torch.zeros(len(requests), int(lengths.max()), dtype=torch.long)  # (b, longest rest), padded with 0
        for row, request in enumerate(requests):
            ids[row, :len(request.ids) - shared] = torch.tensor(request.ids[shared:])
        out = model(ids, cache=cache, ends=lengths - 1)
        sequences = []
        for row, request in enumerate(requests):
            prompt = len(request.ids)
            keys = torch.empty(cfg.n_layers, request.tokens, cfg.n_kv_heads, cfg.head_dim)
            values = torch.empty_like(keys)
            for layer, (k, v) in enumerate(out.cache):  # each (b, g, shared + longest rest, d)
                keys[layer, :prompt] = k[row, :, :prompt].transpose(0, 1)
                values[layer, :prompt] = v[row, :, :prompt].transpose(0, 1)
            sequences.append(Sequence(request, keys, values, prompt, out.logits[row, -1],
                                      torch.Generator().manual_seed(request.seed)))
        return sequences

    def fork(self, sequence: Sequence) -> Sequence:
        """A copy of a sequence in the batch (its cache and next logits; a generator seeded afresh), joined without
        reading its prompt again."""
        if not self.fits([sequence.request]):
            raise InputError("the batch is full: the request must wait for a sequence to leave")
        copy = Sequence(sequence.request, sequence.keys.clone(), sequence.values.clone(), sequence.length,
                        sequence.logits, torch.Generator().manual_seed(sequence.request.seed), list(sequence.steps))
        self.sequences.append(copy)
        return copy

    def drop(self, sequence: Sequence) -> None:
        """Take a sequence out (finished or cancelled) and free its cache; its tokens stay."""
        sequence.finished = True
        sequence.keys = sequence.values = torch.empty(0)
        self.sequences.remove(sequence)

    def step(self) -> list[tuple[Sequence, Generated]]:
        """draw() then advance(): one token for every sequence in the batch."""
        drawn = self.draw()
        self.advance()
        return drawn

    @torch.inference_mode()
    def draw(self) -> list[tuple[Sequence, Generated]]:
        """Every sequence's next token, drawn from its latest logits with its own settings and generator; those
        that end (<|im_end|> or their last token) leave the batch. Sequences with the same settings have their
        distributions computed together (row by row the same numbers as one at a time: generation.stream's)."""
        alike: dict[tuple, list[Sequence]] = {}
        for sequence in self.sequences:
            request = sequence.request
            alike.setdefault((request.temperature, request.top_k, request.top_p), []).append(sequence)
        drawn = {}
        for (temperature, top_k, top_p), group in alike.items():
            logits = torch.stack([sequence.logits for sequence in group])  # (n, V)
            tokens, distributions = draw_next(logits, temperature, top_k, [s.generator for s in group], top_p)
            for sequence, token, distribution in zip(group, tokens[:, 0].tolist(), distributions):
                drawn[sequence] = Generated(token, float(distribution[token]))
        in_order = [(sequence, drawn[sequence]) for sequence in self.sequences]
        for sequence, generated in in_order:
            sequence.steps.append(generated)
            request = sequence.request
            if (generated.token == self.lm.tokenizer.eos_id and not request.ignore_eos
                    or len(sequence.steps) == request.max_new_tokens):
                self.drop(sequence)
        return in_order

    @torch.inference_mode()
    def advance(self) -> None:
        """One forward pass of every sequence's latest token together: their next logits."""
        if self.sequences:
            self._forward([sequence.steps[-1].token for sequence in self.sequences])

    def _forward(self, tokens: list[int]) -> None:
        """One decode step of the whole batch: tokens[i] is sequence i's newest token, at position its length."""
        model, cfg = self.lm.model, self.lm.config
        positions = torch.tensor([sequence.length for sequence in self.sequences])  # (B,)
        cos, sin = rope_cos_sin(positions, cfg.head_dim, cfg.rope_base)  # (B, d/2): each sequence its own angle
        rope = Rope(cos[:, None, None], sin[:, None, None], GGUF_PAIRING)  # against (B, heads, 1, d)
        x = model.embed(torch.tensor(tokens)[:, None])  # (B, 1, C)
        padding = None  # sequences of one length have none
        if positions.min() < positions.max():
            longest = torch.arange(int(positions.max()) + 1)  # the cached positions, then the new token's
            padding = ((longest[None] >= positions[:, None]) & (longest[None] < positions.max()))[:, None, None]
        new = {"keys": [], "values": []}  # several sequences: each layer's new (B, g, d), written afterwards
        for layer, block in enumerate(model.blocks):
            x, _ = block(x, rope, _Padded(self.sequences, layer, padding, new), None, layer)
        logits = model.unembed(x[:, -1])  # (B, V)
        if new["keys"]:
            new_keys, new_values = torch.stack(new["keys"]), torch.stack(new["values"])  # (layers, B, g, d)
            for i, sequence in enumerate(self.sequences):
                at = sequence.length
                sequence.keys[:, at], sequence.values[:, at] = new_keys[:, i], new_values[:, i]
        for sequence, row in zip(self.sequences, logits):
            sequence.length, sequence.logits = sequence.length + 1, row


@dataclass(frozen=True)
class BatchTiming:
    batch: int  # sequences decoded together
    step_seconds: list[float]  # each timed step: the time between two tokens of every sequence in it

    @property
    def median_step(self) -> float:
        return statistics.median(self.step_seconds)

    @property
    def tokens_per_second(self) -> float:
        """All sequences' tokens together."""
        return self.batch / self.median_step


def time_batch_sizes(lm: SmolLM, sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32), context: int = 32, steps: int = 5,
                     progress: Callable[[float], None] = lambda done: None) -> list[BatchTiming]:
    """One decode step of a batch of each size, the sizes in turn round after round (a burst of load on a shared
    machine falls on all of them), `steps` timed rounds after one untimed: every sequence a copy of one random
    prompt of `context` tokens (read once), so that only the batch size changes."""
    own_thread_count()  # measured in a job's thread: one core, as the batch's loop runs
    ids = tuple(torch.randint(lm.config.vocab_size, (context,), generator=torch.Generator().manual_seed(0)).tolist())
    request = Request(ids, steps + 2, ignore_eos=True)  # its last token would end it in draw(), with no forward
    batches = []
    for size in sizes:
        batch = DecodeBatch(lm, max_sequences=size, max_tokens=size * request.tokens)
        first = batch.join(request)
        for _ in range(size - 1):
            batch.fork(first)
        batches.append(batch)
    seconds: list[list[float]] = [[] for _ in sizes]
    for round_ in range(steps + 1):  # round 0 allocates what the others reuse: untimed
        for batch, timed in zip(batches, seconds):
            start = time.perf_counter()
            batch.step()
            if round_:
                timed.append(time.perf_counter() - start)
        progress((round_ + 1) / (steps + 1))
    return [BatchTiming(size, timed) for size, timed in zip(sizes, seconds)]
