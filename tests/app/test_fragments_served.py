"""A page's independent group of controls is an st.fragment (issue 47): a change inside it reruns and re-sends that
group alone, and still writes the URL. AppTest reruns no fragment alone, so these run the real server and speak
its protocol, as the browser does."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from benchmarks.protocol import Session
from serve.process import Server

ROOT = Path(__file__).resolve().parents[2]

# page, a control of its fragment and a new value for it, every control the fragment draws
FRAGMENTS = [
    ("attention_variants", "layer", 5, {"prompt", "layer", "kv"}),
    ("attention_timing", "gpass", "forward+backward", {"gpass", "gdtype"}),
    ("multi_head", "head", 3, {"head"}),
    ("glove_counts", "alpha", 0.5, {"x_max", "alpha"}),
    ("analogies", "more", "prince, castle", {"more"}),
    ("analogies", "near", "war", {"near"}),
]


@pytest.fixture(scope="module")
def served():
    server = Server(ROOT / "app.py", ROOT)
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize(("page", "key", "value", "drawn"), FRAGMENTS, ids=[f"{p}-{k}" for p, k, *_ in FRAGMENTS])
def test_a_control_of_an_independent_group_reruns_that_group_alone_and_writes_the_url(served, page, key, value,
                                                                                       drawn):
    tab = Session(served.url, timeout_s=300)
    try:
        whole = tab.open(page)
        assert not whole.exceptions, whole.exceptions
        assert tab.widgets[key].fragment_id, f"{page}'s {key} is not in a fragment"
        outside = [k for k, w in tab.widgets.items() if w.kind == "slider" and w.key and not w.fragment_id]
        assert outside, "the page has sliders outside the fragment"
        changed = tab.change(key, value)
        assert changed.status == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY", changed.status
        assert not changed.exceptions, changed.exceptions
        assert {k for k in changed.widgets if tab.widgets[k].key} == drawn  # nothing outside it was drawn again
        assert tab.query[key] == str(value)  # the URL follows, so the view is still a shareable link
        # a control outside the fragment reruns the whole page, the fragment with it, keeping the value set there
        slider = tab.widgets[outside[0]].proto
        up = slider.default[0] + slider.step
        again = tab.change(outside[0], up if up <= slider.max else slider.default[0] - slider.step)
        assert again.status == "FINISHED_SUCCESSFULLY" and not again.exceptions, again.exceptions
        assert key in again.widgets and tab.query.get(key) == str(value)
    finally:
        tab.close()



def test_a_fragments_control_in_a_session_that_never_drew_it_reruns_the_whole_page(served):
    """A browser reconnecting to a restarted server, or sent to the other replica, keeps its page and sends its next
    change as its fragment's rerun, by an id the new session never registered: the whole page runs, with the change
    (ui/server.py). Streamlit dropped the request, and the browser waited for a run that never came."""
    first, second = Session(served.url, timeout_s=300), Session(served.url, timeout_s=300)
    try:
        shown = first.open("kernel_regression", {"h": "1.5"})
        assert not shown.exceptions and first.widgets["h"].fragment_id
        second.connect()  # a new session, which has drawn nothing
        second.widgets, second.query, second.page_hash = first.widgets, dict(first.query), first.page_hash
        runs: list = []  # the server's pings keep a read from timing out: the run gets a deadline of its own
        changing = threading.Thread(target=lambda: runs.append(second.change("h", 1.55)), daemon=True)
        changing.start()
        changing.join(60)
        assert runs, "no run came back within 60 s: the server dropped the change"
        changed = runs[0]
        assert changed.status == "FINISHED_SUCCESSFULLY" and not changed.exceptions, changed.status
        assert second.query["h"] == "1.55" and {"kernel", "n", "noise", "seed"} <= set(changed.widgets)
        # the page is now this session's: its fragment's next change reruns the fragment
        assert second.change("h", 1.6).status == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY"
    finally:
        first.close()
        second.close()
