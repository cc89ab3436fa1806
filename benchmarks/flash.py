"""Naive vs tiled vs torch SDPA vs our Triton kernel, as ratios measured in one run.

On CPU (writes benchmarks/results/flash_cpu.json), fp32, one head:
  N = 4096, d = 64: tiled peak memory at least 10x below naive, tiled time at most 2x naive, and both
  against torch's own SDPA; then N from 512 to 4096, causal and not, for the record.
On a CUDA GPU (writes benchmarks/results/flash_gpu.json, after each setting), batch x N = 16k tokens and
d_model = 2048 as FlashAttention's benchmarks: N from 512 to 16k and 1000, 1030 (the masked paths), d = 64
and 128, causal and not, bf16 and fp16, the forward pass and forward+backward; our kernels (blocks, warps and
stages chosen per setting at N = 4096, each checked against SDPA before it is timed) against SDPA's flash,
cuDNN, memory-efficient and math backends, naive torch and our tiled torch where memory and time allow, every
one checked against SDPA's output before it is timed. Goals: our forward >= 1.0x SDPA flash in TFLOP/s at
N >= 2k, forward+backward >= 0.8x; against cuDNN, the Hopper bar (issue 48), >= 1.0x both; 65% of the dense
bf16 peak at d = 128, N = 16k, forward (FlashAttention-3's published level). About 6 minutes on an H200.
Needs only torch (and triton where installed). Usage: python -m benchmarks.flash [--quick]
"""
from __future__ import annotations

import argparse
import itertools
import platform
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version

import torch

from benchmarks import RESULTS, write_result
from engine.efficiency import records, sweep, triton_flash
from engine.efficiency.launches import BackwardLaunch, ForwardLaunch, KernelLaunch, kernel_launch_of, kernel_launches
from engine.efficiency.measure import Timing, time_interleaved

CPU_BLOCK = 256  # a 256 x 64 float32 tile is 64 KiB: an L2-sized working set, and few Python steps
# dense bf16 (no 2:4 sparsity) from NVIDIA's datasheets; the first name found in the device's name counts, so the
# PCIe and NVL cards come before the SXM parts whose names theirs contain
DENSE_BF16_TFLOPS = {"H100 PCIe": 756.0, "H100 NVL": 835.5, "H200 NVL": 835.5, "H100": 989.4, "H200": 989.4}
# The launches worth GPU time, from the first H100 runs (benchmarks/results/flash_gpu.json): the winners were
# (64, 64, 4 warps, 3 stages), (128, 64, 4, 2) and (128, 128, 8, 3) forward and (32, 64, 4, 3) backward; 4 stages
# of 128 x 128 tiles need 288 KiB of shared memory, more than a block may have, and (128, 32) tiles never won.
# Each is compiled for sm_90 and sm_80 first (benchmarks/flash_compile.py), and those that spill registers or
# exceed a block's shared memory on the GPU at hand are dropped before it is timed.
KERNEL_CONFIGS = [ForwardLaunch(m, n, w, s)
                  for (m, n, w), s in itertools.product(((64, 64, 4), (128, 64, 4), (128, 64, 8), (128, 128, 8)),
                                                        (2, 3))]
# the backward's (BLOCK_M1, BLOCK_N1) for dK, dV; dQ takes the transpose, (BLOCK_N1, BLOCK_M1), as the tutorial
BACKWARD_CONFIGS = [BackwardLaunch(block_m1=m, block_n1=n, block_m2=n, block_n2=m, num_warps=w, num_stages=s)
                    for m, n, w, s in ((32, 64, 4, 2), (32, 64, 4, 3), (32, 128, 4, 3), (32, 128, 8, 3))]
GPU_LENGTHS = (512, 1000, 1024, 1030, 2048, 4096, 8192, 16384)  # 1000 and 1030: the masked paths
HEAD_DIMS, DTYPES = (64, 128), {"bf16": torch.bfloat16, "fp16": torch.float16}


def launches() -> list[KernelLaunch]:
    """Every kernel launch the GPU sweep can make: each configuration at each head dim, dtype, mask and N a
    multiple of the blocks or not (the backward's two kernels with their own blocks)."""
    return [launch for d, dtype, causal, even in itertools.product(HEAD_DIMS, DTYPES, (False, True), (True, False))
            for setting in KERNEL_CONFIGS + BACKWARD_CONFIGS
            for launch in kernel_launches(setting, d, dtype, causal, even)]


def versions() -> dict:
    found = {"python": platform.python_version(), "torch": torch.__version__}
    try:
        found["triton"] = version("triton")
    except PackageNotFoundError:
        pass
    if torch.cuda.is_available():
        found["cuda"] = torch.version.cuda
    return found


def header(device: str) -> dict:
    return {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "device": device,
            "versions": versions()}


def run_on_gpu(name: str, run: Callable[[], dict], capability: tuple[int, int], needs: str) -> None:
    """benchmarks/results/<name>.json from run() with the seconds it took, on a CUDA GPU of at least this compute
    capability; else exit saying what the benchmark needs."""
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() < capability:
        raise SystemExit(f"benchmarks.{name} needs a CUDA GPU with {needs} (compute capability >= "
                         f"{'.'.join(map(str, capability))})")
    started = time.monotonic()
    result = run()
    write_result(name, result | {"seconds": round(time.monotonic() - started)})


def checked_and_timed(calls: dict[str, Callable[[], torch.Tensor]], reference: torch.Tensor, against: str,
                      bound: float | None = None) -> tuple[dict[str, float], dict[str, str], dict[str, Timing]]:
    """A GPU probe's calls (benchmarks.flash_fp8, flash_tma): each output's ‖out − reference‖ / ‖reference‖, a call
    that fails (or, given a bound, disagrees past it) refused with its reason, and the rest timed interleaved, each
    call first covering its launch (engine.efficiency.measure). Returns the errors, the refusals and the timings."""
    errors, refused, kept = {}, {}, {}
    for name, call in calls.items():
        try:
            errors[name] = sweep.relative_error([call()], [reference])
            if bound is not None and errors[name] > bound:
                raise ArithmeticError(f"disagrees with {against}: relative error {errors[name]:.2e}")
            kept[name] = call
        except Exception as error:  # a launch the compiler refuses, a backend without this shape, a wrong answer
            refused[name] = sweep.first_line(error, 200)
    return errors, refused, time_interleaved(kept, repeats=10, device="cuda")


def print_points(points) -> None:
    for p in points:
        if p.ms is None:
            print(f"  {p.method:<24} N={p.N:<6} {p.note}")
        else:
            print(f"  {p.method:<24} N={p.N:<6} {p.ms:9.3f} ms [{p.ms_min:.3f}-{p.ms_max:.3f}] "
                  f"{p.tflops:7.2f} TFLOP/s  peak {p.peak_mib:9.1f} MiB")


def cpu(quick: bool) -> dict:
    chosen = [sweep.NAIVE, sweep.TILED, sweep.SDPA]
    print(f"CPU, {torch.get_num_threads()} threads, fp32, one head, tiles of {CPU_BLOCK}")
    target = {p.method: p for p in sweep.measure(4096, 64, False, chosen, block=CPU_BLOCK, repeats=5)}
    print_points(target.values())
    naive, tiled, sdpa = target[sweep.NAIVE], target[sweep.TILED], target[sweep.SDPA]
    ratios = {"naive_peak_over_tiled_peak": naive.peak_mib / tiled.peak_mib, "tiled_time_over_naive": tiled.ms / naive.ms,
              "tiled_time_over_sdpa": tiled.ms / sdpa.ms, "naive_time_over_sdpa": naive.ms / sdpa.ms}
    print(f"N = 4096, d = 64: tiled peak memory {ratios['naive_peak_over_tiled_peak']:.1f}x below naive (goal >= 10), "
          f"tiled time {ratios['tiled_time_over_naive']:.2f}x naive (goal <= 2), "
          f"{ratios['tiled_time_over_sdpa']:.2f}x torch SDPA; naive {ratios['naive_time_over_sdpa']:.2f}x SDPA")
    rows = list(target.values())
    for causal in (False, True):
        for N in (512, 1024, 2048) if quick else (512, 1024, 2048, 4096):
            if N == 4096 and not causal:
                continue  # measured above
            points = sweep.measure(N, 64, causal, chosen, block=CPU_BLOCK, repeats=3 if quick else 5)
            print_points(points)
            rows += points
    return header(f"CPU ({platform.machine()}), {torch.get_num_threads()} threads") | {
        "tiles": CPU_BLOCK, "ratios": ratios, "goals_met": {"peak_memory_10x": ratios["naive_peak_over_tiled_peak"] >= 10,
                                        "time_2x": ratios["tiled_time_over_naive"] <= 2},
        "rows": sweep.as_rows(rows)}


def tune(d: int, causal: bool, dtype: torch.dtype, mode: str, configs: list[ForwardLaunch | BackwardLaunch],
         forward: ForwardLaunch | None = None) -> ForwardLaunch | BackwardLaunch | None:
    """The fastest of configs for our kernel at N = 4096 (the forward's, or with `forward` fixed the backward's),
    among those that compile and agree with torch SDPA; each refusal is printed with its reason."""
    N = 4096
    best, best_ms = None, float("inf")
    for config in configs:
        kernel, backward = (config, None) if mode == sweep.FORWARD else (forward, config)
        point = sweep.measure(N, d, causal, [sweep.TRITON], "cuda", dtype, sweep.tokens_per_batch(N),
                              sweep.heads_for(d), repeats=5, kernel=kernel, mode=mode, backward_kernel=backward)[0]
        if point.ms is None:
            print(f"    {config}: {point.note[:140]}")
        elif point.ms < best_ms:
            best, best_ms = config, point.ms
    print(f"  d = {d}, causal = {causal}, {mode}: {best} at {best_ms:.3f} ms")
    return best


def dense_bf16_peak(device_name: str) -> float | None:
    """The dense bf16 TFLOP/s of the GPU torch names ("NVIDIA H100 NVL"), None for one not in DENSE_BF16_TFLOPS."""
    return next((peak for key, peak in DENSE_BF16_TFLOPS.items() if key in device_name), None)


def compiler_target(device_name: str) -> str | None:
    """The compile record's target for this GPU: the H200 has the H100's SM (sm_90)."""
    if "H100" in device_name or "H200" in device_name:
        return "H100"
    return "A100" if "A100" in device_name else None


def unfit_launches(target: str | None, spilling: bool = True) -> dict[tuple, str]:
    """Launches that spill or do not fit a block's shared memory on `target` in the compile record, in any dtype or
    mask, keyed (kernel, head_dim, causal, block_m, block_n, num_warps, num_stages), with the reason; with
    spilling=False only those that cannot run at all (no block fits an SM, or it does not compile)."""
    record = records.load_compiled(RESULTS / "flash_compile.json")
    if record is None or target is None:
        print("  no compile record for this GPU: every configuration is tried")
        return {}
    return {unfit_key(kernel_launch_of(r)): r["error"] or (
                f"spills {r['spill_bytes']} B per thread" if r["spill_bytes"] else
                f"needs {r['shared_bytes'] // 1024} KiB of shared memory per block")
            for r in record["rows"] if r["target"] == target and not r["fits"] and (spilling or not r["blocks_per_sm"])}


def resident_blocks(target: str | None) -> dict[tuple, int]:
    """Programs of each recorded launch that one SM of `target` holds at once (the compile record's occupancy), keyed
    as unfit_launches: a persistent launch starts that many per SM."""
    record = records.load_compiled(RESULTS / "flash_compile.json")
    if record is None or target is None:
        return {}
    return {unfit_key(kernel_launch_of(r)): r["blocks_per_sm"] for r in record["rows"] if r["target"] == target}


def unfit_key(launch: KernelLaunch) -> tuple:
    """A launch without its dtype and mask: one that does not fit in any of them is dropped in all."""
    return (launch.kernel, launch.head_dim, launch.causal, launch.block_m, launch.block_n, launch.num_warps,
            launch.num_stages)


def tuned_configs(d: int, causal: bool, unfit: dict[tuple, str]) -> dict:
    """The forward's launch, then the backward's with that forward, chosen in bfloat16 (float16 runs the same
    tiles on the same tensor cores) among the configurations the compiler says fit."""
    def fitting(configs: list) -> list:
        kept = []
        for c in configs:
            why = next(filter(None, (unfit.get(unfit_key(launch))
                                     for launch in kernel_launches(c, d, "bf16", causal, True))), None)
            if why:
                print(f"    dropped before timing, d = {d}, causal = {causal}: {c}: {why}")
            else:
                kept.append(c)
        return kept

    forward_configs = fitting([c for c in KERNEL_CONFIGS if not causal or c.block_m % c.block_n == 0])
    backward_configs = fitting(BACKWARD_CONFIGS)
    forward = tune(d, causal, torch.bfloat16, sweep.FORWARD, forward_configs)
    backward = tune(d, causal, torch.bfloat16, sweep.FORWARD_BACKWARD, backward_configs, forward)
    return {"forward": forward, "backward": backward}


def gpu(quick: bool, started: float) -> dict:
    name = torch.cuda.get_device_name()
    peak = dense_bf16_peak(name)
    lengths = (1000, 2048, 8192) if quick else GPU_LENGTHS
    memory = torch.cuda.get_device_properties(0).total_memory
    result = header(f"{name} ({memory / 2**30:.0f} GiB)") | {
        "dense_bf16_peak_tflops": peak, "kernel_configs": {}, "summary": [], "rows": [], "complete": False}
    unfit = unfit_launches(compiler_target(name))
    for d, causal in itertools.product(HEAD_DIMS, (False, True)):
        setting = f"d{d}_{'causal' if causal else 'full'}"
        configs = tuned_configs(d, causal, unfit) if triton_flash.available() else {"forward": None, "backward": None}
        result["kernel_configs"][setting] = {k: asdict(v) if v is not None else None for k, v in configs.items()}
        for dtype, mode, N in itertools.product((torch.bfloat16, torch.float16), sweep.MODES, lengths):
            chosen = [sweep.TRITON, *sweep.SDPA_BACKENDS, sweep.NAIVE]
            if dtype == torch.bfloat16 and N <= (4096 if mode == sweep.FORWARD else 1030):
                chosen.append(sweep.TILED)  # a Python loop over (N/128)² tiles: seconds per call past that
            batch, heads = sweep.tokens_per_batch(N), sweep.heads_for(d)
            points = sweep.measure(N, d, causal, chosen, "cuda", dtype, batch, heads, block=128,
                                   naive_budget=memory // 4, repeats=10, kernel=configs["forward"], mode=mode,
                                   backward_kernel=configs["backward"])
            print(f" d = {d}, causal = {causal}, {str(dtype)[6:]}, {mode}, batch {batch} x {heads} heads, "
                  f"{time.monotonic() - started:.0f} s")
            print_points(points)
            result["rows"] += sweep.as_rows(points)
            by = {p.method: p for p in points}
            ours, flash, cudnn = (by.get(name) for name in (sweep.TRITON, sweep.SDPA_FLASH, sweep.SDPA_CUDNN))
            if ours and flash and ours.tflops and flash.tflops:
                result["summary"].append({
                    "d": d, "causal": causal, "dtype": str(dtype)[6:], "mode": mode, "N": N,
                    "ours_over_sdpa_flash": ours.tflops / flash.tflops,
                    "ours_over_sdpa_cudnn": ours.tflops / cudnn.tflops if cudnn and cudnn.tflops else None,
                    "ours_fraction_of_peak": ours.tflops / peak if peak else None})
        write_result("flash_gpu", result)  # after each setting, so a run cut short keeps what it measured
    print("\nours / SDPA flash and / SDPA cuDNN (TFLOP/s), N >= 2048 (goals: >= 1.0 against each):")
    for s in result["summary"]:
        if s["N"] >= 2048:
            share = f", {100 * s['ours_fraction_of_peak']:.0f}% of dense peak" if s["ours_fraction_of_peak"] else ""
            cudnn = f"{s['ours_over_sdpa_cudnn']:.2f}x" if s["ours_over_sdpa_cudnn"] else "-"
            print(f"  {s['dtype']:<9} {s['mode']:<17} d = {s['d']:<4} causal = {s['causal']!s:<5} N = {s['N']:<6} "
                  f"{s['ours_over_sdpa_flash']:.2f}x, {cudnn}{share}")
    return result | {"complete": True}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer lengths and repeats")
    args = parser.parse_args()
    if torch.cuda.is_available():
        write_result("flash_gpu", gpu(args.quick, time.monotonic()))
    else:
        write_result("flash_cpu", cpu(args.quick))


if __name__ == "__main__":
    main()
