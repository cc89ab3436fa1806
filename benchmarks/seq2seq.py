"""Seq2seq inference and training times, and held-out quality, from one run.

1. Greedy decoding of a 40-character input with attention, coverage and (pointer model) the mixture
   captured, per checkpoint: median of 20 runs (issue goal: at most 100 ms).
2. The training time and held-out metrics stored with each checkpoint (goal: each under 10 minutes on
   2 cores, exact match at least 95% on dates).
Usage: python -m benchmarks.seq2seq   (writes benchmarks/results/seq2seq.json)
"""
from __future__ import annotations

import platform
import statistics
import time
from datetime import datetime, timezone
from importlib.metadata import version

import torch

from benchmarks import write_result
from engine.seq2seq.decode import translate
from engine.seq2seq.model import load_seq2seq
from engine.seq2seq.pointer_network import load_pointer_network
from engine.seq2seq.train import CHECKPOINTS, RUNS

INPUTS = {"dates": "on wednesday, the 23rd of november, 2026", "names": "email quaventoro on the 23rd of nov 2026"}


def decode_ms(model, text: str, repeats: int = 20) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        translate(model, text)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    torch.set_num_threads(1)
    rows = []
    print("checkpoint          input chars  decode ms  train s  exact match  repeats  skips")
    for name in RUNS:
        model, extra = load_seq2seq(CHECKPOINTS / f"{name}.pt")
        text = INPUTS[extra["task"]]
        ms = decode_ms(model, text)
        m = extra["metrics"]
        rows.append({"checkpoint": name, "input_chars": len(text), "decode_ms": ms,
                     "train_seconds": extra["train_seconds"], **m})
        print(f"{name:<18}  {len(text):>11}  {ms:>9.1f}  {extra['train_seconds']:>7.0f}  {m['exact_match']:>11.1%}  "
              f"{m['repetition_rate']:>7.1%}  {m['skip_rate']:>5.1%}")
    _, extra = load_pointer_network(CHECKPOINTS / "pointer_network.pt")
    print(f"pointer_network: trained in {extra['train_seconds']:.0f} s; sorted exactly: "
          + ", ".join(f"{n} numbers {m['sorted']:.1%}" for n, m in extra["metrics"].items()))
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": f"CPU ({platform.machine()}), 1 thread",
        "versions": {"python": platform.python_version(), "torch": version("torch")},
        "checkpoints": rows, "pointer_network": {"train_seconds": extra["train_seconds"], **extra["metrics"]},
    }
    write_result("seq2seq", result)


if __name__ == "__main__":
    main()
