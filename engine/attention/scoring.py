"""Attention scoring functions and masked softmax.

Follows 001 §1.4 (scaled dot-product, additive, masked softmax), 000 §7 (dot eq. 42,
general/bilinear eq. 46, additive eq. 47) and 000 §8.1 (eq. 55, 57, 62).
Rows of Q are queries and rows of K, V are keys and values, as in 000 eq. 54 and 60.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.errors import InputError

SCORING_FUNCTIONS = ("dot", "scaled_dot", "general", "additive")

# 001 §1.4 fills padded positions with -1e6 rather than -inf: exp(-1e6 - max) underflows
# to exactly 0 in float32, and a row whose every key were masked would still be finite.
MASK_FILL = -1e6


@dataclass
class ScoringParams:
    """Learnable parameters of the general (000 eq. 46) and additive (eq. 47) scores."""

    W: torch.Tensor  # (d_q, d_k), bilinear form h^T W z
    W_q: torch.Tensor  # (h, d_q)
    W_k: torch.Tensor  # (h, d_k)
    w_v: torch.Tensor  # (h,)


def init_scoring_params(d_q: int, d_k: int, hidden: int, seed: int) -> ScoringParams:
    """Random parameters with the 1/sqrt(fan_in) scale of nn.Linear's default init."""
    g = torch.Generator().manual_seed(seed)
    return ScoringParams(
        W=torch.randn(d_q, d_k, generator=g) / math.sqrt(d_q),
        W_q=torch.randn(hidden, d_q, generator=g) / math.sqrt(d_q),
        W_k=torch.randn(hidden, d_k, generator=g) / math.sqrt(d_k),
        w_v=torch.randn(hidden, generator=g) / math.sqrt(hidden),
    )


def random_qkv(n: int, m: int, d_q: int, d_k: int, d_v: int, seed: int) -> tuple[torch.Tensor, ...]:
    """Seeded queries Q (n, d_q), keys K (m, d_k) and values V (m, d_v) with independent N(0, 1) entries."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, d_q, generator=g), torch.randn(m, d_k, generator=g), torch.randn(m, d_v, generator=g)


def scores(Q: torch.Tensor, K: torch.Tensor, kind: str, params: ScoringParams | None = None) -> torch.Tensor:
    """Score every query against every key: Q (n, d_q), K (m, d_k) -> (n, m).

    dot: q k^T (000 eq. 42); scaled_dot: q k^T / sqrt(d) (000 eq. 57);
    general: q W k^T (000 eq. 46); additive: w_v^T tanh(W_q q + W_k k) (000 eq. 47).
    """
    if kind not in SCORING_FUNCTIONS:
        raise ValueError(f"unknown scoring function {kind!r}; choose one of {', '.join(SCORING_FUNCTIONS)}")
    if kind in ("dot", "scaled_dot") and Q.shape[-1] != K.shape[-1]:
        raise InputError(
            f"{kind} scoring needs queries and keys of the same width, got d_q = {Q.shape[-1]} "
            f"and d_k = {K.shape[-1]}; general or additive scoring accept different widths"
        )
    if kind == "dot":
        return Q @ K.T
    if kind == "scaled_dot":
        return Q @ K.T / math.sqrt(Q.shape[-1])
    if params is None:
        raise ValueError(f"{kind} scoring needs its parameters")
    if kind == "general":
        return Q @ params.W @ K.T
    projected_q = Q @ params.W_q.T  # (n, h)
    projected_k = K @ params.W_k.T  # (m, h)
    features = torch.tanh(projected_q[:, None, :] + projected_k[None, :, :])  # (n, m, h)
    return features @ params.w_v


def masked_softmax(scores: torch.Tensor, valid_lens: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis that ignores keys at positions >= valid length (001 §1.4).

    scores (..., n, m); valid_lens broadcastable to (..., n), each in 1..m. Masked weights
    are exactly 0 and each row sums to 1 over its valid keys.
    """
    scores = scores.float()  # softmax in float32
    if valid_lens is None:
        return torch.softmax(scores, dim=-1)
    m = scores.shape[-1]
    valid_lens = torch.as_tensor(valid_lens, device=scores.device)
    if bool((valid_lens < 1).any()) or bool((valid_lens > m).any()):
        raise InputError(f"valid lengths must lie in 1..{m}, got {valid_lens.tolist()}")
    positions = torch.arange(m, device=scores.device)  # (m,)
    keep = positions < valid_lens.expand(scores.shape[:-1])[..., None]  # (..., n, m)
    return torch.softmax(scores.masked_fill(~keep, MASK_FILL), dim=-1)


def causal_mask(n_queries: int, n_keys: int, device: torch.device | None = None) -> torch.Tensor:
    """(n_queries, n_keys), True where a query may look: the queries are the last n_queries of n_keys
    positions and each sees keys up to its own (000 eq. 70; shifted when earlier keys come from a cache)."""
    return torch.ones(n_queries, n_keys, dtype=torch.bool, device=device).tril(diagonal=n_keys - n_queries)


@dataclass
class AttentionResult:
    scores: torch.Tensor  # (n, m) before the softmax
    weights: torch.Tensor  # (n, m) rows sum to 1
    output: torch.Tensor  # (n, d_v)


def attention(
    Q: torch.Tensor,
    K: torch.Tensor,
    V: torch.Tensor,
    kind: str = "scaled_dot",
    valid_lens: torch.Tensor | None = None,
    params: ScoringParams | None = None,
) -> AttentionResult:
    """Attention pooling softmax(score(Q, K)) V (001 §1.2, 000 eq. 62): one row per query."""
    if K.shape[0] != V.shape[0]:
        raise InputError(f"K has {K.shape[0]} rows but V has {V.shape[0]}: every key needs one value")
    logits = scores(Q, K, kind, params)
    weights = masked_softmax(logits, valid_lens)
    return AttentionResult(scores=logits, weights=weights, output=weights @ V.float())


def single_query_attention(q: torch.Tensor, K: torch.Tensor, V: torch.Tensor) -> torch.Tensor:
    """000 eq. 55 written out for one query q (d_k,): sum_i exp(q k_i) / sum_j exp(q k_j) v_i."""
    logits = K @ q  # (m,)
    exps = torch.exp(logits - logits.max())  # stable softmax of 001 §1.2
    return (exps / exps.sum()) @ V
