"""Every page through the sidebar, a control moved, shared links, lecture mode and bad input, in chromium."""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, settle
from ui.catalog import PAGES


def open_url(tab, path: str) -> None:
    tab.goto(path)
    settle(tab)


@pytest.mark.parametrize("info", PAGES, ids=[p.slug for p in PAGES])
def test_every_page_through_the_navigation(page, info):
    open_url(page, "/")
    page.locator(f"[data-testid='stSidebarNavLink'][href$='/{info.slug}']").click()
    settle(page)
    assert page.locator("h1").first.inner_text().strip() == info.title
    page.locator("[data-testid='stPlotlyChart']").first.wait_for(timeout=20_000)  # plotly mounts lazily
    assert_no_exception(page)
    # the first slider one step to the right, by keyboard as a person would
    page.locator("[data-testid='stSlider'] input[type='range']").first.focus()
    page.keyboard.press("ArrowRight")
    settle(page)
    assert_no_exception(page)
    assert parse_qs(urlparse(page.url).query), f"moving a control left no trace in {page.url}"
    screenshot(page, info.slug)


def test_a_shared_link_reopens_the_view(page):
    open_url(page, "/kernel_regression?kernel=Boxcar&h=1.5&seed=7")
    assert page.get_by_role("combobox", name="Kernel").input_value() == "Boxcar"
    thumbs = [t.inner_text() for t in page.locator("[data-testid='stSliderThumbValue']").all()]
    assert "1.50" in thumbs and "7" in thumbs
    assert_no_exception(page)


def test_a_bad_link_is_named_and_the_page_still_works(page):
    open_url(page, "/kernel_regression?h=banana&zz=1")
    assert "h=banana" in page.locator("[data-testid='stAlert']").first.inner_text()
    page.locator("[data-testid='stPlotlyChart']").first.wait_for(timeout=20_000)
    assert "zz" not in page.url
    assert_no_exception(page)
    screenshot(page, "bad_link")


def test_lecture_mode_enlarges_text_and_stays_in_the_url(page):
    open_url(page, "/scoring_functions")
    before = page.evaluate("parseFloat(getComputedStyle(document.documentElement).fontSize)")
    page.locator("[data-testid='stSidebar']").get_by_text("Lecture mode").click()
    settle(page)
    after = page.evaluate("parseFloat(getComputedStyle(document.documentElement).fontSize)")
    assert re.search(r"lecture=true", page.url, re.IGNORECASE)
    assert after >= 20 > before
    screenshot(page, "lecture")


def test_typed_matrix_of_the_wrong_width_gets_a_message(page):
    open_url(page, "/scoring_functions?inputs=Typed")
    box = page.get_by_label("Q (one query per row)")
    box.fill("1 2 3")
    box.press("Control+Enter")
    settle(page)
    assert "same width" in page.locator("[data-testid='stAlert']").first.inner_text()
    assert_no_exception(page)
    screenshot(page, "bad_matrix")
