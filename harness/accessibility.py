"""WCAG 2.1 AA checks of the running app in chromium, shared by the browser tests and benchmarks.accessibility.

axe-core (bundled by the axe-playwright-python package) runs the WCAG 2.0 and 2.1 A and AA rules on a page as
drawn; beside it, what axe cannot see: each chart's accessible name, chart text contrast (axe skips SVG text),
text that needs a sideways scroll at 320 CSS px (WCAG 1.4.10). The Tab order is walked by the browser tests.
"""
from __future__ import annotations

import contextlib
import re

from harness.browser import within

WCAG_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("serious", "critical")  # issue 30's goal: none of these
TEXT_CONTRAST = 4.5  # WCAG 1.4.3, normal-size text

_AXE_SCRIPT: list[str] = []
AXE_RUN = within("options => axe.run(document, options).then(r => r.violations)", "axe-core's run")


def axe_violations(tab) -> list[dict]:
    """axe-core's WCAG 2.0/2.1 A and AA violations on the tab's page as drawn now: rule, impact, nodes."""
    if not _AXE_SCRIPT:
        from axe_playwright_python.base import AXE_SCRIPT

        _AXE_SCRIPT.append(AXE_SCRIPT)
    if tab.evaluate("typeof axe === 'undefined'"):  # once per document: Streamlit moves between pages in place
        tab.evaluate(_AXE_SCRIPT[0])
    options = {"runOnly": {"type": "tag", "values": WCAG_AA}, "resultTypes": ["violations"]}
    return tab.evaluate(AXE_RUN, options)


def blocking(violations: list[dict]) -> list[str]:
    """The serious and critical ones, each as 'rule (impact): first node's html', for an assertion's message."""
    return [f"{v['id']} ({v['impact']}) x{len(v['nodes'])}: {v['nodes'][0]['html'][:160]}"
            for v in violations if v["impact"] in BLOCKING]


# every chart: its figure role and its name, which must hold its title (plotly's, or the first panel's)
FIGURE_NAMES = """() => Array.from(document.querySelectorAll("[data-testid='stPlotlyChart']")).map(chart => ({
  role: chart.getAttribute('role'), name: chart.getAttribute('aria-label') || '',
  title: (chart.querySelector('.gtitle') || chart.querySelector('.annotation-text'))?.textContent || ''}))"""


NAMED = """() => Array.from(document.querySelectorAll("[data-testid='stPlotlyChart']"))
  .every(chart => !chart.querySelector('.js-plotly-plot') || chart.hasAttribute('aria-label'))"""


def unnamed_figures(tab) -> list[str]:
    """The charts on the page without a figure role and a name that contains their title."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with contextlib.suppress(PlaywrightTimeout):  # ui/client.js names a chart on the frame after it is drawn
        tab.wait_for_function(NAMED, timeout=5_000)
    return [f"{f['role']} {f['title'][:60]!r}: {f['name'][:80]!r}" for f in tab.evaluate(FIGURE_NAMES)
            if f["role"] != "figure" or not f["name"].strip() or f["title"].strip() not in f["name"]]


# what a screen reader offers to operate; each must have a name to be announced by (WCAG 4.1.2), and a form
# control's name must hold a word: a Streamlit slider without a label is named by its numbers ("0.50 0.00 2.00")
OPERABLE = {"button", "link", "tab", "menuitem", "option"}
FORM_CONTROLS = {"slider", "combobox", "textbox", "searchbox", "checkbox", "switch", "spinbutton", "radio", "listbox"}
WORD = re.compile(r"[^\W\d_]{2}")


def unnamed_controls(tab) -> list[str]:
    """Controls whose accessible name, as chromium computes it for screen readers, is empty, or for a form
    control holds no word. axe-core passes both."""
    session = tab.context.new_cdp_session(tab)
    try:
        nodes = session.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        session.detach()
    unnamed = []
    for node in nodes:
        role, name = node.get("role", {}).get("value"), str(node.get("name", {}).get("value", "")).strip()
        if node.get("ignored") or role not in OPERABLE | FORM_CONTROLS:
            continue
        if not name or role in FORM_CONTROLS and not WORD.search(name):
            unnamed.append(f"{role} named {name[:40]!r}")
    return unnamed


# chart text (titles, ticks, legends, the animation's controls) against the white it is drawn on; a heatmap's cell
# text sits on its cell, and plotly picks black or white for it there
CHART_TEXT = """() => {
  const luminance = rgb => rgb.map(c => c / 255).map(c => c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4)
    .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
  const found = [];
  for (const text of document.querySelectorAll('.js-plotly-plot text')) {
    if (text.closest('.heatmaplayer, .textpoint') || !text.textContent.trim()) continue;
    const style = getComputedStyle(text);
    const rgb = style.fill.match(/[\\d.]+/g);
    if (!rgb || style.fill === 'none') continue;
    const alpha = rgb.length > 3 ? parseFloat(rgb[3]) * parseFloat(style.fillOpacity) : parseFloat(style.fillOpacity);
    const shown = rgb.slice(0, 3).map(c => parseFloat(c) * alpha + 255 * (1 - alpha));
    const ratio = 1.05 / (luminance(shown) + 0.05);
    if (ratio < %s) found.push(`${text.textContent.slice(0, 30)}: ${style.fill} ${ratio.toFixed(2)}:1`);
  }
  return found;
}""" % TEXT_CONTRAST


def low_contrast_chart_text(tab) -> list[str]:
    return tab.evaluate(CHART_TEXT)


# text wider than the window, outside what may scroll on its own (charts, tables, equations, code, a row of tabs)
SIDEWAYS = """() => {
  const room = document.documentElement.clientWidth;
  const scrolls = '.js-plotly-plot, [data-testid=stDataFrame], [data-testid=stTable], .katex-display, pre, svg, '
    + '[role=tablist]';
  return Array.from(document.querySelectorAll('p, li, h1, h2, h3, label, button, [data-testid=stMetricValue]'))
    .filter(e => !e.closest(scrolls) && e.getClientRects().length && e.getBoundingClientRect().right > room + 1)
    .map(e => `${e.tagName} ${e.textContent.trim().slice(0, 40)}: to ${e.getBoundingClientRect().right | 0} px`);
}"""


def text_past_the_edge(tab) -> list[str]:
    """Text a reader would have to scroll sideways to read (WCAG 1.4.10 Reflow)."""
    return tab.evaluate(SIDEWAYS)
