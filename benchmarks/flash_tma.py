"""Our forward with TMA tensor descriptors, as one program per tile or persistent, with and without Triton's warp
specialization, beside our pointer-load forward and SDPA's cuDNN, as ratios in one run: issue 48's Hopper forward.

bf16 and fp16, d = 64 and 128, causal and not, N = 2048, 4096 and 16384 at FlashAttention's shape. Each TMA launch in
TMA_CONFIGS is timed in its schedules (tma_schedules) after its output is checked against our pointer kernel's; one
that the compile record (benchmarks.flash_compile) says does not fit this GPU, does not compile, or disagrees, is
recorded with the reason. Per (d, mask, dtype) the run records `defaults`: the
fastest of every forward timed (pointer loads included) by its geometric mean TFLOP/s over the lengths, the launch
engine.efficiency.launches should take there. Writes benchmarks/results/flash_tma.json. Needs a CUDA GPU of compute
capability 9.0 or more.
Usage: python -m benchmarks.flash_tma
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import torch

from benchmarks import write_result
from benchmarks.flash import (
    checked_and_timed,
    compiler_target,
    header,
    resident_blocks,
    run_on_gpu,
    unfit_key,
    unfit_launches,
)
from benchmarks.flash_dip import recorded_launch
from benchmarks.flash_fp8 import inputs
from engine.efficiency import sweep
from engine.efficiency.launches import TMA_SCHEDULES, ForwardLaunch, KernelLaunch, kernel_launches
from engine.efficiency.triton_flash import triton_attention
from engine.efficiency.triton_tma import tma_attention

# per head dim, the launches the H200's record (2026-11-27) put first and second, and (128, 128) on 2 stages at
# d = 128, whose 3 stages ask a persistent block for 257 KiB of shared memory (compiled for sm_90, triton 3.9)
TMA_CONFIGS = {64: [ForwardLaunch(128, 64, 4, 3), ForwardLaunch(128, 64, 8, 3)],
               128: [ForwardLaunch(128, 128, 8, 3), ForwardLaunch(128, 128, 8, 2), ForwardLaunch(128, 64, 8, 3)]}
LENGTHS = (2048, 4096, 16384)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
OURS, CUDNN = "ours, pointer loads", "SDPA cuDNN"


def tma_name(launch: ForwardLaunch, schedule: str) -> str:
    return (f"ours, TMA ({launch.block_m}, {launch.block_n}, {launch.num_warps} warps, {launch.num_stages} stages"
            f"{schedule})")


def tma_schedules(launch: ForwardLaunch) -> dict[str, dict]:
    """The schedules (launches.TMA_SCHEDULES) a launch is timed in, as tma_attention's options: warp specialization
    only on 8 warps (on 4 it does not compile, in triton 3.6 on the H200 and 3.9 here)."""
    return {name: {key.lower(): value for key, value in constexprs.items()}
            for name, constexprs in TMA_SCHEDULES.items()
            if launch.num_warps == 8 or "WARP_SPECIALIZE" not in constexprs}


def kernel_launch(launch: ForwardLaunch, schedule: str, d: int, dtype: str, causal: bool) -> KernelLaunch:
    """A TMA forward as the compile record names it (N a multiple of the blocks, as the TMA forward needs)."""
    return kernel_launches(launch, d, dtype, causal, True, f"forward, TMA{schedule}")[0]


def hopper_launches() -> list[KernelLaunch]:
    """Every TMA forward this probe can time, for benchmarks.flash_compile."""
    return [kernel_launch(launch, schedule, d, dtype, causal) for d, launches in TMA_CONFIGS.items()
            for launch in launches for schedule in tma_schedules(launch)
            for dtype in DTYPES for causal in (False, True)]


def tma_calls(Q, K, V, causal: bool, unfit: dict[tuple, str],
              resident: dict[tuple, int]) -> tuple[dict[str, Callable], dict[str, dict], dict[str, str]]:
    """Every TMA launch for this head dim in each of its schedules, by name: the calls, their launches as recorded
    (blocks, warps, stages, programs per SM when persistent), and, untimed, those the compile record says cannot run
    on this GPU, with the reason. A persistent one starts as many programs per SM as the record says an SM holds
    (`resident`; one where it does not say)."""
    calls, launches, dropped, d = {}, {}, {}, Q.shape[-1]
    for launch in TMA_CONFIGS[d]:
        for schedule, options in tma_schedules(launch).items():
            name, key = tma_name(launch, schedule), unfit_key(kernel_launch(launch, schedule, d, "bf16", causal))
            if why := unfit.get(key):
                dropped[name] = f"dropped before timing: {why}"
                continue
            if options.get("persistent"):
                options = options | {"persistent": resident.get(key, 1)}
            calls[name] = lambda launch=launch, options=options: tma_attention(Q, K, V, causal, launch, **options)[0]
            launches[name] = vars(launch) | ({"programs_per_sm": options["persistent"]} if "persistent" in options
                                             else {})
    return calls, launches, dropped


def defaults(rows: list[dict]) -> dict[str, dict]:
    """Per (d, mask, dtype), the forward with the highest geometric mean TFLOP/s over the lengths timed, among those
    timed at every one of them, with its launch (ForwardLaunch's fields) and schedule (persistent: programs per SM,
    0 for one program per tile), as tma_attention takes them."""
    chosen = {}
    for (d, causal, dtype), group in itertools.groupby(rows, lambda r: (r["d"], r["causal"], r["dtype"])):
        group = list(group)
        timed = set.intersection(*(set(r["tflops"]) - {CUDNN} for r in group))
        mean = {m: math.exp(sum(math.log(r["tflops"][m]) for r in group) / len(group)) for m in timed}
        best = max(mean, key=mean.get)
        launch = dict(next(r["launches"][best] for r in group))
        chosen[f"d{d}_{'causal' if causal else 'full'}_{dtype}"] = {
            "method": best, "persistent": launch.pop("programs_per_sm", 0), "launch": launch, "tma": best != OURS,
            "warp_specialize": "warp-specialized" in best, "mean_tflops": mean[best],
            "over_pointer": mean[best] / mean[OURS] if OURS in mean else None}
    return chosen


def run() -> dict:
    name = torch.cuda.get_device_name()
    result = header(name) | {"rows": []}
    target = compiler_target(name)
    # a launch that spills still runs, and in the H200's record a spilling FP8 launch was the fastest: only those that
    # cannot run are dropped
    unfit, resident = unfit_launches(target, spilling=False), resident_blocks(target)
    cudnn = sweep.sdpa_backend(sweep.SDPA_CUDNN)
    for d, causal, (dtype_name, dtype) in itertools.product((64, 128), (False, True), DTYPES.items()):
        pointer_launch = recorded_launch(d, causal)
        for N in LENGTHS:
            Q, K, V = (t.to(dtype) for t in inputs(N, d))
            tma, tma_launches, dropped = tma_calls(Q, K, V, causal, unfit, resident)
            calls = {OURS: lambda: triton_attention(Q, K, V, causal, pointer_launch)[0],
                     CUDNN: lambda: cudnn(Q, K, V, causal)} | tma
            _, refused, timings = checked_and_timed(calls, calls[OURS](), "our pointer kernel", sweep.AGREEMENT)
            refused |= dropped
            flops = sweep.attention_flops(*Q.shape[:2], N, d, causal)
            tflops = {m: flops / t.median / 1e12 for m, t in timings.items()}
            best = max((m for m in tflops if m.startswith("ours, TMA")), key=tflops.get, default=None)
            launches = {OURS: vars(pointer_launch) if pointer_launch else None} | tma_launches
            row = {"d": d, "causal": causal, "dtype": dtype_name, "N": N, "tflops": tflops, "refused": refused,
                   "launches": launches, "best_tma": best,
                   "best_tma_over_pointer": tflops[best] / tflops[OURS] if best and OURS in tflops else None,
                   "best_tma_over_cudnn": tflops[best] / tflops[CUDNN] if best and CUDNN in tflops else None}
            result["rows"].append(row)
            print(f" d = {d:<3} causal = {causal!s:<5} {dtype_name} N = {N:<6} pointer {tflops.get(OURS, 0):.0f}, "
                  f"cuDNN {tflops.get(CUDNN, 0):.0f}, best TMA {best}: {tflops.get(best, 0):.0f} TFLOP/s; "
                  f"refused: {sorted(refused)}")
        result["defaults"] = defaults(result["rows"])
        write_result("flash_tma", result)  # after each setting, so a run cut short keeps what it measured
    return result | {"complete": True}


def main() -> None:
    run_on_gpu("flash_tma", run, (9, 0), "TMA")


if __name__ == "__main__":
    main()
