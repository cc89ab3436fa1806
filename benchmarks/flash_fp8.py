"""Our FP8 (e4m3) forward beside our bf16 forward and SDPA's cuDNN and flash backends, as ratios in one run.

d = 64 and 128, causal and not, N from 2k to 16k at FlashAttention's shape (batch × N = 16k tokens, d_model =
2048). The FP8 launch is chosen per setting at N = 8192 among FP8_CONFIGS; our bf16 forward takes the launch the
last GPU sweep recorded (benchmarks/results/flash_gpu.json), and its TMA version the fastest launch of the last TMA
probe (flash_tma.json's defaults) where that is a TMA one. The FP8 kernel is timed on inputs already in e4m3, as
FlashAttention-3 reports its FP8 speed, with pointer loads and through TMA (one program per tile and persistent),
and again with the quantization of Q, K and V included, by our quantizing kernel and by torch. Its error is
‖O_fp8 − O_bf16‖ / ‖O_bf16‖ against our bf16 kernel's output at every point, and against float32 at N = 2048.
Goal (issue 48): FP8 >= 1.3x our bf16 forward at N >= 4k, with its error within triton_fp8.FP8_RELATIVE_ERROR; the
row's fp8_over_ours_bf16 is our fastest FP8 forward over our fastest bf16 one.
Writes benchmarks/results/flash_fp8.json. Needs a CUDA GPU of compute capability 8.9 or more.
Usage: python -m benchmarks.flash_fp8
"""
from __future__ import annotations

import itertools
import json

import torch

from benchmarks import RESULTS, write_result
from benchmarks.flash import (
    checked_and_timed,
    compiler_target,
    dense_bf16_peak,
    header,
    resident_blocks,
    run_on_gpu,
    unfit_key,
    unfit_launches,
)
from benchmarks.flash_dip import recorded_launch
from engine.efficiency import sweep
from engine.efficiency.flash import naive_attention
from engine.efficiency.launches import ForwardLaunch, KernelLaunch, kernel_launches
from engine.efficiency.measure import time_interleaved
from engine.efficiency.triton_flash import triton_attention
from engine.efficiency.triton_fp8 import FP8_RELATIVE_ERROR, fp8_attention, quantize, quantize_blocks
from engine.efficiency.triton_tma import fp8_tma_attention, tma_attention

FP8_CONFIGS = [ForwardLaunch(128, 64, 4, 3), ForwardLaunch(128, 128, 4, 3), ForwardLaunch(128, 64, 8, 3),
               ForwardLaunch(128, 128, 8, 3)]
LENGTHS = (2048, 4096, 8192, 16384)
OURS_BF16, OURS_BF16_TMA = "ours bf16", "ours bf16, TMA"
OURS_FP8, OURS_FP8_TMA, OURS_FP8_PERSISTENT = ("ours fp8 (inputs in e4m3)", "ours fp8, TMA (inputs in e4m3)",
                                               "ours fp8, TMA persistent (inputs in e4m3)")
# "ours fp8 with quantizing" in records before our quantizing kernel was torch's passes
OURS_FP8_QUANTIZING = "ours fp8 with our quantizing kernel"
OURS_FP8_TORCH_QUANTIZING = "ours fp8 with torch's quantizing"
CUDNN, FLASH = "SDPA cuDNN bf16", "SDPA flash bf16"
# each FP8 forward timed on e4m3 inputs, by the kernel's name in the compile record (launches.HOPPER_KERNELS)
FP8_KERNELS = {OURS_FP8: "FP8 forward", OURS_FP8_TMA: "FP8 forward, TMA",
               OURS_FP8_PERSISTENT: "FP8 forward, TMA, persistent"}


def hopper_launches() -> list[KernelLaunch]:
    """Every FP8 forward this probe can time, for benchmarks.flash_compile (bf16 out, N a multiple of the blocks)."""
    return [kernel_launches(launch, d, "bf16", causal, True, kernel)[0]
            for kernel in FP8_KERNELS.values() for launch in FP8_CONFIGS for d in (64, 128) for causal in (False, True)]


def compiled_key(method: str, launch: ForwardLaunch, d: int, causal: bool) -> tuple:
    """One of FP8_KERNELS' forwards at this launch as benchmarks.flash keys the compile record's rows."""
    return unfit_key(kernel_launches(launch, d, "bf16", causal, True, FP8_KERNELS[method])[0])


def unfit_for(method: str, launch: ForwardLaunch, d: int, causal: bool, unfit: dict[tuple, str]) -> str | None:
    """Why the compile record says one of FP8_KERNELS' forwards at this launch does not fit this GPU, if it does not."""
    return unfit.get(compiled_key(method, launch, d, causal))


def recorded_tma(d: int, causal: bool) -> dict | None:
    """The TMA probe's chosen bf16 forward for this setting, when it chose a TMA one: its launch and schedule."""
    path = RESULTS / "flash_tma.json"
    chosen = json.loads(path.read_text()).get("defaults", {}).get(f"d{d}_{'causal' if causal else 'full'}_bf16") \
        if path.exists() else None
    return chosen if chosen and chosen["tma"] else None


def inputs(N: int, d: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator(device="cuda").manual_seed(N)
    shape = (sweep.tokens_per_batch(N), sweep.heads_for(d), N, d)
    return tuple(torch.randn(shape, generator=g, device="cuda", dtype=torch.bfloat16) for _ in range(3))


def tune(d: int, causal: bool, unfit: dict[tuple, str]) -> ForwardLaunch | None:
    Q, K, V = inputs(8192, d)
    ran = {}
    for launch in FP8_CONFIGS:
        if why := unfit_for(OURS_FP8, launch, d, causal, unfit):
            print(f"  d = {d}, causal = {causal}, {launch}: dropped before timing: {why}")
            continue
        try:
            quantized = quantize(Q, K, V, launch)
            fp8_attention(quantized, causal)
            ran[launch] = lambda q=quantized: fp8_attention(q, causal)
        except Exception as error:  # a launch the compiler refuses: said, and the others go on
            print(f"  d = {d}, causal = {causal}, {launch}: failed: {sweep.first_line(error)}")
    if not ran:
        return None
    timings = time_interleaved({str(launch): fn for launch, fn in ran.items()}, repeats=5, device="cuda")
    best = min(ran, key=lambda launch: timings[str(launch)].median)
    print(f"  d = {d}, causal = {causal}: fp8 launch {best} at {timings[str(best)].median * 1e3:.3f} ms")
    return best


def run() -> dict:
    name = torch.cuda.get_device_name()
    peak = dense_bf16_peak(name)
    result = header(name) | {"dense_bf16_peak_tflops": peak, "bound": FP8_RELATIVE_ERROR, "launches": {}, "rows": []}
    cudnn, flash = (sweep.sdpa_backend(backend) for backend in (sweep.SDPA_CUDNN, sweep.SDPA_FLASH))
    target = compiler_target(name)
    # a launch that spills still runs, and in the H200's record a spilling FP8 launch was the fastest: only those that
    # cannot run are dropped
    unfit, resident = unfit_launches(target, spilling=False), resident_blocks(target)
    for d, causal in itertools.product((64, 128), (False, True)):
        fp8_launch, bf16_launch = tune(d, causal, unfit), recorded_launch(d, causal)
        setting = f"d{d}_{'causal' if causal else 'full'}"
        result["launches"][setting] = {"fp8": fp8_launch and vars(fp8_launch),
                                       "bf16": bf16_launch and vars(bf16_launch)}
        if fp8_launch is None:
            continue
        tma = recorded_tma(d, causal)
        programs = resident.get(compiled_key(OURS_FP8_PERSISTENT, fp8_launch, d, causal), 1)  # per SM, persistent
        result["launches"][setting]["fp8_persistent_programs_per_sm"] = programs
        for N in LENGTHS:
            Q, K, V = inputs(N, d)
            quantized = quantize(Q, K, V, fp8_launch)
            calls = {OURS_BF16: lambda: triton_attention(Q, K, V, causal, bf16_launch)[0],
                     OURS_FP8: lambda: fp8_attention(quantized, causal),
                     OURS_FP8_TMA: lambda: fp8_tma_attention(quantized, causal),
                     OURS_FP8_PERSISTENT: lambda: fp8_tma_attention(quantized, causal, persistent=programs),
                     OURS_FP8_QUANTIZING: lambda: fp8_attention(quantize(Q, K, V, fp8_launch), causal),
                     OURS_FP8_TORCH_QUANTIZING:
                         lambda: fp8_attention(quantize(Q, K, V, fp8_launch, quantize_blocks), causal),
                     CUDNN: lambda: cudnn(Q, K, V, causal), FLASH: lambda: flash(Q, K, V, causal)}
            dropped = {method: f"dropped before timing: {why}" for method in (OURS_FP8_TMA, OURS_FP8_PERSISTENT)
                       if (why := unfit_for(method, fp8_launch, d, causal, unfit))}
            calls = {method: call for method, call in calls.items() if method not in dropped}
            if tma:
                calls[OURS_BF16_TMA] = lambda: tma_attention(Q, K, V, causal, ForwardLaunch(**tma["launch"]),
                                                             tma["warp_specialize"], tma["persistent"])[0]
            # FP8 is expected to differ from bf16 by its own rounding: its error is recorded, not a reason to refuse
            errors, refused, timings = checked_and_timed(calls, calls[OURS_BF16](), "our bf16 forward")
            refused |= dropped
            float32_error = sweep.relative_error(
                [calls[OURS_FP8]()], [naive_attention(Q.float(), K.float(), V.float(), causal)]) if N == 2048 else None
            flops = sweep.attention_flops(*Q.shape[:2], N, d, causal)
            row = {"d": d, "causal": causal, "N": N, "batch": Q.shape[0], "heads": Q.shape[1], "refused": refused,
                   "error_against_ours_bf16": errors, "fp8_error_against_float32": float32_error,
                   "tflops": {m: flops / t.median / 1e12 for m, t in timings.items()},
                   "ms": {m: t.median * 1e3 for m, t in timings.items()}}
            tflops = row["tflops"]
            fastest_fp8 = max(tflops.get(m, 0) for m in (OURS_FP8, OURS_FP8_TMA, OURS_FP8_PERSISTENT))
            row["fp8_over_ours_bf16"] = fastest_fp8 / max(tflops[OURS_BF16], tflops.get(OURS_BF16_TMA, 0))
            row["fp8_over_cudnn"] = fastest_fp8 / tflops[CUDNN] if CUDNN in tflops else None
            result["rows"].append(row)
            print(f" d = {d:<3} causal = {causal!s:<5} N = {N:<6} " + ", ".join(
                f"{m} {v:.0f}" for m, v in tflops.items()) + f" TFLOP/s; fp8 / bf16 {row['fp8_over_ours_bf16']:.2f}x, "
                f"fp8 error {errors[OURS_FP8]:.2e}" + (f" ({float32_error:.2e} against float32)"
                                                      if float32_error is not None else ""))
        write_result("flash_fp8", result)  # after each setting, so a run cut short keeps what it measured
    return result | {"complete": True}


def main() -> None:
    run_on_gpu("flash_fp8", run, (8, 9), "FP8 tensor cores")


if __name__ == "__main__":
    main()
