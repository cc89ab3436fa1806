"""FastText training and vectors (engine/embeddings/fasttext.py) against gensim's FastTextKeyedVectors holding
the same trained rows, and eq. 17 written out."""
from dataclasses import replace

import numpy as np
import pytest

from engine.embeddings import fasttext as ft
from engine.embeddings.corpus import load_corpus
from engine.embeddings.subwords import buckets, ngrams
from engine.errors import InputError

SMALL = ft.FastTextConfig(dim=16, buckets=5000, epochs=3, min_count=3)


@pytest.fixture(scope="module")
def lee_model():
    return ft.train(load_corpus("lee"), SMALL)


def _gensims_vectors(model: ft.FastTextModel):
    """gensim's FastTextKeyedVectors with our trained rows: its own hashing, lookups and averaging."""
    from gensim.models.fasttext import FastTextKeyedVectors

    kv = FastTextKeyedVectors(SMALL.dim, SMALL.min_n, SMALL.max_n, SMALL.buckets)
    for word in model.vocab.words:
        kv.key_to_index[word] = len(kv.index_to_key)
        kv.index_to_key.append(word)
    kv.vectors_vocab = model.word_rows.copy()
    kv.vectors_ngrams = np.zeros((SMALL.buckets, SMALL.dim), np.float32)
    kv.vectors_ngrams[model.bucket_ids] = model.bucket_rows
    kv.recalc_char_ngram_buckets()
    kv.adjust_vectors()
    return kv


def test_each_words_input_rows_are_its_own_and_its_ngrams_buckets(lee_model):
    starts, rows, bucket_ids = ft.input_rows(lee_model.vocab, SMALL)
    V = len(lee_model.vocab)
    for i in (0, 17, V - 1):
        mine = rows[starts[i]:starts[i + 1]]
        word = lee_model.vocab.words[i]
        assert mine[0] == i
        assert bucket_ids[mine[1:] - V].tolist() == buckets(ngrams(word), SMALL.buckets)


def test_vectors_equal_gensims_for_known_and_unseen_words(lee_model):
    kv = _gensims_vectors(lee_model)
    for word in ("government", "australia", "lecturerz", "governmentt", "xyzzy"):
        assert np.allclose(lee_model.vector(word), kv.get_vector(word), atol=1e-6), word
    ours = lee_model.word_vectors()
    unseen = lee_model.vector("governmentt")
    scores = ours.unit @ (unseen / np.linalg.norm(unseen))
    top = [ours.words[i] for i in np.argsort(-scores)[:5]]
    assert top == [w for w, _ in kv.similar_by_vector(unseen, topn=5)]


def test_an_unseen_words_vector_is_eq17s_sum_over_its_ngrams_divided_by_their_number(lee_model):
    grams, _, rows = lee_model.ngram_rows("lecturerz")
    assert grams[0] == "<le" and "rz>" in grams
    assert np.allclose(lee_model.vector("lecturerz") * len(grams), rows.sum(0), atol=1e-5)


def test_training_lowers_the_loss(lee_model):
    assert lee_model.losses[-1] < lee_model.losses[0] - 0.2


def test_bad_inputs_are_refused(lee_model):
    with pytest.raises(InputError, match="no letters"):
        lee_model.vector("?!")
    longer_grams = replace(lee_model, config=replace(SMALL, min_n=5))
    with pytest.raises(InputError, match="too short"):
        longer_grams.vector("qz")  # <qz> has no 5-gram, and qz is no vocabulary word
    with pytest.raises(InputError, match="above the longest"):
        ft.FastTextConfig(min_n=5, max_n=3).check()
    with pytest.raises(InputError, match="too little text"):
        ft.train([["one", "two"]], SMALL)


def test_checkpoint_round_trip(lee_model, tmp_path):
    path = tmp_path / "ft.pt"
    ft.save_model(lee_model, path, metrics={"x": 1.0})
    loaded, extra = ft.load_model(path)
    assert extra["metrics"] == {"x": 1.0} and loaded.vocab.words == lee_model.vocab.words
    assert np.allclose(loaded.vector("lecturerz"), lee_model.vector("lecturerz"), atol=1e-3)


def test_the_shipped_checkpoint_reproduces_its_metrics_and_builds_unseen_words():
    from engine.embeddings.evaluation import scores
    from engine.embeddings.train_fasttext import CHECKPOINT

    model, extra = ft.load_model(CHECKPOINT)
    vectors = model.word_vectors()
    assert scores(vectors) == pytest.approx(extra["metrics"], abs=1e-6)
    assert "lecturerz" not in model.vocab.index
    unseen = model.vector("lecturerz")
    nearest = [vectors.words[i] for i in np.argsort(-(vectors.unit @ (unseen / np.linalg.norm(unseen))))[:10]]
    assert "lecture" in nearest[:3], nearest  # "lecturer" is no vocabulary word; its spelling neighbour is
