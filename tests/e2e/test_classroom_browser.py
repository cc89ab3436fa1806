"""The app as a lecturer projects it and a student follows it: lecture layout on every page at 1280 × 720 (and
a few at 1920 × 1080), a swipe on a phone, Back and Forward through control states, a tour from the keyboard
and the home page's map. Screenshots land in tests/e2e/screenshots/ (gitignored)."""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from harness.accessibility import axe_violations, blocking
from harness.browser import FRAMES, within
from tests.e2e.conftest import (
    HAVE_CHROMIUM,
    NO_CHROMIUM,
    assert_no_exception,
    go,
    new_tab,
    open_url,
    screenshot,
    settle,
    wait_for_plots,
)
from ui.catalog import BY_SLUG, PAGES

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)]

FIGURE = ("[data-testid='stPlotlyChart'], [data-testid='stDataFrame'], [data-testid='stTable'], "
          "[data-testid='stImage']")
FIRST_SCREEN_SHARE = 0.6  # the first figure starts in the top 60% of the screen, so most of it shows
LAYOUT = """(figure) => {
  const first = document.querySelector(figure);
  const overflowing = Array.from(document.querySelectorAll('.katex-display'))
    .filter(e => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1).map(e => e.textContent.slice(0, 60));
  const cutTitles = Array.from(document.querySelectorAll('.js-plotly-plot'))
    .filter(p => p.querySelector('.gtitle') && p.getBoundingClientRect().width > 0
                 && p.querySelector('.gtitle').getBoundingClientRect().right > p.getBoundingClientRect().right + 1)
    .map(p => p.querySelector('.gtitle').textContent.slice(0, 60));
  return {sidebarCollapsed: document.querySelector("[data-testid='stSidebar']")?.dataset.collapsed === 'true',
          figureTop: first ? first.getBoundingClientRect().top : null, overflowing, cutTitles};
}"""
MAIN_SCROLL = "document.querySelector(\"[data-testid='stMain']\").scrollTop"
# px² of a plot's titles (its own and make_subplots' titles above each plot) under its toolbar; null if no toolbar
TOOLBAR_OVER_TITLES = """(plot) => {
  const bar = plot.querySelector('.modebar');
  if (!bar) return null;
  const a = bar.getBoundingClientRect();
  return Array.from(plot.querySelectorAll('.gtitle, .infolayer .annotation')).map(t => t.getBoundingClientRect())
    .reduce((sum, b) => sum + Math.max(0, Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top))
                              * Math.max(0, Math.min(a.right, b.right) - Math.max(a.left, b.left)), 0);
}"""
# a button whose label is cut to nothing: its text box has no width, or is narrower than its text
CUT_LABELS = """(buttons) => buttons.map(b => b.querySelector("[data-testid='stMarkdownContainer']"))
  .filter(label => label.clientWidth === 0 || label.scrollWidth > label.clientWidth + 1).map(label => label.textContent)"""


def query(tab) -> dict[str, list[str]]:
    return parse_qs(urlparse(tab.url).query)


@pytest.fixture
def tab_at(browser, app_url):
    """A fresh tab of a given size (touch screens included), closed after the test."""
    contexts = []

    def open_tab(width: int, height: int, touch: bool = False):
        tab = new_tab(browser, app_url, viewport={"width": width, "height": height}, has_touch=touch,
                      is_mobile=touch)
        contexts.append(tab.context)
        return tab

    yield open_tab
    for context in contexts:
        context.close()


FONTS_AND_A_FRAME = within(f"() => document.fonts.ready.then({FRAMES})", "the fonts and two frames")


def layout_problems(tab, slug: str, height: int, arrive) -> list[str]:
    """What does not fit the projector's first screen on a page opened by `arrive` (a fresh load, or go), and what
    axe-core finds serious there."""
    arrive(tab, f"/{slug}?lecture=true")
    tab.locator(FIGURE).first.wait_for(timeout=20_000)
    tab.evaluate(FONTS_AND_A_FRAME)  # equations are fitted on the next animation frame once their fonts are in
    assert_no_exception(tab)
    found = tab.evaluate(LAYOUT, FIGURE)
    problems = []
    if not found["sidebarCollapsed"]:
        problems.append("sidebar open")
    if found["figureTop"] is None or found["figureTop"] > FIRST_SCREEN_SHARE * height:
        problems.append(f"first figure at {found['figureTop']} px of {height}")
    problems += [f"equation needs a scrollbar: {text}" for text in found["overflowing"]]
    problems += [f"chart title cut: {text}" for text in found["cutTitles"]]
    return problems + blocking(axe_violations(tab))  # WCAG 2.1 AA in lecture mode too


def lecture_problems(tab, slugs: list[str], height: int, shot: str) -> dict[str, list[str]]:
    """layout_problems of each page, the first loaded and the rest moved to as a lecturer does, in lecture mode;
    each first screen saved as <shot>_<slug>.png."""
    problems = {}
    for i, slug in enumerate(slugs):
        if found := layout_problems(tab, slug, height, open_url if i == 0 else go):
            problems[slug] = found
        screenshot(tab, f"{shot}_{slug}", whole_page=False)
    return problems


def test_lecture_mode_fits_every_page_on_a_1280_by_720_projector(tab_at):
    problems = lecture_problems(tab_at(1280, 720), [info.slug for info in PAGES], 720, "lecture")
    assert not problems, problems


def test_lecture_mode_at_1920_by_1080(tab_at):
    problems = lecture_problems(tab_at(1920, 1080), ["rope", "multi_head", "flash_attention"], 1080, "lecture_1920")
    assert not problems, problems


def test_on_a_phone_a_swipe_over_a_chart_scrolls_the_page_and_the_toolbar_leaves_the_title(tab_at):
    tab = tab_at(390, 844, touch=True)
    open_url(tab, "/kernel_regression")
    wait_for_plots(tab)  # the charts' height settles the page's before the swipe is measured
    chart = tab.locator("[data-testid='stPlotlyChart']").first
    chart.scroll_into_view_if_needed()
    tab.evaluate(FONTS_AND_A_FRAME)
    box = chart.bounding_box()
    x, y = box["x"] + box["width"] / 2, min(box["y"] + box["height"] / 2, 700)
    before = tab.evaluate(MAIN_SCROLL)
    touch = tab.context.new_cdp_session(tab)
    touch.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for step in range(1, 11):
        touch.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x, "y": y - 25 * step}]})
        tab.wait_for_timeout(16)
    touch.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    tab.wait_for_timeout(800)
    assert tab.evaluate(MAIN_SCROLL) - before > 100, "a swipe over the chart did not scroll the page"

    plot = tab.locator(".js-plotly-plot").first
    plot.tap()  # a touch shows plotly's toolbar
    tab.wait_for_timeout(300)
    overlap = plot.evaluate(TOOLBAR_OVER_TITLES)
    assert overlap == 0, f"the toolbar covers {overlap} px² of the title"
    screenshot(tab, "phone_kernel_regression", whole_page=False)


def test_on_a_phone_the_toolbar_leaves_subplot_titles_alone(tab_at):
    tab = tab_at(390, 844, touch=True)
    open_url(tab, "/flash_attention")
    wait_for_plots(tab)
    plot = tab.locator(".js-plotly-plot").filter(has_text="Tiles of S").first  # two plots, a title above each
    plot.scroll_into_view_if_needed()
    plot.tap()
    tab.wait_for_timeout(300)
    overlap = plot.evaluate(TOOLBAR_OVER_TITLES)
    assert overlap == 0, f"the toolbar covers {overlap} px² of the subplot titles"
    screenshot(tab, "phone_flash_attention", whole_page=False)


def move_slider(tab, name: str, key: str) -> None:
    tab.locator(f".st-key-{name} [data-testid='stSlider'] input[type='range']").first.focus()
    tab.keyboard.press(key)
    tab.wait_for_url(re.compile(rf"[?&]{name}="), timeout=15_000)
    settle(tab)


def slider_value(tab, name: str) -> str:
    return tab.locator(f".st-key-{name} [data-testid='stSliderThumbValue']").first.inner_text().strip()


def test_back_and_forward_move_through_control_states(tab_at):
    tab = tab_at(1400, 900)
    open_url(tab, "/scaling")
    start = slider_value(tab, "m")
    move_slider(tab, "m", "ArrowRight")
    first = slider_value(tab, "m")
    tab.keyboard.press("ArrowRight")
    tab.wait_for_url(re.compile(rf"[?&]m={int(first) + 1}\b"), timeout=15_000)
    settle(tab)
    assert query(tab)["m"] == [str(int(first) + 1)]

    tab.go_back()
    settle(tab)
    assert query(tab)["m"] == [first] and slider_value(tab, "m") == first
    tab.go_back()
    settle(tab)
    assert "m" not in query(tab) and slider_value(tab, "m") == start and tab.url.endswith("/scaling")
    tab.go_forward()
    settle(tab)
    assert query(tab)["m"] == [first] and slider_value(tab, "m") == first
    assert_no_exception(tab)


def test_a_tour_is_walked_with_page_down_and_page_up(tab_at):
    tab = tab_at(1280, 720)
    open_url(tab, "/")
    tab.get_by_role("link", name="Positions").first.click()
    tab.wait_for_url(re.compile(r"/permutation\?.*stop=1"))
    settle(tab)
    assert "Tour: Positions · 1 of 4." in tab.locator(".st-key-tour_bar").inner_text()
    assert not blocking(axe_violations(tab))  # the tour's bar passes WCAG 2.1 AA too
    buttons = tab.locator(".st-key-tour_bar button")
    assert buttons.count() == 2 and buttons.evaluate_all(CUT_LABELS) == []  # "Previous", "Next", not only the keys
    # a presenter presses the key once the page has drawn: before that (the script done, plotly still loading)
    # Streamlit has not yet bound the buttons' shortcuts and the browser scrolls instead, 4 times in 6
    wait_for_plots(tab)
    tab.keyboard.press("PageDown")
    tab.wait_for_url(re.compile(r"/sinusoidal\?.*stop=2"))
    settle(tab)
    assert tab.locator("h1").first.inner_text().strip() == BY_SLUG["sinusoidal"].title
    assert "2 of 4." in tab.locator(".st-key-tour_bar").inner_text()
    wait_for_plots(tab)
    tab.keyboard.press("PageUp")
    tab.wait_for_url(re.compile(r"/permutation\?.*stop=1"))
    settle(tab)
    assert_no_exception(tab)


def test_a_box_on_the_home_map_opens_its_page(tab_at):
    tab = tab_at(1400, 900)
    open_url(tab, "/")
    tab.locator("svg a[aria-label='RoPE']").click()
    tab.wait_for_url(re.compile(r"/rope$"))
    settle(tab)
    assert tab.locator("h1").first.inner_text().strip() == "RoPE"
    open_url(tab, "/")
    screenshot(tab, "home")
    assert_no_exception(tab)
    assert not blocking(axe_violations(tab))
