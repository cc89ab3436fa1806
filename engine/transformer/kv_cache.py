"""KV caching made visible (000 §8.5 eq. 86-89, 002 §2.5).

The worked example of 002 §2.5.1 step by step; the work generation does with and without the cache,
counted in closed form; its steps timed with and without the cache, in turn; and a real cache's size
measured step by step.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch

from engine.attention.scoring import causal_mask
from engine.efficiency.measure import Timing, time_interleaved, torch_threads
from engine.errors import InputError
from engine.transformer.model import KVCache, ModelConfig, TransformerLM, generate, sample_next

# 002 §2.5.1: three 2-dimensional tokens and their projection matrices
EXAMPLE_X = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=torch.float64)
EXAMPLE_W_Q = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
EXAMPLE_W_K = torch.tensor([[1.0, 2.0], [0.0, 1.0]], dtype=torch.float64)
EXAMPLE_W_V = torch.tensor([[0.5, -0.5], [1.0, 0.5]], dtype=torch.float64)


@dataclass
class CacheStep:
    t: int  # 1-based step: token x_t arrives
    q: torch.Tensor  # (d_k,) computed now, never cached
    k: torch.Tensor  # (d_k,) computed now, appended to the cache
    v: torch.Tensor  # (d_v,)
    K: torch.Tensor  # (t, d_k) the cache after appending
    V: torch.Tensor  # (t, d_v)
    scores: torch.Tensor  # (t,) q_t . k_j / sqrt(d_k)
    weights: torch.Tensor  # (t,)
    z: torch.Tensor  # (d_v,) sum_j alpha_tj v_j
    uncached_z: torch.Tensor  # (d_v,) row t of masked attention recomputed from scratch


def cached_attention_steps(X: torch.Tensor, W_Q: torch.Tensor, W_K: torch.Tensor, W_V: torch.Tensor
                           ) -> list[CacheStep]:
    """One head of causal self-attention, token by token with a growing K, V cache (002 §2.5 steps 1-6);
    each step also recomputes everything from scratch to show the cache changes nothing."""
    d_k = W_K.shape[1]
    Q_all, K_all, V_all = X @ W_Q, X @ W_K, X @ W_V
    scores = (Q_all @ K_all.T / math.sqrt(d_k)).masked_fill(~causal_mask(len(X), len(X)), float("-inf"))
    full = torch.softmax(scores, dim=-1) @ V_all
    steps, K, V = [], X[:0] @ W_K, X[:0] @ W_V
    for t, x in enumerate(X, start=1):
        q, k, v = x @ W_Q, x @ W_K, x @ W_V  # only the new token is projected
        K, V = torch.cat([K, k[None]]), torch.cat([V, v[None]])
        scores = K @ q / math.sqrt(d_k)
        weights = torch.softmax(scores, dim=0)
        steps.append(CacheStep(t, q, k, v, K, V, scores, weights, weights @ V, full[t - 1]))
    return steps


def generated_both_ways(model: TransformerLM, prompt: torch.Tensor, n_new: int, temperature: float
                        ) -> tuple[list[int], list[int]]:
    """The ids `model` appends to prompt (T0,), with the KV cache and without it (000 eq. 86-89): one seed, so the
    same random numbers, one draw per step; equal logits then draw equal tokens."""
    idx = prompt[None]  # (1, T0)
    cached, plain = (generate(model, idx, n_new, temperature, use_cache=use)[0, idx.shape[1]:].tolist()
                     for use in (True, False))
    return cached, plain


@dataclass(frozen=True)
class GenerationWork:
    """What n generation steps after a prompt of T0 tokens compute, summed over every layer and head."""
    projected: int  # key and value vectors computed, k_t and v_t of every token fed to every layer
    scores: int  # dot products q . k computed: every query fed against every key it could see or is masked from
    cache_numbers: list[int]  # numbers the cache holds after each step; zeros without a cache


def _sum_of_squares(m: int) -> int:
    return m * (m + 1) * (2 * m + 1) // 6  # 1² + ... + m²


def generation_work(config: ModelConfig, prompt_len: int, n_new: int, use_cache: bool) -> GenerationWork:
    """Step s (1..n) has t = T0 + s tokens. With the cache it feeds one: 1 projection and t scores per layer and
    head. Without it feeds all t: t projections and t² scores (the whole score matrix is formed, then masked).
    Summed with T0 = 0 these are 002 §2.5's 1 + 2 + ... + n = O(n²) and 1² + 2² + ... + n² = O(n³)."""
    L, H, C = config.n_layers, config.n_heads, config.d_model
    T0, n = prompt_len, n_new
    keys = n * T0 + n * (n + 1) // 2  # sum over the steps of t = T0 + s
    if use_cache:
        fed, scores = n, keys
        cache = [2 * L * C * (T0 + s) for s in range(1, n + 1)]  # one K and one V row (all heads) per layer and token
    else:
        fed, scores = keys, _sum_of_squares(T0 + n) - _sum_of_squares(T0)
        cache = [0] * n
    return GenerationWork(projected=2 * L * fed, scores=L * H * scores, cache_numbers=cache)


@dataclass(frozen=True)
class CacheGrowth:
    """A real cache measured while generating: after the prompt, then after each generated token."""
    tokens: list[int]  # the generated tokens, greedy
    positions: list[int]  # tokens the cache holds after each forward pass: P, P + 1, ..., P + n
    numbers: list[int]  # numbers it then holds: the sum over layers of K.numel() + V.numel()


def cache_numbers(cache: KVCache) -> int:
    """Numbers a KV cache holds: every layer's K and V, whatever their shapes (B, heads, t, d)."""
    return sum(k.numel() + v.numel() for k, v in cache)


@torch.no_grad()
def cache_growth(model: torch.nn.Module, ids: list[int], n_new: int) -> CacheGrowth:
    """Greedy generation of n_new tokens with the KV cache (000 eq. 86-89), measuring the cache's actual size
    after the prompt and after every step. Any model whose forward(idx (1, T), cache=...) returns .logits and
    .cache, a list per layer of (K, V): the TransformerLM or SmolLM2's Llama."""
    if not ids or n_new < 1:
        raise InputError("the cache grows from a prompt of at least one token, by at least one step")
    out = model(torch.tensor([ids]))  # the prompt, read at once
    tokens, positions, numbers = [], [len(ids)], [cache_numbers(out.cache)]
    for _ in range(n_new):
        token = out.logits[:, -1].argmax(dim=-1, keepdim=True)  # (1, 1)
        tokens.append(int(token))
        out = model(token, cache=out.cache)  # one new K and V row per layer and key-value head
        positions.append(positions[-1] + 1)
        numbers.append(cache_numbers(out.cache))
    return CacheGrowth(tokens, positions, numbers)


@dataclass(frozen=True)
class StepTimings:
    """Every generated token's forward pass, timed with and without the cache in turn."""
    steps: dict[str, list[Timing]]  # "with cache", "without cache": one Timing per generated token, in order

    def totals(self, name: str) -> list[float]:
        """Seconds of the whole generation in each round: round r sums every step's r-th run."""
        return [sum(run) for run in zip(*(timing.seconds for timing in self.steps[name]))]

    def speedups(self) -> list[float]:
        """Without over with, round by round: each pair ran side by side, so a burst of load hits both."""
        return [plain / cached for plain, cached in zip(self.totals("without cache"), self.totals("with cache"))]


@torch.no_grad()
def time_generation_steps(model: TransformerLM, prompt: torch.Tensor, n_new: int, repeats: int = 5, warmup: int = 1,
                          temperature: float = 0.8, seed: int = 0, threads: int = 1,
                          clock: Callable[[], float] = time.perf_counter,
                          progress: Callable[[float], None] | None = None) -> StepTimings:
    """Generate n_new tokens with the cache; at each step run the step both ways, one token against the cache
    and the whole prefix from scratch, `warmup` untimed rounds then `repeats` timed rounds in turn, on
    `threads` CPU threads (torch_threads says why one).

    Both ways compute the same logits, so the one sequence sampled from the cached steps serves both."""
    if prompt.numel() + n_new > model.config.max_seq_len:
        raise InputError(f"{prompt.numel()} + {n_new} tokens exceed the context window of {model.config.max_seq_len}")
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    idx = prompt[None]  # (1, T0)
    steps: dict[str, list[Timing]] = {"with cache": [], "without cache": []}
    with torch_threads(threads):
        out = model(idx)
        for s in range(n_new):
            next_id = sample_next(out.logits[:, -1], temperature, None, generator)  # (1, 1)
            idx = torch.cat([idx, next_id], dim=1)  # (1, T0 + s + 1)
            cache = out.cache
            timed = time_interleaved({"with cache": partial(model, next_id, cache=cache),
                                      "without cache": partial(model, idx)}, repeats, warmup, clock=clock)
            for name, timing in timed.items():
                steps[name].append(timing)
            out = model(next_id, cache=cache)  # the cache is never changed in place, so this is the step timed
            if progress is not None:
                progress((s + 1) / n_new)
    return StepTimings(steps)
