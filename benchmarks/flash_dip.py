"""Issue 48's N = 2048 bf16 dip, taken apart: the data type, the order, the clocks, or the timing itself?

The recorded sweeps put our bf16 forward at N = 2048 at 0.88-1.00x SDPA flash where fp16 gives 1.37-1.46x, with
the same kernel and launch: about 0.2 ms slower in every repeat, not a noisy median. One other thing differs
between the two in benchmarks.flash: only the bf16 forward at N <= 4096 also times the torch tiled loop, a
host-bound call, just before ours in each round. This probe times ours beside SDPA flash at N = 2048 (FlashAttention's
shape: batch 8, d_model 2048) in both dtypes, fp16 first and bf16 first, with and without the tiled loop in the
round, with and without the spin that covers the host's launch path (engine.efficiency.measure), and reads the
SM clock before and after each. Writes benchmarks/results/flash_dip.json. Needs a CUDA GPU.
Usage: python -m benchmarks.flash_dip
"""
from __future__ import annotations

import itertools
import json
import time

import torch

from benchmarks import RESULTS, write_result
from benchmarks.flash import header
from engine.efficiency import sweep
from engine.efficiency.launches import ForwardLaunch

N = 2048
SETTINGS = ((64, False), (64, True), (128, False), (128, True))  # (d, causal); d = 64 full is the one that never dipped
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def recorded_launch(d: int, causal: bool) -> ForwardLaunch | None:
    """The forward launch the last GPU sweep chose for this setting, so the probe times the kernel it recorded."""
    path = RESULTS / "flash_gpu.json"
    chosen = json.loads(path.read_text())["kernel_configs"].get(f"d{d}_{'causal' if causal else 'full'}", {}) \
        if path.exists() else {}
    return ForwardLaunch(**chosen["forward"]) if chosen.get("forward") else None


def sm_clock_mhz() -> int | None:
    """The SM clock now, through NVML where torch can reach it."""
    try:
        return torch.cuda.clock_rate()
    except Exception:  # no pynvml, or a driver that will not say
        return None


def probe(d: int, causal: bool) -> list[dict]:
    """Every combination at one setting, each dtype timed first in its turn."""
    rows = []
    for first in DTYPES:
        kernel = recorded_launch(d, causal)
        order = (first, *(name for name in DTYPES if name != first))
        for dtype, with_tiled, cover in itertools.product(order, (True, False), (False, True)):
            chosen = [sweep.TRITON, sweep.SDPA_FLASH] + ([sweep.TILED] if with_tiled else [])
            before = sm_clock_mhz()
            points = {p.method: p for p in sweep.measure(
                N, d, causal, chosen, "cuda", DTYPES[dtype], sweep.tokens_per_batch(N), sweep.heads_for(d),
                block=128, repeats=10, kernel=kernel, cover_launch=cover)}
            ours, flash = points[sweep.TRITON], points[sweep.SDPA_FLASH]
            row = {"d": d, "causal": causal, "dtype": dtype, "first": first, "tiled_in_round": with_tiled,
                   "cover_launch": cover, "ours_ms": ours.ms, "ours_ms_min": ours.ms_min, "ours_ms_max": ours.ms_max,
                   "flash_ms": flash.ms, "ours_over_sdpa_flash": flash.ms / ours.ms if ours.ms and flash.ms else None,
                   "sm_clock_mhz_before": before, "sm_clock_mhz_after": sm_clock_mhz()}
            rows.append(row)
            ratio = f"{row['ours_over_sdpa_flash']:.2f}x" if row["ours_over_sdpa_flash"] else ours.note[:80]
            print(f"d = {d:<3} causal = {causal!s:<5} {dtype} ({first} first) tiled {with_tiled!s:<5} "
                  f"cover {cover!s:<5} ours {ours.ms or 0:.3f} ms [{ours.ms_min or 0:.3f}-{ours.ms_max or 0:.3f}] "
                  f"flash {flash.ms or 0:.3f} ms: {ratio}, SM {before}-{row['sm_clock_mhz_after']} MHz")
    return rows


def main() -> None:
    if not torch.cuda.is_available():
        raise SystemExit("benchmarks.flash_dip needs a CUDA GPU")
    started, rows = time.monotonic(), []
    record = header(torch.cuda.get_device_name()) | {"N": N}
    for d, causal in SETTINGS:
        rows += probe(d, causal)
        # after each setting, so a run cut short keeps what it measured
        write_result("flash_dip", record | {"seconds": round(time.monotonic() - started), "rows": rows})


if __name__ == "__main__":
    main()
