"""Any URL opens a working page: hypothesis writes the query string."""
from __future__ import annotations

import functools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.app.conftest import assert_clean, open_page
from ui.catalog import PAGES


@functools.cache
def control_names(slug: str) -> tuple[str, ...]:
    at = open_page(slug)
    return tuple(w.key for kind in (at.slider, at.selectbox, at.toggle, at.text_input, at.text_area) for w in kind)


values = st.one_of(
    st.text(max_size=30),
    st.text(max_size=3000),  # far past every text control's max_chars
    st.integers(-10**12, 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(["True", "false", "", "Boxcar", "Typed", "Random", "1 2; 3 4", "0 0 1", "%00", "../../"]),
)


@pytest.mark.parametrize("slug", [p.slug for p in PAGES])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_query_string_opens_a_working_page(slug, data):
    known = control_names(slug)
    names = st.one_of(st.sampled_from(known), st.text(min_size=1, max_size=12)) if known else st.text(min_size=1, max_size=12)
    params = data.draw(st.dictionaries(names, values, max_size=6))
    params.pop("lecture", None)  # the frame's toggle; tested on its own
    at = open_page(slug, **params)
    assert_clean(at)
    assert at.title[0].value == next(p.title for p in PAGES if p.slug == slug)
