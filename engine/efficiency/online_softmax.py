"""Softmax in three passes, online softmax in two, and online attention in one (000 §8.8, eq. 122-137).

Each function walks the logits one at a time, as the notes' loops do, and returns every intermediate
m_i, d_i (and o_i), so a page can show the state after any step. Computed in float32 at least.

Both 000 eq. 136-137 and 004 eq. 83-84 print the rescaling of o_{i-1} as e^{m_i}/e^{m_{i-1}}; the
derivation (and eq. 130's d_i) needs e^{m_{i-1}}/e^{m_i}. `online_attention(..., as_printed=True)`
runs the printed form so the difference can be seen: it agrees only while the running maximum stays put.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.errors import InputError


@dataclass
class SoftmaxTrace:
    x: torch.Tensor  # (N,) the logits
    m: torch.Tensor  # (N,) m_1..m_N: running maximum (three-pass: loop 1 of eq. 122)
    d: torch.Tensor  # (N,) d_1..d_N: normaliser after step i (three-pass: against m_N; online: against m_i)
    a: torch.Tensor  # (N,) the softmax, a_i = e^{x_i - m_N} / d_N

    def first_step_at_maximum(self) -> int:
        """The first step i (from 1) whose running maximum m_i is already m_N. The online d'_i of eq. 127 is
        the three-pass d_i of eq. 126 times e^{m_N - m_i}, so the two agree from this step on and differ
        before it."""
        return int(torch.nonzero(self.m == self.m[-1])[0]) + 1

    def rescaling(self) -> torch.Tensor:
        """(N,) e^{m_{i-1} - m_i}, the factor eq. 130 multiplies d_{i-1} by at step i; 0 at step 1 (m_0 = -inf)."""
        return torch.cat([self.m.new_zeros(1), torch.exp(self.m[:-1] - self.m[1:])])


@dataclass
class AttentionTrace:
    x: torch.Tensor  # (N,) scores x_i = q k_i^T (times the scale)
    m: torch.Tensor  # (N,) running maximum m_i
    d: torch.Tensor  # (N,) running normaliser d_i
    o: torch.Tensor  # (N, d_v) running output o_i; o_N is the attention output


def _logits(x: torch.Tensor) -> torch.Tensor:
    if x.dim() != 1 or x.numel() == 0:
        raise InputError("the logits must be a non-empty vector")
    return x.to(torch.promote_types(x.dtype, torch.float32))


def random_logits(n: int, scale: float, seed: int) -> torch.Tensor:
    """(n,) logits drawn from N(0, scale²) with a seeded generator."""
    return torch.randn(n, generator=torch.Generator().manual_seed(seed)) * scale


def logits_as_attention(x: torch.Tensor, d_v: int = 2,
                        seed: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One query whose scores are the logits: q = (1), K = x as a column, so q k_i^T = x_i exactly at scale 1;
    and random values V (N, d_v), seeded. Returns q (1,), K (N, 1), V (N, d_v)."""
    return torch.ones(1), x[:, None], torch.randn(len(x), d_v, generator=torch.Generator().manual_seed(seed))


def naive_softmax(x: torch.Tensor) -> torch.Tensor:
    """e^{x_i} / Σ_j e^{x_j} with no maximum subtracted: e^{x} overflows float32 past x ≈ 88.7."""
    e = torch.exp(_logits(x))
    return e / e.sum()


def _running_max(x: torch.Tensor) -> torch.Tensor:
    m, running = torch.empty_like(x), -math.inf
    for i, x_i in enumerate(x.tolist()):
        running = max(running, x_i)  # m_i = max(m_{i-1}, x_i)
        m[i] = running
    return m


def three_pass_softmax(x: torch.Tensor) -> SoftmaxTrace:
    """000 eq. 122 (loop 1: m_N), eq. 123 (loop 2: d_i = d_{i-1} + e^{x_i - m_N}), eq. 124 (loop 3: a_i)."""
    x = _logits(x)
    m = _running_max(x)
    m_N = m[-1]
    d, d_i = torch.empty_like(x), x.new_zeros(())
    for i in range(len(x)):
        d_i = d_i + torch.exp(x[i] - m_N)
        d[i] = d_i
    a = torch.exp(x - m_N) / d[-1]
    return SoftmaxTrace(x, m, d, a)


def online_softmax(x: torch.Tensor) -> SoftmaxTrace:
    """000 eq. 130 (one loop: m_i and d_i = d_{i-1} e^{m_{i-1} - m_i} + e^{x_i - m_i}), then eq. 131."""
    x = _logits(x)
    m, d = torch.empty_like(x), torch.empty_like(x)
    m_prev, d_prev = x.new_tensor(-math.inf), x.new_zeros(())
    for i in range(len(x)):
        m_i = torch.maximum(m_prev, x[i])
        d_i = d_prev * torch.exp(m_prev - m_i) + torch.exp(x[i] - m_i)
        m[i], d[i] = m_i, d_i
        m_prev, d_prev = m_i, d_i
    a = torch.exp(x - m[-1]) / d[-1]
    return SoftmaxTrace(x, m, d, a)


def online_attention(q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, scale: float | None = None,
                     as_printed: bool = False) -> AttentionTrace:
    """000 eq. 137: one loop over the keys, for one query q (d,), keys K (N, d) and values V (N, d_v).

    o_i = o_{i-1} (d_{i-1}/d_i) e^{m_{i-1} - m_i} + (e^{x_i - m_i}/d_i) v_i; as_printed uses e^{m_i - m_{i-1}}.
    scale multiplies every score (1/sqrt(d) by default, as torch's scaled_dot_product_attention).
    """
    if K.dim() != 2 or V.dim() != 2 or q.dim() != 1 or len(K) != len(V) or len(K) == 0 or K.shape[1] != len(q):
        raise ValueError(f"need q (d,), K (N, d) and V (N, d_v) with N ≥ 1; got {tuple(q.shape)}, "
                         f"{tuple(K.shape)}, {tuple(V.shape)}")
    dtype = torch.promote_types(q.dtype, torch.float32)
    q, K, V = q.to(dtype), K.to(dtype), V.to(dtype)
    scale = 1 / math.sqrt(len(q)) if scale is None else scale
    N = len(K)
    x, m, d = q.new_empty(N), q.new_empty(N), q.new_empty(N)
    o = q.new_empty(N, V.shape[1])
    m_prev, d_prev, o_prev = q.new_tensor(-math.inf), q.new_zeros(()), q.new_zeros(V.shape[1])
    for i in range(N):
        x_i = (q @ K[i]) * scale  # x_i = q k_i^T
        m_i = torch.maximum(m_prev, x_i)
        d_i = d_prev * torch.exp(m_prev - m_i) + torch.exp(x_i - m_i)
        if i == 0:  # o_0 = 0: the first term vanishes (as printed it would be 0 · e^{+inf})
            o_i = torch.exp(x_i - m_i) / d_i * V[i]
        else:
            shift = m_i - m_prev if as_printed else m_prev - m_i
            o_i = o_prev * (d_prev / d_i) * torch.exp(shift) + torch.exp(x_i - m_i) / d_i * V[i]
        x[i], m[i], d[i], o[i] = x_i, m_i, d_i, o_i
        m_prev, d_prev, o_prev = m_i, d_i, o_i
    return AttentionTrace(x, m, d, o)


def prefix_softmax(trace: SoftmaxTrace, step: int) -> torch.Tensor:
    """The online estimate after `step` logits, e^{x_j - m_step} / d_step for j ≤ step: the softmax of the
    prefix, which the remaining steps only rescale. Needs the online trace (d against the running maximum)."""
    if not 1 <= step <= len(trace.x):
        raise InputError(f"step must be from 1 to {len(trace.x)}")
    return torch.exp(trace.x[:step] - trace.m[step - 1]) / trace.d[step - 1]
