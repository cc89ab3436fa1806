"""Every page for a keyboard user, on the narrowest phone and with reduced motion (issue 30), in chromium.

axe-core's WCAG 2.0/2.1 A and AA rules also run on every page at its defaults in the desktop walk
(test_browser.py), in lecture mode (test_classroom_browser.py) and with a tour's bar shown; here they run at
320 CSS px, where WCAG's reflow asks that text need no sideways scroll. The checks live in
benchmarks/accessibility.py, which counts every finding, serious or not, into benchmarks/results/.
"""
from __future__ import annotations

import pytest

from benchmarks.accessibility import (
    axe_violations,
    blocking,
    text_past_the_edge,
    unnamed_controls,
    unnamed_figures,
)
from tests.e2e.conftest import (
    HAVE_CHROMIUM,
    NO_CHROMIUM,
    assert_no_exception,
    go,
    new_tab,
    open_url,
    screenshot,
    wait_for_plots,
)
from ui.catalog import PAGES

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)]

SLUGS = ["", "sources", "accessibility"] + [info.slug for info in PAGES]
# every control a keyboard can reach, in the page's order, each numbered in data-kb; hidden and inert ones aside
CONTROLS = """() => {
  const all = Array.from(document.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex]'))
    .filter(e => e.tabIndex >= 0 && !e.disabled && e.getClientRects().length
                 && !e.closest('[inert], [aria-hidden=true]') && getComputedStyle(e).visibility !== 'hidden');
  all.forEach((e, i) => e.dataset.kb = i);
  return all.map(e => `${e.tagName} ${(e.getAttribute('aria-label') || e.innerText || '').trim().slice(0, 40)}`);
}"""
# what has focus: its number, and whether an outline of 2 px or more shows it; nothing for an element a widget's
# own script focused on the way (a table's scroller, tabindex -1), which Tab alone does not stop at
FOCUSED = """() => {
  const e = document.activeElement;
  if (!e || e.dataset.kb === undefined) return null;
  const style = getComputedStyle(e);
  return [+e.dataset.kb, style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2];
}"""


# Tab goes on from where focus last was: start it at the top of the page, as a fresh visit does
FROM_THE_TOP = """() => {
  const start = document.createElement('span');
  start.tabIndex = -1;
  document.body.prepend(start);
  start.focus();
  start.addEventListener('blur', () => start.remove(), { once: true });
}"""


def tab_through(tab) -> tuple[list[str], list[int], list[str]]:
    """Press Tab from the top of the page until every control has had focus and focus comes round again (a
    trap never comes round: its controls are then missing). The controls, the order they were reached in, and
    those whose focus was not outlined."""
    controls = tab.evaluate(CONTROLS)
    tab.evaluate(FROM_THE_TOP)
    order, unmarked = [], []
    for _ in range(2 * len(controls) + 20):
        tab.keyboard.press("Tab")
        focused = tab.evaluate(FOCUSED)
        if focused is None:
            continue
        number, outlined = focused
        if number in order and len(set(order)) == len(controls):
            break
        if not outlined:
            unmarked.append(controls[number])
        order.append(number)
    return controls, order, unmarked


@pytest.fixture(scope="module")
def keyboard_tab(browser, app_url):
    tab = new_tab(browser, app_url)
    yield tab
    tab.context.close()


@pytest.mark.parametrize("slug", SLUGS, ids=[s or "home" for s in SLUGS])
def test_tab_reaches_every_control_in_reading_order_and_shows_where_it_is(keyboard_tab, slug):
    tab = keyboard_tab
    (go if tab.url.startswith("http") else open_url)(tab, f"/{slug}")
    if slug in {info.slug for info in PAGES}:
        wait_for_plots(tab)
    assert_no_exception(tab)
    controls, order, unmarked = tab_through(tab)
    missing = [controls[i] for i in range(len(controls)) if i not in order]
    assert not missing, f"/{slug}: Tab never reached {missing}"
    backwards = [controls[b] for a, b in zip(order, order[1:]) if b < a]
    assert not backwards, f"/{slug}: Tab went back up the page to {backwards}"
    assert not unmarked, f"/{slug}: focus not outlined on {unmarked}"


def test_every_page_at_320_px_passes_axe_and_needs_no_sideways_scroll(browser, app_url):
    """WCAG 1.4.10: at 320 CSS px (a phone, or 1280 px at 400% zoom) text reflows; charts may scroll."""
    tab = new_tab(browser, app_url, viewport={"width": 320, "height": 720}, has_touch=True, is_mobile=True)
    problems = {}
    try:
        for i, slug in enumerate(SLUGS):
            (open_url if i == 0 else go)(tab, f"/{slug}")
            if slug in {info.slug for info in PAGES}:
                wait_for_plots(tab)
            assert_no_exception(tab)
            found = (blocking(axe_violations(tab)) + text_past_the_edge(tab) + unnamed_figures(tab)
                     + unnamed_controls(tab))
            if found:
                problems[slug or "home"] = found
        screenshot(tab, "phone_320_rope")
    finally:
        tab.context.close()
    assert not problems, problems


def test_at_200_percent_zoom_text_reflows(browser, app_url):
    """A 1280 x 720 screen at 200% zoom is 640 x 360 CSS px."""
    tab = new_tab(browser, app_url, viewport={"width": 640, "height": 360})
    try:
        problems = {}
        for i, slug in enumerate(["rope", "word2vec_training", "flash_attention", "smollm"]):
            (open_url if i == 0 else go)(tab, f"/{slug}")
            wait_for_plots(tab)
            if found := text_past_the_edge(tab):
                problems[slug] = found
        assert not problems, problems
    finally:
        tab.context.close()


def step_label(tab) -> str:
    return tab.locator(".slider-container").first.get_attribute("aria-valuetext")


def test_play_pause_and_the_figure_slider_work_from_the_keyboard_and_reduced_motion_hides_play(browser, app_url):
    tab = new_tab(browser, app_url)
    try:
        open_url(tab, "/online_softmax")
        wait_for_plots(tab)
        slider = tab.locator(".slider-container").first
        slider.focus()
        start = step_label(tab)
        tab.keyboard.press("Home")
        tab.wait_for_function("() => document.querySelector('.slider-container').getAttribute('aria-valuenow') === '1'")
        tab.keyboard.press("ArrowRight")
        tab.wait_for_function("() => document.querySelector('.slider-container').getAttribute('aria-valuenow') === '2'")
        assert step_label(tab).endswith("2") and step_label(tab) != start
        assert tab.locator(".slider-container .slider-label").first.text_content() == step_label(tab)  # drawn too

        play = tab.get_by_role("button", name="Play")
        play.focus()
        tab.keyboard.press("Enter")
        tab.wait_for_function("() => +document.querySelector('.slider-container').getAttribute('aria-valuenow') > 2",
                              timeout=10_000)  # it plays on by itself
        tab.get_by_role("button", name="Pause").focus()
        tab.keyboard.press(" ")
        tab.wait_for_timeout(300)
        paused = step_label(tab)
        tab.wait_for_timeout(1500)  # longer than two frames
        assert step_label(tab) == paused

        tab.emulate_media(reduced_motion="reduce")
        assert not play.is_visible(), "Play shows under prefers-reduced-motion"
        assert slider.is_visible()
        # Streamlit's own transitions (its links, expanders, spinners) cut to nothing
        duration = tab.evaluate("() => getComputedStyle(document.querySelector('[data-testid=stSidebarNavLink]'))"
                                ".transitionDuration")
        assert max(float(part.rstrip("s")) for part in duration.split(",")) < 0.001, duration
        assert_no_exception(tab)
    finally:
        tab.context.close()
