"""An unexpected error stays in one page (ui/boundary.py): logged with its page, URL and traceback, shown as a short
notice with a button that runs the page again; the rest of the app goes on. In the browser, with other sessions
beside it: tests/e2e/test_boundary_browser.py."""
from __future__ import annotations

import logging

import pytest

from engine.attention import scaling
from engine.embeddings import pairs
from tests.app.conftest import assert_clean, button, metric, open_page
from ui import boundary


def broken(*args, **kwargs):
    raise RuntimeError("broken on purpose")


class Kept(logging.Handler):
    """The boundary's log lines (its logger, like Streamlit's, does not pass them to the root's handlers)."""

    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def log():
    kept = Kept()
    boundary.LOG.addHandler(kept)
    try:
        yield kept.records
    finally:
        boundary.LOG.removeHandler(kept)


def test_a_page_that_raises_shows_a_notice_and_logs_its_page_url_and_traceback(monkeypatch, log):
    monkeypatch.setattr(pairs, "one_hot", broken)  # the one-hot page's engine call
    at = open_page("one_hot", text="the dog sat")
    assert not at.exception
    assert [e.value for e in at.error] == [boundary.NOTICE]
    assert button(at, boundary.AGAIN)
    assert not at.get("code")  # a failed page has no Code view
    (record,) = log
    assert record.getMessage() == "Unexpected error on page one_hot at /one_hot?text=the+dog+sat"
    assert record.exc_info[0] is RuntimeError and str(record.exc_info[1]) == "broken on purpose"
    assert at.query_params["text"] == "the dog sat"  # kept for the run again, not dropped as unknown

    monkeypatch.undo()  # mended: running again draws the page at the same settings
    button(at, boundary.AGAIN).click().run()
    assert_clean(at)
    assert at.text_input(key="text").value == "the dog sat"
    at.switch_page("views/skipgram_pairs.py").run()  # and the session goes on to other pages
    assert_clean(at)


def test_a_fragment_that_raises_keeps_its_error_to_itself(monkeypatch, log):
    monkeypatch.setattr(scaling, "one_query_weights", broken)  # only the scaling page's fragment calls it
    at = open_page("scaling")
    assert not at.exception
    assert [e.value for e in at.error] == [boundary.NOTICE]
    assert metric(at, "Raw logit spread")  # the page around the fragment is drawn
    assert [r.getMessage() for r in log] == ["Unexpected error on page scaling (one_draw) at /scaling"]

    monkeypatch.undo()
    button(at, boundary.AGAIN).click().run()  # the fragment's own button: it reruns the fragment
    assert_clean(at)
    assert len(log) == 1


def test_another_page_in_the_same_process_is_untouched(monkeypatch, log):
    monkeypatch.setattr(pairs, "one_hot", broken)
    assert [e.value for e in open_page("one_hot").error] == [boundary.NOTICE]
    assert_clean(open_page("rope"))
