"""Train the shipped seq2seq checkpoints on generated dates; reproducible from their seeds.

    python -m engine.seq2seq.train                 # every run below, one after another
    python -m engine.seq2seq.train --only additive
    python -m engine.seq2seq.train --only pointer_network   # sorting numbers (000 §7.2)

Each run draws fresh examples from the seeded generator for every batch, so there is no fixed training
set to overfit; the held-out set (2,000 examples) comes from another seed. Weights are stored in float16
and the metrics stored with them are measured with the rounded weights.
"""
from __future__ import annotations

import random
import time

import torch

from engine.checkpoint_files import run_asked
from engine.seq2seq.checkpoint import CHECKPOINTS
from engine.seq2seq.dates import batch, date_example, examples, name_example
from engine.seq2seq.decode import held_out_metrics
from engine.seq2seq.fit import fit
from engine.seq2seq.model import Seq2Seq, Seq2SeqConfig, save_seq2seq
from engine.seq2seq.pointer_network import save_pointer_network, sorting_accuracy, train_pointer_network

HELD_OUT_SEED = 10_000
POINTER_STEPS = 3000  # sorting 5-10 numbers
RUNS = {  # name: (task, config, steps)
    "dot": ("dates", Seq2SeqConfig("dot"), 800),
    "general": ("dates", Seq2SeqConfig("general"), 800),
    "additive": ("dates", Seq2SeqConfig("additive"), 800),
    "additive_coverage": ("dates", Seq2SeqConfig("additive", coverage=True, coverage_weight=0.5), 1000),
    "pointer": ("names", Seq2SeqConfig("additive", pointer=True), 1500),
}


def held_out(task: str, n: int = 2000):
    return examples(task, n, HELD_OUT_SEED)


def train_run(task: str, config: Seq2SeqConfig, steps: int, seed: int = 0, batch_size: int = 64,
              log=print) -> tuple[Seq2Seq, list[float]]:
    torch.manual_seed(seed)
    rng = random.Random(seed)
    make = date_example if task == "dates" else name_example
    model = Seq2Seq(config)

    def step_loss():
        x, y = batch([make(rng) for _ in range(batch_size)])
        nll, covloss = model(x, y)
        return nll + (config.coverage_weight * covloss if config.coverage else 0.0), nll

    losses = fit(model, step_loss, steps, lr=3e-3, clip=1.0, log_every=250, label="nll", log=log)
    return model.eval(), losses


def main() -> None:
    only = run_asked([*RUNS, "pointer_network"], __doc__, CHECKPOINTS)
    for name, (task, config, steps) in RUNS.items():
        if only and name != only:
            continue
        start = time.perf_counter()
        model, losses = train_run(task, config, steps)
        seconds = time.perf_counter() - start
        path = CHECKPOINTS / f"{name}.pt"
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.half().float())  # metrics of the float16 weights that ship
        metrics = held_out_metrics(model, held_out(task))
        save_seq2seq(model, path, task=task, losses=losses[::10], metrics=metrics, train_seconds=seconds)
        print(f"{name}: {metrics} in {seconds:.0f} s, {path.stat().st_size / 1e3:.0f} kB", flush=True)
    if only in (None, "pointer_network"):
        start = time.perf_counter()
        model, losses = train_pointer_network(POINTER_STEPS)
        seconds = time.perf_counter() - start
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.half().float())
        metrics = {str(n): sorting_accuracy(model, n) for n in (5, 10, 15)}  # 15: longer than any seen
        save_pointer_network(model, CHECKPOINTS / "pointer_network.pt", losses=losses[::10], metrics=metrics,
                             train_seconds=seconds)
        print(f"pointer_network: {metrics} in {seconds:.0f} s", flush=True)


if __name__ == "__main__":
    main()
