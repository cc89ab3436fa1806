"""Our FlashAttention forward kernel in Triton: one program per block of BLOCK_M queries of one head.

The program keeps Q_i, the running maximum m_i, the normaliser l_i and the unnormalised output in
registers and streams K and V through in blocks of BLOCK_N keys, rescaling by 2^{m_old − m_new} whenever
the maximum grows: 000 eq. 137 on a block of rows, the loop of engine.efficiency.flash.flash_forward.
Scores are kept in log2 units (the 1/√d scale is folded with log2 e into one multiplier) so that the
exponentials are exp2, the instruction GPUs have. Causal attention runs two loops: the key blocks wholly
in the past need no mask, only the blocks on the diagonal do, and blocks in the future are never loaded.

Runs compiled on a CUDA GPU, and on CPU tensors under Triton's interpreter (TRITON_INTERPRET=1, set
before this module is imported). The interpreter's tl.dot multiplies bfloat16 bit patterns as integers
(triton 3.6-3.9), so there, and only there, bfloat16 tiles are widened to float32 for the two products
(DOT_F32); P is still rounded to bfloat16 first, as on the GPU. Without triton installed, `available()` is False and nothing else works.
"""
from __future__ import annotations

import contextlib
import math
import os

import torch

from engine.errors import InputError

try:
    import triton
    import triton.language as tl
except ImportError:  # the app and its tests run without triton; only this kernel needs it
    triton = None

HEAD_DIMS = (16, 32, 64, 128)  # tl.dot needs at least 16; past 128 the tile no longer fits in registers
DTYPES = (torch.float16, torch.bfloat16)
MAX_GRID_Y = 65535  # CUDA's limit on the second grid dimension, which holds batch × heads
LOG2_E = 1.4426950408889634  # 1 / ln 2: e^x = 2^(x log2 e)


def interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def available() -> bool:
    """Whether the kernel can run here: triton installed, and a CUDA GPU or the interpreter."""
    return triton is not None and (torch.cuda.is_available() or interpreted())


if triton is not None:
    @triton.jit
    def _tile(acc, m_i, l_i, q, k_base, v_base, stride_n, offs_m, offs_d, start_n, n_ctx, qk_scale,
              BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, EVEN_N: tl.constexpr, DOT_F32: tl.constexpr):
        """One key/value block into the running (acc, m_i, l_i) of a query block."""
        offs_n = start_n + tl.arange(0, BLOCK_N)
        if EVEN_N:
            k_t = tl.load(k_base + offs_n[None, :] * stride_n + offs_d[:, None])  # (d, BLOCK_N)
            v = tl.load(v_base + offs_n[:, None] * stride_n + offs_d[None, :])  # (BLOCK_N, d)
        else:
            k_t = tl.load(k_base + offs_n[None, :] * stride_n + offs_d[:, None], mask=offs_n[None, :] < n_ctx,
                          other=0.0)
            v = tl.load(v_base + offs_n[:, None] * stride_n + offs_d[None, :], mask=offs_n[:, None] < n_ctx,
                        other=0.0)
        if DOT_F32:
            s = tl.dot(q.to(tl.float32), k_t.to(tl.float32))
        else:
            s = tl.dot(q, k_t)  # (BLOCK_M, BLOCK_N), unscaled: the scale is fused into the exponent below
        if CAUSAL_MASK:
            s = tl.where(offs_m[:, None] >= offs_n[None, :], s, float("-inf"))
        if not EVEN_N:
            s = tl.where(offs_n[None, :] < n_ctx, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)  # in log2 units
        p = tl.math.exp2(s * qk_scale - m_new[:, None])  # one fused multiply-add per score
        alpha = tl.math.exp2(m_i - m_new)  # 2^{m_old - m_new}: eq. 137's rescaling
        l_i = l_i * alpha + tl.sum(p, 1)
        p = p.to(v.dtype)  # P rounded to the input dtype, as the tensor cores take it
        if DOT_F32:
            acc = tl.dot(p.to(tl.float32), v.to(tl.float32), acc * alpha[:, None])
        else:
            acc = tl.dot(p, v, acc * alpha[:, None])  # accumulate into the rescaled output
        return acc, m_new, l_i

    @triton.jit
    def _flash_forward(Q, K, V, O, L, stride_bh, stride_n, n_ctx, qk_scale, HEAD_DIM: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                       EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, DOT_F32: tl.constexpr):
        start_m = tl.program_id(0)
        if CAUSAL:  # the longest causal rows first, so the launch does not end on them
            start_m = tl.num_programs(0) - 1 - start_m
        head = tl.program_id(1).to(tl.int64)  # batch × heads can pass 2^31 elements
        offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_d = tl.arange(0, HEAD_DIM)
        q_ptrs = Q + head * stride_bh + offs_m[:, None] * stride_n + offs_d[None, :]
        if EVEN_M:
            q = tl.load(q_ptrs)
        else:
            q = tl.load(q_ptrs, mask=offs_m[:, None] < n_ctx, other=0.0)
        k_base, v_base = K + head * stride_bh, V + head * stride_bh
        m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        if CAUSAL:  # key blocks wholly before this query block: whole, no mask (BLOCK_N divides BLOCK_M)
            for start_n in tl.range(0, start_m * BLOCK_M, BLOCK_N):
                acc, m_i, l_i = _tile(acc, m_i, l_i, q, k_base, v_base, stride_n, offs_m, offs_d, start_n, n_ctx,
                                      qk_scale, BLOCK_N, False, True, DOT_F32)
            # then the blocks on the diagonal, masked; blocks after it are never loaded
            for start_n in tl.range(start_m * BLOCK_M, tl.minimum((start_m + 1) * BLOCK_M, n_ctx), BLOCK_N):
                acc, m_i, l_i = _tile(acc, m_i, l_i, q, k_base, v_base, stride_n, offs_m, offs_d, start_n, n_ctx,
                                      qk_scale, BLOCK_N, True, EVEN_N, DOT_F32)
        else:  # every key block; the last one is masked where N is not a multiple of BLOCK_N
            for start_n in tl.range(0, n_ctx, BLOCK_N):
                acc, m_i, l_i = _tile(acc, m_i, l_i, q, k_base, v_base, stride_n, offs_m, offs_d, start_n, n_ctx,
                                      qk_scale, BLOCK_N, False, EVEN_N, DOT_F32)
        out = acc / l_i[:, None]
        o_ptrs = O + head * stride_bh + offs_m[:, None] * stride_n + offs_d[None, :]
        l_ptrs = L + head * n_ctx + offs_m
        lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453  # × ln 2, back to natural log: L = m + log l
        if EVEN_M:
            tl.store(o_ptrs, out.to(O.dtype.element_ty))
            tl.store(l_ptrs, lse)
        else:
            tl.store(o_ptrs, out.to(O.dtype.element_ty), mask=offs_m[:, None] < n_ctx)
            tl.store(l_ptrs, lse, mask=offs_m < n_ctx)


def check_settings(head_dim: int, dtype: torch.dtype, block_m: int, block_n: int, causal: bool) -> None:
    """The shapes and types the kernel supports, each refused with the reason."""
    if head_dim not in HEAD_DIMS:
        raise InputError(f"head dim {head_dim} is not supported by the kernel; use one of "
                         f"{', '.join(map(str, HEAD_DIMS))}")
    if dtype not in DTYPES:
        raise InputError(f"the kernel takes float16 or bfloat16, got {str(dtype).removeprefix('torch.')}")
    for name, block in (("BLOCK_M", block_m), ("BLOCK_N", block_n)):
        if block < 16 or block & (block - 1):
            raise InputError(f"{name} = {block}: blocks must be powers of two from 16 (tl.arange and tl.dot)")
    if causal and block_m % block_n:
        raise InputError(f"causal attention needs BLOCK_N = {block_n} to divide BLOCK_M = {block_m}, so that "
                         "the diagonal blocks start where a query block starts")


def default_launch(head_dim: int) -> tuple[int, int, int]:
    """BLOCK_M, BLOCK_N and warps: small blocks under the interpreter (numpy runs every lane); on a GPU,
    8 warps at d = 128 so the (128, 128) accumulator and the score tile fit in registers without spilling."""
    if interpreted():
        return 16, 16, 4
    return (128, 64, 4) if head_dim <= 64 else (128, 64, 8)


def triton_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool = False,
                     block_m: int | None = None, block_n: int | None = None, num_warps: int | None = None,
                     num_stages: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(QK^T/√d) V for Q, K, V (B, H, N, d) in float16 or bfloat16: O (B, H, N, d) and L (B, H, N)."""
    if not available():
        raise RuntimeError("the Triton kernel needs triton and a CUDA GPU, or TRITON_INTERPRET=1 on CPU")
    if Q.dim() != 4 or Q.shape != K.shape or Q.shape != V.shape:
        raise ValueError(f"Q, K and V must share one shape (B, H, N, d); got {tuple(Q.shape)}, "
                         f"{tuple(K.shape)}, {tuple(V.shape)}")
    if not interpreted() and not (Q.is_cuda and K.device == Q.device == V.device):
        raise ValueError("the compiled kernel takes Q, K and V on one CUDA device")
    B, H, N, d = Q.shape
    if B * H > MAX_GRID_Y:
        raise InputError(f"batch × heads = {B * H:,} is more than the {MAX_GRID_Y:,} programs a grid column holds")
    defaults = default_launch(d)
    block_m, block_n, num_warps = block_m or defaults[0], block_n or defaults[1], num_warps or defaults[2]
    check_settings(d, Q.dtype, block_m, block_n, causal)
    Q, K, V = Q.contiguous(), K.contiguous(), V.contiguous()
    O = torch.empty_like(Q)
    L = torch.empty(B, H, N, dtype=torch.float32, device=Q.device)
    grid = (math.ceil(N / block_m), B * H)
    with torch.cuda.device(Q.device) if Q.is_cuda else contextlib.nullcontext():
        _flash_forward[grid](Q, K, V, O, L, N * d, d, N, LOG2_E / math.sqrt(d), HEAD_DIM=d, BLOCK_M=block_m,
                             BLOCK_N=block_n, CAUSAL=causal, EVEN_M=N % block_m == 0, EVEN_N=N % block_n == 0,
                             DOT_F32=interpreted() and Q.dtype == torch.bfloat16, num_warps=num_warps,
                             num_stages=num_stages)
    return O, L
