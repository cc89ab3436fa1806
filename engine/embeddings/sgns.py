"""Skip-gram with negative sampling (000 eq. 16) one pair at a time, compiled, shared by word2vec and FastText
(000 eq. 17-18): the per-pair SGD loop of word2vec.c and gensim, with two differences said below.

The centre word c enters through a list of input rows and predicts each context word o, as the notes write
P(o|c) and as fastText orders it: its own row for word2vec; its own row and its n-grams' bucket rows for
FastText, whose hidden vector is their mean as in fastText (eq. 17 writes the sum; the mean only rescales
it). Each pair is one SGD step on log σ(u_o·h) + Σ_k log σ(−u_k·h): the gradient for h is added, whole, to
every input row, as fastText and gensim do. word2vec.c and gensim's skip-gram feed the other way round, the
context word's input row predicting the centre. Both orders step each (input, target) pair of words with the
same probability (its reach is drawn at one end or at the other), so the expected updates are the same; the
centre-first order is the one FastText needs, whose input side is a word and its n-grams.

Each centre's window is cut to a reach of 1..window words, as in word2vec.c, but drawn as
(state >> 16) % window, the generator's high bits, where word2vec.c takes next_random % window: the low bits of
a linear congruential generator cycle with a short period (the lowest alternates), so its draws of small
windows are less random; the distribution of reaches is the same.

Work is split into chunks of whole sentences (about CHUNK_WORDS words, gensim's job size); each chunk has
its own random state and learning rate, so one worker gives the same vectors on every machine. Several
workers are Python threads running chunks at once with the GIL released, updating shared vectors without
locks, as gensim's workers and word2vec.c's threads do ("Hogwild").
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from engine.errors import InputError

CHUNK_WORDS = 10_000
MAX_SENTENCE = 10_000  # longer sentences are cut, as gensim's MAX_WORDS_IN_BATCH cuts them
NO_PAIRS = "no (centre, context) pair in any epoch: paste more text, with several words per line"
# σ and log σ looked up in tables over [−6, 6], as word2vec.c and gensim do: an exp and a log per term
# cost a fifth of the training time; beyond ±6, σ is taken as 0 or 1 and log σ(x) as min(x, 0)
MAX_SCORE, TABLE_SIZE = 6.0, 1000
_GRID = (np.arange(TABLE_SIZE, dtype=np.float64) + 0.5) / TABLE_SIZE * 2 * MAX_SCORE - MAX_SCORE
SIGMOID = (1 / (1 + np.exp(-_GRID))).astype(np.float32)
LOG_SIGMOID = np.log(SIGMOID).astype(np.float32)


@numba.njit(cache=True, nogil=True)
def _advance(state):
    """word2vec.c's linear congruential generator: the next state; its draw is state >> 16."""
    return state * np.uint64(25214903917) + np.uint64(11)


@numba.njit(cache=True, nogil=True, fastmath=True)
def pair_step(W_in, W_out, input_rows, first, last, target, negatives, accept, alias, lr, state, hidden,
              grad_hidden):
    """One (centre, context) pair: h = mean of W_in's rows input_rows[first:last]; the context word
    `target` with label 1 and `negatives` words drawn from P_n(w) by its alias table (accept, alias) with label 0,
    a draw equal to target skipped as in word2vec.c. Updates W_out's rows and those W_in rows in place.
    Returns the pair's loss −log σ(u_o·h) − Σ_k log σ(−u_k·h) and the random state. hidden,
    grad_hidden: (d,) scratch. Rows are indexed, never sliced: a view costs two atomic reference counts."""
    d = W_in.shape[1]
    hidden[:] = 0.0
    for j in range(first, last):
        r = input_rows[j]
        for i in range(d):
            hidden[i] += W_in[r, i]
    scale = np.float32(1.0 / (last - first))
    for i in range(d):
        hidden[i] *= scale
    grad_hidden[:] = 0.0
    loss = 0.0
    for s in range(negatives + 1):
        word, label = target, np.float32(1.0)
        if s > 0:
            word, state = draw(accept, alias, state)
            label = np.float32(0.0)
            if word == target:
                continue
        score = np.float32(0.0)
        for i in range(d):
            score += hidden[i] * W_out[word, i]
        signed = score if label else -score  # log σ(±u·h) is the term's log-likelihood
        if score >= MAX_SCORE or score <= -MAX_SCORE:
            p = np.float32(1.0) if score > 0 else np.float32(0.0)
            loss -= min(signed, 0.0)
        else:
            p = SIGMOID[int((score + MAX_SCORE) * (TABLE_SIZE / (2 * MAX_SCORE)))]
            loss -= LOG_SIGMOID[int((signed + MAX_SCORE) * (TABLE_SIZE / (2 * MAX_SCORE)))]
        g = (label - p) * lr  # ∂ log σ(±u·h) / ∂(u·h), times the rate
        for i in range(d):
            grad_hidden[i] += g * W_out[word, i]
            W_out[word, i] += g * hidden[i]
    for j in range(first, last):
        r = input_rows[j]
        for i in range(d):
            W_in[r, i] += grad_hidden[i]
    return loss, state


@numba.njit(cache=True, nogil=True, fastmath=True)
def train_chunk(W_in, W_out, row_starts, input_rows, ids, sentence, first, last, keep, accept, alias,
                window, negatives, lr, seed):
    """Skip-gram over positions first..last−1 (whole sentences): subsample each word (kept with
    probability keep[w], word2vec.c's 16-bit draw), give each centre a reach of 1..window words, and
    step every (centre, context) pair. Centre w's input rows: input_rows[row_starts[w]:row_starts[w + 1]].
    Returns (summed loss, pairs)."""
    state = np.uint64(seed)
    hidden = np.empty(W_in.shape[1], dtype=W_in.dtype)
    grad_hidden = np.empty(W_in.shape[1], dtype=W_in.dtype)
    kept = np.empty(MAX_SENTENCE, dtype=np.int64)
    loss, pairs, position = 0.0, 0, first
    while position < last:
        n, current = 0, sentence[position]
        while position < last and sentence[position] == current:
            word = ids[position]
            position += 1
            if keep[word] < 1.0:
                state = _advance(state)
                if keep[word] < ((state >> np.uint64(16)) & np.uint64(0xFFFF)) / 65536.0:
                    continue
            if n < MAX_SENTENCE:
                kept[n] = word
                n += 1
        for a in range(n):
            state = _advance(state)
            reach = window - np.int64((state >> np.uint64(16)) % np.uint64(window))
            centre = kept[a]
            for b in range(max(0, a - reach), min(n, a + reach + 1)):
                if b != a:
                    pair_loss, state = pair_step(W_in, W_out, input_rows, row_starts[centre], row_starts[centre + 1],
                                                 kept[b], negatives, accept, alias, lr, state, hidden, grad_hidden)
                    loss += pair_loss
                    pairs += 1
    return loss, pairs


def chunk_starts(sentence: np.ndarray, words: int = CHUNK_WORDS) -> np.ndarray:
    """Where chunks begin: each takes whole sentences until it holds at least `words` words; len(sentence)
    last. (C + 1,)"""
    starts = [0]
    for start in np.flatnonzero(np.diff(sentence)) + 1:
        if start - starts[-1] >= words:
            starts.append(int(start))
    return np.array(starts + [len(sentence)])


def alias_table(distribution: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vose's alias method for drawing from `distribution` (V,) exactly in constant time: pick k uniformly,
    keep it with probability accept[k], else take alias[k]. Two (V,) arrays stay in cache, where a table of
    2^20 quantiles missed it at every draw and made training three times slower."""
    scaled = np.asarray(distribution, dtype=np.float64) * len(distribution) / np.sum(distribution)
    accept, alias = np.ones(len(scaled)), np.arange(len(scaled))
    small, large = [i for i, x in enumerate(scaled) if x < 1], [i for i, x in enumerate(scaled) if x >= 1]
    while small and large:
        low, high = small.pop(), large.pop()
        accept[low], alias[low] = scaled[low], high  # low's column: its own mass, topped up by high
        scaled[high] -= 1 - scaled[low]
        (small if scaled[high] < 1 else large).append(high)
    return accept, alias


@numba.njit(cache=True, nogil=True)
def draw(accept, alias, state):
    """One word from an alias table, with two of word2vec.c's draws; returns (word, state)."""
    state = _advance(state)
    k = np.int64((((state >> np.uint64(16)) & np.uint64(0xFFFFFFFF)) * np.uint64(len(accept))) >> np.uint64(32))
    state = _advance(state)
    u = ((state >> np.uint64(16)) & np.uint64(0xFFFFFF)) / 16777216.0
    return (k if u < accept[k] else alias[k]), state


def train_epochs(W_in, W_out, row_starts, input_rows, ids, sentence, keep, noise_distribution, *, window: int,
                 negatives: int, epochs: int, lr: float, min_lr: float, seed: int, workers: int = 1,
                 on_report=None, reports: int = 50) -> float:
    """Every epoch's chunks, the rate falling linearly from lr to min_lr over all of them. on_report(fraction,
    epoch, mean loss per pair since the last report) is called about `reports` times; returning False stops.
    W_in, W_out: float32 arrays updated in place. Returns the fraction of the work done; an InputError when
    subsampling and the sentences left not a single pair."""
    starts = chunk_starts(sentence)
    count = len(starts) - 1
    total = epochs * count
    every = workers * -(-total // (reports * workers))  # jobs per report, whole rounds of the workers
    args = (W_in, W_out, row_starts, input_rows, ids, sentence)
    tail = (keep, *alias_table(noise_distribution), window, negatives)

    def run(job: int) -> tuple[float, int]:
        c = job % count
        rate = np.float32(max(min_lr, lr - (lr - min_lr) * job / total))
        return train_chunk(*args, starts[c], starts[c + 1], *tail, rate, (seed * 1_000_003 + job) * 2 + 1)

    all_pairs = 0
    with ThreadPoolExecutor(workers) as pool:
        for first in range(0, total, every):
            jobs = range(first, min(first + every, total))
            results = list(pool.map(run, jobs)) if workers > 1 else [run(job) for job in jobs]
            loss, pairs = sum(r[0] for r in results), sum(r[1] for r in results)
            all_pairs += pairs
            fraction = jobs.stop / total
            if on_report is not None and pairs and on_report(fraction, jobs[-1] // count, loss / pairs) is False:
                return fraction
    if all_pairs == 0:
        raise InputError(NO_PAIRS)
    return 1.0
