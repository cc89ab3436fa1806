"""GloVe's co-occurrence counts X (000 §4.2, where the notes call them P) and the ratios P(k|i)/P(k|j) that
motivate them (Pennington et al. 2014, table 1).

Counted as GloVe's cooccur.c counts them: words outside the vocabulary are dropped before the window
slides, windows stop at sentence ends, each pair at distance d adds 1/d, and the window is symmetric, so X
is symmetric.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import scipy.sparse as sp

from engine.embeddings.corpus import Vocab
from engine.errors import InputError


def cooccurrence(ids: np.ndarray, sentence: np.ndarray, vocab_size: int, window: int,
                 harmonic: bool = True) -> sp.csr_matrix:
    """X (V, V): the weighted count of j within `window` words of i. ids, sentence: (N,) from Vocab.encode.
    One vectorised pass per distance d; the sparse constructor sums repeated pairs."""
    if window < 1:
        raise InputError(f"the window must hold at least one word each side, not {window}")
    rows, cols, weights = [], [], []
    for d in range(1, min(window, len(ids) - 1) + 1):
        same = sentence[:-d] == sentence[d:]
        left, right = ids[:-d][same], ids[d:][same]
        w = np.full(len(left), 1.0 / d if harmonic else 1.0)
        rows += [left, right]  # both directions: the window reaches d words each side
        cols += [right, left]
        weights += [w, w]
    if not rows:
        return sp.csr_matrix((vocab_size, vocab_size))
    X = sp.coo_matrix((np.concatenate(weights), (np.concatenate(rows), np.concatenate(cols))),
                      shape=(vocab_size, vocab_size))
    return X.tocsr()  # sums duplicates


def cooccurrence_by_dictionary(sentences, vocab: Vocab, window: int) -> dict[tuple[int, int], float]:
    """The same counts with a plain Python dictionary: the reference the tests hold cooccurrence() to."""
    counts: dict[tuple[int, int], float] = defaultdict(float)
    for s in sentences:
        kept = [vocab.index[w] for w in s if w in vocab.index]
        for a, i in enumerate(kept):
            for d in range(1, window + 1):
                if a + d < len(kept):
                    j = kept[a + d]
                    counts[i, j] += 1.0 / d
                    counts[j, i] += 1.0 / d
    return counts


def weighting(x: np.ndarray, x_max: float = 100.0, alpha: float = 0.75) -> np.ndarray:
    """f(x) = (x / x_max)^α below x_max, 1 above (Pennington et al. eq. 9); f(0) = 0, as 000 eq. 21 asks."""
    if x_max <= 0:
        raise InputError(f"x_max must be positive, not {x_max}")
    return np.minimum(np.asarray(x, dtype=np.float64) / x_max, 1.0) ** alpha


def ratio_table(X: sp.csr_matrix, vocab: Vocab, i: str, j: str, probes: list[str]) -> dict[str, list[float]]:
    """P(k|i), P(k|j) and their ratio for each probe word k, P(k|i) = X_ik / Σ_k' X_ik'. Large ratios mark
    words related to i and not j, small ones the reverse, near 1 words related to both or neither."""
    missing = [w for w in (i, j, *probes) if w not in vocab.index]
    if missing:
        raise InputError(f"not in the vocabulary: {', '.join(missing)}")
    rows = {w: X.getrow(vocab.index[w]) for w in (i, j)}
    totals = {w: rows[w].sum() for w in (i, j)}
    if not all(totals.values()):
        raise InputError(f"{i if not totals[i] else j} has no co-occurrences in this window")
    probe_ids = [vocab.index[k] for k in probes]
    p_i = rows[i].toarray()[0, probe_ids] / totals[i]
    p_j = rows[j].toarray()[0, probe_ids] / totals[j]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = p_i / p_j  # inf where only i meets k, nan where neither does
    return {"P(k|i)": p_i.tolist(), "P(k|j)": p_j.tolist(), "ratio": ratio.tolist()}
