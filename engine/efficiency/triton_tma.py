"""Our bf16/fp16 forward with its tiles moved by Hopper's tensor memory accelerator (TMA): a step toward issue 48's
Hopper forward, measured beside the pointer-load kernel of engine.efficiency.triton_flash.

The loop is triton_flash's (the same online softmax, eq. 137, the same causal split), but Q, K, V and O move through
tensor descriptors: one bulk copy per tile, issued by one thread and tracked by a barrier, instead of every thread
computing addresses and loading its share. The descriptors view (B, H, N, d) as (B·H·N, d) rows, so N must be a
multiple of both blocks (a tile never crosses into the next head). WARP_SPECIALIZE asks Triton to give the loads and
the products warps of their own (`tl.range(..., warp_specialize=True)`), where the compiler supports it.
Runs compiled on a GPU with TMA (compute capability 9.0 or more) and on CPU under Triton's interpreter.
"""
from __future__ import annotations

import math

import torch

from engine.efficiency.launches import ForwardLaunch
from engine.efficiency.triton_flash import (
    KERNEL_LN_2,
    LOG2_E,
    _check_inputs,
    _dot,
    _on_device,
    _rounded,
    check_settings,
    default_launch,
    interpreted,
    triton,
)
from engine.errors import InputError

if triton is not None:
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    @triton.jit
    def _tma_tile(acc, m_i, l_i, q, desc_k, desc_v, row, offs_m, start_n, qk_scale, BLOCK_N: tl.constexpr,
                  CAUSAL_MASK: tl.constexpr, EMULATE_BF16: tl.constexpr):
        """One key/value block, copied in by the TMA engine, into the running (acc, m_i, l_i) of a query block."""
        k = desc_k.load([row + start_n, 0])  # (BLOCK_N, d)
        v = desc_v.load([row + start_n, 0])  # (BLOCK_N, d)
        s = _dot(q, k.T, EMULATE_BF16)  # (BLOCK_M, BLOCK_N)
        if CAUSAL_MASK:
            offs_n = start_n + tl.arange(0, BLOCK_N)
            s = tl.where(offs_m[:, None] >= offs_n[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        p = _rounded(p, EMULATE_BF16).to(v.dtype)
        if EMULATE_BF16:
            acc = tl.dot(p.to(tl.float32), v.to(tl.float32), acc * alpha[:, None])
        else:
            acc = tl.dot(p, v, acc * alpha[:, None])
        return acc, m_new, l_i

    @triton.jit
    def _tma_forward(desc_q, desc_k, desc_v, desc_o, L, n_ctx, qk_scale, HEAD_DIM: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                     WARP_SPECIALIZE: tl.constexpr, EMULATE_BF16: tl.constexpr):
        start_m = tl.program_id(0)
        if CAUSAL:  # the longest causal rows first
            start_m = tl.num_programs(0) - 1 - start_m
        head = tl.program_id(1)
        row = head * n_ctx  # this head's first row in the (B·H·N, d) view
        offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        q = desc_q.load([row + start_m * BLOCK_M, 0])  # (BLOCK_M, d)
        m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        if CAUSAL:
            for start_n in tl.range(0, start_m * BLOCK_M, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
                acc, m_i, l_i = _tma_tile(acc, m_i, l_i, q, desc_k, desc_v, row, offs_m, start_n, qk_scale, BLOCK_N,
                                          False, EMULATE_BF16)
            for start_n in tl.range(start_m * BLOCK_M, (start_m + 1) * BLOCK_M, BLOCK_N):
                acc, m_i, l_i = _tma_tile(acc, m_i, l_i, q, desc_k, desc_v, row, offs_m, start_n, qk_scale, BLOCK_N,
                                          True, EMULATE_BF16)
        else:
            for start_n in tl.range(0, n_ctx, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
                acc, m_i, l_i = _tma_tile(acc, m_i, l_i, q, desc_k, desc_v, row, offs_m, start_n, qk_scale, BLOCK_N,
                                          False, EMULATE_BF16)
        out = acc / l_i[:, None]
        desc_o.store([row + start_m * BLOCK_M, 0], _rounded(out, EMULATE_BF16).to(desc_o.dtype))
        tl.store(L + row + offs_m, (m_i + tl.math.log2(l_i)) * KERNEL_LN_2)


def tma_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool = False,
                  launch: ForwardLaunch | None = None, warp_specialize: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(QK^T/√d) V for Q, K, V (B, H, N, d) in float16 or bfloat16, N a multiple of both blocks: O and L
    (B, H, N), as triton_flash.triton_attention gives them."""
    _check_inputs(Q, K, V)
    B, H, N, d = Q.shape
    launch = launch or default_launch(d)
    check_settings(d, Q.dtype, launch.block_m, launch.block_n, causal)
    if N % launch.block_m or N % launch.block_n:
        raise InputError(f"the TMA forward needs N = {N} to be a multiple of both blocks ({launch.block_m}, "
                         f"{launch.block_n}): a tile must not cross into the next head")
    Q, K, V = (t.contiguous().view(B * H * N, d) for t in (Q, K, V))
    O = torch.empty_like(Q)
    L = torch.empty(B, H, N, dtype=torch.float32, device=Q.device)
    rows_m, rows_n = [launch.block_m, d], [launch.block_n, d]
    descriptors = [TensorDescriptor.from_tensor(t, rows) for t, rows in ((Q, rows_m), (K, rows_n), (V, rows_n),
                                                                           (O, rows_m))]
    with _on_device(Q):
        _tma_forward[(N // launch.block_m, B * H)](
            *descriptors, L, N, LOG2_E / math.sqrt(d), HEAD_DIM=d, BLOCK_M=launch.block_m, BLOCK_N=launch.block_n,
            CAUSAL=causal, WARP_SPECIALIZE=warp_specialize,
            EMULATE_BF16=interpreted() and Q.dtype == torch.bfloat16, num_warps=launch.num_warps,
            num_stages=launch.num_stages)
    return O.view(B, H, N, d), L
