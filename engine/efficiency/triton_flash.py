"""Our FlashAttention kernels in Triton. Forward: one program per block of BLOCK_M queries of one head.

The program keeps Q_i, the running maximum m_i, the normaliser l_i and the unnormalised output in
registers and streams K and V through in blocks of BLOCK_N keys, rescaling by 2^{m_old − m_new} whenever
the maximum grows: 000 eq. 137 on a block of rows, the loop of engine.efficiency.flash.flash_forward.
Scores are kept in log2 units (the 1/√d scale is folded with log2 e into one multiplier) so that the
exponentials are exp2, the instruction GPUs have. Causal attention runs two loops: the key blocks wholly
in the past need no mask, only the blocks on the diagonal do, and blocks in the future are never loaded.

Backward (the loops of engine.efficiency.flash.flash_backward, split in two kernels as Triton's fused-attention
tutorial splits them): D = rowsum(dO ∘ O) per query, then P = e^{S − L} recomputed from the saved L, never
stored. dK and dV accumulate in one program per block of keys that walks the query blocks (S, dV += P^T dO,
dP, dK += dS^T Q); dQ in another kernel, one program per block of queries that walks the key blocks and
recomputes S and dP for dQ += dS K, so that no two programs write the same rows and no atomics are needed.
That is 7 products of N²·d where FlashAttention-2's Algorithm 2, one pass adding dQ atomically, does 5: with
the forward's 2, a forward and backward pass runs 4.5 times the forward's products, while the TFLOP/s
reported (engine.efficiency.sweep) count 3.5 times, FlashAttention's convention, so they understate the
arithmetic done here.

Runs compiled on a CUDA GPU, and on CPU tensors under Triton's interpreter (TRITON_INTERPRET=1, set
before this module is imported). The interpreter gets bfloat16 wrong twice (triton 3.6-3.9): its tl.dot
multiplies bfloat16 bit patterns as integers, and its casts to bfloat16 truncate where a GPU rounds to
nearest. So there, and only there (EMULATE_BF16), bfloat16 tiles are widened to float32 for each product
and every narrowing is rounded to nearest first: P and dS are still rounded to bfloat16 before their
products, as on the GPU. Without triton installed, `available()` is False and nothing else works.
"""
from __future__ import annotations

import contextlib
import math
import os

import torch

from engine.efficiency.launches import (
    INTERPRETED_BACKWARD,
    INTERPRETED_FORWARD,
    BackwardLaunch,
    ForwardLaunch,
    gpu_backward_launch,
    gpu_forward_launch,
)
from engine.errors import InputError

try:
    import triton
    import triton.language as tl
except ImportError:  # the app and its tests run without triton; only this kernel needs it
    triton = None

# tl.dot needs d >= 16; 128 is our launches' limit, not the GPU's (FlashAttention-2 runs d = 256): there the
# forward's (128, 256) float32 accumulator would be 256 registers a thread on 4 warps, past the 255 one may have
HEAD_DIMS = (16, 32, 64, 128)
DTYPES = (torch.float16, torch.bfloat16)
MAX_GRID_Y = 65535  # CUDA's limit on the second grid dimension, which holds batch × heads
LOG2_E = 1.4426950408889634  # 1 / ln 2: e^x = 2^(x log2 e); the host folds it into the scores' scale
if triton is not None:
    # the kernels' own: a kernel may read a global only as a constexpr, which the compiler folds in as a literal
    KERNEL_LOG2_E = tl.constexpr(LOG2_E)
    KERNEL_LN_2 = tl.constexpr(math.log(2))


def interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET") == "1"


def available() -> bool:
    """Whether the kernel can run here: triton installed, and a CUDA GPU or the interpreter."""
    return triton is not None and (torch.cuda.is_available() or interpreted())


if triton is not None:
    @triton.jit
    def _dot(a, b, EMULATE_BF16: tl.constexpr):
        """a @ b accumulated in float32; widened first under the interpreter in bfloat16 (see EMULATE_BF16 above)."""
        if EMULATE_BF16:
            product = tl.dot(a.to(tl.float32), b.to(tl.float32))
        else:
            product = tl.dot(a, b)
        return product

    @triton.jit
    def _rounded(x, EMULATE_BF16: tl.constexpr):
        """x (float32) itself; under the interpreter in bfloat16, x rounded to the nearest bfloat16, ties to even,
        so that the interpreter's cast, which truncates, then gives what a GPU's cast gives."""
        if EMULATE_BF16:
            bits = x.to(tl.uint32, bitcast=True)
            bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
            x = bits.to(tl.float32, bitcast=True)
        return x

    @triton.jit
    def _tile(acc, m_i, l_i, q, k_base, v_base, stride_n, offs_m, offs_d, start_n, n_ctx, qk_scale,
              BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, EVEN_N: tl.constexpr, EMULATE_BF16: tl.constexpr):
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
        s = _dot(q, k_t, EMULATE_BF16)  # (BLOCK_M, BLOCK_N), unscaled: the scale is fused into the exponent below
        if CAUSAL_MASK:
            s = tl.where(offs_m[:, None] >= offs_n[None, :], s, float("-inf"))
        if not EVEN_N:
            s = tl.where(offs_n[None, :] < n_ctx, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)  # in log2 units
        p = tl.math.exp2(s * qk_scale - m_new[:, None])  # one fused multiply-add per score
        alpha = tl.math.exp2(m_i - m_new)  # 2^{m_old - m_new}: eq. 137's rescaling
        l_i = l_i * alpha + tl.sum(p, 1)
        p = _rounded(p, EMULATE_BF16).to(v.dtype)  # P rounded to the input dtype, as the tensor cores take it
        if EMULATE_BF16:
            acc = tl.dot(p.to(tl.float32), v.to(tl.float32), acc * alpha[:, None])
        else:
            acc = tl.dot(p, v, acc * alpha[:, None])  # accumulate into the rescaled output
        return acc, m_new, l_i

    @triton.jit
    def _flash_forward(Q, K, V, O, L, stride_bh, stride_n, n_ctx, qk_scale, HEAD_DIM: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                       EVEN_M: tl.constexpr, EVEN_N: tl.constexpr, EMULATE_BF16: tl.constexpr):
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
                                      qk_scale, BLOCK_N, False, True, EMULATE_BF16)
            # then the blocks on the diagonal, masked; blocks after it are never loaded
            for start_n in tl.range(start_m * BLOCK_M, tl.minimum((start_m + 1) * BLOCK_M, n_ctx), BLOCK_N):
                acc, m_i, l_i = _tile(acc, m_i, l_i, q, k_base, v_base, stride_n, offs_m, offs_d, start_n, n_ctx,
                                      qk_scale, BLOCK_N, True, EVEN_N, EMULATE_BF16)
        else:  # every key block; the last one is masked where N is not a multiple of BLOCK_N
            for start_n in tl.range(0, n_ctx, BLOCK_N):
                acc, m_i, l_i = _tile(acc, m_i, l_i, q, k_base, v_base, stride_n, offs_m, offs_d, start_n, n_ctx,
                                      qk_scale, BLOCK_N, False, EVEN_N, EMULATE_BF16)
        out = acc / l_i[:, None]
        o_ptrs = O + head * stride_bh + offs_m[:, None] * stride_n + offs_d[None, :]
        l_ptrs = L + head * n_ctx + offs_m
        lse = (m_i + tl.math.log2(l_i)) * KERNEL_LN_2  # × ln 2, back to natural log: L = m + log l
        if EVEN_M:
            tl.store(o_ptrs, _rounded(out, EMULATE_BF16).to(O.dtype.element_ty))
            tl.store(l_ptrs, lse)
        else:
            tl.store(o_ptrs, _rounded(out, EMULATE_BF16).to(O.dtype.element_ty), mask=offs_m[:, None] < n_ctx)
            tl.store(l_ptrs, lse, mask=offs_m < n_ctx)


if triton is not None:
    @triton.jit
    def _rowsum_do_o(O, dO, Delta, n_ctx, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
        """D_i = rowsum(dO_i ∘ O_i): the term that P^T dP would otherwise need whole rows of P for."""
        head = tl.program_id(1).to(tl.int64)
        offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_d = tl.arange(0, HEAD_DIM)
        rows = head * n_ctx * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
        o = tl.load(O + rows, mask=offs_m[:, None] < n_ctx, other=0.0).to(tl.float32)
        do = tl.load(dO + rows, mask=offs_m[:, None] < n_ctx, other=0.0).to(tl.float32)
        tl.store(Delta + head * n_ctx + offs_m, tl.sum(o * do, 1), mask=offs_m < n_ctx)

    @triton.jit
    def _dk_dv_tile(dk, dv, k, v, q_base, do_base, L, Delta, offs_n, offs_d, start_m, n_ctx, qk_scale,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, CAUSAL_MASK: tl.constexpr, EVEN: tl.constexpr,
                    EMULATE_BF16: tl.constexpr):
        """One query block into the dK, dV of a key block, in transposed form: rows are keys."""
        offs_m = start_m + tl.arange(0, BLOCK_M)
        if EVEN:
            q = tl.load(q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])  # (BLOCK_M, d)
            do = tl.load(do_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
            m = tl.load(L + offs_m) * KERNEL_LOG2_E  # L in log2 units, as the scores below
            D = tl.load(Delta + offs_m)
        else:
            q = tl.load(q_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < n_ctx,
                        other=0.0)
            do = tl.load(do_base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < n_ctx,
                         other=0.0)
            m = tl.load(L + offs_m, mask=offs_m < n_ctx, other=0.0) * KERNEL_LOG2_E
            D = tl.load(Delta + offs_m, mask=offs_m < n_ctx, other=0.0)
        p_t = tl.math.exp2(_dot(k, tl.trans(q), EMULATE_BF16) * qk_scale - m[None, :])  # P^T (BLOCK_N, BLOCK_M)
        if CAUSAL_MASK:
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
        if not EVEN:
            p_t = tl.where(offs_m[None, :] < n_ctx, p_t, 0.0)
        dv += _dot(_rounded(p_t, EMULATE_BF16).to(do.dtype), do, EMULATE_BF16)  # dV_j += P^T dO_i
        dp_t = _dot(v, tl.trans(do), EMULATE_BF16)  # dP^T = V_j dO_i^T
        ds_t = p_t * (dp_t - D[None, :])  # dS = P ∘ (dP − D_i)
        dk += _dot(_rounded(ds_t, EMULATE_BF16).to(q.dtype), q, EMULATE_BF16)  # dK_j += dS^T Q_i, scaled at the end
        return dk, dv

    @triton.jit
    def _flash_backward_dk_dv(Q, K, V, dO, L, Delta, dK, dV, n_ctx, qk_scale, sm_scale, HEAD_DIM: tl.constexpr,
                              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
                              EVEN: tl.constexpr, EMULATE_BF16: tl.constexpr):
        start_n = tl.program_id(0) * BLOCK_N
        head = tl.program_id(1).to(tl.int64)
        offs_n = start_n + tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, HEAD_DIM)
        base = head * n_ctx * HEAD_DIM
        kv_ptrs = base + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        if EVEN:
            k, v = tl.load(K + kv_ptrs), tl.load(V + kv_ptrs)  # (BLOCK_N, d), held for the whole loop
        else:
            k = tl.load(K + kv_ptrs, mask=offs_n[:, None] < n_ctx, other=0.0)
            v = tl.load(V + kv_ptrs, mask=offs_n[:, None] < n_ctx, other=0.0)
        dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
        dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
        L, Delta = L + head * n_ctx, Delta + head * n_ctx
        if CAUSAL:  # queries before this key block never see it; those on its diagonal need the mask
            for start_m in tl.range(start_n, tl.minimum(start_n + BLOCK_N, n_ctx), BLOCK_M):
                dk, dv = _dk_dv_tile(dk, dv, k, v, Q + base, dO + base, L, Delta, offs_n, offs_d, start_m, n_ctx,
                                     qk_scale, HEAD_DIM, BLOCK_M, True, EVEN, EMULATE_BF16)
            for start_m in tl.range(start_n + BLOCK_N, n_ctx, BLOCK_M):
                dk, dv = _dk_dv_tile(dk, dv, k, v, Q + base, dO + base, L, Delta, offs_n, offs_d, start_m, n_ctx,
                                     qk_scale, HEAD_DIM, BLOCK_M, False, EVEN, EMULATE_BF16)
        else:
            for start_m in tl.range(0, n_ctx, BLOCK_M):
                dk, dv = _dk_dv_tile(dk, dv, k, v, Q + base, dO + base, L, Delta, offs_n, offs_d, start_m, n_ctx,
                                     qk_scale, HEAD_DIM, BLOCK_M, False, EVEN, EMULATE_BF16)
        if EVEN:
            tl.store(dK + kv_ptrs, _rounded(dk * sm_scale, EMULATE_BF16).to(dK.dtype.element_ty))
            tl.store(dV + kv_ptrs, _rounded(dv, EMULATE_BF16).to(dV.dtype.element_ty))
        else:
            tl.store(dK + kv_ptrs, _rounded(dk * sm_scale, EMULATE_BF16).to(dK.dtype.element_ty),
                     mask=offs_n[:, None] < n_ctx)
            tl.store(dV + kv_ptrs, _rounded(dv, EMULATE_BF16).to(dV.dtype.element_ty), mask=offs_n[:, None] < n_ctx)

    @triton.jit
    def _dq_tile(dq, q, do, m, D, k_base, v_base, offs_m, offs_d, start_n, n_ctx, qk_scale, HEAD_DIM: tl.constexpr,
                 BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr, EVEN: tl.constexpr, EMULATE_BF16: tl.constexpr):
        """One key block into the dQ of a query block."""
        offs_n = start_n + tl.arange(0, BLOCK_N)
        if EVEN:
            k_t = tl.load(k_base + offs_n[None, :] * HEAD_DIM + offs_d[:, None])  # (d, BLOCK_N)
            v_t = tl.load(v_base + offs_n[None, :] * HEAD_DIM + offs_d[:, None])
        else:
            k_t = tl.load(k_base + offs_n[None, :] * HEAD_DIM + offs_d[:, None], mask=offs_n[None, :] < n_ctx,
                          other=0.0)
            v_t = tl.load(v_base + offs_n[None, :] * HEAD_DIM + offs_d[:, None], mask=offs_n[None, :] < n_ctx,
                          other=0.0)
        p = tl.math.exp2(_dot(q, k_t, EMULATE_BF16) * qk_scale - m[:, None])  # (BLOCK_M, BLOCK_N)
        if CAUSAL_MASK:
            p = tl.where(offs_m[:, None] >= offs_n[None, :], p, 0.0)
        if not EVEN:
            p = tl.where(offs_n[None, :] < n_ctx, p, 0.0)
        ds = p * (_dot(do, v_t, EMULATE_BF16) - D[:, None])  # dS = P ∘ (dO V^T − D)
        dq += _dot(_rounded(ds, EMULATE_BF16).to(k_t.dtype), tl.trans(k_t), EMULATE_BF16)  # dQ_i += dS K_j, scaled
        return dq

    @triton.jit
    def _flash_backward_dq(Q, K, V, dO, L, Delta, dQ, n_ctx, qk_scale, sm_scale, HEAD_DIM: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, EVEN: tl.constexpr,
                           EMULATE_BF16: tl.constexpr):
        start_m = tl.program_id(0)
        if CAUSAL:  # the longest rows first, as in the forward kernel
            start_m = tl.num_programs(0) - 1 - start_m
        head = tl.program_id(1).to(tl.int64)
        offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_d = tl.arange(0, HEAD_DIM)
        base = head * n_ctx * HEAD_DIM
        rows = base + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
        if EVEN:
            q, do = tl.load(Q + rows), tl.load(dO + rows)  # (BLOCK_M, d)
            m = tl.load(L + head * n_ctx + offs_m) * KERNEL_LOG2_E
            D = tl.load(Delta + head * n_ctx + offs_m)
        else:
            q = tl.load(Q + rows, mask=offs_m[:, None] < n_ctx, other=0.0)
            do = tl.load(dO + rows, mask=offs_m[:, None] < n_ctx, other=0.0)
            m = tl.load(L + head * n_ctx + offs_m, mask=offs_m < n_ctx, other=0.0) * KERNEL_LOG2_E
            D = tl.load(Delta + head * n_ctx + offs_m, mask=offs_m < n_ctx, other=0.0)
        dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        if CAUSAL:  # whole key blocks in the past, then the diagonal's, masked; the future is never loaded
            for start_n in tl.range(0, start_m * BLOCK_M, BLOCK_N):
                dq = _dq_tile(dq, q, do, m, D, K + base, V + base, offs_m, offs_d, start_n, n_ctx, qk_scale,
                              HEAD_DIM, BLOCK_N, False, EVEN, EMULATE_BF16)
            for start_n in tl.range(start_m * BLOCK_M, tl.minimum((start_m + 1) * BLOCK_M, n_ctx), BLOCK_N):
                dq = _dq_tile(dq, q, do, m, D, K + base, V + base, offs_m, offs_d, start_n, n_ctx, qk_scale,
                              HEAD_DIM, BLOCK_N, True, EVEN, EMULATE_BF16)
        else:
            for start_n in tl.range(0, n_ctx, BLOCK_N):
                dq = _dq_tile(dq, q, do, m, D, K + base, V + base, offs_m, offs_d, start_n, n_ctx, qk_scale,
                              HEAD_DIM, BLOCK_N, False, EVEN, EMULATE_BF16)
        if EVEN:
            tl.store(dQ + rows, _rounded(dq * sm_scale, EMULATE_BF16).to(dQ.dtype.element_ty))
        else:
            tl.store(dQ + rows, _rounded(dq * sm_scale, EMULATE_BF16).to(dQ.dtype.element_ty),
                     mask=offs_m[:, None] < n_ctx)


def _check_powers_of_two(**blocks: int) -> None:
    for name, block in blocks.items():
        if block < 16 or block & (block - 1):
            raise InputError(f"{name} = {block}: blocks must be powers of two from 16 (tl.arange and tl.dot)")


def check_settings(head_dim: int, dtype: torch.dtype, block_m: int, block_n: int, causal: bool) -> None:
    """The shapes and types the kernel supports, each refused with the reason."""
    if head_dim not in HEAD_DIMS:
        raise InputError(f"head dim {head_dim} is not supported by the kernel; use one of "
                         f"{', '.join(map(str, HEAD_DIMS))}")
    if dtype not in DTYPES:
        raise InputError(f"the kernel takes float16 or bfloat16, got {str(dtype).removeprefix('torch.')}")
    _check_powers_of_two(BLOCK_M=block_m, BLOCK_N=block_n)
    if causal and block_m % block_n:
        raise InputError(f"causal attention needs BLOCK_N = {block_n} to divide BLOCK_M = {block_m}, so that "
                         "the diagonal blocks start where a query block starts")


def check_backward_blocks(block_m1: int, block_n1: int, block_m2: int, block_n2: int, causal: bool) -> None:
    """The backward's two block pairs: powers of two from 16, and, when causal, each diagonal made of whole blocks
    of the loop's inner kind (queries for dK, dV; keys for dQ)."""
    _check_powers_of_two(BLOCK_M1=block_m1, BLOCK_N1=block_n1, BLOCK_M2=block_m2, BLOCK_N2=block_n2)
    if causal and (block_n1 % block_m1 or block_m2 % block_n2):
        raise InputError(f"causal attention needs BLOCK_M1 = {block_m1} to divide BLOCK_N1 = {block_n1} and "
                         f"BLOCK_N2 = {block_n2} to divide BLOCK_M2 = {block_m2}, so that the diagonal blocks "
                         "are whole blocks")


def default_launch(head_dim: int) -> ForwardLaunch:
    """The forward's launch when none is asked for: small blocks under the interpreter (numpy runs every lane),
    engine.efficiency.launches.gpu_forward_launch on a GPU."""
    return INTERPRETED_FORWARD if interpreted() else gpu_forward_launch(head_dim)


def default_backward_launch(head_dim: int) -> BackwardLaunch:
    """The backward's: few queries against many keys for dK, dV, whose (BLOCK_N1, d) accumulators stay put, and
    the converse for dQ, as Triton's fused-attention tutorial; engine.efficiency.launches.gpu_backward_launch on a
    GPU."""
    return INTERPRETED_BACKWARD if interpreted() else gpu_backward_launch(head_dim)


def _check_inputs(*tensors: torch.Tensor) -> None:
    """One shape (B, H, N, d) for all and one CUDA device (any device under the interpreter)."""
    if not available():
        raise RuntimeError("the Triton kernel needs triton and a CUDA GPU, or TRITON_INTERPRET=1 on CPU")
    first = tensors[0]
    if first.dim() != 4 or any(t.shape != first.shape for t in tensors):
        raise ValueError("Q, K and V must share one shape (B, H, N, d); got "
                         + ", ".join(str(tuple(t.shape)) for t in tensors))
    if not interpreted() and not (first.is_cuda and all(t.device == first.device for t in tensors)):
        raise ValueError("the compiled kernel takes Q, K and V on one CUDA device")
    B, H = first.shape[:2]
    if B * H > MAX_GRID_Y:
        raise InputError(f"batch × heads = {B * H:,} is more than the {MAX_GRID_Y:,} programs a grid column holds")


def _on_device(tensor: torch.Tensor):
    return torch.cuda.device(tensor.device) if tensor.is_cuda else contextlib.nullcontext()


def triton_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool = False,
                     launch: ForwardLaunch | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(QK^T/√d) V for Q, K, V (B, H, N, d) in float16 or bfloat16: O (B, H, N, d) and L (B, H, N), with
    `launch`'s blocks, warps and stages (default_launch's when None)."""
    _check_inputs(Q, K, V)
    B, H, N, d = Q.shape
    launch = launch or default_launch(d)
    block_m, block_n = launch.block_m, launch.block_n
    check_settings(d, Q.dtype, block_m, block_n, causal)
    Q, K, V = Q.contiguous(), K.contiguous(), V.contiguous()
    O = torch.empty_like(Q)
    L = torch.empty(B, H, N, dtype=torch.float32, device=Q.device)
    grid = (math.ceil(N / block_m), B * H)
    with _on_device(Q):
        _flash_forward[grid](Q, K, V, O, L, N * d, d, N, LOG2_E / math.sqrt(d), HEAD_DIM=d, BLOCK_M=block_m,
                             BLOCK_N=block_n, CAUSAL=causal, EVEN_M=N % block_m == 0, EVEN_N=N % block_n == 0,
                             EMULATE_BF16=interpreted() and Q.dtype == torch.bfloat16, num_warps=launch.num_warps,
                             num_stages=launch.num_stages)
    return O, L


def triton_attention_backward(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, O: torch.Tensor, dO: torch.Tensor,
                              L: torch.Tensor, causal: bool = False,
                              launch: BackwardLaunch | None = None) -> tuple[torch.Tensor, ...]:
    """dQ, dK, dV (B, H, N, d) in Q's dtype from the forward's O and L (B, H, N), with `launch`'s blocks, warps
    and stages (default_backward_launch's when None)."""
    _check_inputs(Q, K, V, O, dO)
    B, H, N, d = Q.shape
    if L.shape != (B, H, N) or L.dtype != torch.float32:
        raise ValueError(f"L must be float32 of shape {(B, H, N)}, got {L.dtype} {tuple(L.shape)}")
    launch = launch or default_backward_launch(d)
    m1, n1, m2, n2 = launch.block_m1, launch.block_n1, launch.block_m2, launch.block_n2
    check_settings(d, Q.dtype, m2, n2, causal)
    check_backward_blocks(m1, n1, m2, n2, causal)
    Q, K, V, O, dO, L = (t.contiguous() for t in (Q, K, V, O, dO, L))
    dQ, dK, dV = torch.empty_like(Q), torch.empty_like(K), torch.empty_like(V)
    Delta = torch.empty_like(L)
    sm_scale = 1 / math.sqrt(d)
    shared = {"HEAD_DIM": d, "CAUSAL": causal, "EMULATE_BF16": interpreted() and Q.dtype == torch.bfloat16,
              "num_warps": launch.num_warps, "num_stages": launch.num_stages}
    with _on_device(Q):
        _rowsum_do_o[(math.ceil(N / 128), B * H)](O, dO, Delta, N, HEAD_DIM=d, BLOCK_M=128)
        _flash_backward_dk_dv[(math.ceil(N / n1), B * H)](
            Q, K, V, dO, L, Delta, dK, dV, N, sm_scale * LOG2_E, sm_scale, BLOCK_M=m1, BLOCK_N=n1,
            EVEN=N % m1 == 0 and N % n1 == 0, **shared)
        _flash_backward_dq[(math.ceil(N / m2), B * H)](
            Q, K, V, dO, L, Delta, dQ, N, sm_scale * LOG2_E, sm_scale, BLOCK_M=m2, BLOCK_N=n2,
            EVEN=N % m2 == 0 and N % n2 == 0, **shared)
    return dQ, dK, dV


class _TritonFlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, Q, K, V, causal, forward_launch, backward_launch):
        O, L = triton_attention(Q, K, V, causal, forward_launch)
        ctx.save_for_backward(Q, K, V, O, L)  # no S, no P: the backward kernels recompute them from L
        ctx.causal, ctx.backward_launch = causal, backward_launch
        return O

    @staticmethod
    def backward(ctx, dO):
        Q, K, V, O, L = ctx.saved_tensors
        return (*triton_attention_backward(Q, K, V, O, dO, L, ctx.causal, ctx.backward_launch), None, None, None)


def triton_flash_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool = False,
                           forward_launch: ForwardLaunch | None = None,
                           backward_launch: BackwardLaunch | None = None) -> torch.Tensor:
    """Our forward kernel with our backward kernels behind autograd: O (B, H, N, d); a launch left None is the
    default one."""
    return _TritonFlashAttention.apply(Q, K, V, causal, forward_launch, backward_launch)
