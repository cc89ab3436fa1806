"""The Code view under a page: nothing is written until it is opened; opened, it shows the snippet of the settings
on screen and offers the notebook; a refused state has none. What the snippets compute is
tests/app/test_code_views.py."""
from __future__ import annotations

import nbformat

from tests.app.conftest import assert_clean, open_page
from ui import code, snippet

LABEL = "Code: this view in Python, and as a notebook"


def opened(at):
    at.session_state[code.VIEW_KEY] = True
    return at.run()


def test_closed_nothing_is_written(monkeypatch):
    def refuse_to_write(self):
        raise AssertionError("the snippet was written with the Code view closed")

    monkeypatch.setattr(snippet.Snippet, "script", refuse_to_write)
    monkeypatch.setattr(snippet.Snippet, "notebook", refuse_to_write)
    at = open_page("one_hot")
    assert_clean(at)
    assert [e.label for e in at.expander] == [LABEL]
    assert not at.code


def test_opened_it_follows_the_controls_and_offers_the_notebook():
    code.KEPT = {}
    try:
        at = opened(open_page("one_hot"))
        assert_clean(at)
        assert "text = 'the cat sit on the mat'  # Sentence" in at.code[0].value
        at.text_input(key="text").set_value("a b a").run()
        assert "text = 'a b a'  # Sentence" in at.code[0].value
        assert at.code[0].value == snippet.Snippet(code.KEPT["one_hot"]).script().rstrip("\n")
        assert at.get("download_button")[0].proto.label == "Download as a Jupyter notebook"
        book = nbformat.reads(snippet.Snippet(code.KEPT["one_hot"]).notebook(), as_version=4)  # the bytes the button holds
        nbformat.validate(book)
        assert "text = 'a b a'" in book.cells[3].source
    finally:
        code.KEPT = None


def test_a_refused_state_has_no_code():
    at = opened(open_page("one_hot", text="123"))
    assert_clean(at)
    assert at.warning and not at.code
    assert not [e for e in at.expander if e.label == LABEL]
