"""FlashAttention in torch: attention computed tile by tile with the online softmax (000 §8.8, eq. 137).

The plain reference `naive_attention` materialises the (N_q, N_k) scores S and probabilities P. The tiled
forward never does: for each block of B_r queries it walks the blocks of B_c keys, keeping a running
maximum m, a running normaliser l (the notes' d_i) and an unnormalised output, rescaled by e^{m_old - m_new}
whenever the maximum grows, exactly eq. 137 applied to a block of rows at once. It saves only O and the
log-sum-exp L = m + log l per row; the backward pass recomputes P = e^{S - L} tile by tile from L, as
FlashAttention does, instead of storing it. Loop order and names follow FlashAttention-2 (Dao, 2023).

Tensors are (..., N, d): any leading batch and head dimensions. Causal masks are top-left aligned (query r
sees keys c ≤ r), as torch's scaled_dot_product_attention(is_causal=True).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.attention.scoring import causal_mask
from engine.errors import InputError


def _scale(Q: torch.Tensor, scale: float | None) -> float:
    return 1 / math.sqrt(Q.shape[-1]) if scale is None else scale


def _accumulator(Q: torch.Tensor) -> torch.dtype:
    """Statistics and sums in float32 at least (float64 inputs keep float64, so tests can be exact)."""
    return torch.promote_types(Q.dtype, torch.float32)


def _check(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool, B_r: int = 1, B_c: int = 1) -> None:
    if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
        raise ValueError(f"shapes do not fit: Q {tuple(Q.shape)}, K {tuple(K.shape)}, V {tuple(V.shape)}")
    if Q.shape[-2] == 0 or K.shape[-2] == 0:
        raise InputError("attention needs at least one query and one key")
    if causal and Q.shape[-2] != K.shape[-2]:
        raise InputError("causal attention here needs as many queries as keys")
    if B_r < 1 or B_c < 1:
        raise InputError(f"block sizes must be at least 1, got B_r = {B_r}, B_c = {B_c}")


def _mask_tile(S: torch.Tensor, r0: int, c0: int) -> torch.Tensor:
    """-inf where key c0 + b lies after query r0 + a in the tile S (..., rows, cols) of a diagonal block."""
    rows = torch.arange(r0, r0 + S.shape[-2], device=S.device)
    cols = torch.arange(c0, c0 + S.shape[-1], device=S.device)
    return S.masked_fill(cols > rows[:, None], -math.inf)


def naive_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool = False,
                    scale: float | None = None) -> torch.Tensor:
    """softmax(Q K^T · scale) V with S and P held whole (000 eq. 57); softmax in float32."""
    _check(Q, K, V, causal)
    S = (Q @ K.transpose(-2, -1)).to(_accumulator(Q)) * _scale(Q, scale)  # (..., N_q, N_k)
    if causal:
        S = S.masked_fill(~causal_mask(S.shape[-2], S.shape[-1], S.device), -math.inf)
    P = torch.softmax(S, dim=-1)
    return (P.to(V.dtype) @ V).to(Q.dtype)


def tile_kind(i: int, j: int, B_r: int, B_c: int, N: int, causal: bool) -> str:
    """Whether tile (i, j) of S needs no mask, a mask (it crosses the diagonal) or no work at all."""
    first_row, last_row = i * B_r, min((i + 1) * B_r, N) - 1
    first_col, last_col = j * B_c, min((j + 1) * B_c, N) - 1
    if not causal or last_col <= first_row:
        return "full"
    return "skipped" if first_col > last_row else "diagonal"


def tile_kinds(N: int, B_r: int, B_c: int, causal: bool) -> list[list[str]]:
    """tile_kind of every tile of S: (T_r, T_c) with T_r = ⌈N / B_r⌉ query blocks and T_c = ⌈N / B_c⌉ key blocks."""
    T_r, T_c = math.ceil(N / B_r), math.ceil(N / B_c)
    return [[tile_kind(i, j, B_r, B_c, N, causal) for j in range(T_c)] for i in range(T_r)]


@dataclass
class TileStep:
    """One computed tile of the forward pass, for one head: the running statistics of its query rows after it."""

    i: int  # query block
    j: int  # key/value block
    kind: str  # "full" or "diagonal"
    m: torch.Tensor  # (rows,) running maximum after this tile
    l: torch.Tensor  # (rows,) running normaliser after this tile


def flash_forward(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool = False, B_r: int = 64,
                  B_c: int = 64, scale: float | None = None,
                  record: list[TileStep] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Tiled forward: O (..., N_q, d_v) in Q's dtype and L = m + log l (..., N_q) in float32.

    `record`, if given, receives a TileStep per computed tile (statistics of the first batch entry).
    """
    _check(Q, K, V, causal, B_r, B_c)
    scale, acc_dtype = _scale(Q, scale), _accumulator(Q)
    N_q, N_k = Q.shape[-2], K.shape[-2]
    O = torch.empty(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype, device=Q.device)
    L = torch.empty(Q.shape[:-1], dtype=acc_dtype, device=Q.device)
    for i, r0 in enumerate(range(0, N_q, B_r)):
        Q_i = Q[..., r0:r0 + B_r, :]  # (..., B_r, d)
        rows = Q_i.shape[-2]
        m = torch.full(Q_i.shape[:-1], -math.inf, dtype=acc_dtype, device=Q.device)  # (..., B_r)
        l = torch.zeros_like(m)
        acc = torch.zeros(*Q_i.shape[:-1], V.shape[-1], dtype=acc_dtype, device=Q.device)  # (..., B_r, d_v)
        for j, c0 in enumerate(range(0, N_k, B_c)):
            kind = tile_kind(i, j, B_r, B_c, N_k, causal)
            if kind == "skipped":
                break  # every later key block is further in the future
            S = (Q_i @ K[..., c0:c0 + B_c, :].transpose(-2, -1)).to(acc_dtype) * scale  # (..., B_r, B_c)
            if kind == "diagonal":
                S = _mask_tile(S, r0, c0)
            m_new = torch.maximum(m, S.amax(dim=-1))
            P = torch.exp(S - m_new[..., None])  # (..., B_r, B_c)
            alpha = torch.exp(m - m_new)  # e^{m_old - m_new}: the rescaling of eq. 137
            l = alpha * l + P.sum(dim=-1)
            acc = alpha[..., None] * acc + (P.to(V.dtype) @ V[..., c0:c0 + B_c, :]).to(acc_dtype)
            m = m_new
            if record is not None:
                record.append(TileStep(i, j, kind, m.reshape(-1, rows)[0].clone(), l.reshape(-1, rows)[0].clone()))
        O[..., r0:r0 + B_r, :] = (acc / l[..., None]).to(Q.dtype)
        L[..., r0:r0 + B_r] = m + torch.log(l)
    return O, L


def flash_backward(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, O: torch.Tensor, dO: torch.Tensor,
                   L: torch.Tensor, causal: bool = False, B_r: int = 64, B_c: int = 64,
                   scale: float | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK, dV from the saved O and L, recomputing P_ij = e^{S_ij - L_i} tile by tile (FlashAttention-2).

    With D_i = rowsum(dO_i ∘ O_i): dV_j += P^T dO_i, dP = dO_i V_j^T, dS = P ∘ (dP − D_i),
    dQ_i += dS K_j · scale, dK_j += dS^T Q_i · scale.
    """
    _check(Q, K, V, causal, B_r, B_c)
    scale, acc = _scale(Q, scale), _accumulator(Q)
    N_q, N_k = Q.shape[-2], K.shape[-2]
    D = (dO.to(acc) * O.to(acc)).sum(dim=-1)  # (..., N_q)
    dQ, dK, dV = (torch.zeros(t.shape, dtype=acc, device=Q.device) for t in (Q, K, V))
    for j, c0 in enumerate(range(0, N_k, B_c)):
        K_j, V_j = K[..., c0:c0 + B_c, :].to(acc), V[..., c0:c0 + B_c, :].to(acc)
        for i, r0 in enumerate(range(0, N_q, B_r)):
            kind = tile_kind(i, j, B_r, B_c, N_k, causal)
            if kind == "skipped":
                continue
            Q_i, dO_i = Q[..., r0:r0 + B_r, :].to(acc), dO[..., r0:r0 + B_r, :].to(acc)
            S = Q_i @ K_j.transpose(-2, -1) * scale  # (..., B_r, B_c)
            if kind == "diagonal":
                S = _mask_tile(S, r0, c0)
            P = torch.exp(S - L[..., r0:r0 + B_r, None])
            dV[..., c0:c0 + B_c, :] += P.transpose(-2, -1) @ dO_i
            dS = P * (dO_i @ V_j.transpose(-2, -1) - D[..., r0:r0 + B_r, None])
            dQ[..., r0:r0 + B_r, :] += dS @ K_j * scale
            dK[..., c0:c0 + B_c, :] += dS.transpose(-2, -1) @ Q_i * scale
    return dQ.to(Q.dtype), dK.to(K.dtype), dV.to(V.dtype)


class _FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, causal, B_r, B_c, scale):
        O, L = flash_forward(Q, K, V, causal, B_r, B_c, scale)
        ctx.save_for_backward(Q, K, V, O, L)  # no S, no P: the backward pass recomputes them
        ctx.settings = (causal, B_r, B_c, scale)
        return O

    @staticmethod
    def backward(ctx, dO):
        Q, K, V, O, L = ctx.saved_tensors
        return (*flash_backward(Q, K, V, O, dO, L, *ctx.settings), None, None, None, None)


def flash_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool = False, B_r: int = 64,
                    B_c: int = 64, scale: float | None = None) -> torch.Tensor:
    """The tiled forward with the tiled backward behind autograd."""
    return _FlashAttention.apply(Q, K, V, causal, B_r, B_c, scale)


@dataclass
class TiledExample:
    """One head run tile by tile, with every output beside an independent reference."""

    steps: list[TileStep]
    checks: list[tuple[str, torch.Tensor, torch.Tensor]]  # (what, tiled, reference)


EXAMPLE_HEAD_DIM = 8  # the example shows the grid of tiles, not the width of a head


def tiled_example(N: int, B_r: int, B_c: int, causal: bool, seed: int,
                  d: int = EXAMPLE_HEAD_DIM) -> TiledExample:
    """Random Q, K, V (1, 1, N, d) in float64, so the checks are limited by rounding alone: O against naive
    attention, L against logsumexp of the masked scores, dQ, dK, dV against autograd through naive attention."""
    g = torch.Generator().manual_seed(seed)
    Q, K, V = (torch.randn(1, 1, N, d, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(3))
    dO = torch.randn(1, 1, N, d, generator=g, dtype=torch.float64)
    steps: list[TileStep] = []
    with torch.no_grad():
        O, L = flash_forward(Q, K, V, causal, B_r, B_c, record=steps)
        S = Q @ K.transpose(-2, -1) / math.sqrt(d)
        if causal:
            S = S.masked_fill(~causal_mask(N, N), -math.inf)
    reference = naive_attention(Q, K, V, causal)
    tiled_grads = flash_backward(Q.detach(), K.detach(), V.detach(), O, dO, L, causal, B_r, B_c)
    autograd = torch.autograd.grad(reference, (Q, K, V), dO)
    checks = [("O tiled − naive", O, reference.detach()), ("L − logsumexp(S)", L, torch.logsumexp(S, -1))]
    checks += [(f"d{name} tiled − autograd", a, b) for name, a, b in zip("QKV", tiled_grads, autograd)]
    return TiledExample(steps, checks)
