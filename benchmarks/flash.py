"""Naive vs tiled vs torch SDPA vs our Triton kernel, as ratios measured in one run.

On CPU (writes benchmarks/results/flash_cpu.json), fp32, one head:
  N = 4096, d = 64: tiled peak memory at least 10x below naive, tiled time at most 2x naive, and both
  against torch's own SDPA; then N from 512 to 4096, causal and not, for the record.
On a CUDA GPU (writes benchmarks/results/flash_gpu.json), forward pass, batch x N = 16k tokens and
d_model = 2048 as FlashAttention's benchmarks: N from 512 to 16k, d = 64 and 128, causal and not, bf16;
our kernel (its blocks, warps and stages chosen per setting at N = 4096) against SDPA's flash,
memory-efficient and math backends, naive torch and our tiled torch where memory and time allow.
Goal: ours >= 1.0x SDPA flash in TFLOP/s at N >= 2k; stretch: 50% of the dense bf16 peak.
Needs only torch (and triton where installed). Usage: python -m benchmarks.flash [--quick]
"""
from __future__ import annotations

import argparse
import itertools
import platform
import sys
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks import write_result  # noqa: E402
from engine.efficiency import sweep, triton_flash  # noqa: E402

CPU_BLOCK = 256  # a 256 x 64 float32 tile is 64 KiB: an L2-sized working set, and few Python steps
# dense bf16 (no 2:4 sparsity) from NVIDIA's datasheets; the first name found in the device's name counts
DENSE_BF16_TFLOPS = {"H100 PCIe": 756.0, "H100": 989.4, "H200": 989.4}
# 8 warps only for the largest tile: smaller ones leave each warp too little work
KERNEL_CONFIGS = [dict(block_m=m, block_n=n, num_warps=w, num_stages=s)
                  for (m, n), w, s in itertools.product(((64, 64), (128, 32), (128, 64), (128, 128)), (4, 8), (2, 3, 4))
                  if w == 4 or m * n >= 128 * 128]


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


def tune_kernel(d: int, causal: bool, dtype: torch.dtype) -> dict | None:
    """Our kernel's fastest block sizes, warps and stages at N = 4096 for this head dim and mask, among the
    configurations whose output agrees with torch SDPA."""
    N = 4096
    batch, heads = sweep.tokens_per_batch(N), sweep.heads_for(d)
    g = torch.Generator(device="cuda").manual_seed(0)
    Q, K, V = (torch.randn(1, 4, 1024, d, generator=g, device="cuda", dtype=dtype) for _ in range(3))
    reference = torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=causal).float()
    best, best_ms = None, float("inf")
    for config in KERNEL_CONFIGS:
        if causal and config["block_m"] % config["block_n"]:
            continue
        try:
            error = (triton_flash.triton_attention(Q, K, V, causal, **config)[0].float() - reference).abs().max()
        except Exception as failure:  # a config that does not compile (registers, shared memory) is skipped
            print(f"    {config}: {(str(failure).splitlines() or [type(failure).__name__])[0][:100]}")
            continue
        if error > 0.05:  # bf16 attention of unit-variance inputs agrees to about 1e-2
            print(f"    {config}: max error {error:.3f} against SDPA, left out")
            continue
        point = sweep.measure(N, d, causal, [sweep.TRITON], "cuda", dtype, batch, heads, repeats=5, kernel=config)[0]
        if point.ms is None:
            print(f"    {config}: {point.note}")
        elif point.ms < best_ms:
            best, best_ms = config, point.ms
    print(f"  d = {d}, causal = {causal}: {best} at {best_ms:.3f} ms")
    return best


def gpu(quick: bool) -> dict:
    name = torch.cuda.get_device_name()
    peak = next((v for k, v in DENSE_BF16_TFLOPS.items() if k in name), None)
    dtype = torch.bfloat16
    lengths = (512, 2048, 8192) if quick else (512, 1024, 2048, 4096, 8192, 16384)
    memory = torch.cuda.get_device_properties(0).total_memory
    rows, configs, summary = [], {}, []
    for d, causal in itertools.product((64, 128), (False, True)):
        config = tune_kernel(d, causal, dtype) if triton_flash.available() else None
        configs[f"d{d}_{'causal' if causal else 'full'}"] = config
        for N in lengths:
            chosen = [sweep.TRITON, "SDPA flash", "SDPA memory-efficient", "SDPA math", sweep.NAIVE]
            if N <= 4096:
                chosen.append(sweep.TILED)  # a Python loop over (N/128)² tiles: seconds per call past that
            batch, heads = sweep.tokens_per_batch(N), sweep.heads_for(d)
            points = sweep.measure(N, d, causal, chosen, "cuda", dtype, batch, heads, block=128,
                                   naive_budget=memory // 4, repeats=10, kernel=config)
            print(f" d = {d}, causal = {causal}, batch {batch} x {heads} heads")
            print_points(points)
            rows += points
            by = {p.method: p for p in points}
            ours, flash = by.get(sweep.TRITON), by.get("SDPA flash")
            if ours and flash and ours.tflops and flash.tflops:
                summary.append({"d": d, "causal": causal, "N": N, "ours_over_sdpa_flash": ours.tflops / flash.tflops,
                                "ours_fraction_of_peak": ours.tflops / peak if peak else None})
    print("\nours / SDPA flash (TFLOP/s), N >= 2048:")
    for s in summary:
        if s["N"] >= 2048:
            share = f", {100 * s['ours_fraction_of_peak']:.0f}% of dense peak" if s["ours_fraction_of_peak"] else ""
            print(f"  d = {s['d']:<4} causal = {s['causal']!s:<5} N = {s['N']:<6} {s['ours_over_sdpa_flash']:.2f}x{share}")
    return header(f"{name} ({memory / 2**30:.0f} GiB)") | {
        "dense_bf16_peak_tflops": peak, "kernel_configs": configs, "summary": summary, "rows": sweep.as_rows(rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer lengths and repeats")
    args = parser.parse_args()
    if torch.cuda.is_available():
        write_result("flash_gpu", gpu(args.quick))
    else:
        write_result("flash_cpu", cpu(args.quick))


if __name__ == "__main__":
    main()
