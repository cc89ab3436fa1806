"""word2vec against gensim, and GloVe queries, as ratios measured in one run.

1. Skip-gram with negative sampling on the Wikipedia sample (453k words), ours against gensim's
   Word2Vec with the same corpus, dimension, window, k, subsampling and epochs, with 1 and 2
   workers (ours: torch threads); words per second over the raw corpus, and the quality of both
   (Google analogies 3CosAdd, WordSim-353 Spearman). Issue goal: at least 1.0x gensim's throughput
   with quality within 10%.
2. GloVe: loading in a fresh process (goal at most 3 s) and a nearest-neighbour query over 400k
   words (goal at most 50 ms).
Usage: python -m benchmarks.word2vec   (writes benchmarks/results/word2vec.json)
"""
from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks import write_result  # noqa: E402
from engine.embeddings.corpus import load_corpus  # noqa: E402
from engine.embeddings.glove import load_glove  # noqa: E402
from engine.embeddings.train import WIKI, gensim_word2vec, quality  # noqa: E402
from engine.embeddings.word2vec import train  # noqa: E402

EPOCHS = 5
PROBES = ("king", "music", "france", "computer", "river")


def training_row(sentences, workers: int) -> dict:
    config = replace(WIKI, epochs=EPOCHS)
    words = sum(len(s) for s in sentences) * EPOCHS
    torch.set_num_threads(workers)
    start = time.perf_counter()
    ours = train(sentences, config)
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    theirs = gensim_word2vec(sentences, config, workers=workers)  # vocabulary building included, as ours
    theirs_s = time.perf_counter() - start
    ours_q, theirs_q = quality(ours), quality(theirs)
    return {"workers": workers, "ours_words_per_s": words / ours_s, "gensim_words_per_s": words / theirs_s,
            "throughput_ratio": theirs_s / ours_s, "ours_quality": ours_q, "gensim_quality": theirs_q,
            "quality_ratio": {k: ours_q[k] / theirs_q[k] for k in ("analogy_accuracy", "wordsim353_spearman")}}


def glove_load_seconds() -> float:
    code = "import time; t = time.perf_counter(); from engine.embeddings.glove import load_glove; load_glove(); " \
           "print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def neighbour_ms(repeats: int = 20) -> float:
    vectors = load_glove()
    times = []
    for word in PROBES * (repeats // len(PROBES)):
        start = time.perf_counter()
        vectors.neighbours(word, 10)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    sentences = load_corpus("wikipedia")
    rows = [training_row(sentences, workers) for workers in (1, 2)]
    print(f"skip-gram, negative sampling, Wikipedia sample, d={WIKI.dim}, window {WIKI.window}, k={WIKI.negatives}, "
          f"{EPOCHS} epochs")
    print("workers  ours w/s  gensim w/s  ours/gensim  analogy ours/gensim  WordSim ours/gensim")
    for r in rows:
        o, g = r["ours_quality"], r["gensim_quality"]
        print(f"{r['workers']:>7}  {r['ours_words_per_s']:>8,.0f}  {r['gensim_words_per_s']:>10,.0f}  "
              f"{r['throughput_ratio']:>11.2f}  {o['analogy_accuracy']:.4f}/{g['analogy_accuracy']:.4f}        "
              f"{o['wordsim353_spearman']:.3f}/{g['wordsim353_spearman']:.3f}")
    load_s, query_ms = glove_load_seconds(), neighbour_ms()
    print(f"GloVe load in a fresh process: {load_s:.2f} s (goal 3 s); neighbours over 400k words: "
          f"{query_ms:.1f} ms median (goal 50 ms)")
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": f"CPU ({platform.machine()}), {os.cpu_count()} cores",
        "versions": {"python": platform.python_version(), "torch": version("torch"), "gensim": version("gensim")},
        "corpus_words": sum(len(s) for s in sentences), "epochs": EPOCHS, "training": rows,
        "glove_load_s": load_s, "neighbour_query_ms": query_ms,
    }
    write_result("word2vec", result)


if __name__ == "__main__":
    main()
