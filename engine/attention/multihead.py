"""Multi-head self-attention, step by step with every intermediate shape.

Follows the CausalSelfAttention forward of 000 §8.3.2 (eq. 72-82), the per-head
formulation of 002 §2.1.3 and 001 §1.6, and the many-queries form of 000 §8.1.4 (eq. 60-62).
Weights multiply from the right, X W, as in the notes (000 eq. 64).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.attention.scoring import attention, single_query_attention
from engine.errors import InputError


@dataclass
class MultiHeadWeights:
    W_qkv: torch.Tensor  # (C, 3C): [W_Q | W_K | W_V], heads side by side inside each (000 eq. 68)
    W_o: torch.Tensor  # (C, C)


def init_multihead(d_model: int, seed: int) -> MultiHeadWeights:
    g = torch.Generator().manual_seed(seed)
    scale = 1 / math.sqrt(d_model)  # nn.Linear's fan-in scale keeps logits O(1)
    return MultiHeadWeights(
        W_qkv=torch.randn(d_model, 3 * d_model, generator=g) * scale,
        W_o=torch.randn(d_model, d_model, generator=g) * scale,
    )


def random_tokens(batch: int, tokens: int, d_model: int, seed: int) -> torch.Tensor:
    """A seeded batch of token vectors with independent N(0, 1) entries: x (B, T, C)."""
    return torch.randn(batch, tokens, d_model, generator=torch.Generator().manual_seed(seed))


def check_heads(d_model: int, n_heads: int) -> None:
    """000 eq. 69: d_k * h = d_model, so h must divide d_model."""
    if n_heads < 1 or d_model % n_heads:
        divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
        raise InputError(
            f"{n_heads} heads do not divide d_model = {d_model}; choose one of {', '.join(map(str, divisors))}"
        )


@dataclass
class Step:
    code: str  # the line of 000's code that makes this tensor
    equation: str  # where the notes write it
    dims: str  # named dimensions, e.g. "(B, H, T, d)"
    tensor: torch.Tensor


def multi_head_steps(x: torch.Tensor, weights: MultiHeadWeights, n_heads: int, causal: bool) -> list[Step]:
    """Run one multi-head self-attention on x (B, T, C), recording each step; the last is the output."""
    B, T, C = x.shape
    check_heads(C, n_heads)
    d = C // n_heads
    steps = [Step("x", "000 eq. 71", "(B, T, C)", x)]
    qkv = x @ weights.W_qkv  # (B, T, 3C)
    steps.append(Step("qkv = self.qkv(x)", "000 eq. 72-73", "(B, T, 3C)", qkv))
    q, k, v = qkv.split(C, dim=2)  # each (B, T, C)
    steps.append(Step("q, k, v = qkv.split(C, dim=2)", "000 eq. 74", "(B, T, C)", q))

    def reshape_heads(t: torch.Tensor) -> torch.Tensor:
        return t.view(B, T, n_heads, d).transpose(1, 2)  # (B, H, T, d)

    q, k, v = reshape_heads(q), reshape_heads(k), reshape_heads(v)
    steps.append(Step("q = reshape_heads(q)", "000 eq. 75", "(B, H, T, d)", q))
    att = q @ k.transpose(-2, -1) / math.sqrt(d)  # (B, H, T, T)
    steps.append(Step("att = q @ k.transpose(-2, -1) / sqrt(d)", "000 eq. 77-78", "(B, H, T, T)", att))
    if causal:
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool)).view(1, 1, T, T)  # 000 eq. 70
        att = att.masked_fill(~mask, float("-inf"))
        steps.append(Step("att = att.masked_fill(mask == 0, -inf)", "000 eq. 79", "(B, H, T, T)", att))
    att = torch.softmax(att.float(), dim=-1)
    steps.append(Step("att = F.softmax(att, dim=-1)", "000 eq. 80", "(B, H, T, T)", att))
    y = att @ v  # (B, H, T, d)
    steps.append(Step("y = att @ v", "000 eq. 81", "(B, H, T, d)", y))
    y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C): heads side by side
    steps.append(Step("y = y.transpose(1, 2).contiguous().view(B, T, C)", "000 eq. 82", "(B, T, C)", y))
    steps.append(Step("y = self.proj(y)", "000 eq. 82 (x W_O)", "(B, T, C)", y @ weights.W_o))
    return steps


def step_tensor(steps: list[Step], code: str) -> torch.Tensor:
    """The tensor that the line `code` of 000 §8.3.2 made, in steps from multi_head_steps."""
    for step in steps:
        if step.code == code:
            return step.tensor
    raise ValueError(f"no step runs {code!r}; the steps are {', '.join(s.code for s in steps)}")


def multi_head_per_head(x: torch.Tensor, weights: MultiHeadWeights, n_heads: int, causal: bool) -> torch.Tensor:
    """The same layer as 002 §2.1.3 writes it: head_i = Attention(X W_i^Q, X W_i^K, X W_i^V),
    one head at a time, then Concat(head_1..head_h) W^O. x (B, T, C) -> (B, T, C)."""
    B, T, C = x.shape
    check_heads(C, n_heads)
    d = C // n_heads
    W_Q, W_K, W_V = weights.W_qkv.split(C, dim=1)  # each (C, C)
    # causal masking is a valid length per query: query t sees keys 0..t
    valid = torch.arange(1, T + 1) if causal else None
    outputs = []
    for b in range(B):
        heads = []
        for i in range(n_heads):
            cols = slice(i * d, (i + 1) * d)
            X = x[b]  # (T, C)
            heads.append(attention(X @ W_Q[:, cols], X @ W_K[:, cols], X @ W_V[:, cols], "scaled_dot", valid).output)
        outputs.append(torch.cat(heads, dim=-1) @ weights.W_o)  # (T, C)
    return torch.stack(outputs)


def one_query_at_a_time(x: torch.Tensor, weights: MultiHeadWeights, n_heads: int, causal: bool) -> torch.Tensor:
    """Head 1 of batch item 1, each query on its own with 000 eq. 55 (a causal query t sees keys 0..t): (T, d)."""
    T, C = x.shape[1:]
    d = C // n_heads
    W_Q, W_K, W_V = weights.W_qkv.split(C, dim=1)
    q, K, V = x[0] @ W_Q[:, :d], x[0] @ W_K[:, :d], x[0] @ W_V[:, :d]  # each (T, d)
    # eq. 55 has no 1/sqrt(d); scaling q by it gives 000 eq. 57's scores
    return torch.stack([single_query_attention(q[t] / math.sqrt(d), K[: t + 1] if causal else K,
                                               V[: t + 1] if causal else V) for t in range(T)])
