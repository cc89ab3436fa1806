"""Beam search against greedy, and the search tree's drawing time, as ratios measured in one run.

1. Time per decoding step of beam search with W = 8 (the 8 prefixes batched into one model call)
   against greedy (W = 1), on the additive date model and on the character TransformerLM
   (issue goal: at most 2x).
2. The tree of a W = 8, 20-step search of the LM: building the plotly figure and serialising it, as
   the page does, in a warm process (issue goal: at most 300 ms).
Usage: python -m benchmarks.decoding   (writes benchmarks/results/decoding.json)
"""
from __future__ import annotations

import platform
import statistics
import time
from datetime import datetime, timezone
from importlib.metadata import version

import torch

from benchmarks import write_result
from engine.decoding.models import LanguageModelStepper, Seq2SeqStepper
from engine.decoding.search import search
from engine.seq2seq.model import load_seq2seq
from engine.seq2seq.train import CHECKPOINTS as SEQ2SEQ
from engine.transformer.model import load_checkpoint
from engine.transformer.text import CharVocab
from engine.transformer.train import CHECKPOINTS as LM
from ui import figures  # plotly only: no streamlit call is made

REPEATS = 5


def seconds_per_step(stepper, width: int, max_len: int) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        tree = search(stepper, "beam", width, max_len, pruned_shown=0)
        times.append((time.perf_counter() - start) / max(n.depth for n in tree.nodes))
    return statistics.median(times)


def tree_ms(stepper) -> tuple[float, int]:
    """Median of REPEATS after one warm-up draw (a server process has plotly loaded and its templates built)."""
    tree = search(stepper, "beam", 8, 20, pruned_shown=16)
    times = []
    for _ in range(REPEATS + 1):
        start = time.perf_counter()
        nodes = [figures.TreeNode(str(n.id), None if n.parent is None else str(n.parent), stepper.label(n.token),
                                  f"log P {n.cum_log_p:.3f}", n.cum_log_p, n.status == "pruned") for n in tree.nodes]
        figures.tree(nodes, "tree").to_json()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times[1:]), len(tree.nodes)


def main() -> None:
    torch.set_num_threads(1)
    seq2seq, _ = load_seq2seq(SEQ2SEQ / "additive.pt")
    lm, extra = load_checkpoint(LM / "char_causal.pt")
    vocab = CharVocab(extra["vocab"])
    steppers = {"seq2seq additive": Seq2SeqStepper(seq2seq, "on wednesday, the 23rd of november, 2026"),
                "character LM": LanguageModelStepper(lm, vocab, vocab.encode("The government said"), eos_char="\x00")}
    rows = []
    for name, stepper in steppers.items():
        greedy, beam = seconds_per_step(stepper, 1, 20), seconds_per_step(stepper, 8, 20)
        rows.append({"model": name, "greedy_ms_per_step": 1000 * greedy, "beam8_ms_per_step": 1000 * beam,
                     "ratio": beam / greedy})
        print(f"{name:<17} greedy {1000 * greedy:6.2f} ms/step  beam W=8 {1000 * beam:6.2f} ms/step  "
              f"ratio {beam / greedy:.2f} (goal at most 2)")
    ms, n_nodes = tree_ms(steppers["character LM"])
    print(f"tree of W = 8, 20 steps ({n_nodes} nodes): figure built and serialised in {ms:.0f} ms (goal 300 ms)")
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "device": f"CPU ({platform.machine()}), 1 thread",
              "versions": {"python": platform.python_version(), "torch": version("torch"), "plotly": version("plotly")},
              "per_step": rows, "tree_nodes": n_nodes, "tree_render_ms": ms}
    write_result("decoding", result)


if __name__ == "__main__":
    main()
