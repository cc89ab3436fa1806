"""Train the shipped GloVe checkpoints (000 §4.2, eq. 19-21) on the Wikipedia sample; reproducible from their seeds.

    python -m engine.embeddings.train_glove          # both, about 25 s of training on one CPU thread
    python -m engine.embeddings.train_glove --only glove_wikipedia

- glove_wikipedia: the paper's objective, with biases b_i + b̃_j, on counts of a symmetric window of 10 words
  weighted 1/distance (min_count 5, d = 50, 25 epochs of glove.c's AdaGrad, x_max = 10, α = 3/4), about 0.5 s
  an epoch;
- glove_wikipedia_nobias: the same without biases, 000 eq. 19 as printed.

Word vectors u + v are stored in float16; the metrics stored with them are measured on the rounded vectors:
on their own vocabulary, and on the words GloVe 6B also holds, beside GloVe 6B cut to those words.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import torch

from engine import checkpoint_files
from engine.embeddings.cooccurrence import cooccurrence
from engine.embeddings.corpus import Vocab, load_corpus
from engine.embeddings.evaluation import on_shared_vocabulary, scores
from engine.embeddings.glove import load_glove
from engine.embeddings.glove_training import GloVeConfig, GloVeModel, train
from engine.embeddings.vectors import WordVectors

CHECKPOINTS = Path(__file__).parent / "checkpoints"
CORPUS, MIN_COUNT, WINDOW = "wikipedia", 5, 10  # the paper's symmetric window of 10, as glove.c counts it
# x_max = 10 as glove.c's demo script for text8 (17M words): under the paper's 100, fit for billions of words, the
# mean f(X_ij) of our 453k words is 0.02. Measured with biases (analogies, WordSim-353 ρ, SimLex-999 ρ): x_max 10,
# 25 epochs 1.5%, 0.24, 0.12; 50 epochs 1.1%, 0.26, 0.10; 100 epochs 1.0%, 0.27, 0.08; x_max 100, 50 epochs 1.9%,
# 0.11, 0.10. More epochs trade SimLex-999 and analogies for WordSim-353, so 25 epochs.
RUNS = {
    "glove_wikipedia": GloVeConfig(dim=50, epochs=25, x_max=10.0),
    "glove_wikipedia_nobias": GloVeConfig(dim=50, epochs=25, x_max=10.0, biases=False),
}


def save_glove(model: GloVeModel, path: Path, **extra) -> None:
    """Words, counts, config and the word vectors u + v in float16; loads with torch.load(weights_only=True)."""
    vectors = torch.from_numpy(model.word_vectors().vectors).half()  # (V, d)
    checkpoint_files.save({"words": model.vocab.words, "counts": torch.from_numpy(model.vocab.counts),
                           "config": asdict(model.config), "vectors": vectors, "losses": model.losses,
                           "seconds": model.seconds, **extra}, path)


def load_glove_checkpoint(path: Path) -> tuple[WordVectors, dict]:
    """The stored word vectors, and everything else the checkpoint holds (config, losses, metrics…)."""
    data = checkpoint_files.load(path)
    return WordVectors(data.pop("words"), data.pop("vectors").float().numpy()), data


def load_shipped_glove(name: str) -> tuple[WordVectors, dict]:
    """A shipped checkpoint by name ("glove_wikipedia" or "glove_wikipedia_nobias"): its word vectors u + v, and
    its config, losses per epoch, training time and scores."""
    return load_glove_checkpoint(CHECKPOINTS / f"{name}.pt")


def quality(vectors: WordVectors, reference: WordVectors) -> dict:
    """scores() of vectors; and of vectors and reference on the words both hold, so that both answer the same
    questions among the same candidate words."""
    ours, theirs = on_shared_vocabulary(vectors, reference)
    return {"metrics": scores(vectors),
            "shared": {"words": len(ours), "ours": scores(ours), "glove_6b": scores(theirs)}}


def main() -> None:
    only = checkpoint_files.run_asked(list(RUNS), __doc__, CHECKPOINTS)
    sentences = load_corpus(CORPUS)
    vocab = Vocab.build(sentences, MIN_COUNT)
    X = cooccurrence(*vocab.encode(sentences), len(vocab), WINDOW)
    for name, config in RUNS.items():
        if only and name != only:
            continue
        model = train(X, vocab, config)
        path = CHECKPOINTS / f"{name}.pt"
        setting = {"corpus": CORPUS, "min_count": MIN_COUNT, "window": WINDOW, "harmonic": True}
        save_glove(model, path, **setting)
        vectors, _ = load_glove_checkpoint(path)  # metrics of the float16 vectors that ship
        measured = quality(vectors, load_glove())
        save_glove(model, path, **setting, **measured)
        print(f"{name}: {len(vocab)} words, {X.nnz:,} nonzero X_ij, {model.seconds:.0f} s, "
              f"{path.stat().st_size / 1e6:.1f} MB, {measured}", flush=True)


if __name__ == "__main__":
    main()
