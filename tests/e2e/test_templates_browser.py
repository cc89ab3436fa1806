"""Every figure is sent with the part of plotly's template it needs (ui/figures._template_sent): plotly.js, the
library the browser draws with, must draw each the same as with the whole template. Each figure the unit tests
build (every builder, stepped ones too) is drawn both ways in chromium by the plotly.js that plotly ships, and the
SVG pictures it exports must be equal but for the random ids plotly.js gives clip paths, gradients and traces.
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import plotly
import plotly.io as pio
import pytest

from tests.e2e.conftest import HAVE_CHROMIUM, NO_CHROMIUM
from tests.unit.test_shared_figures import BUILDS, STEPPED
from ui import figures

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)]

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
SVG_OF_EACH = """async (specs) => {
  const pictures = [];
  for (const spec of specs) {
    const figure = JSON.parse(spec), plot = document.createElement('div');
    document.body.appendChild(plot);
    await Plotly.newPlot(plot, figure.data, figure.layout);
    pictures.push(decodeURIComponent(await Plotly.toImage(plot, {format: 'svg'})));
    Plotly.purge(plot);
    plot.remove();
  }
  return pictures;
}"""
# the ids plotly.js draws at random: of a picture's defs and clip paths, a legend, a trace, a gradient or pattern, a
# colour bar
RANDOM_IDS = re.compile(r"(defs-|clip|legend|trace|\bg|\bp)[0-9a-f]{6}(-(cb)?[0-9a-f]{6,8})?|(cb)[0-9a-f]{6}")


def without_random_ids(svg: str) -> str:
    # the clone toImage draws may give the root an empty style before or after its viewBox
    return RANDOM_IDS.sub(lambda m: (m.group(1) or m.group(4)) + "X", svg).replace(' style=""', "")


@pytest.fixture(scope="module")
def tab(browser):
    context = browser.new_context()
    tab = context.new_page()
    tab.set_content("<html><body></body></html>")
    tab.add_script_tag(path=str(PLOTLY_JS))
    yield tab
    context.close()


@pytest.mark.parametrize("name", [*BUILDS, *STEPPED])
def test_a_figure_draws_the_same_with_the_template_it_is_sent_as_with_the_whole(tab, name):
    sent = copy.deepcopy(figures._plotly_dict({**BUILDS, **STEPPED}[name]()))
    whole = copy.deepcopy(sent)
    whole["layout"]["template"] = figures.TEMPLATE_SPEC
    assert len(json.dumps(sent["layout"]["template"])) < len(json.dumps(figures.TEMPLATE_SPEC)) / 2
    cut, full = tab.evaluate(SVG_OF_EACH, [pio.to_json(sent, validate=False), pio.to_json(whole, validate=False)])
    assert without_random_ids(cut) == without_random_ids(full)
