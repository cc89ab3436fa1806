"""FastText's sub-words (000 §4.1, eq. 17-18) against gensim's own functions and a gensim FastText model."""
import numpy as np
import pytest
from gensim.models import FastText
from gensim.models.fasttext import ft_ngram_hashes
from gensim.models.fasttext_inner import compute_ngrams_bytes, ft_hash_bytes

from engine.embeddings.corpus import load_corpus
from engine.embeddings.subwords import (buckets, collisions, fnv1a, fnv1a_each, length_ngrams, merged_ngrams, ngrams,
                                        subword_vector, word_ngrams)
from engine.errors import InputError

WORDS = ["where", "lecturerz", "a", "naïve", "straße", "日本語", "x<y"]


def test_the_3_grams_of_where():
    assert ngrams("where", 3, 3) == ["<wh", "whe", "her", "ere", "re>"]
    assert word_ngrams("where", 3, 3) == ["<where>", "<wh", "whe", "her", "ere", "re>"]


@pytest.mark.parametrize("word", WORDS)
@pytest.mark.parametrize("min_n, max_n", [(3, 6), (1, 3), (2, 9)])
def test_ngrams_and_buckets_equal_gensims(word, min_n, max_n):
    assert ngrams(word, min_n, max_n) == [g.decode() for g in compute_ngrams_bytes(word, min_n, max_n)]
    assert buckets(ngrams(word, min_n, max_n), 2_000_000) == list(ft_ngram_hashes(word, min_n, max_n, 2_000_000))


def test_fnv1a_by_hand_and_collisions():
    # FNV-1a of one byte b: (2166136261 ^ b) * 16777619 mod 2^32
    assert fnv1a("a") == ((2166136261 ^ 97) * 16777619) % 2 ** 32
    assert fnv1a("ï") != ((((2166136261 ^ 0xC3) * 16777619) % 2 ** 32 ^ 0xAF) * 16777619) % 2 ** 32  # sign-extended
    grams = ngrams("lecturer", 3, 6)
    shared = collisions(grams, 7)  # 7 buckets for 26 n-grams: some must share
    assert shared and all(len(set(found)) > 1 for found in shared.values())
    assert all(fnv1a(g) % 7 == bucket for bucket, found in shared.items() for g in found)
    assert shared.grams_sharing == sum(len(found) for found in shared.values())
    alone = next(b for b in range(7) if b not in shared)  # 7 buckets, fewer shared: the others hold one gram or none
    assert shared.get(alone) is None


def test_collisions_group_the_n_grams_by_the_buckets_gensim_computes():
    grams, sharing = [], {}
    for word in ["lecturer", "lecture", "where", "naïve", "straße", "日本語"]:
        for gram, bucket in zip(ngrams(word, 3, 6), ft_ngram_hashes(word, 3, 6, 50)):
            if gram not in grams:
                grams.append(gram)
                sharing.setdefault(bucket, []).append(gram)
    expected = {bucket: found for bucket, found in sharing.items() if len(found) > 1}
    assert expected and collisions(grams, 50) == expected
    assert list(collisions(grams, 50, fnv1a_each(grams)).items()) == list(expected.items())  # hashed once


def test_fnv1a_of_many_grams_at_once_equals_gensims_hash():
    grams = [g for word in WORDS for g in ngrams(word, 1, 9)]
    assert fnv1a_each(grams).tolist() == [ft_hash_bytes(g.encode()) for g in grams]
    assert fnv1a_each([]).shape == (0,)


@pytest.mark.parametrize("min_n, max_n", [(3, 6), (1, 8), (2, 2), (1, 1)])
def test_ngrams_of_each_length_merge_into_the_order_fasttext_meets_them(min_n, max_n):
    words = [*WORDS, "where", "here", "ere", "lecture", "lecturer"]  # repeated grams, first met in other words
    grams, hashes = merged_ngrams([length_ngrams(words, n) for n in range(min_n, max_n + 1)])
    assert grams == list(dict.fromkeys(g for word in words for g in ngrams(word, min_n, max_n)))
    assert hashes.tolist() == [fnv1a(g) for g in grams]


def test_an_unseen_words_vector_is_the_sum_of_its_ngram_vectors_and_gensims_is_their_mean():
    model = FastText(vector_size=16, window=3, min_count=5, bucket=5000, min_n=3, max_n=5, epochs=1, workers=1,
                     seed=0, sentences=[list(s) for s in load_corpus("lee")])
    table = model.wv.vectors_ngrams  # (5000, 16)
    assert "lecturerz" not in model.wv.key_to_index
    grams = ngrams("lecturerz", 3, 5)
    total = subword_vector("lecturerz", table, 3, 5)
    np.testing.assert_allclose(total, sum(table[fnv1a(g) % 5000] for g in grams), rtol=1e-6)  # eq. 17
    np.testing.assert_allclose(subword_vector("lecturerz", table, 3, 5, mean=True), model.wv["lecturerz"],
                               rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(total, len(grams) * model.wv["lecturerz"], rtol=1e-5, atol=1e-6)


def test_bad_ranges_and_short_words():
    with pytest.raises(InputError, match="above the longest"):
        ngrams("where", 4, 3)
    with pytest.raises(InputError, match="at least one character"):
        ngrams("where", 0, 3)
    with pytest.raises(InputError, match="too short"):
        subword_vector("", np.zeros((10, 2)), 3, 6)
    with pytest.raises(InputError, match="bucket"):
        buckets(["<wh"], 0)
