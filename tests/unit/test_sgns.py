"""The compiled skip-gram loop (engine/embeddings/sgns.py) against eq. 16 through autograd, word2vec.c's
random draws replayed in Python, and counts of pairs in closed form."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from engine.embeddings import sgns
from engine.errors import InputError


def _lcg(state: int) -> int:
    """word2vec.c's next_random = next_random · 25214903917 + 11 (mod 2^64)."""
    return (state * 25214903917 + 11) % 2 ** 64


def _alias_draws(seed: int, count: int, accept, alias) -> tuple[list[int], int]:
    """The kernel's draws replayed: k from the high 32 bits of one draw, kept if the next draw's 24-bit
    fraction is below accept[k]."""
    state, words = seed, []
    for _ in range(count):
        state = _lcg(state)
        k = (((state >> 16) & 0xFFFFFFFF) * len(accept)) >> 32
        state = _lcg(state)
        words.append(k if ((state >> 16) & 0xFFFFFF) / 2 ** 24 < accept[k] else int(alias[k]))
    return words, state


@pytest.mark.parametrize("input_rows", [[3], [3, 7, 8]])  # word2vec's own row; FastText's word and n-gram rows
def test_pair_step_is_an_sgd_step_on_eq16(input_rows):
    rng = np.random.default_rng(0)
    W_in, W_out = rng.normal(0, 0.3, (10, 8)), rng.normal(0, 0.3, (10, 8))
    accept, alias = sgns.alias_table(rng.random(10))
    target, k, lr, seed = 5, 4, 0.1, 12345
    negatives, final_state = _alias_draws(seed, k, accept, alias)
    negatives = [w for w in negatives if w != target]  # word2vec.c skips a draw equal to the true word

    v, u = torch.tensor(W_in, requires_grad=True), torch.tensor(W_out, requires_grad=True)
    h = v[input_rows].mean(0)  # fastText's hidden vector: the mean of the input rows
    log_likelihood = F.logsigmoid(u[target] @ h) + sum(F.logsigmoid(-u[w] @ h) for w in negatives)  # eq. 16
    d_v, d_u = torch.autograd.grad(log_likelihood, (v, u))

    new_in, new_out = W_in.copy(), W_out.copy()
    loss, state = sgns.pair_step(new_in, new_out, np.array(input_rows), 0, len(input_rows), target, k, accept, alias,
                                 lr, np.uint64(seed), np.empty(8), np.empty(8))
    # σ and log σ come from 1,000-entry tables over [−6, 6]: within 0.2% of the exact values at these scores
    assert loss == pytest.approx(-log_likelihood.item(), abs=0.01)
    assert np.allclose(new_out, W_out + lr * d_u.numpy(), atol=lr * 0.01)
    # fastText and gensim add ∂/∂h whole to every input row: len(rows) times the true gradient of the mean
    assert np.allclose(new_in, W_in + lr * len(input_rows) * d_v.numpy(), atol=lr * 0.01 * len(input_rows))
    assert int(state) == final_state


def test_a_window_of_one_steps_every_neighbouring_pair_within_sentences():
    # no subsampling and window 1: each sentence of n words gives 2(n − 1) pairs, and none across sentences
    lengths = [5, 1, 3, 7]
    sentence = np.repeat(np.arange(len(lengths)), lengths)
    ids = np.arange(len(sentence)) % 6
    W_in, W_out = np.zeros((6, 4), np.float32), np.zeros((6, 4), np.float32)
    loss, pairs = sgns.train_chunk(W_in, W_out, np.arange(7), np.arange(6), ids, sentence, 0, len(ids),
                                   np.ones(6), *sgns.alias_table(np.ones(6)), 1, 2, np.float32(0.025), 1)
    assert pairs == sum(2 * (n - 1) for n in lengths)
    # all vectors start and stay at 0: every term is −log σ(0) = log 2, one per pair and up to k = 2 per pair more
    assert np.log(2) * 0.99 <= loss / pairs <= np.log(2) * 3 * 1.01 and not W_in.any()


def test_chunks_hold_whole_sentences():
    sentence = np.repeat(np.arange(50), 7)  # 350 words in sentences of 7
    starts = sgns.chunk_starts(sentence, words=20)
    assert starts[0] == 0 and starts[-1] == len(sentence)
    assert all(s == 0 or sentence[s] != sentence[s - 1] for s in starts[:-1])
    assert np.all(np.diff(starts)[:-1] >= 20) and np.all(np.diff(starts) < 20 + 7)  # the last takes what is left


def test_the_alias_table_holds_the_distribution_exactly_and_draws_follow_it():
    p = np.random.default_rng(3).random(50) ** 3
    p /= p.sum()
    accept, alias = sgns.alias_table(p)
    V = len(p)
    # k is picked with 1/V and kept with accept[k]; otherwise its column's rest goes to alias[k]
    held = accept / V + np.bincount(alias, weights=(1 - accept) / V, minlength=V)
    assert np.allclose(held, p, atol=1e-12)
    draws, state = [], np.uint64(7)
    for _ in range(100_000):
        word, state = sgns.draw(accept, alias, state)
        draws.append(word)
    assert np.abs(np.bincount(draws, minlength=V) / 100_000 - p).max() < 0.006


def test_one_worker_is_reproducible_and_two_workers_train_as_well():
    rng = np.random.default_rng(0)
    sentence = np.repeat(np.arange(400), 25)
    ids = rng.integers(0, 50, len(sentence))
    ids[1::2] = (ids[::2] + 1) % 50  # each even position predicts its neighbour: something to learn

    def run(workers):
        W_in = (np.random.default_rng(1).random((50, 16), dtype=np.float32) - 0.5) / 16
        W_out = np.zeros((50, 16), np.float32)
        losses = []
        sgns.train_epochs(W_in, W_out, np.arange(51), np.arange(50), ids, sentence, np.ones(50),
                          np.full(50, 1 / 50), window=2, negatives=3, epochs=3, lr=0.05,
                          min_lr=1e-4, seed=0, workers=workers, on_report=lambda f, e, loss: losses.append(loss))
        return W_in, losses

    first, second, parallel = run(1), run(1), run(2)
    assert np.array_equal(first[0], second[0]) and first[1] == second[1]
    assert parallel[1][-1] < parallel[1][0] - 0.1 and first[1][-1] < first[1][0] - 0.1
    assert abs(parallel[1][-1] - first[1][-1]) < 0.1


def test_stopping_returns_early():
    sentence = np.repeat(np.arange(100), 10)
    ids = np.arange(len(sentence)) % 20
    fraction = sgns.train_epochs(np.zeros((20, 4), np.float32), np.zeros((20, 4), np.float32), np.arange(21),
                                 np.arange(20), ids, sentence, np.ones(20), np.ones(20), window=2,
                                 negatives=1, epochs=50, lr=0.025, min_lr=1e-4, seed=0,
                                 on_report=lambda f, e, loss: False)
    assert 0 < fraction < 0.1


def test_sentences_of_one_word_give_no_pair_and_a_message():
    sentence = np.arange(30)  # every sentence a single word
    with pytest.raises(InputError, match="no \\(centre, context\\) pair"):
        sgns.train_epochs(np.zeros((5, 4), np.float32), np.zeros((5, 4), np.float32), np.arange(6), np.arange(5),
                          sentence % 5, sentence, np.ones(5), np.ones(5), window=2, negatives=1, epochs=2, lr=0.025,
                          min_lr=1e-4, seed=0)


def test_each_centres_reach_is_drawn_from_the_generators_high_bits():
    # one sentence of 12 words, window 5, no subsampling, no negatives: the only draws are the reaches, one per
    # centre, reach = window − (state >> 16) % window (word2vec.c takes next_random % window, the low bits)
    n, window, seed = 12, 5, 7
    ids, sentence = np.arange(n), np.zeros(n, dtype=np.int64)
    W_in, W_out = np.zeros((n, 4), np.float32), np.zeros((n, 4), np.float32)
    _, pairs = sgns.train_chunk(W_in, W_out, np.arange(n + 1), np.arange(n), ids, sentence, 0, n, np.ones(n),
                                *sgns.alias_table(np.ones(n)), window, 0, np.float32(0.025), seed)

    def replayed(draw) -> int:
        state, count = seed, 0
        for a in range(n):
            state = _lcg(state)
            reach = window - draw(state) % window
            count += min(n, a + reach + 1) - max(0, a - reach) - 1
        return count

    assert pairs == replayed(lambda state: state >> 16)
    assert pairs != replayed(lambda state: state)  # the low bits would give other windows
