"""One builder per kind of figure, shared by every page. Lecture mode enlarges their text."""
from __future__ import annotations

import copy
import functools
import inspect
import io
import pickle
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
import torch
from _plotly_utils.utils import convert_to_base64
from plotly import basedatatypes
from plotly.subplots import make_subplots
from plotly.validator_cache import ValidatorCache

from ui import alt_text, margins, palette

LECTURE = "lecture"  # session key of the lecture-mode toggle
ALT = "alt"  # layout.meta's key for the figure's text alternative (ui/alt_text.py), read by ui/client.js
# layout.meta's key on a figure whose bottom margin holds one row of its legend (ui/margins.lines): that row's height
# in px, to which ui/client.js adds the rows the legend wraps into at the width the browser gives the figure, before
# plotly draws it
LEGEND_ROW = "legend_row_px"
TOOLBAR_PX = 32  # height of the band at the top of a figure that plotly's toolbar takes
LECTURE_MAX_PX = 600  # lecture mode enlarges a figure by a quarter, up to most of a 720-pixel projector screen
# references drawn dashed: grey, each in its own dash so several stay apart
REFERENCE_DASHES = ("dash", "dot", "dashdot", "longdash", "longdashdot")
SPARSE_MARKERS = 12  # markers=False with several curves: about this many markers on each, enough to tell them apart
FIGURES_KEPT = 128  # per kind of figure: the default views of every page and what visitors asked for lately
# Every figure is made with this template, taken as plotly's default: a new figure receives it unvalidated,
# where naming it in update_layout validates a deep copy (15 ms of the 30 a heatmap took to build).
pio.templates.default = palette.TEMPLATE  # plotly_white with colours for every kind of colour vision
# what a figure built from dicts (_unvalidated) carries as its template: every such figure holds this one dict, which
# nothing writes to (plotly_chart and _plotly_dict only read it)
TEMPLATE_SPEC = pio.templates[palette.TEMPLATE].to_plotly_json()


def _parse_each_property_path_once() -> None:
    """plotly parses a property path ("title.font.size", "xaxis_title") anew at every update of every figure: 16%
    of the server's GIL time under a class of 100 went there. The parse depends on the string alone, so it is
    remembered (a copy of its mutable part handed out each time); building a heatmap or a line chart takes a fifth
    less. plotly.py issue #5514 measures the same overhead of its graph objects."""
    parse = basedatatypes._str_to_dict_path_full
    if getattr(parse, "remembered", False):
        return

    @functools.lru_cache(maxsize=4096)
    def parsed(path: str) -> tuple[tuple, tuple]:
        keys, starts = parse(path)
        return keys, tuple(starts)

    def remembered(path: str) -> tuple[tuple, list]:
        keys, starts = parsed(path)
        return keys, list(starts)

    remembered.remembered, remembered.original = True, parse
    basedatatypes._str_to_dict_path_full = remembered


_parse_each_property_path_once()

# a horizontal legend at the foot of the figure, under the x-axis title whatever the height (one placed at a
# fraction of the plot's height below it covered the title on short figures)
LEGEND_BELOW = dict(orientation="h", yref="container", y=0, yanchor="bottom")
HEATMAP_SCALE = ValidatorCache.get_validator("heatmap", "colorscale")


class _KeyPickler(pickle.Pickler):
    """A pickle for cache keys: a tensor as its dtype, shape and bytes (torch's own pickle of equal tensors differs
    from call to call, and missed the tile grid's cache on every run)."""

    def reducer_override(self, obj):
        if isinstance(obj, torch.Tensor):
            return tuple, ((str(obj.dtype), tuple(obj.shape), obj.detach().cpu().numpy().tobytes()),)
        return NotImplemented


def _key(value) -> bytes:
    out = io.BytesIO()
    _KeyPickler(out, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return out.getvalue()


# how a shared figure's list, tuple and dict arguments are keyed (see shared)
PICKLED = {kind: _key for kind in (list, tuple, dict)}


def shared(builder: Callable[..., go.Figure]) -> Callable[..., go.Figure]:
    """Build each distinct figure once per server and hand every visitor the same object: a class opening a
    page's default view costs one build, not thirty. Callers only show it, so sharing it between sessions is
    safe; the key holds the arguments and lecture mode, which sizes the text.

    Each run that shows a figure would otherwise pay twice more for it: hashing its arguments to find it (page
    data arrives as lists of floats, which Streamlit hashes element by element, 20% of a warm rerun of the RoPE
    page), and st.plotly_chart's copy of it (Figure.to_dict deep-copies every trace and converts its arrays to
    base64, another 17%). So lists, tuples and dicts are keyed by their pickle, and the figure keeps the dict it
    gives to plotly_chart, made once here: plotly_chart only reads it, to write its JSON."""
    # arguments reach the cache by name: for each one passed by position, Streamlit looks its name up with
    # inspect.signature on every call (22 µs each, 1% of the server's time under a class)
    names = list(inspect.signature(builder).parameters)

    @st.cache_resource(max_entries=FIGURES_KEPT, show_spinner=False, hash_funcs=PICKLED)
    def cached(lecture: bool, **kwargs) -> go.Figure:
        fig = builder(**kwargs)
        if ALT not in (fig._layout.get("meta") or {}):  # a builder may have written its own (the tile grid's)
            # from the raw data, before it is packed as base64
            fig._layout["meta"] = (fig._layout.get("meta") or {}) | {ALT: alt_text.describe(fig)}
        spec = _plotly_dict(fig)
        fig.to_dict = lambda: spec
        return fig

    @functools.wraps(builder)
    def build(*args, **kwargs) -> go.Figure:
        return cached(lecture=lecture_mode(), **dict(zip(names, args)), **kwargs)

    return build


def _plotly_dict(fig: go.Figure) -> dict:
    """What fig.to_dict() returns, without its deep copy: the figure is new and from here on only shown, so its
    own dicts can be handed over. to_dict copies them whole, plotly's template with them (hundreds of nested
    lists), at every figure a class asks for: 11% of the server's Python time under a class of 100, on small
    figures most of their cost. tests/unit/test_shared_figures checks the two agree."""
    spec = {"data": fig._data, "layout": fig._layout}
    if frames := getattr(fig, "_frame_dicts", None) or [frame._props for frame in fig._frame_objs]:
        spec["frames"] = frames
    # the shared template is plotly's JSON, with no array in it: walking its hundreds of lists for arrays was 0.25 of
    # the 0.31 ms this packing took on a line chart, at every new figure
    template = fig._layout.pop("template", None)
    convert_to_base64(spec)  # as to_dict does: numpy arrays travel as typed base64
    if template is not None:
        fig._layout["template"] = _template_sent(template, spec)
    return spec


# the parts of the template that style one kind of subplot, and the traces drawn in that kind
SUBPLOT_TRACES = {"scene": {"scatter3d", "mesh3d", "surface", "cone", "streamtube", "volume", "isosurface"},
                  "geo": {"scattergeo", "choropleth"}, "polar": {"scatterpolar", "scatterpolargl", "barpolar"},
                  "ternary": {"scatterternary"}}


def _template_sent(template: dict, spec: dict) -> dict:
    """What of the shared template a figure needs: its defaults for the kinds of trace the figure draws and for
    the kinds of subplot it has, with the rest of its layout. plotly.js reads a template's defaults for a trace type
    only for traces of that type, and a subplot kind's only for subplots of that kind, so the figure draws the same
    (tests/e2e/test_templates_browser.py compares the SVG plotly.js draws of both). The whole template was 7.1 kB of
    JSON in every figure, 97% of a small line chart's, written, hashed and sent at every run that shows it."""
    if template is not TEMPLATE_SPEC:
        return template  # cut already (a stepped figure is packed at each to_dict), or a figure's own
    traces = frozenset(trace.get("type", "scatter") for trace in spec["data"])
    subplots = frozenset(kind for kind, kinds in SUBPLOT_TRACES.items() if traces & kinds or kind in spec["layout"])
    return _TEMPLATES_SENT.get((traces, subplots)) or _TEMPLATES_SENT.setdefault((traces, subplots), {
        "data": {kind: defaults for kind, defaults in TEMPLATE_SPEC["data"].items() if kind in traces},
        "layout": {key: value for key, value in TEMPLATE_SPEC["layout"].items()
                   if key not in SUBPLOT_TRACES or key in subplots}})


_TEMPLATES_SENT: dict[tuple[frozenset[str], frozenset[str]], dict] = {}  # each read only, shared by its figures


def lecture_mode() -> bool:
    return bool(st.session_state.get(LECTURE, False))


def style(fig: go.Figure, title: str, height: int, reach: Callable[[int, int], dict] | None = None) -> go.Figure:
    """fig with the title, text sizes, height and margins every figure here has (see _frame)."""
    # make_subplots' titles are annotations just above each plot: they need the same room under the toolbar
    headed = bool(title) or any(a.yref == "paper" and a.yanchor == "bottom" and (a.y or 0) >= 1
                                for a in fig.layout.annotations)
    fig.update_layout(_frame(title, height, headed, reach))

    def tidy(axis) -> None:
        axis.update(tickformat=axis.tickformat or _tick_format(axis.type), automargin=True)
    return fig.for_each_xaxis(tidy).for_each_yaxis(tidy)


def _frame(title: str, height: int, headed: bool, reach: Callable[[int, int], dict] | None = None) -> dict:
    """The layout every figure shares, lecture mode's sizes if on. reach(font px, height under the top margin) gives
    the side margins plotly's automargin will ask for (ui/margins.py), so the browser draws the figure once."""
    big = lecture_mode()
    title_size = 24 if big else 16
    frame = dict(
        # the title sits just above the plot, under the band plotly's toolbar takes at the top of the figure, so
        # the toolbar (always shown on touch screens) never covers it
        title=dict(text=title, font=dict(size=title_size), x=0, xref="paper", y=1, yref="paper",
                   yanchor="bottom", pad=dict(b=8)),
        font=dict(size=_font_px(), family="Source Sans, sans-serif"),  # the page's own font
        height=max(height, min(int(height * 1.25), LECTURE_MAX_PX)) if big else height,
        margin=dict(l=margins.BASE_PX, r=margins.BASE_PX, t=(TOOLBAR_PX + title_size + 14) if headed else TOOLBAR_PX,
                    b=margins.BASE_PX),
        # a drag (a swipe on a phone) scrolls the page instead of zooming; the toolbar still offers zoom and pan
        dragmode=False,
    )
    if reach is not None:
        frame["margin"] |= reach(frame["font"]["size"], frame["height"] - frame["margin"]["t"])
    return frame


def _font_px() -> int:
    return 20 if lecture_mode() else 13


def _tick_format(axis_type: str | None) -> str | None:
    # on a narrow range plotly prints a float's every digit: "~g" keeps six significant ones without trailing
    # zeros; log axes keep plotly's own 1, 10, 100, 1k labels
    return None if axis_type == "log" else "~g"


def axis_spec(title: str | None = None, **props) -> dict:
    """An axis of a figure built as a spec: its title, props, and what style() gives every axis."""
    axis = {**({} if title is None else {"title": {"text": title}}),
            **{key: value for key, value in props.items() if value is not None}, "automargin": True}
    if tick_format := _tick_format(axis.get("type")):
        axis["tickformat"] = tick_format
    return axis


def specified(traces: list[dict], layout: dict, title: str, height: int,
              reach: Callable[[int, int], dict] | None = None) -> go.Figure:
    """A figure from plain dicts, the frame of style() added, without plotly's validation of every property as it
    is set: six times faster to build (a heatmap 2.5 ms against 15), which a class moving sliders to values nobody
    asked for yet pays at every change (plotly.py issue #5514 measures the same). tests/unit/test_shared_figures
    checks that plotly's validation leaves each builder's spec unchanged. reach: as _frame's."""
    traces = [{key: value for key, value in trace.items() if value is not None} for trace in traces]
    return _unvalidated(traces, _frame(title, height, bool(title), reach) | layout)


def _unvalidated(data: list[dict], layout: dict) -> go.Figure:
    """go.Figure of plain dicts, unvalidated, holding the one shared TEMPLATE_SPEC: given an empty template, plotly
    does not give the figure its own deep copy of the default one (0.28 of the 0.39 ms a small figure took, 3.8% of
    the server's GIL time under a class)."""
    fig = go.Figure({"data": data, "layout": layout | {"template": {}}}, _validate=False)
    fig._layout["template"] = TEMPLATE_SPEC
    return fig


@functools.cache
def _side_by_side(titles: tuple[str, ...], horizontal_spacing: float, column_widths: tuple[float, ...] | None) -> dict:
    layout = make_subplots(rows=1, cols=len(titles), horizontal_spacing=horizontal_spacing, subplot_titles=titles,
                           column_widths=None if column_widths is None else list(column_widths)).layout
    return {key: value for key, value in layout.to_plotly_json().items() if key != "template"}


def side_by_side(titles: tuple[str, ...], horizontal_spacing: float,
                 column_widths: tuple[float, ...] | None = None) -> dict:
    """The layout make_subplots gives one row of len(titles) plots, each titled: its axes' domains and the titles as
    annotations; the traces of the k-th plot name xaxis and yaxis "x"/"y", then "x2"/"y2", and so on. Made once and
    copied: make_subplots validates every property it sets, 3.8 ms of a figure that a new step rebuilds."""
    return copy.deepcopy(_side_by_side(titles, horizontal_spacing, column_widths))


def styled(layout: dict, title: str, height: int) -> dict:
    """layout, in place and returned, as style() leaves a figure's: the frame every figure has, and every axis's
    tick format and automargin."""
    headed = bool(title) or any(a.get("yref") == "paper" and a.get("yanchor") == "bottom" and (a.get("y") or 0) >= 1
                                for a in layout.get("annotations", ()))
    _merge(layout, _frame(title, height, headed))
    for key, axis in layout.items():
        if re.fullmatch(r"[xy]axis\d*", key):
            if tick_format := axis.get("tickformat") or _tick_format(axis.get("type")):
                axis["tickformat"] = tick_format
            axis["automargin"] = True
    return layout


def animated(traces: list[dict], layout: dict, frames: Sequence[Sequence[dict]], names: Sequence[str], start: int,
             prefix: str = "step ") -> go.Figure:
    """animate() of a figure given as plain dicts (traces and a styled layout, without a template), which it takes
    over: no figure is validated or copied on the way."""
    return _stepped(_animated({"data": traces, "layout": layout}, frames, names, start, prefix))


def show(fig: go.Figure) -> None:
    """Draw fig; its camera downloads a PNG at twice the size (sharp on a slide), ui/client.js adds SVG, both
    named after the figure's title."""
    name = re.sub(r"[^\w-]+", "_", fig.layout.title.text or "figure").strip("_")[:80] or "figure"
    if ALT not in (fig._layout.get("meta") or {}):  # a figure made outside shared() (subplots, animations)
        fig.update_layout(meta=(fig.layout.meta or {}) | {ALT: alt_text.describe(fig)})
    # theme=None: plotly's own template, whose text is #444 on white (9.7:1); Streamlit's theme greys the tick
    # labels and axis titles to #808495, under WCAG's 4.5:1
    st.plotly_chart(fig, theme=None, config={"displaylogo": False,
                                             "toImageButtonOptions": {"format": "png", "filename": name, "scale": 2}})


@shared
def heatmap(matrix: np.ndarray, x_labels: Sequence[str], y_labels: Sequence[str], title: str = "",
            x_title: str = "", y_title: str = "", zmin: float | None = 0.0, zmax: float | None = 1.0,
            annotate: bool | None = None, height: int | None = None, colorscale: str = palette.SEQUENTIAL,
            showscale: bool = True, zmid: float | None = None, categorical: bool = True,
            cell_text: tuple[tuple[str, ...], ...] | None = None) -> go.Figure:
    """A matrix drawn as cells, rows top to bottom as printed; values written in when it is small, or
    cell_text (one string per cell) written in instead.

    The height follows the row count unless given, so a single query is a strip, not a tower. zmid centres a
    diverging colour scale (0 for signed scores, palette.DIVERGING); categorical=False places numeric labels at
    their values.
    """
    matrix = np.asarray(matrix)
    # float32 data (a torch tensor's) travels as float32: the numbers plotly.js reads are the same, in half the bytes
    matrix = matrix if matrix.dtype == np.float32 else matrix.astype(float)
    annotate = matrix.size <= 144 if annotate is None else annotate
    height = height or int(np.clip(140 + 42 * matrix.shape[0], 200, 560))
    hover = f"{y_title or 'row'} %{{y}}<br>{x_title or 'column'} %{{x}}<br>value %{{z:.4f}}"
    if cell_text is not None:
        text, hover = [list(row) for row in cell_text], hover + "<br>%{text}"
    else:
        text = np.round(matrix.astype(float), 3) if annotate else None  # in float64: 0.123, not 0.12300000339746475
    colours = HEATMAP_SCALE.validate_coerce(colorscale)  # plotly.js knows no "RdBu_r": named scales as colours
    trace = dict(type="heatmap", z=matrix, x=[str(x) for x in x_labels] if categorical else list(x_labels),
                 y=[str(y) for y in y_labels] if categorical else list(y_labels),
                 zmin=zmin, zmax=zmax, zmid=zmid, colorscale=[list(stop) for stop in colours], showscale=showscale,
                 # the bar right of the plot at a fixed gap (its padding): at plotly's x = 1.02 the gap, and so the
                 # margin the bar needs, is 2% of the plot's width, which is only known in the browser
                 colorbar=dict(x=1) if showscale else None,
                 # plotly writes each cell's text in white or #444, whichever contrasts more with the cell, which
                 # is 3.1:1 on cells of middle lightness; "auto" rings the letters in the other of the two (9.7:1)
                 textfont=dict(size=11 if cell_text is not None else 12, shadow="auto"), text=text,
                 texttemplate="%{text}" if text is not None else None, hovertemplate=hover + "<extra></extra>")
    kind = "category" if categorical else "linear"
    reach = functools.partial(margins.heatmap, y_labels=trace["y"] if categorical else None,
                              colours=margins.colour_range(matrix, zmin, zmax, zmid) if showscale else None)
    layout = dict(xaxis=axis_spec(x_title, type=kind), yaxis=axis_spec(y_title, autorange="reversed", type=kind))
    return specified([trace], layout, title, height, reach)


@shared
def lines(x: Sequence[float], series: Mapping[str, Sequence[float]], title: str = "", x_title: str = "",
          y_title: str = "", log_x: bool = False, log_y: bool = False, markers: bool = True,
          dashed: Sequence[str] = (), height: int = 360,
          spreads: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None) -> go.Figure:
    """Several named curves over one x axis; names in `dashed` are drawn dashed (references); `spreads` gives
    a curve a bar at every x from y - below to y + above, as (below, above).

    Every other curve has a colour and a marker symbol of its own, so curves that cross stay apart without
    colour; markers=False draws plain lines, marked at a few points only where several curves need telling apart.
    """
    references = [name for name in series if name in dashed]
    curves = [name for name in series if name not in dashed]
    sparse = not markers and len(curves) > 1
    traces = []
    for name, ys in series.items():
        if name in dashed:  # thin and dark grey; several references differ in dash and shade
            k = references.index(name)
            line = dict(dash=REFERENCE_DASHES[k % len(REFERENCE_DASHES)], width=2 if len(references) > 1 else 1.5,
                        color=palette.REFERENCE_GREYS[k % len(palette.REFERENCE_GREYS)] if len(references) > 1
                        else palette.REFERENCE_GREY)
            marker, mode = None, "lines+markers" if markers else "lines"
        else:
            k = curves.index(name)
            line = dict(color=palette.SERIES_COLOURS[k % len(palette.SERIES_COLOURS)])
            marker = dict(symbol=palette.SYMBOLS[k % len(palette.SYMBOLS)]) | (
                dict(maxdisplayed=SPARSE_MARKERS) if sparse else {})
            mode = "lines+markers" if markers or sparse else "lines"
        below, above = (spreads or {}).get(name, (None, None))
        error = dict(type="data", symmetric=False, array=list(above), arrayminus=list(below)) if above else None
        traces.append(dict(type="scatter", x=list(x), y=list(ys), name=name, mode=mode, line=line,
                           marker=marker if "markers" in mode else None, error_y=error))
    layout = dict(legend=LEGEND_BELOW, **_legend_counted(traces),
                  # log axes labelled at powers of ten only: minor labels read as misplaced numbers
                  xaxis=axis_spec(x_title, type="log" if log_x else "linear", dtick=1 if log_x else None),
                  yaxis=axis_spec(y_title, type="log" if log_y else "linear", dtick=1 if log_y else None))
    reach = functools.partial(margins.scatter, traces=traces, log_x=log_x, log_y=log_y)
    return specified(traces, layout, title, height, reach)


@shared
def points_and_curves(points: Mapping[str, tuple[Sequence[float], Sequence[float]]],
                      curves: Mapping[str, tuple[Sequence[float], Sequence[float]]], title: str = "",
                      x_title: str = "", y_title: str = "", height: int = 380, equal_axes: bool = False,
                      log_axes: bool = False, labels: Mapping[str, Sequence[str]] | None = None,
                      paired: bool = False) -> go.Figure:
    """Scattered observations with fitted curves over them (NaN leaves a gap in a curve).

    equal_axes keeps one unit the same length on both axes, so rotations draw circles; log_axes makes both
    axes logarithmic, labelled at powers of ten; labels names the points of some series; paired gives the
    i-th points series the i-th curve's colour (a point on its own path). Each points series has its own marker
    symbol and each curve its own dash, so neither needs its colour to be told apart."""
    labels = labels or {}
    colours, symbols, dashes = palette.SERIES_COLOURS, palette.SYMBOLS, palette.CURVE_DASHES
    traces = []
    for i, (name, (xs, ys)) in enumerate(points.items()):
        colour = colours[i % len(colours)]
        # unpaired points overlap: their fill is 60% opaque ("99") and their outline whole, at the colour's contrast
        marker = dict(size=11, color=colour) if paired else dict(size=9 if name in labels else 7, color=colour + "99",
                                                                 line=dict(width=1, color=colour))
        traces.append(dict(type="scatter", x=list(xs), y=list(ys), name=name,
                           text=list(labels[name]) if name in labels else None, textposition="top center",
                           mode="markers+text" if name in labels else "markers",
                           marker=dict(symbol=symbols[i % len(symbols)], **marker)))
    for i, (name, (xs, ys)) in enumerate(curves.items()):
        colour = colours[(i if paired else len(points) + i) % len(colours)]
        traces.append(dict(type="scatter", x=list(xs), y=list(ys), name=name, mode="lines",
                           line=dict(width=3, color=colour, dash=dashes[i % len(dashes)])))
    axis = dict(type="log", dtick=1) if log_axes else {}
    layout = dict(legend=LEGEND_BELOW, xaxis=axis_spec(x_title, **axis),
                  yaxis=axis_spec(y_title, scaleanchor="x" if equal_axes else None, **axis))
    if equal_axes:  # equal axes take their ranges from the plot's width, which only the browser knows
        return specified(traces, layout, title, height)
    reach = functools.partial(margins.scatter, traces=traces, log_x=log_axes, log_y=log_axes)
    return specified(traces, layout | _legend_counted(traces), title, height, reach)


def _legend_counted(traces: Sequence[dict]) -> dict:
    """The layout's meta giving the one legend row its bottom margin (margins.scatter's) holds, if it has a legend."""
    return {"meta": {LEGEND_ROW: margins.legend_row_px(_font_px())}} if margins.legend_shown(traces) else {}


@shared
def bars(labels: Sequence[str], series: Mapping[str, Sequence[float]], title: str = "", y_title: str = "",
         height: int = 320, stacked: bool = False) -> go.Figure:
    """Grouped bars, one group per label and one colour per series (the template's colorway); stacked, the
    series' parts of one total. Past the palette's colours, series repeating a colour are hatched."""
    n, hatches = len(palette.SERIES_COLOURS), palette.HATCHES
    traces = [dict(type="bar", x=[str(label) for label in labels], y=list(ys), name=name,
                   marker=dict(pattern=dict(shape=hatches[(k // n - 1) % len(hatches)])) if k >= n else None)
              for k, (name, ys) in enumerate(series.items())]
    return specified(traces, dict(barmode="stack" if stacked else "group", legend=LEGEND_BELOW,
                                  xaxis=axis_spec(type="category"), yaxis=axis_spec(y_title)), title, height)


@dataclass(frozen=True)
class TreeNode:
    """One node of a drawn tree; the root has parent None. value sets the colour; faded ones are pale."""

    id: str
    parent: str | None
    label: str
    hover: str
    value: float
    faded: bool = False


def _tree_layout(nodes: Sequence[TreeNode]) -> dict[str, tuple[float, float]]:
    """Depth along x, leaves stacked in order along y, each parent centred on its children."""
    children: dict[str | None, list[str]] = {}
    for node in nodes:
        children.setdefault(node.parent, []).append(node.id)
    position: dict[str, tuple[float, float]] = {}
    next_leaf = 0.0
    stack = [(root, 0, False) for root in reversed(children.get(None, []))]
    while stack:  # iterative post-order: deep trees must not hit the recursion limit
        node_id, depth, expanded = stack.pop()
        kids = children.get(node_id, [])
        if kids and not expanded:
            stack.append((node_id, depth, True))
            stack.extend((kid, depth + 1, False) for kid in reversed(kids))
        elif kids:
            position[node_id] = (depth, float(np.mean([position[k][1] for k in kids])))
        else:
            position[node_id], next_leaf = (depth, next_leaf), next_leaf + 1
    return position


@shared
def tree(nodes: Sequence[TreeNode], title: str = "", colour_title: str = "", height: int | None = None,
         colorscale: str = palette.SEQUENTIAL, down: bool = False, steps: bool = False) -> go.Figure:
    """A tree drawn left to right (or top down): edges, then nodes coloured by value with their labels
    and hover text. Children keep the order they have in nodes. `steps` (left to right only) gives it a slider of
    its own through its depths (_grown), built once with the figure."""
    position = _tree_layout(nodes)
    if down:
        position = {k: (y, x) for k, (x, y) in position.items()}
    traces = []
    for faded in (True, False):
        xs, ys = [], []
        for node in nodes:
            if node.parent is not None and node.faded == faded:
                (x0, y0), (x1, y1) = position[node.parent], position[node.id]
                xs += [x0, x1, None]
                ys += [y0, y1, None]
        traces.append(dict(type="scatter", x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                           line=dict(color="#dddddd" if faded else "#888888", width=1 if faded else 2)))
    colours = HEATMAP_SCALE.validate_coerce(colorscale)  # as heatmap: the named scale as colours
    traces.append(dict(
        type="scatter", x=[position[n.id][0] for n in nodes], y=[position[n.id][1] for n in nodes],
        mode="markers+text", text=[n.label for n in nodes], textposition="bottom center" if down else "middle right",
        hovertext=[n.hover for n in nodes], hoverinfo="text", showlegend=False,
        marker=dict(size=12, color=[n.value for n in nodes], colorscale=[list(stop) for stop in colours],
                    showscale=True, opacity=[0.35 if n.faded else 1.0 for n in nodes],
                    line=dict(width=1, color="#333333"), colorbar=dict(title=dict(text=colour_title))),
    ))
    rows = max((y for _, y in position.values()), default=0) + 1
    right = max(x for x, _ in position.values())
    layout = dict(xaxis=axis_spec(visible=False, range=[-0.6, right + 0.6] if down else [-0.3, right + 1.2]),
                  yaxis=axis_spec(visible=False, autorange="reversed"))
    fig = specified(traces, layout, title, height or int(np.clip(120 + (48 if down else 28) * rows, 260, 900)))
    return _grown(fig) if steps and not down else fig


GROWN_MAX_NUMBERS = 60_000  # a tree whose steps would send more numbers than this is drawn whole, without steps


def _grown(fig: go.Figure) -> go.Figure:
    """A tree drawn left to right by `tree`, with a step slider of its own: step d draws the nodes of depth at most d
    and the edges to them, the search as it stood after d steps (every prefix of at most d tokens it expanded). It
    opens at the whole tree. A tree too large to send once per step is returned as drawn."""
    # the figure is this call's own, not a shared one: its dicts are read and changed in place, not copied first (a
    # copy of a large tree's spec was half of building it)
    spec = {"data": fig._data, "layout": fig._layout}
    faded, kept, nodes = (spec["data"][i]["x"] for i in range(3))  # an edge is (parent x, child x, None); x = depth
    deepest = int(max(nodes))
    if deepest == 0 or (deepest + 1) * (len(faded) + len(kept) + len(nodes)) > GROWN_MAX_NUMBERS:
        return fig  # nothing to step through, or too much to send

    def edges_to(xs: list, depth: int) -> list:
        return [x if xs[i - i % 3 + 1] <= depth else None for i, x in enumerate(xs)]

    frames = [[dict(x=edges_to(faded, d)), dict(x=edges_to(kept, d)), dict(x=[x if x <= d else None for x in nodes])]
              for d in range(deepest + 1)]
    rows = spec["data"][2]["y"]
    pad = 0.5 + 0.04 * (max(rows) - min(rows))  # room for a marker at either end, as autorange leaves
    # fixed, so that a step's fewer nodes do not rescale the tree on a redraw (Play)
    spec["layout"]["yaxis"] |= dict(autorange=False, range=[max(rows) + pad, min(rows) - pad])
    return _stepped(_animated(spec, frames, [str(d) for d in range(deepest + 1)], deepest, prefix="step "))


def animate(fig: go.Figure, frames: Sequence[Sequence[dict]], names: Sequence[str], start: int,
            prefix: str = "step ", duration_ms: int = 700, layouts: Sequence[dict] | None = None) -> go.Figure:
    """Play the figure through `frames` in the browser, with Play and Pause buttons and a step slider of its
    own; it opens at frames[start]. Each frame lists, for the first traces in order, the attributes it
    changes; traces after those stay as drawn; `layouts`, if given, is what each frame changes in the layout (its
    title, an axis's range). Keep frames numeric: plotly validates every frame on every rerun, and colour strings
    cost far more than numbers. fig itself is left as it was: it may be a shared figure (see shared)."""
    whole = fig.to_dict()  # a shared figure's to_dict is its own spec, not a copy
    # the template is left out of the copy: _stepped gives the figure the one shared template
    spec = copy.deepcopy({"data": whole["data"],
                          "layout": {key: value for key, value in whole["layout"].items() if key != "template"}})
    return _stepped(_animated(spec, frames, names, start, prefix, duration_ms, layouts))


def _stepped(spec: dict) -> go.Figure:
    """A figure that sends spec, plain dicts with frames (animate, _grown): plotly makes objects of its data and
    layout only, with the one shared template, and its frames stay the dicts they are, where plotly made an
    object of every trace of every frame (more than half of building a stepped figure). to_dict gives a copy,
    frames and all, as plotly's does; shared() reads them through _plotly_dict."""
    fig = _unvalidated(spec["data"], spec["layout"])
    fig._frame_dicts = spec["frames"]
    fig.to_dict = lambda: copy.deepcopy(_plotly_dict(fig))
    return fig


def _animated(spec: dict, frames: Sequence[Sequence[dict]], names: Sequence[str], start: int, prefix: str = "step ",
              duration_ms: int = 700, layouts: Sequence[dict] | None = None) -> dict:
    """spec, changed in place as animate says, and returned."""
    for trace, first in zip(spec["data"], frames[start]):
        _merge(trace, first)
    kinds = [trace.get("type", "scatter") for trace in spec["data"]]
    spec["frames"] = [{"name": name, "traces": list(range(len(traces))),
                       "data": [dict(update, type=kind) for update, kind in zip(traces, kinds)]}
                      for traces, name in zip(frames, names)]
    if layouts is not None:
        _merge(spec["layout"], layouts[start])
        for frame, layout in zip(spec["frames"], layouts):
            frame["layout"] = layout
    play = dict(frame=dict(duration=duration_ms, redraw=True), fromcurrent=True, transition=dict(duration=0))
    pause = dict(frame=dict(duration=0, redraw=False), mode="immediate")
    # plotly draws a frame's layout only on a redraw
    step = dict(frame=dict(duration=0, redraw=layouts is not None), mode="immediate")
    spec["layout"] |= dict(
        updatemenus=[dict(type="buttons", direction="left", x=0, y=-0.2, xanchor="left", yanchor="top",
                          pad=dict(t=0, r=8), showactive=False,
                          buttons=[dict(label="▶ Play", method="animate", args=[None, play]),
                                   dict(label="❚❚ Pause", method="animate", args=[[None], pause])])],
        sliders=[dict(active=start, x=0, len=1, y=-0.3, yanchor="top", pad=dict(t=0),
                      currentvalue=dict(prefix=prefix, xanchor="right"),
                      steps=[dict(label=name, method="animate", args=[[name], step]) for name in names])],
    )
    layout = spec["layout"]
    layout["margin"] = layout.get("margin", {}) | dict(b=150)
    ranges = [frame_layout.get("yaxis", {}).get("range") for frame_layout in layouts or ()]
    if ranges and all(ranges):  # the y labels of every frame are known: room for the widest, so no step redraws
        length = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
        if left := margins.left_of_ranges(layout["font"]["size"], ranges, length):
            layout["margin"]["l"] = max(layout["margin"].get("l", margins.BASE_PX), left)
    return spec


def _merge(into: dict, update: dict) -> None:
    """Nested update: a frame's marker colours must not drop the marker's colour scale."""
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value
