"""Our forward with TMA tensor descriptors, as one program per tile or persistent, with and without Triton's warp
specialization, beside our pointer-load forward and SDPA's cuDNN, as ratios in one run: issue 48's Hopper forward.

bf16 and fp16, d = 64 and 128, causal and not, N = 2048, 4096 and 16384 at FlashAttention's shape. Each TMA launch in
TMA_CONFIGS is timed in its schedules (tma_schedules) after its output is checked against our pointer kernel's; one
that does not compile, or disagrees, is recorded with the reason. Per (d, mask, dtype) the run records `defaults`: the
fastest of every forward timed (pointer loads included) by its geometric mean TFLOP/s over the lengths, the launch
engine.efficiency.launches should take there. Writes benchmarks/results/flash_tma.json. Needs a CUDA GPU of compute
capability 9.0 or more.
Usage: python -m benchmarks.flash_tma
"""
from __future__ import annotations

import itertools
import math

import torch

from benchmarks import write_result
from benchmarks.flash import checked_and_timed, header, run_on_gpu
from benchmarks.flash_dip import recorded_launch
from benchmarks.flash_fp8 import inputs
from engine.efficiency import sweep
from engine.efficiency.launches import ForwardLaunch
from engine.efficiency.triton_flash import triton_attention
from engine.efficiency.triton_tma import tma_attention

# per head dim, the launches the H200's record (2026-11-27) put first and second, and (128, 128) on 2 stages at
# d = 128, whose 3 stages ask a persistent block for 256 KiB of shared memory (compiled for sm_90, triton 3.9)
TMA_CONFIGS = {64: [ForwardLaunch(128, 64, 4, 3), ForwardLaunch(128, 64, 8, 3)],
               128: [ForwardLaunch(128, 128, 8, 3), ForwardLaunch(128, 128, 8, 2), ForwardLaunch(128, 64, 8, 3)]}
SCHEDULES = {"": {}, ", warp-specialized": {"warp_specialize": True}, ", persistent": {"persistent": True},
             ", persistent, warp-specialized": {"warp_specialize": True, "persistent": True}}
LENGTHS = (2048, 4096, 16384)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
OURS, CUDNN = "ours, pointer loads", "SDPA cuDNN"


def tma_name(launch: ForwardLaunch, schedule: str) -> str:
    return (f"ours, TMA ({launch.block_m}, {launch.block_n}, {launch.num_warps} warps, {launch.num_stages} stages"
            f"{schedule})")


def tma_schedules(launch: ForwardLaunch) -> dict[str, dict]:
    """The schedules a launch is timed in: warp specialization only on 8 warps (on 4 it does not compile, in triton
    3.6 on the H200 and 3.9 here)."""
    return {name: options for name, options in SCHEDULES.items()
            if launch.num_warps == 8 or not options.get("warp_specialize")}


def tma_calls(Q, K, V, causal: bool) -> dict:
    """Every TMA launch for this head dim in each of its schedules, by name."""
    return {tma_name(launch, schedule): (lambda launch=launch, options=options:
                                         tma_attention(Q, K, V, causal, launch, **options)[0])
            for launch in TMA_CONFIGS[Q.shape[-1]] for schedule, options in tma_schedules(launch).items()}


def defaults(rows: list[dict]) -> dict[str, dict]:
    """Per (d, mask, dtype), the forward with the highest geometric mean TFLOP/s over the lengths timed, among those
    timed at every one of them, with its launch and schedule."""
    chosen = {}
    for (d, causal, dtype), group in itertools.groupby(rows, lambda r: (r["d"], r["causal"], r["dtype"])):
        group = list(group)
        timed = set.intersection(*(set(r["tflops"]) - {CUDNN} for r in group))
        mean = {m: math.exp(sum(math.log(r["tflops"][m]) for r in group) / len(group)) for m in timed}
        best = max(mean, key=mean.get)
        launch = next(r["launches"][best] for r in group)
        chosen[f"d{d}_{'causal' if causal else 'full'}_{dtype}"] = {
            "method": best, "launch": launch, "tma": best != OURS, "warp_specialize": "warp-specialized" in best,
            "persistent": "persistent" in best, "mean_tflops": mean[best],
            "over_pointer": mean[best] / mean[OURS] if OURS in mean else None}
    return chosen


def run() -> dict:
    result = header(torch.cuda.get_device_name()) | {"rows": []}
    cudnn = sweep.sdpa_backend(sweep.SDPA_CUDNN)
    for d, causal, (dtype_name, dtype) in itertools.product((64, 128), (False, True), DTYPES.items()):
        pointer_launch = recorded_launch(d, causal)
        for N in LENGTHS:
            Q, K, V = (t.to(dtype) for t in inputs(N, d))
            calls = {OURS: lambda: triton_attention(Q, K, V, causal, pointer_launch)[0],
                     CUDNN: lambda: cudnn(Q, K, V, causal)} | tma_calls(Q, K, V, causal)
            _, refused, timings = checked_and_timed(calls, calls[OURS](), "our pointer kernel", sweep.AGREEMENT)
            flops = sweep.attention_flops(*Q.shape[:2], N, d, causal)
            tflops = {m: flops / t.median / 1e12 for m, t in timings.items()}
            best = max((m for m in tflops if m.startswith("ours, TMA")), key=tflops.get, default=None)
            launches = {OURS: vars(pointer_launch) if pointer_launch else None} | {
                tma_name(launch, schedule): vars(launch) for launch in TMA_CONFIGS[d] for schedule in SCHEDULES}
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
