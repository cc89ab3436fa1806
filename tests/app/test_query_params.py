"""Any URL opens a working page that keeps the URL contract: hypothesis writes the query string.

The contract (README, Conventions): every control is bound to the parameter of its name; a value the control
takes is used and stays in the URL; a value it cannot take is named in a notice and the default is used; a name
no control on the page owns is named in a toast and dropped. Whatever the URL, the page is drawn: its title, and
figures unless a warning says why not. A failure prints hypothesis's blob to replay it.
"""
from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from tests.app.conftest import APP, assert_clean, open_page, option_values
from ui.catalog import PAGES

FRAME = {"lecture", "tour", "stop"}  # the frame's parameters, tested in test_classroom_frame
KINDS = ("slider", "selectbox", "toggle", "number_input", "text_input", "text_area")


@functools.cache
def control_names(slug: str) -> tuple[str, ...]:
    at = open_page(slug)
    return tuple(w.key for kind in KINDS for w in getattr(at, kind) if w.key not in FRAME)


values = st.one_of(
    st.text(max_size=30),
    st.text(max_size=3000),  # far past every text control's max_chars
    st.integers(-10**12, 10**12).map(str),
    st.integers(0, 300).map(str),  # inside most sliders' ranges
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["True", "false", "", "Boxcar", "Typed", "Random", "1 2; 3 4", "0 0 1", "%00", "../../"]),
)


def denotes(raw: str, value) -> bool:
    """Whether the URL's string spells the value the control shows."""
    if isinstance(value, bool):
        return raw.lower() == str(value).lower()
    if isinstance(value, int | float):
        try:
            return float(raw) == float(value)
        except ValueError:
            return False
    return raw == str(value)


def check_contract(at, slug: str, params: dict[str, str]) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.title[0].value == next(p.title for p in PAGES if p.slug == slug)
    assert at.get("plotly_chart") or at.warning, "no figure and no warning saying why"
    drawn = {w.key: w for kind in KINDS for w in getattr(at, kind)}
    notices = [i.value for i in at.info]
    toasts = [t.value for t in at.toast]
    for name, raw in params.items():
        named = f"`{name[:40]}`"
        if name not in drawn:  # no such control, or one with nothing to choose here
            assert any(named in t for t in toasts) or any(f"URL parameter `{name}={raw[:40]}`" in n for n in notices), \
                (name, toasts, notices)
            assert name not in at.query_params
            continue
        value = drawn[name].value
        noticed = any(f"URL parameter `{name}={raw[:40]}` is not" in n for n in notices)
        if denotes(raw, value):
            assert not noticed, (name, raw, notices)
        else:
            assert noticed, (name, raw, value, notices)
        assert not any(named in t for t in toasts), (name, toasts)


@pytest.mark.parametrize("slug", [p.slug for p in PAGES])
@settings(max_examples=20, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_query_string_keeps_the_url_contract(slug, data):
    known = control_names(slug)
    names = st.one_of(st.sampled_from(known), st.text(min_size=1, max_size=12)) if known else st.text(min_size=1, max_size=12)
    params = {name: raw for name, raw in data.draw(st.dictionaries(names, values, max_size=6)).items()
              if name not in FRAME}
    check_contract(open_page(slug, **params), slug, params)


@pytest.mark.parametrize("slug", [p.slug for p in PAGES])
def test_good_values_round_trip(slug):
    """Each control's values from a fresh page, written into a URL, reopen the page with the same values."""
    at = open_page(slug)
    shown = {w.key: w for kind in KINDS for w in getattr(at, kind) if w.key not in FRAME}
    for name, control in shown.items():
        if hasattr(control, "max") and control.max is not None and not isinstance(control.value, tuple):
            value = control.max
        elif hasattr(control, "options"):
            value = option_values(at, name)[-1]
        elif isinstance(control.value, bool):
            value = not control.value
        else:
            continue  # typed text is round-tripped by the hostile-input browser test
        reopened = open_page(slug, **{name: str(value)})
        assert_clean(reopened)
        again = next(w for kind in KINDS for w in getattr(reopened, kind) if w.key == name)
        assert denotes(str(value), again.value), (name, value, again.value)
        assert not any(f"URL parameter `{name}=" in i.value for i in reopened.info)


def controls(at) -> dict:
    return {w.key: w.value for kind in KINDS for w in getattr(at, kind) if w.key not in FRAME}


@pytest.mark.parametrize("before, after, typed", [
    ("word2vec_training", "hierarchical_softmax", None),  # both have `word`, with different defaults
    ("one_hot", "skipgram_pairs", "the dog sat on the rug"),  # both have `text`; the first one typed
])
def test_a_page_opened_from_another_starts_at_its_own_defaults(before, after, typed):
    """Streamlit gives a keyed widget the value its key held on the page before; from the sidebar a page
    showed the last page's `word` ('music' is not among hierarchical softmax's words)."""
    at = open_page(before)
    if typed is not None:
        at.text_input(key="text").set_value(typed).run()
    at.switch_page(f"views/{after}.py").run()
    assert_clean(at)
    assert controls(at) == controls(open_page(after))
    assert not at.query_params


@pytest.mark.parametrize("raw, noticed", [("1", True), ("yes", True), ("true", False), ("TRUE", False),
                                          ("false", False)])
def test_a_lecture_value_that_is_not_true_or_false_is_named_on_the_page(raw, noticed):
    """The frame's lecture switch keeps the URL contract every page's controls keep: Streamlit drops a value it
    cannot read as true or false without a word, and the page says so (the first run: a link opened)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lecture"] = raw
    at.run()
    assert_clean(at)
    said = [i.value for i in at.info if "URL parameter `lecture=" in i.value]
    assert said == ([f"URL parameter `lecture={raw}` is not true or false; using false."] if noticed else [])
