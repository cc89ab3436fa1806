"""Our Triton kernels compiled for the H100 (sm_90) and the A100 (sm_80) on this machine, GPU or not: every
launch the GPU benchmark can make (benchmarks.flash.launches) and every Hopper forward its probes time
(benchmarks.flash_tma and flash_fp8: TMA, persistent, FP8; on the A100 they do not compile, and the record says
why), with its registers, spill, shared memory, tensor-core instruction and blocks per SM. Writes
benchmarks/results/flash_compile.json, which the pages show and the GPU benchmark and probes read to drop launches
that spill or do not fit before any GPU time is spent.

Rerun it whenever engine/efficiency/triton_flash.py, triton_fp8.py or triton_tma.py changes: the file records the
kernels' source hash, and tests/unit/test_flash_compile.py fails until it matches. About 12 minutes on 2 cores.
Usage: python -m benchmarks.flash_compile [--workers N]
"""
from __future__ import annotations

import argparse
import os
import time
from datetime import UTC, datetime
from importlib.metadata import version

from benchmarks import flash_fp8, flash_tma, write_result
from benchmarks.flash import launches
from engine.efficiency import compiled, records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="compiling processes")
    args = parser.parse_args()
    started = time.monotonic()
    wanted = launches() + flash_tma.hopper_launches() + flash_fp8.hopper_launches()
    print(f"{len(wanted)} launches for {', '.join(compiled.TARGETS)}, {args.workers} processes")
    results = compiled.compile_launches(wanted, list(compiled.TARGETS), args.workers)
    for c in results:
        if not c.fits:
            why = c.error or (f"spills {c.spill_bytes} B per thread" if c.spill_bytes else
                              f"{c.shared_bytes / 1024:.0f} KiB of shared memory per block")
            print(f"  does not fit {c.target}: {c.launch} ({why})")
    print(f"{sum(c.fits for c in results)} of {len(results)} fit, {time.monotonic() - started:.0f} s")
    write_result("flash_compile", {
        "date": datetime.now(UTC).isoformat(timespec="seconds"), "triton": version("triton"),
        "kernel_source_sha256": records.kernel_source_hash(),
        "targets": {key: vars(target) for key, target in compiled.TARGETS.items()},
        "rows": [c.as_row() for c in results]})


if __name__ == "__main__":
    main()
