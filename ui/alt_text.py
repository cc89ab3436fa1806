"""What a figure shows, in words, for screen readers: made from the figure's own data when it is built, so the
words and the picture cannot drift apart. ui/figures.py stores it in the figure's layout.meta; ui/client.js names
the chart with it (WCAG 1.1.1). Plain figures: kind, title, axes, each series' range; heatmaps their extremes."""
from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

SERIES_NAMED = 6  # a legend of more is summarised: a sentence per series stops being read past half a dozen
TAG = re.compile(r"<[^>]+>")
KINDS = {frozenset({"line"}): "Line chart", frozenset({"scatter"}): "Scatter plot", frozenset({"bar"}): "Bar chart",
         frozenset({"heatmap"}): "Heatmap", frozenset({"scatter", "line"}): "Scatter plot with lines"}


def plain(text: object) -> str:
    """Plotly's text without its HTML (bold, line breaks, sub- and superscripts)."""
    return re.sub(r"\s+", " ", TAG.sub(" ", str(text or ""))).strip()


def number(value: float) -> str:
    """Three significant figures, as a reader would say it."""
    return f"{value:.3g}" if math.isfinite(value) else str(value)


def _values(array: object) -> np.ndarray:
    """A trace's numbers as floats; None and text as NaN."""
    if array is None:
        return np.array([])
    try:
        return np.asarray(array, dtype=float).ravel()
    except (TypeError, ValueError):
        return np.array([float(v) if isinstance(v, (int, float)) else np.nan
                         for v in np.asarray(array, dtype=object).ravel()])


def _kind(trace: dict) -> str:
    kind = trace.get("type") or "scatter"
    if kind == "scatter":
        return "line" if "lines" in (trace.get("mode") or "lines+markers") else "scatter"
    return {"scattergl": "scatter", "heatmap": "heatmap", "bar": "bar"}.get(kind, kind)


def _series(trace: dict) -> str | None:
    """One series in words: its name and where it goes ('from 1 to 8, lowest 0.5, highest 9')."""
    ys = _values(trace.get("y"))
    ys = ys[np.isfinite(ys)] if ys.size else ys
    if not ys.size:
        return None
    name = plain(trace.get("name")) or "series"
    if _kind(trace) == "bar":
        xs = list(trace.get("x") or [])
        top = int(np.nanargmax(_values(trace.get("y"))))
        label = f" at {plain(xs[top])}" if top < len(xs) else ""
        return f"{name}: {ys.size} bars, highest {number(ys.max())}{label}, lowest {number(ys.min())}"
    if ys.min() == ys.max():
        return f"{name}: {ys.size} points, level at {number(ys[0])}"
    trend = "rising" if ys[-1] > ys[0] else "falling" if ys[-1] < ys[0] else "returning"
    extremes = "" if ys.max() in (ys[0], ys[-1]) and ys.min() in (ys[0], ys[-1]) else \
        f", lowest {number(ys.min())}, highest {number(ys.max())}"
    return f"{name}: {ys.size} points, {trend} from {number(ys[0])} to {number(ys[-1])}{extremes}"


def _heatmap(trace: dict) -> str:
    z = np.asarray(_values(trace.get("z")))
    rows, columns = list(trace.get("y") or []), list(trace.get("x") or [])
    shape = np.shape(trace.get("z"))
    if len(shape) != 2 or not z.size or not np.isfinite(z).any():
        return "no values"
    z = z.reshape(shape)
    r, c = np.unravel_index(int(np.nanargmax(z)), shape)
    where = f" (row {plain(rows[r])}, column {plain(columns[c])})" if r < len(rows) and c < len(columns) else ""
    return (f"{shape[0]} rows by {shape[1]} columns, values from {number(np.nanmin(z))} to {number(np.nanmax(z))}, "
            f"largest{where}")


def _title(spec: object) -> str:
    """A figure's or an axis's title: plotly takes it as {"text": ...} or as the bare string."""
    title = spec.get("title") if isinstance(spec, dict) else None
    return plain(title.get("text") if isinstance(title, dict) else title)


def _panel(traces: Sequence[dict], layout: dict, x_axis: str, y_axis: str) -> str:
    """One plot area: what kind of chart, its axes, its series."""
    kinds = {_kind(t) for t in traces if t.get("showlegend", True) is not False or _kind(t) == "heatmap"} or \
        {_kind(t) for t in traces}
    kind = KINDS.get(frozenset(kinds), "Chart")
    x_title, y_title = _title(layout.get(x_axis)), _title(layout.get(y_axis))
    axes = f" of {y_title} against {x_title}" if x_title and y_title else \
        f" against {x_title}" if x_title else f" of {y_title}" if y_title else ""
    if labelled := [t for t in traces if "text" in (t.get("mode") or "") and t.get("text") is not None]:
        if all(t.get("showlegend") is False for t in traces):  # a diagram (a tree): its labels are what it says
            names = [plain(label) for t in labelled for label in t["text"] if plain(label)]
            listed = ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")
            return f"Diagram of {len(names)} labelled nodes: {listed}"
    if kind == "Heatmap":
        return f"{kind}{axes}: {_heatmap(next(t for t in traces if _kind(t) == 'heatmap'))}"
    said = [s for t in traces if t.get("showlegend", True) is not False or len(traces) == 1
            if (s := _series(t)) is not None]
    if not said:
        return f"{kind}{axes}"
    more = f"; and {len(said) - SERIES_NAMED} more series" if len(said) > SERIES_NAMED else ""
    return f"{kind}{axes}. " + "; ".join(said[:SERIES_NAMED]) + more


def describe(fig: go.Figure) -> str:
    """The figure in a few sentences: its title, then each plot area (make_subplots' panels under their own
    titles), then whether it plays through steps."""
    traces = [dict(t) for t in fig._data]
    layout = fig._layout
    title = _title(layout)
    panels: dict[tuple[str, str], list[dict]] = {}
    for trace in traces:
        x_axis = "xaxis" + (trace.get("xaxis") or "x")[1:]
        y_axis = "yaxis" + (trace.get("yaxis") or "y")[1:]
        panels.setdefault((x_axis, y_axis), []).append(trace)
    panel_titles = [plain(a.get("text")) for a in layout.get("annotations") or ()
                    if a.get("yref") == "paper" and a.get("yanchor") == "bottom"]
    parts = [f"{title}." if title else ""]
    for i, ((x_axis, y_axis), panel) in enumerate(panels.items()):
        heading = f"{panel_titles[i]}: " if len(panels) > 1 and i < len(panel_titles) and panel_titles[i] else ""
        parts.append(heading + _panel(panel, layout, x_axis, y_axis) + ".")
    if steps := (layout.get("sliders") or [{}])[0].get("steps"):
        parts.append(f"Plays through {len(steps)} steps: Play, Pause and a step slider under the chart.")
    return " ".join(p for p in parts if p) or "Chart"
