"""Hostile input in the real browser: on every page a query string drawn by hypothesis (fixed seed, one
example a page) and every markup injection in each text control, by URL and by typing, then a drawn text:
no exception, and nothing typed ever becomes markup or script."""
from __future__ import annotations

import functools
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.app.test_query_params import control_names
from tests.e2e.conftest import HAVE_CHROMIUM, NO_CHROMIUM, assert_no_exception, go, settle
from ui.catalog import PAGES

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)]
INJECTIONS = [
    "<img src=x onerror=window.__pwned=1>", "<script>window.__pwned=1</script>", "<b id=pwned>bold</b>",
    "[link](javascript:window.__pwned=1)", "$\\href{javascript:window.__pwned=1}{x}$", ":red[red] **bold**",
    "‮rtl‬ 🙂 ﷽", "%3Cscript%3E", "",
]
# every markup injection at once: what each text control receives from the URL and by typing, on every page
MARKUP = " ".join(INJECTIONS[:6])
hostile = st.one_of(st.sampled_from(INJECTIONS), st.text(max_size=40),
                    st.sampled_from(["-1e308", "nan", "inf", "999999999999", "-0", "x" * 2000]))
# what an injection would leave in the page: a tag of ours, a javascript: link, the flag a script sets
INJECTED = ("() => window.__pwned !== undefined || document.querySelector('#pwned, img[src=\"x\"]') !== null || "
            "[...document.querySelectorAll('a[href]')]"
            ".some(a => a.href.trim().toLowerCase().startsWith('javascript:'))")


@functools.cache
def text_controls(slug: str) -> tuple[str, ...]:
    from tests.app.conftest import open_page

    at = open_page(slug)
    return tuple(w.key for kind in (at.text_input, at.text_area) for w in kind)


# the id of the tab whose panel holds the element, or null: Streamlit's panels sit in the order of their tabs
TAB_OF = """e => {
  const panel = e.closest('[data-testid=stTabPanel]');
  if (!panel) return null;
  const tabs = panel.closest('[data-testid=stTabs]');
  const own = (sel) => [...tabs.querySelectorAll(sel)].filter(n => n.closest('[data-testid=stTabs]') === tabs);
  return own('[role=tab]')[own('[data-testid=stTabPanel]').indexOf(panel)].id;
}"""


def reveal(page, box) -> None:
    """Opens the tab that holds `box`: a control in a tab not shown is in the page but takes no typing."""
    if not box.is_visible() and (tab := box.evaluate(TAB_OF)):
        page.locator(f"[id='{tab}']").click()
        box.wait_for(state="visible")


@pytest.mark.parametrize("slug", [p.slug for p in PAGES])
@settings(max_examples=1, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_hostile_urls_and_typing_break_nothing(walker, slug, data):
    page = walker  # one tab moves from URL to URL (go): the server runs each as a pasted link
    known = control_names(slug)
    names = st.one_of(st.sampled_from(known), st.text(min_size=1, max_size=8)) if known else st.text(min_size=1,
                                                                                                     max_size=8)
    params = data.draw(st.dictionaries(names, hostile, min_size=2, max_size=4))
    params.pop("lecture", None)
    params |= {key: MARKUP for key in text_controls(slug)}
    go(page, f"/{slug}?{urlencode(params)}")
    assert_no_exception(page)
    assert not page.evaluate(INJECTED)
    for key in text_controls(slug):
        for typed in (MARKUP, data.draw(hostile)):
            box = page.locator(f".st-key-{key} input, .st-key-{key} textarea").first
            if not box.count():
                break  # hidden by another control's value
            reveal(page, box)
            before = box.input_value()
            box.fill(typed)
            if box.input_value() == before:  # the same text (after max_chars): nothing to apply, no run to wait for
                continue
            box.press("Control+Enter" if box.evaluate("e => e.tagName") == "TEXTAREA" else "Enter")
            settle(page)
            assert_no_exception(page)
            assert not page.evaluate(INJECTED), f"{typed!r} in {key} became markup"
