"""FastText (000 §4.1, eq. 17-18; Bojanowski et al. 2017): skip-gram with negative sampling where a centre
word enters as its own row and its character n-grams' bucket rows (engine/embeddings/subwords.py), so a
word never seen in training still gets a vector from its n-grams.

Training runs the compiled pair loop word2vec uses (engine/embeddings/sgns.py), with fastText's hidden
vector, the mean of those rows. Only buckets some vocabulary word's n-grams hash to are ever read or
written in training, so only those get rows here: the same arithmetic as fastText's (V + buckets, d)
matrix at a fraction of its memory (2,000,000 buckets × 100 floats would be 800 MB). A bucket no training
word reaches counts as zero, where fastText leaves its random initial vector: an unseen word is then built
from the n-grams training saw, not from noise.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from engine import checkpoint_files
from engine.embeddings import sgns
from engine.embeddings.corpus import Vocab
from engine.embeddings.subwords import buckets, check_range, ngrams
from engine.embeddings.vectors import WordVectors
from engine.errors import InputError


@dataclass
class FastTextConfig:
    dim: int = 100
    window: int = 5
    negatives: int = 5
    min_count: int = 5
    min_n: int = 3  # n-gram lengths, fastText's defaults
    max_n: int = 6
    buckets: int = 2_000_000  # fastText's and gensim's default
    sample: float = 1e-3
    epochs: int = 5
    lr: float = 0.025  # gensim's alpha
    min_lr: float = 1e-4
    seed: int = 0
    workers: int = 1

    def check(self) -> None:
        check_range(self.min_n, self.max_n)
        for name in ("dim", "window", "negatives", "min_count", "buckets", "epochs", "workers"):
            if getattr(self, name) < 1:
                raise InputError(f"{name} must be at least 1")


@dataclass
class FastTextModel:
    vocab: Vocab
    config: FastTextConfig
    word_rows: np.ndarray  # (V, d): each vocabulary word's own input vector
    bucket_ids: np.ndarray  # (M,) sorted: the buckets the vocabulary's n-grams reach
    bucket_rows: np.ndarray  # (M, d): their vectors z_g
    losses: list[float] = field(default_factory=list)
    fraction_done: float = 0.0
    seconds: float = 0.0

    def ngram_rows(self, word: str) -> tuple[list[str], np.ndarray, np.ndarray]:
        """word's n-grams, their buckets, and their vectors (zero for a bucket training never reached). (G, d)"""
        grams = ngrams(word, self.config.min_n, self.config.max_n)
        ids = np.array(buckets(grams, self.config.buckets), dtype=np.int64)
        at = np.searchsorted(self.bucket_ids, ids).clip(max=len(self.bucket_ids) - 1)
        seen = self.bucket_ids[at] == ids
        return grams, ids, np.where(seen[:, None], self.bucket_rows[at], 0.0)

    def vector(self, word: str) -> np.ndarray:
        """fastText's vector: the mean of the word's own row (if it has one) and its n-gram rows. (d,)"""
        if not word.strip() or not any(ch.isalnum() for ch in word):
            raise InputError(f"“{word}” has no letters or digits: nothing to build a vector from")
        grams, _, rows = self.ngram_rows(word)
        if word in self.vocab.index:
            rows = np.vstack([self.word_rows[self.vocab.index[word]], rows])
        elif not grams:
            raise InputError(f"“{word}” is too short for n-grams of {self.config.min_n} to {self.config.max_n} "
                             "characters and is not in the vocabulary")
        elif not rows.any():
            raise InputError(f"none of the n-grams of “{word}” occurs in a training word: its vector would be 0")
        return rows.mean(0)

    def word_vectors(self) -> WordVectors:
        """Every vocabulary word's vector(), as gensim's FastTextKeyedVectors.vectors holds them."""
        return WordVectors(self.vocab.words, np.stack([self.vector(w) for w in self.vocab.words]))


def input_rows(vocab: Vocab, config: FastTextConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each word's input rows in a (V + M, d) matrix: its own row i, then V + the compact row of each of its
    n-grams' buckets. Returns row_starts (V + 1,), rows, and the M buckets in order."""
    per_word = [buckets(ngrams(w, config.min_n, config.max_n), config.buckets) for w in vocab.words]
    bucket_ids = np.unique(np.concatenate([np.array(b, dtype=np.int64) for b in per_word] + [np.zeros(0, np.int64)]))
    rows, starts = [], [0]
    for i, word_buckets in enumerate(per_word):
        rows += [i, *(len(vocab) + np.searchsorted(bucket_ids, word_buckets)).tolist()]
        starts.append(len(rows))
    return np.array(starts), np.array(rows, dtype=np.int64), bucket_ids


def train(sentences, config: FastTextConfig = FastTextConfig(),
          on_progress: Callable[[float, int, float], bool] | None = None, reports: int = 50) -> FastTextModel:
    """Train on sentences of words. on_progress(fraction, epoch, mean loss per pair) is called about
    `reports` times; returning False stops early with the model so far."""
    config.check()
    vocab = Vocab.build(sentences, config.min_count)
    if len(vocab) < 2:
        raise InputError("fewer than two different words occur often enough: too little text to train on")
    ids, sentence = vocab.encode(sentences)
    row_starts, rows, bucket_ids = input_rows(vocab, config)
    rng = np.random.default_rng(config.seed)
    # fastText draws every input row from U(±1/d) and starts the output rows at 0
    W_in = rng.uniform(-1 / config.dim, 1 / config.dim, (len(vocab) + len(bucket_ids), config.dim)).astype(np.float32)
    W_out = np.zeros((len(vocab), config.dim), np.float32)
    model = FastTextModel(vocab, config, W_in[:len(vocab)], bucket_ids, W_in[len(vocab):])
    start = time.perf_counter()

    def report(fraction: float, epoch: int, loss: float) -> bool:
        model.losses.append(loss)
        model.fraction_done, model.seconds = fraction, time.perf_counter() - start
        return on_progress is None or on_progress(fraction, epoch, loss) is not False

    model.fraction_done = sgns.train_epochs(
        W_in, W_out, row_starts, rows, ids, sentence, vocab.keep_probability(config.sample),
        vocab.noise_distribution(), window=config.window, negatives=config.negatives,
        epochs=config.epochs, lr=config.lr, min_lr=config.min_lr, seed=config.seed, workers=config.workers,
        on_report=report, reports=reports)
    model.seconds = time.perf_counter() - start
    return model


def save_model(model: FastTextModel, path, **extra) -> None:
    """Rows in float16; loads with torch.load(weights_only=True)."""
    checkpoint_files.save({"words": model.vocab.words, "counts": torch.from_numpy(model.vocab.counts),
                           "config": asdict(model.config), "word_rows": torch.from_numpy(model.word_rows).half(),
                           "bucket_ids": torch.from_numpy(model.bucket_ids),
                           "bucket_rows": torch.from_numpy(model.bucket_rows).half(), "losses": model.losses,
                           **extra}, path)


def load_model(path) -> tuple[FastTextModel, dict]:
    data = checkpoint_files.load(path)
    model = FastTextModel(Vocab(data.pop("words"), data.pop("counts").numpy()), FastTextConfig(**data.pop("config")),
                          data.pop("word_rows").float().numpy(), data.pop("bucket_ids").numpy(),
                          data.pop("bucket_rows").float().numpy(), data.pop("losses"), fraction_done=1.0)
    return model, data
