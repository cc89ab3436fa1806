"""ui/figures.py's savings for a class: a figure built once per distinct arguments and its dict kept, and plotly's
property paths parsed once. Each must give exactly what plotly gives without it."""
from __future__ import annotations

import base64
import copy
import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import torch
from plotly import basedatatypes

from engine.efficiency.flash import tile_kinds, tiled_example
from engine.efficiency.online_softmax import online_softmax
from ui import alt_text, efficiency, figures, projector

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


def with_text_alternative(fig) -> dict:
    """What a shared figure sends: plotly's dict, its template cut to what the figure draws, and, in layout.meta,
    the words ui/alt_text makes of it."""
    spec = fig.to_dict()
    spec["layout"]["meta"] = {figures.ALT: alt_text.describe(fig)}
    spec["layout"]["template"] = default_template_for(spec)
    return spec


THREE_D = {"scatter3d", "mesh3d", "surface", "cone", "streamtube", "volume", "isosurface"}


def default_template_for(spec: dict) -> dict:
    """plotly's default template (its own copy) as a figure of spec's traces needs it: the defaults of those trace
    types, and its layout without the styles of subplot kinds the figure lacks (here: all but 3-D scenes)."""
    default = go.Figure().to_plotly_json()["layout"]["template"]
    types = {trace.get("type", "scatter") for trace in spec["data"]}
    return {"data": {kind: value for kind, value in default["data"].items() if kind in types},
            "layout": {key: value for key, value in default["layout"].items()
                       if key not in ("geo", "polar", "ternary", "scene") or key == "scene" and types & THREE_D}}


def test_shared_figure_is_built_once_per_distinct_arguments_and_keeps_plotlys_dict():
    values = np.linspace(0.0, 1.0, 40).tolist()
    first = figures.lines(list(range(40)), {"a": values}, title="shared")
    again = figures.lines(list(range(40)), {"a": list(values)}, title="shared")  # equal lists, new objects
    assert again is first
    other = figures.lines(list(range(40)), {"a": [*values[:-1], 2.0]}, title="shared")
    assert other is not first
    fresh = figures.lines.__wrapped__(list(range(40)), {"a": values}, title="shared")
    assert first.to_dict() == with_text_alternative(fresh)
    heat = figures.heatmap(MATRIX, list("abcd"), list("xyz"), title="shared")  # numpy data: sent as base64
    assert heat.to_dict() == with_text_alternative(figures.heatmap.__wrapped__(MATRIX, list("abcd"), list("xyz"),
                                                                              title="shared"))
    assert other.to_dict()["data"][0]["y"] != first.to_dict()["data"][0]["y"]


MATRIX = np.arange(12.0).reshape(3, 4) / 12
TREE = [figures.TreeNode("0", None, "start", "root", 0.0), figures.TreeNode("1", "0", "a", "a<br>x", -0.5),
        figures.TreeNode("2", "0", "", "b", -1.5, faded=True), figures.TreeNode("3", "1", "c", "c", -2.0)]
BUILDS = {
    "heatmap": lambda: figures.heatmap.__wrapped__(MATRIX, list("abcd"), list("xyz"), title="T", x_title="k",
                                                   y_title="q"),
    "heatmap, diverging, numeric": lambda: figures.heatmap.__wrapped__(
        MATRIX, [1, 2, 3, 4], [5, 6, 7], zmin=None, zmax=None, zmid=0, colorscale="RdBu_r", categorical=False,
        annotate=False, showscale=False, height=300),
    "heatmap, cell text": lambda: figures.heatmap.__wrapped__(MATRIX[:2, :2], ["a", "b"], ["c", "d"],
                                                              cell_text=(("1", "2"), ("3", "4"))),
    "lines, a reference": lambda: figures.lines.__wrapped__([1, 2, 3], {"a": [1.0, 2.0, 3.0], "ref": [0.5] * 3},
                                                            title="L", x_title="x", y_title="y", dashed=["ref"]),
    "lines, log, spreads": lambda: figures.lines.__wrapped__(
        [1, 10, 100], {"a": [1.0, 2.0, 3.0]}, log_x=True, log_y=True, markers=False,
        spreads={"a": ([0.1] * 3, [0.2] * 3)}),
    "lines, twelve series": lambda: figures.lines.__wrapped__([1, 2], {f"s{i}": [1.0, float(i)] for i in range(12)},
                                                              dashed=["s1", "s2"]),
    "bars": lambda: figures.bars.__wrapped__(["a", "b"], {"p": [1.0, 2.0], "q": [3.0, 4.0]}, title="B", y_title="v"),
    "bars, stacked": lambda: figures.bars.__wrapped__([1, 2], {"p": [1.0, 2.0]}, stacked=True, height=200),
    "points and curves": lambda: figures.points_and_curves.__wrapped__(
        {"seen": ([0.0, 1.0, 2.0], [1.0, 0.5, 2.0])}, {"fit": ([0.0, 1.0, 2.0], [1.0, float("nan"), 1.5])},
        title="P", x_title="x", y_title="y"),
    "points and curves, labelled, paired, equal axes": lambda: figures.points_and_curves.__wrapped__(
        {"a": ([0.0, 1.0], [1.0, 0.0])}, {"b": ([0.0, 1.0], [0.0, 1.0])}, labels={"a": ("p", "q")}, paired=True,
        equal_axes=True),
    "points and curves, log axes": lambda: figures.points_and_curves.__wrapped__(
        {"t": ([1, 10, 100], [0.1, 1.0, 10.0])}, {}, log_axes=True, height=300),
    "projection, flat": lambda: projector.projection.__wrapped__(
        np.arange(12.0).reshape(6, 2), tuple("abcdef"), "P", (1, 2), 0, (3, 4), (("a to b", 0, 1),)),
    "projection, 3-D": lambda: projector.projection.__wrapped__(
        np.arange(18.0).reshape(6, 3), tuple("abcdef"), "", (5,), 2, (1,), (("c to d", 2, 3), ("e to f", 4, 5))),
    "tree": lambda: figures.tree.__wrapped__(TREE, title="T", colour_title="log P"),
    "tree, top down, its own scale": lambda: figures.tree.__wrapped__(TREE, colorscale="RdBu_r", down=True, height=300),
    "online softmax, side by side, stepped": lambda: efficiency.online_softmax_figure.__wrapped__(
        online_softmax(torch.tensor([3.0, 1.0, 4.0])), 2),
    "tile grid, widths, stepped": lambda: efficiency.tile_figure.__wrapped__(
        tile_kinds(8, 4, 2, True), tiled_example(8, 4, 2, True, 0).steps, 3, 4, 8),
}


@pytest.mark.parametrize("name", BUILDS)
def test_figures_built_as_specs_are_what_plotlys_validation_makes_of_them(name):
    """Built without validation, each spec must be one plotly accepts unchanged: no unknown property, no value
    it would coerce (a named colour scale such as RdBu_r, which plotly.js does not know, must arrive as colours)."""
    fig = BUILDS[name]()
    raw = fig.to_plotly_json()
    validated = go.Figure(data=raw["data"], layout=raw["layout"])
    sent = json.loads(fig.to_json())
    sent.pop("frames", None)  # a stepped figure's frames stay dicts, unvalidated, as animate says
    assert json.loads(validated.to_json()) == sent


def test_a_shared_figures_key_is_the_same_for_equal_tensors_and_differs_for_others():
    """The tile grid's steps hold tensors: torch's own pickle of two equal ones differs, which missed the figure
    cache on every run."""
    import torch

    from engine.efficiency.flash import TileStep

    def steps(last: float) -> list[TileStep]:
        return [TileStep(0, 0, "full", torch.tensor([1.0, 2.0]), torch.tensor([3.0, last]))]

    key = figures.PICKLED[list]
    assert key(steps(4.0)) == key(steps(4.0))
    assert key(steps(4.0)) != key(steps(5.0))
    assert key([torch.zeros(2)]) != key([torch.zeros(2, dtype=torch.float64)])


def test_a_float32_heatmap_sends_its_numbers_as_float32_and_its_cell_text_rounded_in_float64():
    """Issue 47, send less: a torch tensor's float32 values travel in 4 bytes each, and plotly.js reads back the
    very numbers the float64 copy sent; the written cells are rounded as before."""
    matrix = np.array([[0.123, 1 / 3], [2 / 3, 0.9876]], dtype=np.float32)
    sent = json.loads(figures.heatmap(matrix, ["a", "b"], ["c", "d"], title="float32 cells").to_json())
    z, text = sent["data"][0]["z"], sent["data"][0]["text"]
    assert z["dtype"] == "f4" and text["dtype"] == "f8"
    assert decoded(z) == matrix.astype(float).ravel().tolist()
    assert decoded(text) == [0.123, 0.333, 0.667, 0.988]
    wide = json.loads(figures.heatmap(matrix.astype(float) / 3, ["a", "b"], ["c", "d"], title="float64").to_json())
    assert wide["data"][0]["z"]["dtype"] == "f8"  # float64 data keeps every digit


def decoded(array: dict | list) -> list[float]:
    """A numeric array as plotly's JSON carries it (a list, or base64 of its dtype), as floats."""
    if isinstance(array, list):
        return [float(x) for x in array]
    return np.frombuffer(base64.b64decode(array["bdata"]), dtype=array["dtype"]).astype(float).tolist()


def test_a_shared_figure_is_found_by_its_arguments_names_without_reading_the_builders_signature(monkeypatch):
    """Streamlit names each positional argument with inspect.signature on every call (22 µs each): shared() passes
    them by name, and a figure asked for by position or by keyword is the same one."""
    from streamlit.runtime.caching import cache_utils

    looked_up = []
    original = cache_utils._get_positional_arg_name
    monkeypatch.setattr(cache_utils, "_get_positional_arg_name", lambda *a: looked_up.append(a) or original(*a))
    first = figures.bars(["a", "b"], {"s": [1.0, 2.0]}, "by position")
    again = figures.bars(labels=["a", "b"], series={"s": [1.0, 2.0]}, title="by position")
    assert again is first and looked_up == []


@pytest.mark.parametrize("name", BUILDS)
def test_a_figure_built_as_a_spec_sends_the_default_template_cut_to_it_in_one_shared_dict(name):
    """specified hands every figure the same template dict instead of plotly's deep copy of it: each must send
    what plotly's default template gives its kinds of trace and subplot, figures of the same kinds one dict, and
    building, keying and sending figures must leave the whole template as it was."""
    default = go.Figure().to_plotly_json()["layout"]["template"]  # plotly's own copy of the default template
    fig = BUILDS[name]()
    sent = figures._plotly_dict(fig)
    assert sent["layout"]["template"] == default_template_for(sent)
    assert figures._plotly_dict(BUILDS[name]())["layout"]["template"] is sent["layout"]["template"]  # one dict
    figures.PICKLED[dict](fig._layout)
    alt_text.describe(fig)
    assert figures.TEMPLATE_SPEC == default


STEPPED = {
    "tree, its step slider": lambda: figures.tree.__wrapped__(TREE, title="T", steps=True),
    "lines, animated": lambda: figures.animate(figures.lines(np.arange(3), {"a": [1.0, 2.0, 3.0]}, title="A"),
                                               [[dict(y=[1.0, 2.0, 3.0])], [dict(y=[3.0, 2.0, 1.0])],
                                                [dict(y=[2.0, 2.0, 2.0])]], ["0", "1", "2"], 1),
}


@pytest.mark.parametrize("name", STEPPED)
def test_a_stepped_figure_sends_its_frames_as_plotly_validates_them_and_the_default_template(name):
    """animate and the tree's step slider keep their frames as dicts, not plotly objects: what plotly_chart writes
    must be what plotly's validation makes of it, each frame there, with the default template cut to it."""
    fig = STEPPED[name]()
    sent = json.loads(pio.to_json(fig.to_dict(), validate=False))  # as st.plotly_chart writes it
    assert len(sent["frames"]) == 3 and [frame["name"] for frame in sent["frames"]] == ["0", "1", "2"]
    assert json.loads(go.Figure(copy.deepcopy(sent)).to_json()) == sent
    assert sent["layout"]["template"] == default_template_for(sent)
    if name == "lines, animated":  # the frames given, and the data as the start frame has it
        assert [decoded(frame["data"][0]["y"]) for frame in sent["frames"]] == [[1, 2, 3], [3, 2, 1], [2, 2, 2]]
        assert decoded(sent["data"][0]["y"]) == [3, 2, 1]
    assert figures.TEMPLATE_SPEC == go.Figure().to_plotly_json()["layout"]["template"]
