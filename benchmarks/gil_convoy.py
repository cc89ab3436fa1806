"""Why a page that runs many small torch operators is slow under a class: each operator lets go of the GIL and
must take it back, and another session's thread running Python keeps it for up to the switch interval (5 ms)
before handing it over. The character TransformerLM sampling 60 characters (about 70 operators a character)
alone, then beside two threads that only run Python, as a class's sessions do; the same with the compiled
sampler the TransformerLM page uses (engine/transformer/sampler.py, one call that never needs the GIL); and a
loop of small matmuls in Python against the same loop as one TorchScript call.

No target: a measurement of the mechanism behind the slowest changes of `benchmarks.class_size`.
Usage: python -m benchmarks.gil_convoy
"""
from __future__ import annotations

import os
import platform
import sys
import threading
import time
from datetime import datetime, timezone
from importlib.metadata import version

import torch

from benchmarks import write_result
from engine.transformer import sampler
from engine.transformer.model import generate, load_checkpoint
from engine.transformer.train import CHECKPOINTS

CHARACTERS = 60
BUSY_THREADS = 2
SMALL_OPS = 3000  # the TorchScript comparison: a loop of small matmuls, one call from Python


@torch.jit.script
def _scripted_loop(x: torch.Tensor, w: torch.Tensor, n: int) -> torch.Tensor:
    for _ in range(n):
        x = torch.tanh(x @ w) + x
    return x


def _python_loop(x: torch.Tensor, w: torch.Tensor, n: int) -> torch.Tensor:
    for _ in range(n):
        x = torch.tanh(x @ w) + x
    return x


def alone_and_beside_busy_threads(work) -> tuple[float, float]:
    """Seconds work() takes alone, then while BUSY_THREADS threads run Python without pause."""
    work()
    start = time.perf_counter()
    work()
    alone = time.perf_counter() - start
    stop = threading.Event()

    def busy() -> None:
        total = 0
        while not stop.is_set():
            for i in range(10_000):
                total += i

    threads = [threading.Thread(target=busy) for _ in range(BUSY_THREADS)]
    for thread in threads:
        thread.start()
    time.sleep(0.2)
    start = time.perf_counter()
    work()
    beside = time.perf_counter() - start
    stop.set()
    for thread in threads:
        thread.join()
    return alone, beside


def main() -> int:
    torch.set_num_threads(1)
    model, _ = load_checkpoint(CHECKPOINTS / "char_causal.pt")
    prompt = torch.randint(0, model.config.vocab_size, (1, 40), generator=torch.Generator().manual_seed(0))
    x, w = torch.randn(1, 128), torch.randn(128, 128) * 0.01
    weights = sampler.weights_of(model)
    cases = {
        f"TransformerLM, {CHARACTERS} characters": lambda: generate(model, prompt, CHARACTERS, 0.8, seed=1),
        f"TransformerLM, {CHARACTERS} characters, compiled sampler": lambda: sampler.sample(
            weights, prompt[0].tolist(), CHARACTERS, 0.8, None, seed=1),
        f"{SMALL_OPS} small matmuls, a Python loop": lambda: _python_loop(x, w, SMALL_OPS),
        f"{SMALL_OPS} small matmuls, one TorchScript call": lambda: _scripted_loop(x, w, SMALL_OPS),
    }
    rows = []
    for name, work in cases.items():
        alone, beside = alone_and_beside_busy_threads(work)
        rows.append({"case": name, "alone_s": round(alone, 3), "beside_busy_s": round(beside, 3),
                     "ratio": round(beside / alone, 1)})
        print(f"{name}: alone {alone:.3f} s, beside {BUSY_THREADS} busy Python threads {beside:.3f} s "
              f"({beside / alone:.0f}x)")
    write_result("gil_convoy", {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "versions": {"python": platform.python_version(), "torch": version("torch")},
        "switch_interval_s": sys.getswitchinterval(), "busy_threads": BUSY_THREADS, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
