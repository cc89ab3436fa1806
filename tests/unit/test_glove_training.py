"""GloVe from counts (000 §4.2, eq. 19-21): X against a hand count and a dictionary count, f(x), the compiled
AdaGrad step against autograd, and training that lowers J."""
import numpy as np
import pytest
import torch

from engine.embeddings.cooccurrence import cooccurrence, cooccurrence_by_dictionary, ratio_table, weighting
from engine.embeddings.corpus import Vocab, load_corpus, tokenize
from engine.embeddings.glove_training import GloVeConfig, adagrad_steps, initial_parameters, objective, train
from engine.errors import InputError

TEXT = "the cat sat on the mat\nthe dog sat"


def small_counts(window: int):
    sentences = tokenize(TEXT)
    vocab = Vocab.build(sentences, min_count=1)
    return cooccurrence(*vocab.encode(sentences), len(vocab), window), vocab


def test_counts_of_a_small_text_by_hand():
    X, vocab = small_counts(2)
    at = lambda a, b: X[vocab.index[a], vocab.index[b]]  # noqa: E731
    # "the cat sat on the mat" at distance 1: the–cat, cat–sat, sat–on, on–the, the–mat; at 2: the–sat,
    # cat–on, sat–the, on–mat. "the dog sat": the–dog, dog–sat at 1, the–sat at 2. Nothing crosses the line.
    assert at("the", "sat") == pytest.approx(0.5 + 0.5 + 0.5)
    assert at("the", "cat") == 1.0 and at("the", "mat") == 1.0 and at("the", "dog") == 1.0
    assert at("sat", "the") == at("the", "sat")
    assert at("on", "the") == 1.0 and at("cat", "on") == 0.5
    assert at("mat", "dog") == 0.0  # different lines
    assert (X != X.T).nnz == 0


@pytest.mark.parametrize("window", [1, 5, 10])
def test_counts_equal_a_dictionary_count_on_the_lee_corpus(window):
    sentences = load_corpus("lee")
    vocab = Vocab.build(sentences, 5)
    X = cooccurrence(*vocab.encode(sentences), len(vocab), window)
    counts = cooccurrence_by_dictionary(sentences, vocab, window)
    assert X.nnz == len(counts)
    rows, cols = map(np.array, zip(*counts))
    np.testing.assert_allclose(np.asarray(X[rows, cols]).ravel(), list(counts.values()), rtol=1e-12)


def test_weighting_function():
    x = np.array([0.0, 1.0, 50.0, 100.0, 400.0])
    np.testing.assert_allclose(weighting(x), [0.0, 0.01 ** 0.75, 0.5 ** 0.75, 1.0, 1.0])  # eq. 21: f(0) = 0
    np.testing.assert_allclose(weighting(x, x_max=10, alpha=1.0), [0.0, 0.1, 1.0, 1.0, 1.0])
    np.testing.assert_allclose(weighting(x, alpha=0.0), [0.0, 1.0, 1.0, 1.0, 1.0])  # f(0) = 0 even where 0^0 = 1
    with pytest.raises(InputError, match="x_max"):
        weighting(x, x_max=0)


@pytest.mark.parametrize("biases", [True, False])
def test_compiled_adagrad_steps_equal_autograd(biases):
    """Two steps on one entry against the gradient of ½ f(x) e² (000 eq. 20, the paper's biases when asked) from
    torch.autograd. glove.c steps by −η g / √G, then adds (η g)² to G: from G = 1 the first step is −η g, the
    second −η g' / √(1 + (η g)²). η = 10 makes η g of order 0.1, so that adding (η g)² to G before the step instead of
    after would be off by percents."""
    X, vocab = small_counts(3)
    config = GloVeConfig(dim=4, x_max=2.0, lr=10.0, biases=biases)
    p = initial_parameters(len(vocab), config)
    G = [np.ones_like(a) for a in p.arrays()]
    i, j, x = vocab.index["the"], vocab.index["sat"], X[vocab.index["the"], vocab.index["sat"]]
    f = weighting(np.array([x]), 2.0, 0.75)[0]
    entry = (np.int32([i, i]), np.int32([j, j]), np.log([x, x]).astype(np.float32), np.float32([f, f]))
    for step in range(2):
        leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in p.arrays()]
        u, v, b, bc = leaves
        e = u[i] @ v[j] + (b[i] + bc[j] if biases else 0) - np.log(x)
        J = 0.5 * f * e ** 2
        J.backward()
        G_before = [g.astype(np.float64) for g in G]
        cost = adagrad_steps(*p.arrays(), *G, *entry, step, step + 1, np.float32(config.lr), biases)
        assert cost == pytest.approx(J.item(), rel=1e-5)  # float32 parameters: 2⁻²⁴ of each, summed over d = 4
        for leaf, after, square, square_before in zip(leaves, p.arrays(), G, G_before):
            g = config.lr * (leaf.grad.numpy() if leaf.grad is not None else np.zeros(leaf.shape))
            # float32: each parameter rounds to 2⁻²⁴ of its size (≤ 1 here), far below the steps (~0.01)
            np.testing.assert_allclose(after - leaf.detach().numpy(), -g / np.sqrt(square_before), rtol=1e-4,
                                       atol=1e-8)
            np.testing.assert_allclose(square, square_before + g ** 2, rtol=1e-6)
    assert (G[0][i] > 1).all()  # the second step was divided by a grown G


def test_training_lowers_the_objective_and_can_be_stopped():
    sentences = load_corpus("lee")
    vocab = Vocab.build(sentences, 5)
    X = cooccurrence(*vocab.encode(sentences), len(vocab), 10)
    config = GloVeConfig(dim=20, epochs=3)
    before = objective(initial_parameters(len(vocab), config), X, config)
    model = train(X, vocab, config)
    assert len(model.losses) == 3 and model.losses[0] > model.losses[1] > model.losses[2]
    assert objective(model.parameters, X, config) < before / 2
    stopped = train(X, vocab, config, on_progress=lambda p: p.fraction < 0.3)
    assert 0.3 <= stopped.fraction_done < 0.5 and stopped.losses == []
    assert model.word_vectors().vectors.shape == (len(vocab), 20)


def test_ratio_table_and_bad_input():
    X, vocab = small_counts(2)
    table = ratio_table(X, vocab, "cat", "dog", ["on", "sat"])
    # P(k|cat): row cat = the 1, sat 1, on 0.5 → 2.5; P(k|dog): the 1, sat 1 → 2
    np.testing.assert_allclose(table["P(k|i)"], [0.5 / 2.5, 1 / 2.5])
    np.testing.assert_allclose(table["P(k|j)"], [0.0, 0.5])
    assert table["ratio"][0] == np.inf and table["ratio"][1] == pytest.approx(0.8)
    with pytest.raises(InputError, match="lion"):
        ratio_table(X, vocab, "cat", "lion", ["on"])
    with pytest.raises(InputError, match="window"):
        cooccurrence(*vocab.encode(tokenize(TEXT)), len(vocab), 0)
    empty = Vocab.build([["a"]], min_count=1)
    with pytest.raises(InputError, match="co-occur"):
        train(cooccurrence(*empty.encode([["a"]]), 1, 5), empty, GloVeConfig(epochs=1))
    infinite = X.copy()
    infinite.data[0] = np.inf  # log X_ij = ∞: J is infinite from the first stretch of entries
    with pytest.raises(InputError, match="diverged"):
        train(infinite, vocab, GloVeConfig(dim=4, epochs=1))
