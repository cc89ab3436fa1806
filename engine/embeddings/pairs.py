"""From words to training examples: one-hot vectors (000 §2.1), the notes' windows and (target, context)
pairs (000 §2.2.2, eq. 5-6), and the randomly shrunk windows word2vec trains with.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.errors import InputError


def one_hot(words: list[str]) -> tuple[list[str], np.ndarray]:
    """000 eq. 2: the vocabulary of words (first appearance order) and one row per word. (N, V)"""
    vocab = list(dict.fromkeys(words))
    rows = np.zeros((len(words), len(vocab)))
    rows[np.arange(len(words)), [vocab.index(w) for w in words]] = 1.0
    return vocab, rows


def pairwise_geometry(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Euclidean distances and cosines between every two rows: (N, N), (N, N)."""
    distances = np.linalg.norm(rows[:, None, :] - rows[None, :, :], axis=2)
    unit = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    return distances, unit @ unit.T


@dataclass(frozen=True)
class Window:
    words: tuple[str, ...]
    target: str
    contexts: tuple[str, ...]


def windows(words: list[str], size: int) -> list[Window]:
    """000 §2.2.2 step 1: every window of an odd size whose target has a full context on both sides."""
    if size < 3 or size % 2 == 0:
        raise InputError(f"the window size must be odd and at least 3, got {size}")
    if size > len(words):
        raise InputError(f"a window of {size} words does not fit in a sentence of {len(words)}")
    m = size // 2
    return [Window(tuple(words[n - m:n + m + 1]), words[n], tuple(words[n - m:n] + words[n + 1:n + m + 1]))
            for n in range(m, len(words) - m)]


def skipgram_pairs(words: list[str], size: int) -> list[tuple[str, str]]:
    """000 eq. 5-6: (x, y) = (target, context), left context before right, window by window."""
    return [(w.target, c) for w in windows(words, size) for c in w.contexts]


def shrunk_windows(n_tokens: int, window: int, rng: np.random.Generator) -> np.ndarray:
    """word2vec's reduced windows: each centre sees b ~ U{1..window} words each side, so near words
    count more often than far ones. (N,)"""
    return rng.integers(1, window + 1, size=n_tokens)


def training_pairs(sentence: np.ndarray, reach: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions (centre, context) for every centre and every offset within its reach and sentence,
    ordered by centre as word2vec sweeps the text. sentence: (N,), reach: (N,) -> (P,), (P,)"""
    n = len(sentence)
    centres, contexts = [], []
    for offset in range(1, int(reach.max(initial=0)) + 1):
        for sign in (-1, 1):
            centre = np.arange(max(0, -sign * offset), min(n, n - sign * offset))
            context = centre + sign * offset
            ok = (reach[centre] >= offset) & (sentence[centre] == sentence[context])
            centres.append(centre[ok])
            contexts.append(context[ok])
    centre, context = np.concatenate(centres), np.concatenate(contexts)
    order = np.argsort(centre, kind="stable")
    return centre[order], context[order]


def cbow_examples(sentence: np.ndarray, reach: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
    """CBOW (000 §2.3): every centre position with its context positions, padded with -1.
    -> (N', ), (N', 2·window); centres without any context are dropped."""
    n = len(sentence)
    positions = np.arange(n)[:, None] + np.concatenate([np.arange(-window, 0), np.arange(1, window + 1)])
    distance = np.abs(positions - np.arange(n)[:, None])
    inside = (positions >= 0) & (positions < n)
    clipped = np.clip(positions, 0, n - 1)
    ok = inside & (distance <= reach[:, None]) & (sentence[clipped] == sentence[:, None])
    context = np.where(ok, clipped, -1)
    has_context = ok.any(axis=1)
    return np.arange(n)[has_context], context[has_context]
