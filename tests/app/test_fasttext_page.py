"""The FastText page read back: the notes' worked example (the 3-grams of “where”), buckets against gensim's
hashing, an unseen word's neighbours against gensim's FastTextKeyedVectors holding the shipped rows, and the
shares its bar chart draws."""
from __future__ import annotations

import numpy as np
import pytest

from engine.embeddings.fasttext import load_model
from engine.embeddings.train_fasttext import CHECKPOINT
from tests.app.conftest import assert_clean, figures, open_page, trace


@pytest.fixture(scope="module")
def shipped():
    return load_model(CHECKPOINT)[0]


def frames(at) -> list:
    return [frame.value for frame in at.dataframe]


def test_the_3_grams_of_where_as_fasttext_and_as_000_write_them():
    at = open_page("fasttext", word="where", min_n="3", max_n="3")
    assert_clean(at)
    grams = frames(at)[0]
    assert grams["n-gram (fastText)"].tolist() == ["<wh", "whe", "her", "ere", "re>"]
    assert grams["000 §4.1 writes"].tolist() == ["wh", "whe", "her", "ere", "re"]  # 000 §4.1's list, verbatim


def test_buckets_are_gensims(shipped):
    from gensim.models.fasttext import ft_ngram_hashes

    at = open_page("fasttext", word="naïve", buckets="1,000")
    assert_clean(at)
    grams = frames(at)[0]
    assert grams["bucket of 1,000"].tolist() == ft_ngram_hashes("naïve", 3, 6, 1000)
    shared = dict(zip(grams["n-gram (fastText)"], grams["shares its bucket with"]))
    assert any(shared.values())  # 1,000 buckets for tens of thousands of n-grams: collisions everywhere


def test_an_unseen_words_neighbours_are_gensims_on_the_same_rows(shipped):
    from gensim.models.fasttext import FastTextKeyedVectors

    config = shipped.config
    kv = FastTextKeyedVectors(config.dim, config.min_n, config.max_n, config.buckets)
    kv.vectors_ngrams = np.zeros((config.buckets, config.dim), np.float32)
    kv.vectors_ngrams[shipped.bucket_ids] = shipped.bucket_rows
    for word in shipped.vocab.words:
        kv.key_to_index[word] = len(kv.index_to_key)
        kv.index_to_key.append(word)
    kv.vectors_vocab = shipped.word_rows
    kv.recalc_char_ngram_buckets()
    kv.adjust_vectors()

    at = open_page("fasttext", word="teacherz")
    assert_clean(at)
    ours = frames(at)[1]
    theirs = kv.similar_by_vector(kv.get_vector("teacherz"), topn=10)
    assert ours["neighbour"].tolist() == [w for w, _ in theirs]
    assert np.allclose(ours["cosine"], [s for _, s in theirs], atol=1e-5)
    assert any("word2vec has no vector for it" in info.value for info in at.info)

    shares = trace(next(iter(figures(at).values())))["y"]
    assert shares.sum() == pytest.approx(1.0, abs=1e-6)  # the mean's rows, each projected on it
