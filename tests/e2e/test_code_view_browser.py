"""The Code view in chromium, as a student uses it: open it under a page, read the code of the settings on
screen, copy it, move a control and see the code follow, download the notebook; keyboard and axe-core too."""
from __future__ import annotations

import nbformat
import pytest

from harness.accessibility import axe_violations, blocking
from tests.e2e.conftest import (
    HAVE_CHROMIUM,
    NO_CHROMIUM,
    assert_clean,
    download,
    new_tab,
    open_url,
    screenshot,
    settle,
)

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)]

LABEL = "Code: this view in Python, and as a notebook"


def open_code_view(tab):
    summary = tab.locator("[data-testid='stExpander'] summary").filter(has_text=LABEL)
    summary.scroll_into_view_if_needed()
    summary.focus()
    tab.keyboard.press("Enter")  # by keyboard, as everything on the page
    settle(tab)
    block = tab.locator("[data-testid='stCode']")
    block.first.wait_for(timeout=20_000)
    return block.first


def test_the_code_view_follows_the_page_and_downloads_a_notebook(page):
    open_url(page, "/one_hot?text=the+dog+sat+on+the+rug")
    block = open_code_view(page)
    assert_clean(page)
    assert "text = 'the dog sat on the rug'  # Sentence" in block.inner_text()
    assert "vocab, rows = one_hot(words)" in block.inner_text()
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    block.hover()  # the copy button shows on hover
    block.get_by_role("button", name="Copy to clipboard").click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("# One-hot vectors") and "text = 'the dog sat on the rug'" in copied
    assert not blocking(axe_violations(page))
    screenshot(page, "code_view")

    box = page.locator(".st-key-text input")
    box.fill("a cat and a dog")
    box.press("Enter")
    settle(page)
    assert "text = 'a cat and a dog'  # Sentence" in page.locator("[data-testid='stCode']").first.inner_text()

    button = page.locator("[data-testid='stDownloadButton'] button").filter(has_text="notebook")
    book = nbformat.reads(download(page, button.click).decode(), as_version=4)
    nbformat.validate(book)
    assert book.cells[0].source.startswith("# One-hot vectors")
    assert any("text = 'a cat and a dog'" in cell.source for cell in book.cells if cell.cell_type == "code")
    assert_clean(page)


@pytest.mark.parametrize("where, size, touch", [("lecture", (1280, 720), False), ("phone", (390, 844), True)])
def test_the_code_view_fits_a_projector_and_a_phone(browser, app_url, where, size, touch):
    """Lecture mode at 1280 × 720 and a phone: long lines scroll inside the code block, never the page."""
    tab = new_tab(browser, app_url, viewport={"width": size[0], "height": size[1]}, has_touch=touch, is_mobile=touch)
    try:
        open_url(tab, "/smollm?view=Attention" + ("&lecture=true" if where == "lecture" else ""))
        block = open_code_view(tab)
        assert "lm = load()" in block.inner_text()
        assert_clean(tab)
        overflow = tab.evaluate("() => document.querySelector(\"[data-testid='stMain']\").scrollWidth"
                                " - document.querySelector(\"[data-testid='stMain']\").clientWidth")
        assert overflow <= 1, f"the page scrolls sideways by {overflow} px"
        block.scroll_into_view_if_needed()
        screenshot(tab, f"code_view_{where}", whole_page=False)
    finally:
        tab.context.close()
