"""An FP8 (e4m3) forward of our FlashAttention kernel, for Hopper's FP8 tensor cores, which run twice bf16's rate.

e4m3 holds 3 mantissa bits (a unit roundoff of 2^-4, against bf16's 2^-8) and magnitudes up to 448, so every
operand carries a scale. Q is scaled per block of BLOCK_M queries and K, V per block of BLOCK_N keys (the tiles the
kernel loads, so each product's scale is one scalar): a block's largest |x| maps to 448 (`quantize`). In the loop
of engine.efficiency.triton_flash's forward, the score tile is rescaled by q_scale · k_scale with the 1/√d and
log2 e of the exponent, in one multiply; P, in [0, 1] after the running maximum is taken out, goes to e4m3 as
256 · P, with the 2^8 folded into the exponent (no extra multiply), so that P's small entries stay in e4m3's
normal range rather than flushing below 2^-9; the normaliser l sums the same 256 · P, so the 256 cancels.
Each PV product is scaled by its block's v_scale before it joins the accumulator.

Hopper's FP8 products take their second operand K-major (its reduction dimension contiguous): for S = Q K^T that
is K as stored, for PV it is V^T, so `quantize` lays V out as (B, H, d, N), as FlashAttention-3 and Triton's
fused-attention tutorial do. Runs compiled on a CUDA GPU of compute capability 8.9 or more, and on CPU tensors
under Triton's interpreter (TRITON_INTERPRET=1), whose e4m3 casts round to nearest as a GPU's do.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from engine.efficiency.launches import ForwardLaunch
from engine.efficiency.triton_flash import (
    LOG2_E,
    _check_inputs,
    _on_device,
    check_settings,
    default_launch,
    interpreted,
    triton,
)

E4M3_MAX = 448.0  # the largest finite float8_e4m3fn
# a block's scale is its largest |x| times float32(1/448), a product rather than a quotient, as torch computes a tensor
# over a number on CUDA (by its reciprocal): so quantize_blocks and our kernel agree to the bit on CPU and GPU
INVERSE_E4M3_MAX = 1 / E4M3_MAX
P_LOG2_SCALE = 8  # P is taken to e4m3 as 2^8 · P: at most 256, and its entries down to 2^-17 stay representable
# ‖O_fp8 − O_fp32‖ / ‖O_fp32‖ on N(0, 1) inputs: measured 4.0-5.1e-2 over the tests' shapes under the interpreter
# and 4.7-5.5e-2 on an H200 at N = 2k-16k (benchmarks/results/flash_fp8.json), as torch gives with the same
# roundings (each of Q, K, V and P rounded to 3 mantissa bits, 2^-4 at worst); our bf16 kernel gives about 3e-3
FP8_RELATIVE_ERROR = 7e-2
if triton is not None:
    import triton.language as tl

    KERNEL_P_LOG2_SCALE = tl.constexpr(P_LOG2_SCALE)
    KERNEL_INVERSE_E4M3_MAX = tl.constexpr(INVERSE_E4M3_MAX)
    KERNEL_FLOAT32_TINY = tl.constexpr(torch.finfo(torch.float32).tiny)

    @triton.jit
    def _e4m3_rounded(x, EMULATE: tl.constexpr):
        """x (float32) itself; under the interpreter, x rounded to the nearest e4m3 value, ties to even, as a GPU's
        cast rounds, so that the interpreter's cast has nothing left to round: it loses a rounding's carry into the
        exponent (1.95 becomes 1.0, not 2.0) and truncates below e4m3's normal range, 2^-6 (triton 3.9). There the
        step is e4m3's smallest, 2^-9, which adding and taking away 1.5 · 2^14 rounds to in float32."""
        if EMULATE:
            bits = x.to(tl.uint32, bitcast=True)
            normal = (((bits + 0x7FFFF + ((bits >> 20) & 1)) >> 20) << 20).to(tl.float32, bitcast=True)
            subnormal = (tl.abs(x) + 24576.0) - 24576.0
            subnormal = (subnormal.to(tl.uint32, bitcast=True) | (bits & 0x80000000)).to(tl.float32, bitcast=True)
            x = tl.where(tl.abs(x) < 0.015625, subnormal, normal)
        return x

    @triton.jit
    def _quantize_kernel(X, X8, scales, n_ctx, HEAD_DIM: tl.constexpr, BLOCK: tl.constexpr,
                         TRANSPOSED: tl.constexpr, EVEN: tl.constexpr, EMULATE: tl.constexpr):
        """One block of BLOCK rows of one head: its largest |x| to one float32 scale, the rows to e4m3 (written as
        (d, N) when TRANSPOSED), in one read of X, as quantize_blocks computes them in torch."""
        block = tl.program_id(0)
        head = tl.program_id(1).to(tl.int64)
        offs_n = block * BLOCK + tl.arange(0, BLOCK)
        offs_d = tl.arange(0, HEAD_DIM)
        rows = head * n_ctx * HEAD_DIM + offs_n[:, None] * HEAD_DIM + offs_d[None, :]
        if EVEN:
            x = tl.load(X + rows).to(tl.float32)
        else:
            x = tl.load(X + rows, mask=offs_n[:, None] < n_ctx, other=0.0).to(tl.float32)  # (BLOCK, d)
        scale = tl.maximum(tl.max(tl.max(tl.abs(x), 1), 0), KERNEL_FLOAT32_TINY) * KERNEL_INVERSE_E4M3_MAX
        tl.store(scales + head * tl.num_programs(0) + block, scale)
        # division rounded to nearest, as torch's: Triton's `/` on float32 is an approximate division on a GPU
        x8 = _e4m3_rounded(tl.math.div_rn(x, scale), EMULATE).to(tl.float8e4nv)
        if TRANSPOSED:
            out = head * HEAD_DIM * n_ctx + offs_d[None, :] * n_ctx + offs_n[:, None]
        else:
            out = rows
        if EVEN:
            tl.store(X8 + out, x8)
        else:
            tl.store(X8 + out, x8, mask=offs_n[:, None] < n_ctx)


@dataclass(frozen=True)
class Quantized:
    """Q, K, V in e4m3 with one float32 scale per block of rows, x ≈ x_e4m3 · scale; V stored as (B, H, d, N)."""
    q: torch.Tensor  # (B, H, N, d) e4m3
    k: torch.Tensor  # (B, H, N, d) e4m3
    v_t: torch.Tensor  # (B, H, d, N) e4m3
    q_scales: torch.Tensor  # (B, H, ⌈N / BLOCK_M⌉)
    k_scales: torch.Tensor  # (B, H, ⌈N / BLOCK_N⌉)
    v_scales: torch.Tensor  # (B, H, ⌈N / BLOCK_N⌉)
    launch: ForwardLaunch  # the blocks the scales were taken over, so the kernel's tiles are the scales' blocks


def quantize_blocks(X: torch.Tensor, block: int, transposed: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """X (B, H, N, d) as e4m3 ((B, H, d, N) when transposed) and one scale per block of `block` rows, each block's
    largest |x| mapped to 448, in torch: the reference for quantized_blocks' kernel, which `quantize` runs."""
    B, H, N, d = X.shape
    blocks = math.ceil(N / block)
    padded = F.pad(X.float(), (0, 0, 0, blocks * block - N)).view(B, H, blocks, block, d)
    largest = padded.abs().amax(dim=(-2, -1)).clamp_min(torch.finfo(torch.float32).tiny)  # (B, H, blocks)
    scales = largest * INVERSE_E4M3_MAX
    X8 = (padded / scales[..., None, None]).view(B, H, blocks * block, d)[:, :, :N].to(torch.float8_e4m3fn)
    return (X8.transpose(-2, -1) if transposed else X8).contiguous(), scales


def quantized_blocks(X: torch.Tensor, block: int, transposed: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """quantize_blocks' e4m3 and scales from one kernel that reads X once, (B, H, d, N) when transposed: torch's
    version reads and writes float32 copies of X six times over (float, pad, abs, amax, divide, cast)."""
    _check_inputs(X)
    B, H, N, d = X.shape
    X = X.contiguous()
    blocks = math.ceil(N / block)
    X8 = torch.empty((B, H, d, N) if transposed else (B, H, N, d), dtype=torch.float8_e4m3fn, device=X.device)
    scales = torch.empty(B, H, blocks, dtype=torch.float32, device=X.device)
    with _on_device(X):
        _quantize_kernel[(blocks, B * H)](X, X8, scales, N, HEAD_DIM=d, BLOCK=block, TRANSPOSED=transposed,
                                          EVEN=N % block == 0, EMULATE=interpreted(), num_warps=4 if d <= 64 else 8)
    return X8, scales


def quantize(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, launch: ForwardLaunch | None = None,
             blocks: Callable[..., tuple[torch.Tensor, torch.Tensor]] = quantized_blocks) -> Quantized:
    """Q, K, V (B, H, N, d) in e4m3 with their scales over `launch`'s blocks, by our kernel, or by torch with
    blocks=quantize_blocks."""
    launch = launch or default_launch(Q.shape[-1])
    q, q_scales = blocks(Q, launch.block_m)
    k, k_scales = blocks(K, launch.block_n)
    v_t, v_scales = blocks(V, launch.block_n, transposed=True)
    return Quantized(q, k, v_t, q_scales, k_scales, v_scales, launch)


if triton is not None:
    @triton.jit
    def _fp8_tile(acc, m_i, l_i, q, q_scale, k_base, v_base, k_scales, v_scales, n_ctx, qk_scale, offs_m, offs_d,
                  start_n, HEAD_DIM: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr,
                  EVEN_N: tl.constexpr, EMULATE: tl.constexpr):
        """One key/value block into the running (acc, m_i, l_i) of a query block, every product in e4m3."""
        offs_n = start_n + tl.arange(0, BLOCK_N)
        if EVEN_N:
            k_t = tl.load(k_base + offs_n[None, :] * HEAD_DIM + offs_d[:, None])  # (d, BLOCK_N), K-major
            v = tl.load(v_base + offs_d[None, :] * n_ctx + offs_n[:, None])  # (BLOCK_N, d) read from V^T: K-major
        else:
            k_t = tl.load(k_base + offs_n[None, :] * HEAD_DIM + offs_d[:, None], mask=offs_n[None, :] < n_ctx,
                          other=0.0)
            v = tl.load(v_base + offs_d[None, :] * n_ctx + offs_n[:, None], mask=offs_n[:, None] < n_ctx, other=0.0)
        block = start_n // BLOCK_N
        return fp8_update(acc, m_i, l_i, q, k_t, v, q_scale * tl.load(k_scales + block) * qk_scale,
                          tl.load(v_scales + block), offs_m, offs_n, n_ctx, CAUSAL_MASK, EVEN_N, EMULATE)

    @triton.jit
    def fp8_update(acc, m_i, l_i, q, k_t, v, s_scale, v_scale, offs_m, offs_n, n_ctx, CAUSAL_MASK: tl.constexpr,
                   EVEN_N: tl.constexpr, EMULATE: tl.constexpr):
        """The online softmax's step on one loaded block, K^T (d, BLOCK_N) and V (BLOCK_N, d) in e4m3, K-major."""
        # the scores in log2 units: the e4m3 product times both blocks' scales and the exponent's 1/√d · log2 e
        s = tl.dot(q, k_t) * s_scale  # (BLOCK_M, BLOCK_N)
        if CAUSAL_MASK:
            s = tl.where(offs_m[:, None] >= offs_n[None, :], s, float("-inf"))
        if not EVEN_N:
            s = tl.where(offs_n[None, :] < n_ctx, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - (m_new[:, None] - KERNEL_P_LOG2_SCALE))  # 256 · P: the 2^8 rides in the exponent
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        pv = tl.dot(_e4m3_rounded(p, EMULATE).to(tl.float8e4nv), v)  # (BLOCK_M, d)
        acc = acc * alpha[:, None] + pv * v_scale
        return acc, m_new, l_i

    @triton.jit
    def _fp8_forward(Q, K, V_T, O, q_scales, k_scales, v_scales, n_ctx, qk_scale, HEAD_DIM: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, EVEN_M: tl.constexpr,
                     EVEN_N: tl.constexpr, EMULATE: tl.constexpr):
        start_m = tl.program_id(0)
        if CAUSAL:  # the longest causal rows first, as the bf16 forward
            start_m = tl.num_programs(0) - 1 - start_m
        head = tl.program_id(1).to(tl.int64)
        offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_d = tl.arange(0, HEAD_DIM)
        q_ptrs = Q + head * n_ctx * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
        if EVEN_M:
            q = tl.load(q_ptrs)
        else:
            q = tl.load(q_ptrs, mask=offs_m[:, None] < n_ctx, other=0.0)
        q_scale = tl.load(q_scales + head * tl.cdiv(n_ctx, BLOCK_M) + start_m)
        k_base, v_base = K + head * n_ctx * HEAD_DIM, V_T + head * HEAD_DIM * n_ctx
        k_scales += head * tl.cdiv(n_ctx, BLOCK_N)
        v_scales += head * tl.cdiv(n_ctx, BLOCK_N)
        m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        if CAUSAL:  # whole blocks in the past unmasked, the diagonal's masked, the future never loaded
            for start_n in tl.range(0, start_m * BLOCK_M, BLOCK_N):
                acc, m_i, l_i = _fp8_tile(acc, m_i, l_i, q, q_scale, k_base, v_base, k_scales, v_scales, n_ctx,
                                          qk_scale, offs_m, offs_d, start_n, HEAD_DIM, BLOCK_N, False, True, EMULATE)
            for start_n in tl.range(start_m * BLOCK_M, tl.minimum((start_m + 1) * BLOCK_M, n_ctx), BLOCK_N):
                acc, m_i, l_i = _fp8_tile(acc, m_i, l_i, q, q_scale, k_base, v_base, k_scales, v_scales, n_ctx,
                                          qk_scale, offs_m, offs_d, start_n, HEAD_DIM, BLOCK_N, True, EVEN_N, EMULATE)
        else:
            for start_n in tl.range(0, n_ctx, BLOCK_N):
                acc, m_i, l_i = _fp8_tile(acc, m_i, l_i, q, q_scale, k_base, v_base, k_scales, v_scales, n_ctx,
                                          qk_scale, offs_m, offs_d, start_n, HEAD_DIM, BLOCK_N, False, EVEN_N, EMULATE)
        out = acc / l_i[:, None]
        o_ptrs = O + head * n_ctx * HEAD_DIM + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
        if EVEN_M:
            tl.store(o_ptrs, out.to(O.dtype.element_ty))
        else:
            tl.store(o_ptrs, out.to(O.dtype.element_ty), mask=offs_m[:, None] < n_ctx)


def fp8_attention(inputs: Quantized, causal: bool = False, out_dtype: torch.dtype = torch.bfloat16) -> torch.Tensor:
    """softmax(QK^T/√d) V from e4m3 inputs and their block scales: O (B, H, N, d) in out_dtype."""
    _check_inputs(inputs.q, inputs.k, inputs.v_t.transpose(-2, -1))
    B, H, N, d = inputs.q.shape
    launch = inputs.launch
    check_settings(d, out_dtype, launch.block_m, launch.block_n, causal)
    O = torch.empty(B, H, N, d, dtype=out_dtype, device=inputs.q.device)
    grid = (math.ceil(N / launch.block_m), B * H)
    with _on_device(inputs.q):
        _fp8_forward[grid](inputs.q, inputs.k, inputs.v_t, O, inputs.q_scales, inputs.k_scales, inputs.v_scales, N,
                           LOG2_E / math.sqrt(d), HEAD_DIM=d, BLOCK_M=launch.block_m, BLOCK_N=launch.block_n,
                           CAUSAL=causal, EVEN_M=N % launch.block_m == 0, EVEN_N=N % launch.block_n == 0,
                           EMULATE=interpreted(), num_warps=launch.num_warps, num_stages=launch.num_stages)
    return O


def triton_fp8_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool = False,
                         launch: ForwardLaunch | None = None) -> torch.Tensor:
    """Q, K, V (B, H, N, d) in float16 or bfloat16, quantized to e4m3 and attended: O in their dtype."""
    return fp8_attention(quantize(Q, K, V, launch), causal, Q.dtype)
