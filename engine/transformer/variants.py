"""MHA, MQA, GQA and MLA behind one interface (000 §8.5.1, 001 appendices, 002 §2.2).

Every variant maps x (B, T, C) plus its cache to y (B, T, C) plus the grown cache, causally, and
says how many numbers it caches per token. GQA with g groups covers both ends: g = h is MHA,
g = 1 is MQA. MLA caches one latent c^KV per token and can run with W_uk and W_uv absorbed.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F

from engine.attention.scoring import causal_mask
from engine.efficiency.measure import Timing, time_interleaved, torch_threads
from engine.errors import InputError


def group_membership(n_heads: int, n_groups: int) -> torch.Tensor:
    """(H, g) with a 1 where query head i reads key-value head i // (H / g) (001 appendix, GQA): the grouping
    causal_attention_weights makes by stacking each group's H / g consecutive query heads against one K."""
    if n_groups < 1 or n_heads % n_groups:
        raise InputError(f"{n_groups} key-value heads must be at least 1 and divide {n_heads} query heads")
    return F.one_hot(torch.arange(n_heads) // (n_heads // n_groups), n_groups)  # (H, g)


def causal_attention_weights(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) for new queries at the end of the keys, where g key-value heads each serve
    H / g consecutive query heads: q (B, H, T, d), k (B, g, t, d) -> (B, H, T, t); g = H is plain MHA.

    A group's queries are stacked as rows against its one K, so the cache is read once per group and never
    copied per head: reading the cache is what a decode step costs at long contexts."""
    B, H, T, d = q.shape
    g, t = k.shape[1], k.shape[2]
    n_rep = H // g
    q = q.reshape(B, g, n_rep * T, d)  # (B, g, n_rep T, d): query head i belongs to group i // n_rep
    att = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, g, n_rep T, t)
    if T > 1:  # one new query is the last position and sees every key: nothing to mask in a decode step
        mask = causal_mask(T, t, q.device).repeat(n_rep, 1)  # (n_rep T, t): every head's rows masked alike
        att = att.masked_fill(~mask, float("-inf"))
    return F.softmax(att.float(), dim=-1).view(B, H, T, t)


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """causal_attention_weights(q, k) v, each group's weights against its one V: v (B, g, t, d_v) -> (B, H, T, d_v)."""
    B, H, T, _ = q.shape
    g, t = k.shape[1], k.shape[2]
    weights = causal_attention_weights(q, k).view(B, g, H // g * T, t)  # a free view: rows stay grouped
    return (weights @ v).view(B, H, T, -1)


class GroupedQueryAttention(nn.Module):
    """h query heads share g key-value heads (001 appendix): g = h is MHA, g = 1 is MQA."""

    def __init__(self, d_model: int, n_heads: int, n_groups: int):
        super().__init__()
        if d_model % n_heads:
            raise InputError(f"{n_heads} heads do not divide d_model = {d_model}")
        if n_groups < 1 or n_heads % n_groups:
            divisors = [g for g in range(1, n_heads + 1) if n_heads % g == 0]
            raise InputError(f"{n_groups} groups do not divide {n_heads} heads; choose one of "
                             f"{', '.join(map(str, divisors))}")
        self.n_heads, self.n_groups, self.head_dim = n_heads, n_groups, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_k = nn.Linear(d_model, n_groups * self.head_dim, bias=False)
        self.W_v = nn.Linear(d_model, n_groups * self.head_dim, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def cache_per_token(self) -> int:
        return 2 * self.n_groups * self.head_dim  # K and V of each group

    def cache_for(self, x: torch.Tensor) -> dict:
        """What forward(x) caches, without attending: K and V of every token, each (B, g, T, d)."""
        B, T, _ = x.shape
        k = self.W_k(x).view(B, T, self.n_groups, self.head_dim).transpose(1, 2)  # (B, g, T, d)
        v = self.W_v(x).view(B, T, self.n_groups, self.head_dim).transpose(1, 2)
        return {"k": k, "v": v}

    def forward(self, x: torch.Tensor, cache: dict | None = None) -> tuple[torch.Tensor, dict]:
        B, T, C = x.shape
        q = self.W_q(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        new = self.cache_for(x)
        k, v = new["k"], new["v"]  # (B, g, T, d) each
        if cache:
            k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)
        y = causal_attention(q, k, v)  # (B, H, T, d)
        return self.W_o(y.transpose(1, 2).reshape(B, T, C)), {"k": k, "v": v}


class LatentAttention(nn.Module):
    """MLA without RoPE (000 §8.5.1): K = X W_dkv W_uk, V = X W_dkv W_uv, only c^KV = X W_dkv is cached.

    absorbed=True scores with (q W_uk^T) . c^KV and applies W_uv after the weighted sum of latents, so K and
    V are never rebuilt (000 eq. 93-99); absorbed=False rebuilds them, as the definition reads.
    """

    def __init__(self, d_model: int, n_heads: int, d_latent: int, absorbed: bool = False):
        super().__init__()
        if d_model % n_heads:
            raise InputError(f"{n_heads} heads do not divide d_model = {d_model}")
        self.n_heads, self.head_dim, self.d_latent, self.absorbed = n_heads, d_model // n_heads, d_latent, absorbed
        self.W_q = nn.Linear(d_model, d_model, bias=False)
        self.W_dkv = nn.Linear(d_model, d_latent, bias=False)  # the shared down-projection W_{down K,V}
        self.W_uk = nn.Linear(d_latent, d_model, bias=False)  # per-head up-projections, heads side by side
        self.W_uv = nn.Linear(d_latent, d_model, bias=False)
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def cache_per_token(self) -> int:
        return self.d_latent

    def cache_for(self, x: torch.Tensor) -> dict:
        """What forward(x) caches, without attending: the latent c^KV = x W_dkv of every token, (B, T, d_c)."""
        return {"c_kv": self.W_dkv(x)}

    def forward(self, x: torch.Tensor, cache: dict | None = None) -> tuple[torch.Tensor, dict]:
        B, T, C = x.shape
        H, d = self.n_heads, self.head_dim
        q = self.W_q(x).view(B, T, H, d).transpose(1, 2)  # (B, H, T, d)
        c_kv = self.cache_for(x)["c_kv"]  # (B, T, d_c)
        if cache:
            c_kv = torch.cat([cache["c_kv"], c_kv], dim=1)
        t = c_kv.shape[1]
        if not self.absorbed:
            k = self.W_uk(c_kv).view(B, t, H, d).transpose(1, 2)  # (B, H, t, d)
            v = self.W_uv(c_kv).view(B, t, H, d).transpose(1, 2)
            y = causal_attention(q, k, v)
        else:
            W_uk = self.W_uk.weight.view(H, d, self.d_latent)  # (H, d, d_c)
            q_latent = q @ W_uk  # (B, H, T, d_c): W_uk folded into the query
            latents = c_kv.unsqueeze(1)  # (B, 1, t, d_c): one c^KV shared by every head, like MQA's one K and V
            scale = math.sqrt(self.d_latent / d)  # causal_attention divides by sqrt(d_c); the score needs sqrt(d)
            mixed = causal_attention(q_latent * scale, latents, latents)  # (B, H, T, d_c): weighted latents
            y = mixed @ self.W_uv.weight.view(H, d, self.d_latent).transpose(1, 2)  # (B, H, T, d)
        return self.W_o(y.transpose(1, 2).reshape(B, T, C)), {"c_kv": c_kv}


def build_variant(name: str, d_model: int, n_heads: int, n_groups: int, d_latent: int) -> nn.Module:
    """One of "MHA", "GQA", "MQA", "MLA" at the same d_model and head count."""
    if name == "MHA":
        return GroupedQueryAttention(d_model, n_heads, n_heads)
    if name == "GQA":
        return GroupedQueryAttention(d_model, n_heads, n_groups)
    if name == "MQA":
        return GroupedQueryAttention(d_model, n_heads, 1)
    if name == "MLA":
        return LatentAttention(d_model, n_heads, d_latent, absorbed=True)
    raise ValueError(f"unknown attention variant {name!r}")


VARIANTS = ("MHA", "GQA", "MQA", "MLA")


def build_variants(d_model: int, n_heads: int, n_groups: int, d_latent: int) -> dict[str, nn.Module]:
    """All four VARIANTS at the same sizes, in eval mode."""
    return {name: build_variant(name, d_model, n_heads, n_groups, d_latent).eval() for name in VARIANTS}


@torch.no_grad()
def absorbed_and_unabsorbed(d_model: int, n_heads: int, d_latent: int, tokens: int = 16, seed: int = 1
                            ) -> tuple[torch.Tensor, torch.Tensor]:
    """One MLA's output on `tokens` random tokens with W_uk and W_uv absorbed (000 eq. 93, 99) and without
    (eq. 91), the same weights in both: (tokens, d_model) each, equal up to float32 rounding."""
    torch.manual_seed(seed)
    plain = LatentAttention(d_model, n_heads, d_latent, absorbed=False).eval()
    absorbed = LatentAttention(d_model, n_heads, d_latent, absorbed=True).eval()
    absorbed.load_state_dict(plain.state_dict())
    x = torch.randn(1, tokens, d_model)  # (1, T, C)
    return absorbed(x)[0][0], plain(x)[0][0]


@torch.no_grad()
def decode_step_timings(modules: dict[str, nn.Module], d_model: int, contexts: Sequence[int], repeats: int = 9,
                        warmup: int = 2, threads: int = 1, clock: Callable[[], float] = time.perf_counter
                        ) -> dict[str, list[Timing]]:
    """One new token's attention against a cache of each context length: per context the variants run in turn,
    `warmup` untimed rounds then `repeats` timed ones, on `threads` CPU threads (torch_threads says why one).
    Returns one Timing per context for each variant.

    The caches are filled by projection alone (cache_for): a causal forward over the whole context would
    form a T x T score matrix, 256 MB per head at 8k tokens."""
    generator = torch.Generator().manual_seed(0)
    timings: dict[str, list[Timing]] = {name: [] for name in modules}
    with torch_threads(threads):
        for context in contexts:
            past = torch.randn(1, context, d_model, generator=generator)  # (1, t, C)
            x = torch.randn(1, 1, d_model, generator=generator)  # (1, 1, C): the new token
            caches = {name: module.cache_for(past) for name, module in modules.items()}
            steps = {name: partial(module, x, caches[name]) for name, module in modules.items()}
            for name, timing in time_interleaved(steps, repeats, warmup, clock=clock).items():
                timings[name].append(timing)
    return timings

