"""What the compiler makes of our Triton kernels for a named GPU, without one: registers, spill, shared memory.

Triton compiles for a target given by name (sm_90 for the H100, sm_80 for the A100) on any machine; the
cubin's resource usage is read with the cuobjdump that triton ships. Each launch is compiled as the JIT would
specialise it at run time: pointers and integers divisible by 16 are marked so (torch's allocations are), and
n_ctx only when N is a multiple of 16, which the masked lengths are not.

From those numbers, occupancy: how many blocks (programs) of this launch fit on one SM at once, limited by
registers (allocated per warp in units of 256), shared memory (plus the 1 KiB the driver reserves per block)
and threads. Compiling needs triton's compiler, not its interpreter: `compile_launches` runs in a process of
its own with TRITON_INTERPRET unset, so it works from tests that interpret the kernels.
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from engine.efficiency.launches import HOPPER_KERNELS, KERNELS, KernelLaunch


@dataclass(frozen=True)
class SharedMemory:
    """A GPU's shared memory, in bytes: the most of each SM's on-chip SRAM it can be given (the rest is L1 cache:
    NVIDIA's whitepapers give the SRAM as 256 KB an SM on the H100, 192 KB on the A100, 128 KB on Ada), and the
    most one block may opt in to."""

    per_sm: int
    per_block: int


# NVIDIA's CUDA C++ programming guide, compute capability tables (sm_90, sm_80, sm_89); the FlashAttention page's
# traffic model offers them all, the compiler records the first two
SHARED_MEMORY = {"H100": SharedMemory(228 * 1024, 227 * 1024), "A100": SharedMemory(164 * 1024, 163 * 1024),
                 "RTX 4090": SharedMemory(100 * 1024, 99 * 1024)}


@dataclass(frozen=True)
class Target:
    name: str
    capability: int  # sm_XX
    tensor_core_op: str  # the PTX instruction of that generation's tensor cores, as the pages name it
    shared_per_sm: int  # bytes, SHARED_MEMORY's
    shared_per_block: int
    registers_per_sm: int = 65536
    threads_per_sm: int = 2048
    blocks_per_sm: int = 32


# NVIDIA's CUDA C++ programming guide, compute capability tables
TARGETS = {
    "H100": Target("H100 (sm_90)", 90, "wgmma.mma_async", SHARED_MEMORY["H100"].per_sm,
                   SHARED_MEMORY["H100"].per_block),
    "A100": Target("A100 (sm_80)", 80, "mma.sync", SHARED_MEMORY["A100"].per_sm, SHARED_MEMORY["A100"].per_block),
}
RESERVED_SHARED_PER_BLOCK = 1024  # the driver's, on sm_80 and later


@dataclass
class Compiled:
    launch: KernelLaunch
    target: str  # a key of TARGETS
    registers: int | None = None  # per thread
    spill_bytes: int | None = None  # stack + local memory per thread: registers that did not fit
    shared_bytes: int | None = None  # per block, dynamic and static
    tensor_cores: bool | None = None  # the generation's tensor-core instruction is in the PTX
    error: str = ""

    @property
    def fits(self) -> bool:
        """Compiled, spills nothing, and its shared memory fits one block's limit on the target."""
        return (not self.error and self.spill_bytes == 0
                and self.shared_bytes <= TARGETS[self.target].shared_per_block)

    def blocks_per_sm(self) -> int:
        """Programs of this launch resident on one SM at once: 0 when one cannot launch (it did not compile, or
        asks for more shared memory than a block may have); a launch that spills still runs, slower."""
        target, warps = TARGETS[self.target], self.launch.num_warps
        if self.error or self.shared_bytes > target.shared_per_block:
            return 0
        per_warp = math.ceil(self.registers * 32 / 256) * 256
        by_registers = target.registers_per_sm // (per_warp * warps)
        by_shared = target.shared_per_sm // (self.shared_bytes + RESERVED_SHARED_PER_BLOCK)
        by_threads = target.threads_per_sm // (32 * warps)
        return min(by_registers, by_shared, by_threads, target.blocks_per_sm)

    def as_row(self) -> dict:
        return asdict(self.launch) | {k: v for k, v in asdict(self).items() if k != "launch"} | {
            "fits": self.fits, "blocks_per_sm": self.blocks_per_sm()}


def _signature(fn, launch: KernelLaunch, constexpr_values: dict) -> tuple[dict, dict, list[int]]:
    """Triton's signature, constexprs and the indices of arguments divisible by 16, as the JIT specialises them.
    An FP8 kernel's inputs (Q, K, V^T and their descriptors) are e4m3, its output the launch's dtype; a descriptor's
    block is the tile it moves: BLOCK_M rows of Q and O, BLOCK_N of K and V, V^T's (d, BLOCK_N)."""
    element = launch.dtype
    inputs = "fp8e4nv" if launch.kernel.startswith("FP8") else element
    statistics = {"L", "Delta", "q_scales", "k_scales", "v_scales"}  # float32 rows
    integers, floats = {"stride_bh", "stride_n", "n_ctx", "n_tiles"}, {"qk_scale", "sm_scale"}
    d, m, n = launch.head_dim, launch.block_m, launch.block_n
    descriptors = {"desc_q": (inputs, m, d), "desc_k": (inputs, n, d), "desc_v": (inputs, n, d),
                   "desc_v_t": (inputs, d, n), "desc_o": (element, m, d)}
    values = {"HEAD_DIM": launch.head_dim, "BLOCK_M": launch.block_m, "BLOCK_N": launch.block_n,
              "CAUSAL": launch.causal, "EVEN": launch.even, "EVEN_M": launch.even, "EVEN_N": launch.even,
              "EMULATE_BF16": False, "EMULATE": False} | constexpr_values
    signature, constexprs, divisible = {}, {}, []
    for i, param in enumerate(fn.params):
        name = param.name
        if param.is_constexpr:
            signature[name], constexprs[name] = "constexpr", values[name]
        elif name in descriptors:
            dtype, rows, columns = descriptors[name]
            signature[name] = f"tensordesc<{dtype}[{rows},{columns}]>"
        elif name in integers:
            signature[name] = "i32"
            if name not in ("n_ctx", "n_tiles") or launch.even:
                divisible.append(i)
        elif name in floats:
            signature[name] = "fp32"
        else:
            signature[name] = ("*fp32" if name in statistics else
                               "*" + (inputs if name in ("Q", "K", "V_T") else element))
            divisible.append(i)
    return signature, constexprs, divisible


def kernel_function(kernel: str):
    """The jitted function of a KernelLaunch's kernel and the constexprs that make it that kernel."""
    import importlib

    if kernel in KERNELS:
        return getattr(importlib.import_module("engine.efficiency.triton_flash"), KERNELS[kernel]), {}
    module, function, constexprs = HOPPER_KERNELS[kernel]
    return getattr(importlib.import_module(f"engine.efficiency.{module}"), function), constexprs


def _resources(cubin: bytes) -> dict[str, int]:
    import triton

    cuobjdump = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as file:
        file.write(cubin)
        file.flush()
        report = subprocess.run([str(cuobjdump), "--dump-resource-usage", file.name], capture_output=True,
                                text=True, check=True).stdout
    usage = re.search(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)", report)
    if usage is None:
        raise RuntimeError(f"cuobjdump gave no resource usage: {report[:200]}")
    return dict(zip(("registers", "stack", "shared", "local"), map(int, usage.groups())))


def _compile_here(launch: KernelLaunch, target_key: str) -> Compiled:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler.compiler import make_backend

    target = TARGETS[target_key]
    fn, constexpr_values = kernel_function(launch.kernel)
    gpu = GPUTarget("cuda", target.capability, 32)
    signature, constexprs, divisible = _signature(fn, launch, constexpr_values)
    attrs = {(i,): make_backend(gpu).parse_attr("D") for i in divisible}
    result = Compiled(launch, target_key)
    try:
        kernel = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs), target=gpu,
                                options={"num_warps": launch.num_warps, "num_stages": launch.num_stages})
    except Exception as error:  # noqa: BLE001 - a launch that does not compile is a result, named with its reason
        result.error = (str(error).strip().splitlines() or [type(error).__name__])[-1][:200]
        return result
    usage = _resources(kernel.asm["cubin"])
    result.registers = usage["registers"]
    result.spill_bytes = usage["stack"] + usage["local"]
    result.shared_bytes = kernel.metadata.shared + usage["shared"]
    result.tensor_cores = target.tensor_core_op in kernel.asm["ptx"]
    return result


def compile_launches(launches: list[KernelLaunch], targets: list[str], workers: int = 1) -> list[Compiled]:
    """Every launch for every target, compiled in `workers` processes of their own (see the module's note)."""
    jobs = [(launch, target) for launch in launches for target in targets]
    chunks = [jobs[k::workers] for k in range(workers)]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"TRITON_DEFAULT_FP_FUSION": "1"}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    processes = [subprocess.Popen([sys.executable, "-m", "engine.efficiency.compiled"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=root)
                 for _ in chunks]
    outputs = [p.communicate(json.dumps([[asdict(launch), target] for launch, target in chunk]))
               for p, chunk in zip(processes, chunks)]
    results = {}
    for process, (out, err), chunk in zip(processes, outputs, chunks):
        if process.returncode:
            raise RuntimeError(f"the compiling process failed: {err.strip()[-500:]}")
        for (launch, target), row in zip(chunk, json.loads(out)):
            results[(launch, target)] = Compiled(launch, target, **row)
    return [results[job] for job in jobs]


def _serve() -> None:
    """The compiling process: [[launch, target], ...] as JSON on stdin, a list of results as JSON on stdout."""
    rows = []
    for launch, target in json.loads(sys.stdin.read()):
        compiled = _compile_here(KernelLaunch(**launch), target)
        rows.append({k: v for k, v in asdict(compiled).items() if k not in ("launch", "target")})
    sys.stdout.write(json.dumps(rows))


if __name__ == "__main__":
    _serve()
