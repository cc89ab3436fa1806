"""Our bf16/fp16 forward with its tiles moved by Hopper's tensor memory accelerator (TMA): a step toward issue 48's
Hopper forward, measured beside the pointer-load kernel of engine.efficiency.triton_flash.

The loop is triton_flash's (the same online softmax, eq. 137, the same causal split), but Q, K, V and O move through
tensor descriptors: one bulk copy per tile, issued by one thread and tracked by a barrier, instead of every thread
computing addresses and loading its share. The descriptors view (B, H, N, d) as (B·H·N, d) rows, so N must be a
multiple of both blocks (a tile never crosses into the next head). WARP_SPECIALIZE asks Triton to give the loads and
the products warps of their own (`tl.range(..., warp_specialize=True)`), where the compiler supports it.
PERSISTENT launches as many programs as the SMs hold at once, each walking the (query block, head) tiles a grid's
width apart, the schedule FlashAttention-3 runs on Hopper, instead of one program per tile.

The FP8 forward (engine.efficiency.triton_fp8) moves through descriptors the same way: its e4m3 K as (BLOCK_N, d) rows
and its V^T, stored (B, H, d, N), as (d, BLOCK_N) boxes of a (B·H·d, N) view, both K-major for Hopper's FP8 products;
the online softmax step is triton_fp8's own.
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
from engine.efficiency.triton_fp8 import Quantized
from engine.errors import InputError

INTERPRETED_SMS = 5  # a persistent grid's width under the interpreter

if triton is not None:
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    from engine.efficiency.triton_fp8 import fp8_update

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
    def query_tile(tile, n_ctx, BLOCK_M: tl.constexpr, CAUSAL: tl.constexpr):
        """The query block and head of tile number `tile`, query blocks fastest, as a (blocks, heads) grid numbers
        its programs: the programs running at once share a head's K and V in L2. Causal tiles go longest first
        within a head."""
        blocks = n_ctx // BLOCK_M
        start_m = tile % blocks
        if CAUSAL:
            start_m = blocks - 1 - start_m
        return start_m, tile // blocks

    @triton.jit
    def _tma_query_block(tile, desc_q, desc_k, desc_v, desc_o, L, n_ctx, qk_scale, HEAD_DIM: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                         WARP_SPECIALIZE: tl.constexpr, EMULATE_BF16: tl.constexpr):
        start_m, head = query_tile(tile, n_ctx, BLOCK_M, CAUSAL)
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

    @triton.jit
    def _tma_forward(desc_q, desc_k, desc_v, desc_o, L, n_ctx, n_tiles, qk_scale, HEAD_DIM: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                     WARP_SPECIALIZE: tl.constexpr, PERSISTENT: tl.constexpr, EMULATE_BF16: tl.constexpr):
        """One tile per program, or, PERSISTENT, programs that stay on their SMs, each walking the tiles a grid's
        width apart: no block waits for a free SM, and a program's next tile can start while its last one's stores
        drain."""
        if PERSISTENT:
            for tile in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0)):
                _tma_query_block(tile, desc_q, desc_k, desc_v, desc_o, L, n_ctx, qk_scale, HEAD_DIM, BLOCK_M,
                                 BLOCK_N, CAUSAL, WARP_SPECIALIZE, EMULATE_BF16)
        else:
            _tma_query_block(tl.program_id(0), desc_q, desc_k, desc_v, desc_o, L, n_ctx, qk_scale, HEAD_DIM,
                             BLOCK_M, BLOCK_N, CAUSAL, WARP_SPECIALIZE, EMULATE_BF16)

    @triton.jit
    def _fp8_tma_query_block(tile, desc_q, desc_k, desc_v_t, desc_o, q_scales, k_scales, v_scales, n_ctx, qk_scale,
                             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                             CAUSAL: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, EMULATE: tl.constexpr):
        start_m, head = query_tile(tile, n_ctx, BLOCK_M, CAUSAL)
        row = head * n_ctx
        offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        q = desc_q.load([row + start_m * BLOCK_M, 0])  # (BLOCK_M, d) e4m3
        q_scale = tl.load(q_scales + head * (n_ctx // BLOCK_M) + start_m)
        k_scales += head * (n_ctx // BLOCK_N)
        v_scales += head * (n_ctx // BLOCK_N)
        m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        if CAUSAL:
            for start_n in tl.range(0, start_m * BLOCK_M, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
                acc, m_i, l_i = _fp8_tma_tile(acc, m_i, l_i, q, q_scale, desc_k, desc_v_t, row, head * HEAD_DIM,
                                              k_scales, v_scales, n_ctx, qk_scale, offs_m, start_n, BLOCK_N, False,
                                              EMULATE)
            for start_n in tl.range(start_m * BLOCK_M, (start_m + 1) * BLOCK_M, BLOCK_N):
                acc, m_i, l_i = _fp8_tma_tile(acc, m_i, l_i, q, q_scale, desc_k, desc_v_t, row, head * HEAD_DIM,
                                              k_scales, v_scales, n_ctx, qk_scale, offs_m, start_n, BLOCK_N, True,
                                              EMULATE)
        else:
            for start_n in tl.range(0, n_ctx, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
                acc, m_i, l_i = _fp8_tma_tile(acc, m_i, l_i, q, q_scale, desc_k, desc_v_t, row, head * HEAD_DIM,
                                              k_scales, v_scales, n_ctx, qk_scale, offs_m, start_n, BLOCK_N, False,
                                              EMULATE)
        desc_o.store([row + start_m * BLOCK_M, 0], (acc / l_i[:, None]).to(desc_o.dtype))

    @triton.jit
    def _fp8_tma_tile(acc, m_i, l_i, q, q_scale, desc_k, desc_v_t, row, row_d, k_scales, v_scales, n_ctx, qk_scale,
                      offs_m, start_n, BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, EMULATE: tl.constexpr):
        """One key/value block copied in by the TMA engine: K as (BLOCK_N, d) rows, V from V^T as (d, BLOCK_N)."""
        k = desc_k.load([row + start_n, 0])
        v_t = desc_v_t.load([row_d, start_n])
        block = start_n // BLOCK_N
        return fp8_update(acc, m_i, l_i, q, k.T, v_t.T, q_scale * tl.load(k_scales + block) * qk_scale,
                          tl.load(v_scales + block), offs_m, start_n + tl.arange(0, BLOCK_N), n_ctx, CAUSAL_MASK,
                          True, EMULATE)

    @triton.jit
    def _fp8_tma_forward(desc_q, desc_k, desc_v_t, desc_o, q_scales, k_scales, v_scales, n_ctx, n_tiles, qk_scale,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, PERSISTENT: tl.constexpr,
                         EMULATE: tl.constexpr):
        """_tma_forward's schedules for the FP8 forward of engine.efficiency.triton_fp8."""
        if PERSISTENT:
            for tile in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0)):
                _fp8_tma_query_block(tile, desc_q, desc_k, desc_v_t, desc_o, q_scales, k_scales, v_scales, n_ctx,
                                     qk_scale, HEAD_DIM, BLOCK_M, BLOCK_N, CAUSAL, WARP_SPECIALIZE, EMULATE)
        else:
            _fp8_tma_query_block(tl.program_id(0), desc_q, desc_k, desc_v_t, desc_o, q_scales, k_scales, v_scales,
                                 n_ctx, qk_scale, HEAD_DIM, BLOCK_M, BLOCK_N, CAUSAL, WARP_SPECIALIZE, EMULATE)


def tile_grid(tiles: int, persistent: int, device: torch.device) -> tuple[int]:
    """A 1-D grid over `tiles` query tiles: one program each, or, persistent (programs per SM, True for one), as
    many as fit the GPU's SMs at once (under the interpreter INTERPRETED_SMS, so that a program walks several tiles
    and the last walk is short)."""
    if not persistent:
        return (tiles,)
    sms = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else INTERPRETED_SMS
    return (min(sms * int(persistent), tiles),)


def check_tma_length(N: int, launch: ForwardLaunch) -> None:
    if N % launch.block_m or N % launch.block_n:
        raise InputError(f"the TMA forward needs N = {N} to be a multiple of both blocks ({launch.block_m}, "
                         f"{launch.block_n}): a tile must not cross into the next head")


def tma_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool = False,
                  launch: ForwardLaunch | None = None, warp_specialize: bool = False,
                  persistent: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(QK^T/√d) V for Q, K, V (B, H, N, d) in float16 or bfloat16, N a multiple of both blocks: O and L
    (B, H, N), as triton_flash.triton_attention gives them. `persistent`: programs per SM (True for one; as many
    as an SM holds at once keeps its latency hiding), or 0 for one program per tile."""
    _check_inputs(Q, K, V)
    B, H, N, d = Q.shape
    launch = launch or default_launch(d)
    check_settings(d, Q.dtype, launch.block_m, launch.block_n, causal)
    check_tma_length(N, launch)
    Q, K, V = (t.contiguous().view(B * H * N, d) for t in (Q, K, V))
    O = torch.empty_like(Q)
    L = torch.empty(B, H, N, dtype=torch.float32, device=Q.device)
    rows_m, rows_n = [launch.block_m, d], [launch.block_n, d]
    descriptors = [TensorDescriptor.from_tensor(t, rows) for t, rows in ((Q, rows_m), (K, rows_n), (V, rows_n),
                                                                           (O, rows_m))]
    tiles = N // launch.block_m * B * H
    with _on_device(Q):
        _tma_forward[tile_grid(tiles, persistent, Q.device)](
            *descriptors, L, N, tiles, LOG2_E / math.sqrt(d), HEAD_DIM=d, BLOCK_M=launch.block_m,
            BLOCK_N=launch.block_n, CAUSAL=causal, WARP_SPECIALIZE=warp_specialize, PERSISTENT=bool(persistent),
            EMULATE_BF16=interpreted() and Q.dtype == torch.bfloat16, num_warps=launch.num_warps,
            num_stages=launch.num_stages)
    return O.view(B, H, N, d), L


def fp8_tma_attention(inputs: Quantized, causal: bool = False, out_dtype: torch.dtype = torch.bfloat16,
                      warp_specialize: bool = False, persistent: int = 0) -> torch.Tensor:
    """triton_fp8.fp8_attention with its tiles moved by TMA: O (B, H, N, d) in out_dtype, N a multiple of both
    blocks; `persistent` as tma_attention's."""
    _check_inputs(inputs.q, inputs.k, inputs.v_t.transpose(-2, -1))
    B, H, N, d = inputs.q.shape
    launch = inputs.launch
    check_settings(d, out_dtype, launch.block_m, launch.block_n, causal)
    check_tma_length(N, launch)
    O = torch.empty(B * H * N, d, dtype=out_dtype, device=inputs.q.device)
    descriptors = [TensorDescriptor.from_tensor(t, block) for t, block in (
        (inputs.q.view(B * H * N, d), [launch.block_m, d]), (inputs.k.view(B * H * N, d), [launch.block_n, d]),
        (inputs.v_t.view(B * H * d, N), [d, launch.block_n]), (O, [launch.block_m, d]))]
    tiles = N // launch.block_m * B * H
    with _on_device(O):
        _fp8_tma_forward[tile_grid(tiles, persistent, O.device)](
            *descriptors, inputs.q_scales, inputs.k_scales, inputs.v_scales, N, tiles, LOG2_E / math.sqrt(d),
            HEAD_DIM=d, BLOCK_M=launch.block_m, BLOCK_N=launch.block_n, CAUSAL=causal,
            WARP_SPECIALIZE=warp_specialize, PERSISTENT=bool(persistent), EMULATE=interpreted(),
            num_warps=launch.num_warps, num_stages=launch.num_stages)
    return O.view(B, H, N, d)
