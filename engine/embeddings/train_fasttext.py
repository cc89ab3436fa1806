"""Train the shipped FastText checkpoint (000 §4.1, eq. 17-18) on the Wikipedia sample; reproducible from its seed.

    python -m engine.embeddings.train_fasttext          # about 10 s on one CPU thread

fasttext_wikipedia: skip-gram with negative sampling over words and their 3- to 6-grams in fastText's
2,000,000 buckets, with word2vec's shipped settings (d = 100, window 5, k = 5, min_count 5, subsampling 1e-3),
5 epochs as fastText's and gensim's default. Rows are stored in float16; the metrics stored with them are
measured on the rounded rows.
"""
from __future__ import annotations

from pathlib import Path

from engine.embeddings.corpus import load_corpus
from engine.embeddings.evaluation import scores
from engine.embeddings.fasttext import FastTextConfig, FastTextModel, load_model, save_model, train

CHECKPOINT = Path(__file__).parent / "checkpoints" / "fasttext_wikipedia.pt"
CONFIG = FastTextConfig(dim=100, window=5, negatives=5, min_count=5, epochs=5, seed=0)


def load_shipped_fasttext() -> tuple[FastTextModel, dict]:
    """The shipped checkpoint, and what was saved beside it: the corpus, training time and metrics."""
    return load_model(CHECKPOINT)


def main() -> None:
    model = train(load_corpus("wikipedia"), CONFIG)
    save_model(model, CHECKPOINT, corpus="wikipedia", seconds=model.seconds)
    model, extra = load_model(CHECKPOINT)  # metrics of the float16 rows that ship
    metrics = scores(model.word_vectors())
    save_model(model, CHECKPOINT, **extra, metrics=metrics)
    print(f"{CHECKPOINT.name}: {len(model.vocab)} words, {len(model.bucket_ids)} buckets, "
          f"{CHECKPOINT.stat().st_size / 1e6:.1f} MB, {extra['seconds']:.1f} s, {metrics}", flush=True)


if __name__ == "__main__":
    main()
