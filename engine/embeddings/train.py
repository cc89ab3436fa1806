"""Train the shipped word2vec checkpoints; reproducible from their seeds.

    python -m engine.embeddings.train          # all four, about a minute on two CPU cores
    python -m engine.embeddings.train --only wikipedia_sgns

- wikipedia_sgns: skip-gram with negative sampling on the Wikipedia sample, the app's word vectors;
- wikipedia_gensim: gensim's Word2Vec on the same sentences and settings, shown beside ours;
- lee_softmax: skip-gram with the full softmax of 000 eq. 3 on the Lee corpus, for p(o|c) and eq. 12;
- lee_hierarchical: skip-gram with hierarchical softmax (000 §4.3) on the Lee corpus, for the tree page.

Vectors are stored in float16; the metrics stored with them are measured on the rounded vectors.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from engine.checkpoint_files import run_asked
from engine.embeddings.corpus import Vocab, load_corpus
from engine.embeddings.evaluation import scores
from engine.embeddings.vectors import WordVectors
from engine.embeddings.word2vec import Word2VecConfig, Word2VecModel, load_model, save_model, train
from engine.gensim_data import gensim_module

CHECKPOINTS = Path(__file__).parent / "checkpoints"
WIKI = Word2VecConfig(dim=100, window=5, negatives=5, min_count=5, epochs=10, seed=0)
RUNS = {
    "wikipedia_sgns": ("wikipedia", WIKI),
    "wikipedia_gensim": ("wikipedia", WIKI),
    "lee_softmax": ("lee", Word2VecConfig(objective="softmax", dim=50, epochs=15, batch_size=256)),
    "lee_hierarchical": ("lee", Word2VecConfig(objective="hierarchical", dim=50, epochs=10)),
}


def gensim_word2vec(sentences, config: Word2VecConfig, workers: int = 1) -> Word2VecModel:
    """gensim's Word2Vec with our settings (skip-gram, negative sampling), wrapped as our model."""
    Word2Vec = gensim_module("gensim.models").Word2Vec
    sentences = [list(s) for s in sentences]
    model = Word2Vec(sentences, vector_size=config.dim, window=config.window, min_count=config.min_count,
                     sg=1, hs=0, negative=config.negatives, sample=config.sample, alpha=config.lr,
                     min_alpha=config.min_lr, epochs=config.epochs, seed=config.seed, workers=workers)
    vocab = Vocab(list(model.wv.index_to_key), np.array([model.wv.get_vecattr(w, "count") for w in model.wv.index_to_key]))
    return Word2VecModel(vocab, config, torch.from_numpy(model.wv.vectors.copy()),
                         torch.from_numpy(model.syn1neg.copy()), fraction_done=1.0)


def quality(model: Word2VecModel) -> dict:
    """Google analogies (3CosAdd) and WordSim-353 / SimLex-999 Spearman of the input vectors."""
    return scores(WordVectors(model.vocab.words, model.input_vectors.numpy()))


def load_shipped_word2vec(name: str) -> tuple[Word2VecModel, dict]:
    """A shipped checkpoint by name (one of RUNS: "wikipedia_sgns", "wikipedia_gensim", "lee_softmax",
    "lee_hierarchical") and what was saved beside it: the corpus and the metrics of its float16 vectors."""
    return load_model(CHECKPOINTS / f"{name}.pt")


def main() -> None:
    only = run_asked(list(RUNS), __doc__, CHECKPOINTS)
    for name, (corpus, config) in RUNS.items():
        if only and name != only:
            continue
        sentences = load_corpus(corpus)
        model = gensim_word2vec(sentences, config) if name.endswith("gensim") else train(sentences, config)
        path = CHECKPOINTS / f"{name}.pt"
        save_model(model, path, corpus=corpus)
        model, _ = load_model(path)  # metrics of the float16 vectors that ship
        metrics = quality(model)
        save_model(model, path, corpus=corpus, metrics=metrics)
        print(f"{name}: {len(model.vocab)} words, {path.stat().st_size / 1e6:.1f} MB, {metrics}", flush=True)


if __name__ == "__main__":
    main()
