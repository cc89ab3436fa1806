"""What lecturers take away: every figure as PNG and SVG, every table as CSV, downloaded in the real browser."""
from __future__ import annotations

import csv
import io

import pytest

from tests.e2e.conftest import HAVE_CHROMIUM, NO_CHROMIUM, assert_no_exception, open_url, wait_for_plots

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def download(tab, click) -> bytes:
    with tab.expect_download(timeout=30_000) as info:
        click()
    return open(info.value.path(), "rb").read()


def test_a_figure_downloads_as_png_and_svg_and_a_table_as_csv(page):
    # where the browser offers a save dialog (File System Access), Streamlit saves a table through it; headless
    # chromium has no dialog to answer, so the test takes the other path Streamlit has, a plain download
    page.add_init_script("delete window.showSaveFilePicker")
    open_url(page, "/sinusoidal")
    wait_for_plots(page)
    plots = page.locator(".js-plotly-plot")
    assert plots.count() > 1
    for i in range(plots.count()):  # one SVG button beside each camera, however often the page redraws
        assert plots.nth(i).locator(".arc-svg").count() == 1
    plot = plots.first
    title = plot.locator(".gtitle").text_content()
    plot.hover()
    png = download(page, lambda: plot.locator(".modebar-btn[data-title='Download plot as a PNG']").click())
    assert png.startswith(PNG_SIGNATURE)
    plot.hover()
    svg = download(page, lambda: plot.locator(".arc-svg").click()).decode()
    assert svg.lstrip().startswith("<svg") and title in svg

    table = page.locator("[data-testid='stDataFrame']").first
    table.hover()
    # the toolbar fades in over the table and never holds still long enough for a pointer click
    csv_button = page.get_by_role("button", name="Download as CSV").first
    data = download(page, lambda: csv_button.dispatch_event("click"))
    rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    assert rows[0] == ["position", "printed in 002", "computed here (d_model = 4, base 10000)"]
    assert rows[2][1] == "[0.84147, 0.54030, 0.00999983, 0.99995]"
    assert_no_exception(page)
