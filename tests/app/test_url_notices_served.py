"""A slider whose range follows another control can shrink to one value while the URL still holds its old value.
Found by a simulated class (benchmarks.class_size): on the multi-head page, head=2 then H=1 raised Streamlit's
refusal to delete a query parameter still bound to the slider drawn in the last run. AppTest does not bind
widgets to the URL, so this runs the real server and speaks its protocol."""
from __future__ import annotations

from pathlib import Path

from benchmarks.load import Server
from benchmarks.protocol import Session

ROOT = Path(__file__).resolve().parents[2]


def test_a_slider_whose_range_shrinks_to_one_value_under_its_url_value_says_so_and_breaks_nothing():
    server = Server(ROOT / "app.py", ROOT)
    session = Session(server.url, timeout_s=300)
    try:
        session.open("multi_head")
        assert not session.change("H", 2).exceptions
        assert not session.change("head", 2).exceptions
        shrunk = session.change("H", 1)
        assert not shrunk.exceptions, shrunk.exceptions
        assert any("`head=2` is not used" in text for text in shrunk.texts)
        assert not session.change("H", 3).exceptions
    finally:
        session.close()
        server.stop()
