"""A URL value a control refuses gets a notice on the page, found by a simulated class (benchmarks.class_size) or
the hostile browser test where AppTest cannot look: it binds no widget to the URL and reruns no fragment alone.
So these run the real server and speak its protocol, as the browser does."""
from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.protocol import Session
from serve.process import Server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def session():
    server = Server(ROOT / "app.py", ROOT)
    tab = Session(server.url, timeout_s=300)
    try:
        yield tab
    finally:
        tab.close()
        server.stop()


def test_a_slider_whose_range_shrinks_to_one_value_under_its_url_value_says_so_and_breaks_nothing(session):
    # on the multi-head page, head=2 then H=1 raised Streamlit's refusal to delete a query parameter still bound
    # to the slider drawn in the last run
    session.open("multi_head")
    assert not session.change("H", 2).exceptions
    assert not session.change("head", 2).exceptions
    shrunk = session.change("H", 1)
    assert not shrunk.exceptions, shrunk.exceptions
    assert any("`head=2` is not used" in text for text in shrunk.texts)
    assert not session.change("H", 3).exceptions


def test_a_notice_first_raised_in_a_fragments_own_rerun_is_drawn_in_the_fragment(session):
    # the projector's word box reruns only its fragment; a word longer than the box takes, first sent then, made
    # the notice write outside the fragment where the last full run had not, which Streamlit refuses
    session.open("projector")
    assert session.widgets["word"].fragment_id
    long_word = session.change("word", "x" * 60)
    assert long_word.status == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY"
    assert not long_word.exceptions, long_word.exceptions
    assert any(f"`word={'x' * 40}` is not text of at most 40 characters" in text for text in long_word.texts)
    assert not session.change("word", "war").exceptions
