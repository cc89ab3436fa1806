"""How many bytes attention moves between HBM (the GPU's main memory) and on-chip SRAM.

Standard attention follows FlashAttention's Algorithm 0: S = QK^T is written to HBM, read back for the
softmax, P is written, read again for PV. Reads 3Nd + 2N², writes 2N² + Nd elements per head: Θ(N²).

The tiled forward (FlashAttention-2's loop order, as engine.efficiency.flash runs it and skips tiles) reads each query
block once, then K_j and V_j for every tile it computes, and writes O and the log-sum-exp L once:
reads N d + Σ_tiles 2 B_c d, writes N d + N. With T_r = ⌈N / B_r⌉ query blocks that is about 2N²d / B_r
for K and V, Θ(N²d²/M) once B_r grows with the SRAM size M. The score tile never leaves SRAM.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from engine.errors import InputError

STAT_BYTES = 4  # m, l and L are float32 whatever the input dtype


@dataclass(frozen=True)
class Traffic:
    read: int  # bytes read from HBM
    written: int  # bytes written to HBM

    @property
    def total(self) -> int:
        return self.read + self.written


def naive_traffic(N: int, d: int, element_bytes: int = 2, batch_heads: int = 1) -> Traffic:
    """Algorithm 0 of FlashAttention: read Q, K; write S; read S; write P; read P, V; write O."""
    read = 2 * N * d + N * N + (N * N + N * d)
    written = N * N + N * N + N * d
    return Traffic(batch_heads * read * element_bytes, batch_heads * written * element_bytes)


def keys_loaded(N: int, B_r: int, B_c: int, causal: bool) -> int:
    """Σ over query blocks of the keys in the key blocks it computes. Causal: block i stops at the key block
    holding its last row (tile_kind's "skipped" are the ones after it)."""
    if not causal:
        return math.ceil(N / B_r) * N
    return sum(min(N, ((min(r0 + B_r, N) - 1) // B_c + 1) * B_c) for r0 in range(0, N, B_r))


def tiled_traffic(N: int, d: int, B_r: int, B_c: int, causal: bool = False, element_bytes: int = 2,
                  batch_heads: int = 1) -> Traffic:
    """Q read once, K_j and V_j once per computed tile, O and L written once."""
    read = (N * d + 2 * keys_loaded(N, B_r, B_c, causal) * d) * element_bytes
    written = N * d * element_bytes + N * STAT_BYTES
    return Traffic(batch_heads * read, batch_heads * written)


def traffic_by_length(lengths: list[int], d: int, B_r: int, B_c: int, causal: bool = False,
                      element_bytes: int = 2) -> tuple[list[float], list[float]]:
    """MiB moved for one head at each N: naive (Algorithm 0) and tiled."""
    naive = [naive_traffic(N, d, element_bytes).total / 2**20 for N in lengths]
    tiled = [tiled_traffic(N, d, B_r, B_c, causal, element_bytes).total / 2**20 for N in lengths]
    return naive, tiled


def sram_bytes(B_r: int, B_c: int, d: int, element_bytes: int = 2) -> int:
    """On-chip working set of one tile step: Q_i, K_j, V_j in the input dtype; the S/P tile, the output
    accumulator and m, l in float32."""
    return (B_r * d + 2 * B_c * d) * element_bytes + (B_r * B_c + B_r * d + 2 * B_r) * STAT_BYTES


def check_fits(B_r: int, B_c: int, d: int, sram: int, element_bytes: int = 2) -> None:
    """Refuse block sizes whose working set does not fit in `sram` bytes, the shared memory one block may have."""
    need = sram_bytes(B_r, B_c, d, element_bytes)
    if need > sram:
        raise InputError(f"B_r = {B_r}, B_c = {B_c} at d = {d} need {need / 1024:.0f} KiB of SRAM per tile step, "
                         f"more than the {sram / 1024:.0f} KiB of shared memory a block may have: take smaller blocks")

