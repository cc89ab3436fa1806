"""ui/figures.py's savings for a class: a figure built once per distinct arguments and its dict kept, and plotly's
property paths parsed once. Each must give exactly what plotly gives without it."""
from __future__ import annotations

import numpy as np
import pytest
from plotly import basedatatypes

from ui import figures

PATHS = ["", "title", "title.font.size", "title_font_size", "xaxis_title", "xaxis2.range[0]", "error_x.array",
         "marker.line.width", "updatemenus[0].buttons[1].args", "yaxis.title.text", "legend_y", "a_path_",
         "_another", "yet__another_path"]


@pytest.mark.parametrize("path", PATHS)
def test_remembered_property_paths_parse_as_plotly_does(path):
    remembered = basedatatypes._str_to_dict_path_full
    assert remembered.remembered
    assert remembered(path) == remembered.original(path)
    keys, starts = remembered(path)
    starts.append(-1)  # a caller's changes to its copy reach no later caller
    assert remembered(path) == remembered.original(path)


def test_shared_figure_is_built_once_per_distinct_arguments_and_keeps_plotlys_dict():
    values = np.linspace(0.0, 1.0, 40).tolist()
    first = figures.lines(list(range(40)), {"a": values}, title="shared")
    again = figures.lines(list(range(40)), {"a": list(values)}, title="shared")  # equal lists, new objects
    assert again is first
    other = figures.lines(list(range(40)), {"a": [*values[:-1], 2.0]}, title="shared")
    assert other is not first
    fresh = figures.lines.__wrapped__(list(range(40)), {"a": values}, title="shared")
    assert first.to_dict() == fresh.to_dict()
    assert other.to_dict()["data"][0]["y"] != first.to_dict()["data"][0]["y"]
