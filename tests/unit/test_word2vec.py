"""word2vec: the notes' worked example, gradients against autograd, the tree against gensim's, training."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from engine.embeddings.corpus import CORPORA, Vocab, load_corpus, tokenize, wiki_articles
from engine.embeddings.huffman import huffman_tree, path_log_terms, vocabulary_distribution, word_probability
from engine.embeddings.pairs import cbow_examples, one_hot, skipgram_pairs, training_pairs, windows
from engine.embeddings.softmax import (
    context_distribution,
    full_softmax_step,
    log_prob_gradient,
    negative_sampling_objective,
    pair_log_probs,
)
from engine.embeddings.word2vec import Word2VecConfig, _Objective, load_model, save_model, train
from engine.errors import InputError


def test_the_wikipedia_sample_reads_as_gensims_wikicorpus_does():
    from gensim.corpora.wikicorpus import WikiCorpus

    from engine.gensim_data import gensim_file

    path = gensim_file(CORPORA["wikipedia"])
    ours = wiki_articles(path)  # without get_texts' process pool
    assert ours == list(WikiCorpus(str(path), dictionary={}, processes=1).get_texts())
    assert len(ours) == 106 and sum(map(len, ours)) > 400_000  # the module docstring's 106 articles, 453k words


def test_gensims_data_is_found_where_gensim_says():
    from gensim.test.utils import datapath

    from engine.gensim_data import SHA256, gensim_file
    assert [str(gensim_file(name)) for name in SHA256] == [datapath(name) for name in SHA256]


def test_eq6_pairs_of_the_cat_sit_on_the_mat():
    pairs = skipgram_pairs("the cat sit on the mat".split(), 3)
    assert pairs == [("cat", "the"), ("cat", "sit"), ("sit", "cat"), ("sit", "on"),
                     ("on", "sit"), ("on", "the"), ("the", "on"), ("the", "mat")]
    assert [w.target for w in windows("the cat sit on the mat".split(), 3)] == ["cat", "sit", "on", "the"]


@pytest.mark.parametrize("size", [2, 1, 7])
def test_windows_reject_even_tiny_or_too_wide(size):
    with pytest.raises(InputError):
        windows("the cat sit on the mat".split(), size)


def test_one_hot_rows_are_sqrt2_apart_and_orthogonal():
    vocab, rows = one_hot("the cat sit on the mat".split())
    assert vocab == ["the", "cat", "sit", "on", "mat"]
    distinct = rows[[0, 1, 2, 3, 5]]
    distances = np.linalg.norm(distinct[:, None] - distinct[None], axis=2)
    assert np.allclose(distances[~np.eye(5, dtype=bool)], math.sqrt(2))
    assert np.allclose(distinct @ distinct.T, np.eye(5))
    assert np.array_equal(rows[0], rows[4])  # "the" twice: the same one-hot row


def test_eq12_gradient_equals_autograd():
    g = torch.Generator().manual_seed(0)
    U, v_c = torch.randn(50, 8, generator=g, dtype=torch.float64), torch.randn(8, generator=g, dtype=torch.float64)
    v = v_c.clone().requires_grad_(True)
    (autograd,) = torch.autograd.grad(torch.log(context_distribution(v, U)[17]), v)
    assert torch.allclose(log_prob_gradient(v_c, U, 17), autograd, atol=1e-12)
    assert abs(float(context_distribution(v_c, U).sum()) - 1) < 1e-12


def test_full_softmax_step_raises_eq8_log_likelihood():
    g = torch.Generator().manual_seed(1)
    V, U = torch.randn(5, 4, generator=g) * 0.1, torch.randn(5, 4, generator=g) * 0.1
    targets, contexts = torch.tensor([1, 1, 2, 2, 3, 3, 0, 0]), torch.tensor([0, 2, 1, 3, 2, 0, 3, 4])
    direct = sum(math.log(context_distribution(V[t], U)[c]) for t, c in zip(targets, contexts))
    assert abs(float(pair_log_probs(V, U, targets, contexts).sum()) - direct) < 1e-5
    before = full_softmax_step(V, U, targets, contexts, lr=0.5)
    assert abs(before - direct) < 1e-5
    assert float(pair_log_probs(V, U, targets, contexts).sum()) > before


def test_negative_sampling_objective_against_eq16_by_hand():
    v_c, u_w, u_neg = torch.tensor([0.5, -1.0]), torch.tensor([1.0, 0.25]), torch.tensor([[0.3, 0.3], [-2.0, 1.0]])
    sigma = lambda t: 1 / (1 + math.exp(-t))  # noqa: E731
    by_hand = math.log(sigma(0.25)) + math.log(1 - sigma(-0.15)) + math.log(1 - sigma(-2.0))
    assert abs(float(negative_sampling_objective(v_c, u_w, u_neg)) - by_hand) < 1e-6


@pytest.mark.parametrize("seed", range(5))
def test_hierarchical_softmax_sums_to_one(seed):
    rng = np.random.default_rng(seed)
    V = int(rng.integers(2, 300))
    tree = huffman_tree(rng.integers(1, 1000, V))
    nodes = torch.from_numpy(rng.normal(size=(V - 1, 16)))
    h = torch.from_numpy(rng.normal(size=16))
    p = vocabulary_distribution(tree, nodes, h)
    assert abs(float(p.sum()) - 1) < 1e-5
    w = int(rng.integers(V))
    by_hand = math.prod(1 / (1 + math.exp(-(1 - 2 * c) * float(nodes[n] @ h)))
                        for n, c in zip(tree.points[w], tree.codes[w]))  # eq. 24
    assert abs(float(word_probability(tree, nodes, h, w)) - by_hand) < 1e-12
    assert abs(float(p[w]) - by_hand) < 1e-12
    assert len(path_log_terms(tree, nodes, h, w)) == len(tree.codes[w])


def test_huffman_codes_equal_gensims():
    from gensim.models import Word2Vec

    sentences = [list(s) for s in load_corpus("lee")]
    ours = Vocab.build(sentences, 5)
    theirs = Word2Vec(vector_size=10, min_count=5, hs=1, negative=0)
    theirs.build_vocab(sentences)
    assert ours.words == list(theirs.wv.index_to_key)
    tree = huffman_tree(ours.counts)
    for w in range(0, len(ours), 37):
        assert tree.codes[w].tolist() == theirs.wv.get_vecattr(w, "code").tolist()
        assert tree.points[w].tolist() == theirs.wv.get_vecattr(w, "point").tolist()


def test_subsampling_and_noise_equal_gensims():
    from gensim.models import Word2Vec

    sentences = [list(s) for s in load_corpus("lee")]
    ours = Vocab.build(sentences, 5)
    theirs = Word2Vec(vector_size=10, min_count=5, sample=1e-3, negative=5)
    theirs.build_vocab(sentences)
    sample_int = np.array([theirs.wv.get_vecattr(w, "sample_int") for w in range(len(ours))]) / (2 ** 32 - 1)
    assert np.allclose(ours.keep_probability(1e-3), sample_int, atol=1e-6)
    assert np.allclose(np.cumsum(ours.noise_distribution()), theirs.cum_table / theirs.cum_table[-1], atol=1e-6)


def test_training_pairs_equal_brute_force():
    rng = np.random.default_rng(0)
    sentence, reach = np.sort(rng.integers(0, 4, 40)), rng.integers(1, 4, 40)
    centre, context = training_pairs(sentence, reach)
    brute = sorted((i, j) for i in range(40) for j in range(40)
                   if i != j and abs(i - j) <= reach[i] and sentence[i] == sentence[j])
    assert sorted(zip(centre.tolist(), context.tolist())) == brute
    centres, contexts = cbow_examples(sentence, reach, 3)
    assert sorted((i, j) for i, row in zip(centres, contexts) for j in row if j >= 0) == brute


@pytest.mark.parametrize("objective", ["negative", "hierarchical", "softmax"])
def test_batched_updates_equal_autograd(objective):
    """Each objective's hand-written step: its loss, ∂/∂h and output update equal autograd's on eq. 16,
    eq. 24 or eq. 3 written directly (the negatives are replayed from the same seed)."""
    vocab = Vocab([f"w{i}" for i in range(30)], np.arange(60, 0, -2))
    config = Word2VecConfig(objective=objective, negatives=4, batch_size=20)
    g = torch.Generator().manual_seed(0)
    W_out = torch.randn(29 if objective == "hierarchical" else 30, 6, generator=g, dtype=torch.float64) * 0.3
    h, words = torch.randn(20, 6, generator=g, dtype=torch.float64), torch.randint(30, (20,), generator=g)
    step = _Objective(vocab, config, W_out.clone(), torch.Generator().manual_seed(7))
    loss, grad_h = step.step(h, words, lr=0.1)
    leaf_h, leaf_W = h.clone().requires_grad_(True), W_out.clone().requires_grad_(True)
    reference = _reference_loss(objective, step, vocab, leaf_h, leaf_W, words, torch.Generator().manual_seed(7))
    d_h, d_W = torch.autograd.grad(-reference, (leaf_h, leaf_W))
    assert abs(loss - reference.item()) < 1e-9
    assert torch.allclose(grad_h, 0.1 * d_h, atol=1e-12)
    assert torch.allclose(step.W_out, W_out + 0.1 * d_W, atol=1e-12)


def _gensims_vocabulary(vocab: Vocab):
    """gensim's Word2Vec vocabulary for the same word counts: its Huffman codes and points, and its noise table."""
    from gensim.models import Word2Vec

    theirs = Word2Vec(vector_size=6, min_count=1, hs=1, negative=4)
    theirs.build_vocab([[word] * int(count) for word, count in zip(vocab.words, vocab.counts)])
    assert list(theirs.wv.index_to_key) == vocab.words
    return theirs


def _reference_loss(objective, step, vocab, h, W, words, generator):
    """−log-likelihood written from the equations, one example at a time, with gensim's tree and noise table
    rather than the ones of the object under test."""
    if objective == "softmax":
        return -sum(torch.log_softmax(W @ h[i], 0)[w] for i, w in enumerate(words))
    theirs = _gensims_vocabulary(vocab)
    if objective == "hierarchical":  # eq. 24: σ(h·u_n) for a 0 in the code, σ(−h·u_n) for a 1
        total = 0
        for i, w in enumerate(words.tolist()):
            codes, points = theirs.wv.get_vecattr(w, "code"), theirs.wv.get_vecattr(w, "point")
            total = total - sum(F.logsigmoid((1 - 2 * int(c)) * (W[int(n)] @ h[i])) for c, n in zip(codes, points))
        return total
    # the same uniform draws as the step, each looked up in gensim's cumulative noise table (P_n ∝ count^0.75)
    k = step.config.negatives
    draws = torch.randint(len(step.noise_table), (len(words) * k,), generator=generator)
    quantiles = (draws.numpy() + 0.5) / len(step.noise_table)
    noise = torch.from_numpy(np.searchsorted(theirs.cum_table / theirs.cum_table[-1], quantiles)).view(-1, k)
    total = 0
    for i, w in enumerate(words):
        drawn = noise[i][noise[i] != w]
        total = total - negative_sampling_objective(h[i], W[w], W[drawn])  # eq. 16, checked by hand below
    return total


@pytest.mark.parametrize("architecture,objective,lr", [("skipgram", "negative", 0.025), ("cbow", "negative", 0.025),
                                                       ("skipgram", "hierarchical", 0.025), ("cbow", "softmax", 0.1)])
def test_training_lowers_the_loss(architecture, objective, lr):
    """At least 0.1 nats per example below the first tenth's mean (a model that learns nothing stays at
    log V, (1 + k) log 2 or its mean path length times log 2)."""
    config = Word2VecConfig(architecture=architecture, objective=objective, dim=30, epochs=2, min_count=20, lr=lr)
    model = train(load_corpus("lee"), config, reports=10)
    assert model.fraction_done == 1.0
    assert np.mean(model.losses[-3:]) < model.losses[0] - 0.1


def test_stopping_returns_the_model_so_far():
    model = train(load_corpus("lee"), Word2VecConfig(dim=20, epochs=3), on_progress=lambda p: p.fraction < 0.3)
    assert 0.3 <= model.fraction_done < 0.5
    assert model.input_vectors.abs().sum() > 0


def test_too_little_text_and_bad_settings_are_refused():
    with pytest.raises(InputError, match="too little text"):
        train([["just", "four", "different", "words"]], Word2VecConfig(min_count=2))
    with pytest.raises(InputError, match="k ≥ 1"):
        train(load_corpus("lee"), Word2VecConfig(negatives=0))


def test_tokenize_keeps_letters_and_apostrophes():
    assert tokenize("Don't PANIC: 42 café!\n\nSecond line") == [["don't", "panic", "café"], ["second", "line"]]


def test_checkpoint_round_trip(tmp_path):
    model = train(load_corpus("lee"), Word2VecConfig(dim=8, epochs=1))
    save_model(model, tmp_path / "m.pt", corpus="lee")
    loaded, extra = load_model(tmp_path / "m.pt")
    assert loaded.vocab.words == model.vocab.words and extra == {"corpus": "lee"}
    assert torch.allclose(loaded.input_vectors, model.input_vectors, atol=1e-3)


@pytest.mark.parametrize("name", ["wikipedia_sgns", "wikipedia_gensim", "lee_softmax", "lee_hierarchical"])
def test_shipped_checkpoints_reproduce_their_metrics(name):
    from engine.embeddings.train import CHECKPOINTS, quality

    raw = torch.load(CHECKPOINTS / f"{name}.pt", weights_only=True)
    model, extra = load_model(CHECKPOINTS / f"{name}.pt")
    assert set(raw) >= {"words", "input_vectors", "metrics"}
    assert quality(model) == pytest.approx(extra["metrics"], abs=1e-9)


def test_trained_vectors_put_related_words_nearer_than_random_pairs():
    """On the shipped Wikipedia model: WordSim-353 pairs rated ≥ 7 of 10 by people against random pairs."""
    from engine.embeddings.evaluation import word_pair_correlation
    from engine.embeddings.train import CHECKPOINTS
    from engine.embeddings.vectors import WordVectors

    model, _ = load_model(CHECKPOINTS / "wikipedia_sgns.pt")
    vectors = WordVectors(model.vocab.words, model.input_vectors.numpy())
    rated = word_pair_correlation(vectors, "wordsim353")
    related = rated.cosine[rated.human >= 7]
    rng = np.random.default_rng(0)
    i, j = rng.integers(len(vectors), size=(2, 2000))
    random_pairs = np.einsum("nd,nd->n", vectors.unit[i], vectors.unit[j])
    assert len(related) >= 20
    # vectors of a small corpus share a common direction (random pairs average cosine 0.4), so compare
    # ranks: the chance a related pair beats a random one is 0.5 for untrained vectors, 0.72 for ours
    # and 0.68 for gensim's on the same corpus
    assert (related[:, None] > random_pairs[None, :]).mean() > 0.65
    assert rated.spearman > 0.3
