"""Every page through the sidebar with a control moved, shared links, lecture mode, bad input, and what lecturers
take away (every figure as PNG, SVG and its data as CSV, every table as CSV), in chromium.

Starts the real app with `streamlit run` (see conftest.py). Full-page screenshots land in
tests/e2e/screenshots/ (gitignored) for a person to look at.
"""
from __future__ import annotations

import csv
import io
import math
import re
from urllib.parse import parse_qs, urlparse

import pytest

from harness.accessibility import (
    axe_violations,
    blocking,
    low_contrast_chart_text,
    unnamed_controls,
    unnamed_figures,
)
from harness.browser import within
from tests.e2e.conftest import (
    HAVE_CHROMIUM,
    NO_CHROMIUM,
    PNG_SIGNATURE,
    assert_clean,
    assert_no_exception,
    download,
    open_url,
    screenshot,
    settle,
    wait_for_plots,
)
from ui.catalog import PAGES

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)]

FONT_SIZE = "parseFloat(getComputedStyle(document.documentElement).fontSize)"
# what to type where the catalogued main control is a text box: a valid input other than the default
TYPED = {"one_hot": "the dog sat on the rug", "hierarchical_softmax": "government",
         "pointer_generator": "call maria on the 9th of june 2024", "cross_attention": "july 14, 1999",
         "pointer_sentinel": "the river flows past the old mill and the river floods in spring", "projector": "city",
         "glove_counts": "his", "glove_training": "music",
         "fasttext": "teacherz", "smollm": "Name a large animal."}
EXPECTED_WARNINGS = {"pointer_network": ("the network made a mistake",)}  # the model's own error, said honestly


def query(tab) -> dict[str, list[str]]:
    return parse_qs(urlparse(tab.url).query)


def nav_link(tab, slug: str):
    """The sidebar link to a page; Streamlit folds long navigations behind a 'View more' button."""
    link = tab.locator(f"[data-testid='stSidebarNav'] a[data-testid='stSidebarNavLink'][href$='/{slug}']")
    if link.count() == 0:
        more = tab.locator("[data-testid='stSidebarNavViewButton']")
        if more.count():
            more.first.click()
    return link


def move(tab, slug: str, name: str) -> None:
    """Use the page's main control as a person does: type into a text box, pick another option of a select,
    or take one keyboard step on a slider (clicking the thumb does nothing)."""
    control = tab.locator(f".st-key-{name}")
    assert control.count(), f"{slug}: the catalog's main control `{name}` is not on the page"
    box = control.locator("input[type='text']:not([role='combobox']), textarea")
    select = control.locator("[data-testid='stSelectbox']")
    if box.count():
        box.first.fill(TYPED[slug])
        box.first.press("Control+Enter" if box.first.evaluate("e => e.tagName") == "TEXTAREA" else "Enter")
    elif select.count():
        select.first.click()
        tab.locator("[role='option']:not([aria-selected='true'])").last.click()
    else:
        slider = control.locator("[data-testid='stSlider'] input[type='range']")
        assert slider.count(), f"{slug}: `{name}` is neither a text box, a select nor a slider"
        slider.first.focus()
        tab.keyboard.press("ArrowRight")


@pytest.mark.parametrize("info", PAGES, ids=[p.slug for p in PAGES])
def test_every_page_opens_from_the_sidebar_and_its_main_control_writes_the_url(walker, info):
    """The pages one after another in one tab, as a student clicks through the sidebar."""
    page = walker
    nav_link(page, info.slug).click()
    page.wait_for_url(re.compile(rf"/{re.escape(info.slug)}(\?.*)?$"))
    settle(page)
    assert page.locator("h1").first.inner_text().strip() == info.title
    wait_for_plots(page)  # at its defaults every page draws
    assert_clean(page)
    assert not query(page), f"a fresh page should start with a clean URL, got {page.url}"
    # WCAG 2.1 AA as axe-core checks it, and what it cannot see: each control and chart named, chart text legible
    assert not blocking(axe_violations(page))
    assert not unnamed_controls(page)
    assert not unnamed_figures(page)
    assert not low_contrast_chart_text(page)

    move(page, info.slug, info.main_control)
    page.wait_for_url(re.compile(rf"[?&]{info.main_control}="), timeout=15_000)
    settle(page)
    assert page.locator("h1").first.inner_text().strip() == info.title
    wait_for_plots(page)
    assert_clean(page, EXPECTED_WARNINGS.get(info.slug, ()))
    screenshot(page, info.slug)


def test_a_promise_evaluated_within_a_limit_fails_when_it_never_settles(walker):
    """The harness's waits on the tab's own promises (two frames, axe-core's run) end in a failure that names them
    instead of holding the test for good."""
    from playwright.sync_api import Error as PlaywrightError

    assert walker.evaluate(within("x => Promise.resolve(x + 1)", "adding one", 0.5), 41) == 42
    with pytest.raises(PlaywrightError, match="a promise that never settles did not finish within 0.5 s"):
        walker.evaluate(within("() => new Promise(() => {})", "a promise that never settles", 0.5))
    with pytest.raises(PlaywrightError, match="its own error"):  # the promise's own failure passes through
        walker.evaluate(within("() => Promise.reject(new Error('its own error'))", "a failing promise", 0.5))


def test_a_shared_link_reopens_the_view(page):
    open_url(page, "/kernel_regression?kernel=Boxcar&h=1.5")
    kernel = page.locator(".st-key-kernel")
    assert "Boxcar" in kernel.inner_text() or kernel.locator("input").first.input_value() == "Boxcar"
    assert page.locator(".st-key-h [data-testid='stSliderThumbValue']").inner_text().strip() == "1.50"
    assert {"kernel": ["Boxcar"], "h": ["1.5"]}.items() <= query(page).items(), page.url
    wait_for_plots(page)
    assert_no_exception(page)


def test_a_bad_link_is_named_and_the_page_still_works(page):
    open_url(page, "/kernel_regression?h=banana&zz=1")
    assert_no_exception(page)
    notice = page.locator("[data-testid='stAlert']").filter(has_text="h=banana")
    assert notice.count() == 1 and notice.first.is_visible(), "no notice names the bad value h=banana"
    wait_for_plots(page)
    assert page.locator("[data-testid='stPlotlyChart']").count() >= 1
    assert "zz" not in query(page), f"the unknown parameter stayed in {page.url}"
    assert page.locator(".st-key-h [data-testid='stSliderThumbValue']").inner_text().strip() == "0.50"
    screenshot(page, "bad_link")


def test_a_tab_runs_when_opened_and_the_url_keeps_it(page):
    """A page in tabs runs its open tab alone (ui.page.Page.tabs): opening another runs it and writes the URL."""
    open_url(page, "/rope?offset=7")  # a link to a control of a hidden tab opens that tab
    wait_for_plots(page)
    assert page.get_by_role("tab", name="Relative property").get_attribute("aria-selected") == "true"
    assert page.locator("[data-testid='stPlotlyChart']").count() == 2  # not the other tabs' nine
    page.get_by_role("tab", name="Precision").click()
    page.wait_for_url(re.compile(r"[?&]tab=Precision"))
    settle(page)
    assert page.get_by_text("float32 angles are accurate here").is_visible()
    assert page.locator("[data-testid='stPlotlyChart']").count() == 0
    page.get_by_role("tab", name="Relative property").click()  # the hidden tab's control kept its value
    page.wait_for_url(re.compile(r"[?&]offset=7"))
    settle(page)
    assert page.locator(".st-key-offset [data-testid='stSliderThumbValue']").inner_text().strip() == "7"
    assert_no_exception(page)


def test_a_views_own_slider_reruns_that_view_and_writes_the_url(page):
    """SmolLM2's Attention view is a fragment: its layer slider reruns it alone, and the URL follows."""
    open_url(page, "/smollm?view=Attention")
    wait_for_plots(page)
    page.locator(".st-key-layer input[type='range']").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_url(re.compile(r"[?&]layer=2"))
    settle(page)
    wait_for_plots(page)
    assert page.locator(".gtitle").filter(has_text=re.compile(r"^Layer 2, query head 1")).count() == 1
    assert {"view": ["Attention"], "layer": ["2"]}.items() <= query(page).items(), page.url
    assert_no_exception(page)


def test_coverage_steps_through_its_decoder_steps_in_the_figure(page):
    """The step bars hold every decoder step as a frame: the figure's own slider steps, title and all, with no run."""
    open_url(page, "/coverage")
    wait_for_plots(page)
    plot = page.locator(".js-plotly-plot").filter(has=page.locator(".slider-container")).first
    assert plot.locator(".gtitle").text_content().startswith("Step 3: coverage before it")
    plot.locator(".slider-container").focus()
    page.keyboard.press("ArrowRight")
    page.wait_for_function("(plot) => plot.querySelector('.gtitle').textContent.startsWith('Step 4:')",
                           arg=plot.element_handle())
    assert plot.locator(".slider-container").get_attribute("aria-valuetext") == "step t = 4"
    assert "step" not in query(page)  # the page's own control, and with it the server, were not involved
    assert_no_exception(page)


# the node markers plotly drew in a tree (figures.tree: edges, edges, then the nodes' trace)
TREE_NODES = "(plot) => plot.querySelectorAll('.scatterlayer .trace')[2].querySelectorAll('path.point').length"


def test_the_search_tree_steps_back_through_the_search_in_the_figure(page):
    """The decoding lab's tree holds every step of the search as a frame: a step back hides the deepest prefixes."""
    open_url(page, "/decoding_lab")
    wait_for_plots(page)
    plot = page.locator(".js-plotly-plot").filter(has=page.locator(".gtitle", has_text="beam search:")).first
    slider = plot.locator(".slider-container")
    assert slider.get_attribute("aria-valuetext") == "step 12"  # it opens at the whole tree
    whole = plot.evaluate(TREE_NODES)
    slider.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("(plot) => plot.querySelector('.slider-container').getAttribute('aria-valuetext') "
                           "=== 'step 11'", arg=plot.element_handle())
    page.wait_for_function(f"(plot) => ({TREE_NODES})(plot) < {whole}", arg=plot.element_handle())
    assert 0 < plot.evaluate(TREE_NODES) < whole
    assert_no_exception(page)


def test_lecture_mode_enlarges_text_and_stays_in_the_url(page):
    open_url(page, "/scoring_functions")
    before = page.evaluate(FONT_SIZE)
    page.locator("[data-testid='stSidebar']").get_by_text("Lecture mode", exact=True).click()
    page.wait_for_url(re.compile(r"lecture=true", re.IGNORECASE), timeout=15_000)
    settle(page)
    after = page.evaluate(FONT_SIZE)
    assert re.search(r"[?&]lecture=true", page.url, re.IGNORECASE), page.url
    assert after >= 20 > before, f"html font-size {before}px -> {after}px"
    wait_for_plots(page)
    assert_no_exception(page)
    screenshot(page, "lecture")


# per heatmap: the margins it was sent with and those plotly drew it with, and whether its x labels stand level
HEATMAP_MARGINS = """() => Array.from(document.querySelectorAll('.js-plotly-plot'))
  .filter(gd => gd.data[0].type === 'heatmap' && gd._fullLayout.yaxis.type === 'category')
  .map(gd => { const L = gd._fullLayout;
               return {sent: [L.margin.l, L.margin.r, L.margin.b], drawn: [L._size.l, L._size.r, L._size.b],
                       level: !L.xaxis._tickAngles || !L.xaxis._tickAngles.xtick}; })"""


@pytest.mark.parametrize("lecture", ["false", "true"])
def test_a_heatmap_is_sent_with_the_margins_plotly_draws_it_with(page, lecture):
    """ui/margins.py: plotly's automargin leaves a heatmap's margins as sent, so the figure is drawn once, not twice
    (where plotly turns crowded x labels, it grows the bottom margin, and draws again)."""
    for slug in ("one_hot", "multi_head", "sinusoidal", "pointer_network"):
        open_url(page, f"/{slug}?lecture={lecture}")
        wait_for_plots(page)
        heatmaps = [h for h in page.evaluate(HEATMAP_MARGINS) if h["level"]]
        assert heatmaps, slug
        for heatmap in heatmaps:
            assert heatmap["drawn"] == pytest.approx(heatmap["sent"]), (slug, heatmap)


# per line chart built by figures.lines (sent with its bottom margin worked out): the margins it was sent with (ui/
# client.js adding its legend's rows at this width) and those plotly drew it with; for a legend of several rows, the
# bottom margin plotly gives a copy sent one row less, drawn beside it at the same width
LINE_MARGINS = """async () => {
  const charts = [];
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const L = gd._fullLayout;
    if (!gd._fullData.every(t => t.type === 'scatter') || L.margin.b === 10) continue;
    const row = Math.max(1.3 * L.font.size, 16) + 3;
    const rows = L.showlegend ? Math.round((L.legend._height - 10) / row) : 0;
    const chart = {title: L.title.text, rows, sent: [L.margin.l, L.margin.r, L.margin.b],
                   drawn: [L._size.l, L._size.r, L._size.b]};
    if (rows > 1) {
      const layout = JSON.parse(JSON.stringify(gd.layout));
      delete layout.meta.legend_row_px;
      layout.margin.b -= row;
      const copy = document.createElement('div');
      gd.parentNode.append(copy);
      await Plotly.newPlot(copy, JSON.parse(JSON.stringify(gd.data)), layout);
      chart.rowLess = [layout.margin.b, copy._fullLayout._size.b];
      Plotly.purge(copy);
      copy.remove();
    }
    charts.push(chart);
  }
  return charts; }"""
EVERY_CHART_DRAWN = """() => document.querySelectorAll('.js-plotly-plot').length
  >= document.querySelectorAll("[data-testid='stPlotlyChart']").length"""


@pytest.mark.parametrize("lecture", ["false", "true"])
def test_a_line_chart_is_sent_with_the_margins_plotly_draws_it_with(page, lecture):
    """ui/margins.py: a line chart (points and curves too) is drawn with the margins it was sent, once: its y labels
    foreseen, on a plain line's x axis the label at its end, and its legend's rows at the page's width (ui/client.js),
    no more of them than it needs: a copy sent one row less is one plotly grows."""
    wrapped = 0
    for slug in ("coverage", "scaling", "glove_counts", "skipgram_pairs", "flash_attention", "kernel_regression",
                 "attention_timing", "cache_sizes"):
        open_url(page, f"/{slug}?lecture={lecture}")
        page.wait_for_function(EVERY_CHART_DRAWN)
        charts = page.evaluate(LINE_MARGINS)
        assert charts, slug
        for chart in charts:
            assert chart["drawn"] == pytest.approx(chart["sent"]), (slug, chart)
            if chart["rows"] > 1:
                wrapped += 1
                sent, drawn = chart["rowLess"]
                assert drawn > sent, (slug, chart)
    assert wrapped >= 4  # coverage's words, attention timing's and the cache sizes' many curves


def test_typed_matrix_of_the_wrong_width_gets_a_message(page):
    open_url(page, "/scoring_functions?inputs=Typed")
    box = page.get_by_label("Q (one query per row)")
    box.fill("1 2 3")
    box.press("Control+Enter")
    page.wait_for_url(re.compile(r"[?&]Q="), timeout=15_000)
    settle(page)
    assert_no_exception(page)
    warning = page.locator("[data-testid='stAlert']").filter(has_text="same width")
    assert warning.count() >= 1, [a.inner_text() for a in page.locator("[data-testid='stAlert']").all()]
    screenshot(page, "bad_matrix")


def test_a_figure_downloads_as_png_and_svg_and_a_table_as_csv(page):
    # where the browser offers a save dialog (File System Access), Streamlit saves a table through it; headless
    # chromium has no dialog to answer, so the test takes the other path Streamlit has, a plain download
    page.add_init_script("delete window.showSaveFilePicker")
    open_url(page, "/sinusoidal")
    wait_for_plots(page)
    plots = page.locator(".js-plotly-plot")
    assert plots.count() > 1
    for i in range(plots.count()):  # one SVG and one CSV button beside each camera, however often the page redraws
        assert plots.nth(i).locator(".arc-svg").count() == 1 and plots.nth(i).locator(".arc-csv").count() == 1
    plot = plots.first
    title = plot.locator(".gtitle").text_content()
    plot.hover()
    png = download(page, lambda: plot.locator(".modebar-btn[data-title='Download plot as a PNG']").click())
    assert png.startswith(PNG_SIGNATURE)
    plot.hover()
    svg = download(page, lambda: plot.locator(".arc-svg").click()).decode()
    assert svg.lstrip().startswith("<svg") and title in svg
    # the chart's numbers: PE(pos, j) at d_model = 64, 100 positions, against the closed form (001 §1.7)
    plot.hover()
    data = download(page, lambda: plot.locator(".arc-csv").click()).decode()
    rows = list(csv.reader(io.StringIO(data)))
    assert rows[0] == ["series", "x", "y", "value"] and len(rows) == 1 + 100 * 64
    for _, j, position, value in rows[1::97]:
        angle = int(position) / 10000 ** (2 * (int(j) // 2) / 64)
        assert float(value) == pytest.approx(math.sin(angle) if int(j) % 2 == 0 else math.cos(angle), abs=1e-5)

    table = page.locator("[data-testid='stDataFrame']").first
    table.hover()
    # the toolbar fades in over the table and never holds still long enough for a pointer click
    csv_button = page.get_by_role("button", name="Download as CSV").first
    data = download(page, lambda: csv_button.dispatch_event("click"))
    rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    assert rows[0] == ["position", "printed in 002", "computed here (d_model = 4, base 10000)"]
    assert rows[2][1] == "[0.84147, 0.54030, 0.00999983, 0.99995]"
    assert_no_exception(page)
