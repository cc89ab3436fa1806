"""Our forward with TMA tensor descriptors (and Triton's warp specialization where it compiles) beside our
pointer-load forward and SDPA's cuDNN, bf16, as ratios in one run: a first measurement toward issue 48's Hopper
forward. d = 64 and 128, causal and not, N = 4096 and 16384 at FlashAttention's shape; each TMA launch in
TMA_CONFIGS, with and without warp specialization, is checked against our pointer kernel's output before it is
timed, and one that does not compile or disagrees is recorded with the reason. Writes
benchmarks/results/flash_tma.json. Needs a CUDA GPU of compute capability 9.0 or more.
Usage: python -m benchmarks.flash_tma
"""
from __future__ import annotations

import itertools

import torch

from benchmarks import write_result
from benchmarks.flash import checked_and_timed, header, run_on_gpu
from benchmarks.flash_dip import recorded_launch
from benchmarks.flash_fp8 import inputs
from engine.efficiency import sweep
from engine.efficiency.launches import ForwardLaunch
from engine.efficiency.triton_flash import triton_attention
from engine.efficiency.triton_tma import tma_attention

TMA_CONFIGS = [ForwardLaunch(128, 64, 4, 3), ForwardLaunch(128, 128, 8, 3), ForwardLaunch(128, 64, 8, 3)]
LENGTHS = (4096, 16384)
OURS, CUDNN = "ours, pointer loads", "SDPA cuDNN"


def tma_name(launch: ForwardLaunch, warp_specialize: bool) -> str:
    return (f"ours, TMA ({launch.block_m}, {launch.block_n}, {launch.num_warps} warps, {launch.num_stages} stages"
            f"{', warp-specialized' if warp_specialize else ''})")


def run() -> dict:
    result = header(torch.cuda.get_device_name()) | {"rows": []}
    cudnn = sweep.sdpa_backend(sweep.SDPA_CUDNN)
    for (d, causal), N in itertools.product(itertools.product((64, 128), (False, True)), LENGTHS):
        Q, K, V = (t.to(torch.bfloat16) for t in inputs(N, d))
        pointer_launch = recorded_launch(d, causal)
        calls = {OURS: lambda Q=Q, K=K, V=V, causal=causal, launch=pointer_launch:
                 triton_attention(Q, K, V, causal, launch)[0],
                 CUDNN: lambda Q=Q, K=K, V=V, causal=causal: cudnn(Q, K, V, causal)}
        for launch, warp_specialize in itertools.product(TMA_CONFIGS, (False, True)):
            calls[tma_name(launch, warp_specialize)] = (
                lambda Q=Q, K=K, V=V, causal=causal, launch=launch, ws=warp_specialize:
                tma_attention(Q, K, V, causal, launch, ws)[0])
        _, refused, timings = checked_and_timed(calls, calls[OURS](), "our pointer kernel", sweep.AGREEMENT)
        flops = sweep.attention_flops(*Q.shape[:2], N, d, causal)
        tflops = {m: flops / t.median / 1e12 for m, t in timings.items()}
        best = max((m for m in tflops if m.startswith("ours, TMA")), key=tflops.get, default=None)
        row = {"d": d, "causal": causal, "N": N, "tflops": tflops, "refused": refused, "best_tma": best,
               "best_tma_over_pointer": tflops[best] / tflops[OURS] if best else None,
               "best_tma_over_cudnn": tflops[best] / tflops[CUDNN] if best and CUDNN in tflops else None}
        result["rows"].append(row)
        print(f" d = {d:<3} causal = {causal!s:<5} N = {N:<6} pointer {tflops[OURS]:.0f}, cuDNN "
              f"{tflops.get(CUDNN, 0):.0f}, best TMA {best}: {tflops.get(best, 0):.0f} TFLOP/s; refused: {refused}")
        write_result("flash_tma", result)  # after each setting, so a run cut short keeps what it measured
    return result | {"complete": True}


def main() -> None:
    run_on_gpu("flash_tma", run, (9, 0), "TMA")


if __name__ == "__main__":
    main()
