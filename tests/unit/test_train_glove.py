"""The shipped GloVe checkpoints (engine/embeddings/train_glove.py): their file format, their stored scores
reproduced from the float16 vectors, and the shared-vocabulary comparison with GloVe 6B."""
import numpy as np
import pytest
import torch

from engine.embeddings.cooccurrence import cooccurrence
from engine.embeddings.corpus import Vocab, load_corpus
from engine.embeddings.evaluation import on_shared_vocabulary, scores, word_pair_correlation
from engine.embeddings.glove import load_glove
from engine.embeddings.glove_training import GloVeConfig, train
from engine.embeddings.train_glove import CHECKPOINTS, RUNS, load_glove_checkpoint, quality, save_glove
from engine.embeddings.vectors import WordVectors


def test_checkpoint_round_trip(tmp_path):
    sentences = load_corpus("lee")
    vocab = Vocab.build(sentences, 5)
    X = cooccurrence(*vocab.encode(sentences), len(vocab), 5)
    model = train(X, vocab, GloVeConfig(dim=8, epochs=1))
    save_glove(model, tmp_path / "g.pt", corpus="lee")
    vectors, extra = load_glove_checkpoint(tmp_path / "g.pt")
    assert vectors.words == vocab.words and extra["corpus"] == "lee" and extra["config"]["dim"] == 8
    assert extra["losses"] == model.losses and extra["seconds"] == model.seconds
    u_plus_v = (model.parameters.u + model.parameters.v).numpy()  # glove.c's word vectors, float64
    np.testing.assert_allclose(vectors.vectors, u_plus_v, rtol=1e-3, atol=1e-4)  # float16: 11 significant bits
    assert (tmp_path / "SHA256SUMS").read_text().endswith("  g.pt\n")


def test_shared_vocabulary_keeps_the_first_order_and_each_own_rows():
    a = WordVectors(["the", "cat", "zzq", "dog"], np.arange(8, dtype=np.float32).reshape(4, 2))
    b = WordVectors(["dog", "the", "cat", "owl"], -np.arange(8, dtype=np.float32).reshape(4, 2))
    ours, theirs = on_shared_vocabulary(a, b)
    assert ours.words == theirs.words == ["the", "cat", "dog"]
    np.testing.assert_array_equal(ours.vectors, a.vectors[[0, 1, 3]])
    np.testing.assert_array_equal(theirs.vectors, b.vectors[[1, 2, 0]])


@pytest.fixture(scope="module")
def glove_6b():
    return load_glove()


@pytest.mark.parametrize("name", sorted(RUNS))
def test_shipped_checkpoints_reproduce_their_metrics(name, glove_6b):
    raw = torch.load(CHECKPOINTS / f"{name}.pt", weights_only=True)
    assert raw["vectors"].dtype == torch.float16 and set(raw) >= {"words", "config", "losses", "metrics", "shared"}
    vectors, extra = load_glove_checkpoint(CHECKPOINTS / f"{name}.pt")
    assert extra["config"]["biases"] == (name == "glove_wikipedia")
    measured = quality(vectors, glove_6b)
    assert measured["metrics"] == pytest.approx(extra["metrics"], abs=1e-9)
    assert measured["shared"]["words"] == extra["shared"]["words"]
    for side in ("ours", "glove_6b"):
        assert measured["shared"][side] == pytest.approx(extra["shared"][side], abs=1e-9)
    assert len(extra["losses"]) == extra["config"]["epochs"] and extra["losses"][-1] < extra["losses"][0] / 2


def test_shipped_glove_puts_related_words_nearer_than_random_pairs():
    """WordSim-353 pairs rated ≥ 7 of 10 against random pairs of the vocabulary, as the word2vec checkpoint is
    held (tests/unit/test_word2vec.py); 0.5 is what untrained vectors give."""
    vectors, _ = load_glove_checkpoint(CHECKPOINTS / "glove_wikipedia.pt")
    rated = word_pair_correlation(vectors, "wordsim353")
    related = rated.cosine[rated.human >= 7]
    i, j = np.random.default_rng(0).integers(len(vectors), size=(2, 2000))
    random_pairs = np.einsum("nd,nd->n", vectors.unit[i], vectors.unit[j])
    assert (related[:, None] > random_pairs[None, :]).mean() > 0.6


def test_scores_are_the_word2vec_checkpoints_quality():
    from engine.embeddings.train import CHECKPOINTS as WORD2VEC
    from engine.embeddings.train import quality as word2vec_quality
    from engine.embeddings.word2vec import load_model

    model, extra = load_model(WORD2VEC / "lee_softmax.pt")
    assert scores(WordVectors(model.vocab.words, model.input_vectors.numpy())) == word2vec_quality(model)
