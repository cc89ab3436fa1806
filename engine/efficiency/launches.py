"""How our Triton kernels are launched, as data: the forward's and the backward's blocks, warps and pipeline stages,
the launch a GPU gets when none is asked for, and each kernel's share of a launch as the compiler records it.

triton_flash.py launches them; compiled.py compiles them for a named GPU; benchmarks/flash.py tunes them and records
the chosen ones by their fields (`asdict`).
"""
from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class ForwardLaunch:
    block_m: int  # queries per program: a block of Q and its running m, l and output stay in registers
    block_n: int  # keys per step of its loop over K and V
    num_warps: int
    num_stages: int  # software pipelining depth of the loads of K and V


@dataclass(frozen=True)
class BackwardLaunch:
    block_m1: int  # dK, dV: queries per step of a key block's program
    block_n1: int  # keys per program, whose (BLOCK_N1, d) accumulators stay put
    block_m2: int  # dQ: queries per program
    block_n2: int  # keys per step of its loop
    num_warps: int
    num_stages: int


# under Triton's interpreter numpy runs every lane: small blocks, and stages mean nothing there
INTERPRETED_FORWARD = ForwardLaunch(block_m=16, block_n=16, num_warps=4, num_stages=1)
INTERPRETED_BACKWARD = BackwardLaunch(block_m1=16, block_n1=16, block_m2=16, block_n2=16, num_warps=4, num_stages=1)


def gpu_forward_launch(head_dim: int) -> ForwardLaunch:
    """The forward's launch on a GPU when none is asked for: 8 warps at d = 128 so that the (128, 128) accumulator
    and the score tile fit in registers (4 warps spill there: see benchmarks/results/flash_compile.json)."""
    return ForwardLaunch(block_m=128, block_n=64, num_warps=4 if head_dim <= 64 else 8, num_stages=3)


def gpu_backward_launch(head_dim: int) -> BackwardLaunch:
    """The backward's, after the H100 runs: (32, 64) blocks for dK, dV and (64, 32) for dQ, 4 warps, 3 stages,
    fastest in every setting timed (benchmarks/results/flash_gpu.json's kernel_configs); the same at every d."""
    return BackwardLaunch(block_m1=32, block_n1=64, block_m2=64, block_n2=32, num_warps=4, num_stages=3)


# each kernel's function in triton_flash.py
KERNELS = {"forward": "_flash_forward", "backward dK dV": "_flash_backward_dk_dv", "backward dQ": "_flash_backward_dq"}
# the Hopper forwards the GPU probes time (benchmarks.flash_tma, flash_fp8): each kernel's module in
# engine.efficiency, its function and the constexprs that make it that kernel; "FP8" ones take e4m3 inputs and write
# the launch's dtype
TMA_SCHEDULES = {"": {}, ", warp-specialized": {"WARP_SPECIALIZE": True}, ", persistent": {"PERSISTENT": True},
                 ", persistent, warp-specialized": {"WARP_SPECIALIZE": True, "PERSISTENT": True}}
HOPPER_KERNELS = {
    **{f"forward, TMA{schedule}": ("triton_tma", "_tma_forward", {"WARP_SPECIALIZE": False, "PERSISTENT": False}
                                   | constexprs) for schedule, constexprs in TMA_SCHEDULES.items()},
    "FP8 forward": ("triton_fp8", "_fp8_forward", {}),
    "FP8 forward, TMA": ("triton_tma", "_fp8_tma_forward", {"WARP_SPECIALIZE": False, "PERSISTENT": False}),
    "FP8 forward, TMA, persistent": ("triton_tma", "_fp8_tma_forward", {"WARP_SPECIALIZE": False,
                                                                          "PERSISTENT": True}),
}


@dataclass(frozen=True)
class KernelLaunch:
    """One kernel as a launch runs it, with what its constexprs depend on: what the compiler is given."""

    kernel: str  # a key of KERNELS or HOPPER_KERNELS
    head_dim: int
    dtype: str  # "bf16" or "fp16"
    causal: bool
    even: bool  # N a multiple of the blocks (no masks), as N = 4096; False as N = 1000
    block_m: int
    block_n: int
    num_warps: int
    num_stages: int


def kernel_launches(launch: ForwardLaunch | BackwardLaunch, head_dim: int, dtype: str, causal: bool,
                    even: bool, forward: str = "forward") -> list[KernelLaunch]:
    """The kernels one launch runs: the forward's one (`forward`: that kernel's name, one of HOPPER_KERNELS' for
    the probes' forwards), or the backward's two (dK dV, then dQ)."""
    common = {"head_dim": head_dim, "dtype": dtype, "causal": causal, "even": even, "num_warps": launch.num_warps,
              "num_stages": launch.num_stages}
    if isinstance(launch, ForwardLaunch):
        return [KernelLaunch(forward, block_m=launch.block_m, block_n=launch.block_n, **common)]
    return [KernelLaunch("backward dK dV", block_m=launch.block_m1, block_n=launch.block_n1, **common),
            KernelLaunch("backward dQ", block_m=launch.block_m2, block_n=launch.block_n2, **common)]


def kernel_launch_of(row: dict) -> KernelLaunch:
    """The kernel launch a recorded row (compiled.Compiled.as_row) was compiled for."""
    return KernelLaunch(**{f.name: row[f.name] for f in fields(KernelLaunch)})
