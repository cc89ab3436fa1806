"""Every page on the narrowest phone and for a keyboard user, and with reduced motion (issue 30), in chromium.

axe-core's WCAG 2.0/2.1 A and AA rules also run on every page at its defaults in the desktop walk
(test_browser.py), in lecture mode (test_classroom_browser.py) and with a tour's bar shown; here they run at
320 CSS px, where WCAG's reflow asks that text need no sideways scroll. The checks live in
benchmarks/accessibility.py, which counts every finding, serious or not, into benchmarks/results/.
"""
from __future__ import annotations

import pytest

from harness.accessibility import (
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
from ui.catalog import BY_SLUG, PAGES

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
# Tab goes on from where focus last was: start it at the top of the page, as a fresh visit does; then note each
# element that takes focus: its number, and whether an outline of 2 px or more shows it. An element a widget's
# own script focuses on the way (a table's scroller, tabindex -1) has no number: Tab alone does not stop there.
FROM_THE_TOP = """() => {
  window.__focused = [];
  if (!window.__noting) {
    window.__noting = true;
    document.addEventListener('focusin', event => {
      const e = event.target;
      if (e.dataset?.kb === undefined) return;
      const style = getComputedStyle(e);
      window.__focused.push([+e.dataset.kb, style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2]);
    }, true);
  }
  const start = document.createElement('span');
  start.tabIndex = -1;
  document.body.prepend(start);
  start.focus();
  start.addEventListener('blur', () => start.remove(), { once: true });
}"""
PRESSES_BETWEEN_LOOKS = 20


def tab_through(tab) -> tuple[list[str], list[int], list[str]]:
    """Press Tab from the top of the page until every control has had focus and focus comes round again (a
    trap never comes round: its controls are then missing). The controls, the order they were reached in, and
    those whose focus was not outlined."""
    controls = tab.evaluate(CONTROLS)
    tab.evaluate(FROM_THE_TOP)
    focused: list[list] = []
    for _ in range(0, 2 * len(controls) + 20, PRESSES_BETWEEN_LOOKS):
        for _ in range(PRESSES_BETWEEN_LOOKS):
            tab.keyboard.press("Tab")
        focused = tab.evaluate("() => window.__focused")
        numbers = [number for number, _ in focused]
        if len(set(numbers)) == len(controls) and numbers.count(numbers[0]) > 1:  # all, and round again
            break
    order, unmarked = [], []
    for number, outlined in focused:
        if number in order and len(set(order)) == len(controls):
            break
        if not outlined:
            unmarked.append(controls[number])
        order.append(number)
    return controls, order, unmarked


def assert_tab_reaches_everything(tab, where: str) -> None:
    controls, order, unmarked = tab_through(tab)
    missing = [controls[i] for i in range(len(controls)) if i not in order]
    assert not missing, f"{where}: Tab never reached {missing}"
    backwards = [controls[b] for a, b in zip(order, order[1:]) if b < a]
    assert not backwards, f"{where}: Tab went back up the page to {backwards}"
    assert not unmarked, f"{where}: focus not outlined on {unmarked}"


@pytest.fixture(scope="module")
def phone(browser, app_url):
    tab = new_tab(browser, app_url, viewport={"width": 320, "height": 720}, has_touch=True, is_mobile=True)
    yield tab
    tab.context.close()


@pytest.mark.parametrize("slug", SLUGS, ids=[s or "home" for s in SLUGS])
def test_at_320_px_a_page_passes_axe_reflows_and_tab_reaches_every_control(phone, slug):
    """One load per page for all of it. At 320 CSS px (a phone, or 1280 px at 400% zoom) text reflows with no
    sideways scroll (WCAG 1.4.10; charts may scroll), axe finds nothing serious, every control and chart is
    named, and Tab from the top reaches every control in reading order, outlined, and comes round again (2.1.1,
    2.1.2, 2.4.3, 2.4.7). The sidebar is folded away at this width: the next test tabs through it."""
    (go if phone.url.startswith("http") else open_url)(phone, f"/{slug}")
    if slug in BY_SLUG:  # a built page draws charts
        wait_for_plots(phone)
    assert_no_exception(phone)
    problems = (blocking(axe_violations(phone)) + text_past_the_edge(phone) + unnamed_figures(phone)
                + unnamed_controls(phone))
    assert not problems, f"/{slug}: {problems}"
    assert_tab_reaches_everything(phone, f"/{slug}")
    if slug == "multi_head":
        screenshot(phone, "phone_320_multi_head")


def test_tab_reaches_the_sidebar_and_the_home_page_in_order(browser, app_url):
    tab = new_tab(browser, app_url)
    try:
        open_url(tab, "/")
        assert tab.locator("[data-testid='stSidebarNavLink']").count() == len(PAGES) + 3
        assert_tab_reaches_everything(tab, "/ at 1400 px")
    finally:
        tab.context.close()


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
