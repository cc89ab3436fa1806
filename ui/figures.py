"""One builder per kind of figure, shared by every page. Lecture mode enlarges their text."""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

LECTURE = "lecture"  # session key of the lecture-mode toggle


def lecture_mode() -> bool:
    return bool(st.session_state.get(LECTURE, False))


def _style(fig: go.Figure, title: str, height: int) -> go.Figure:
    big = lecture_mode()
    fig.update_layout(
        title=dict(text=title, font=dict(size=24 if big else 16)),
        font=dict(size=20 if big else 13),
        height=int(height * (1.25 if big else 1)),
        margin=dict(l=10, r=10, t=50 if title else 20, b=10),
        template="plotly_white",
    )
    return fig


def show(fig: go.Figure) -> None:
    st.plotly_chart(fig, config={"displaylogo": False})


def heatmap(matrix: np.ndarray, x_labels: Sequence[str], y_labels: Sequence[str], title: str = "",
            x_title: str = "", y_title: str = "", zmin: float | None = 0.0, zmax: float | None = 1.0,
            annotate: bool | None = None, height: int | None = None, colorscale: str = "Blues",
            showscale: bool = True, zmid: float | None = None, categorical: bool = True) -> go.Figure:
    """A matrix drawn as cells, rows top to bottom as printed; values written in when it is small.

    The height follows the row count unless given, so a single query is a strip, not a tower. zmid centres a
    diverging colour scale (0 for signed scores); categorical=False places numeric labels at their values.
    """
    matrix = np.asarray(matrix, dtype=float)
    annotate = matrix.size <= 144 if annotate is None else annotate
    height = height or int(np.clip(140 + 42 * matrix.shape[0], 200, 560))
    fig = go.Figure(go.Heatmap(
        z=matrix, x=[str(x) for x in x_labels] if categorical else list(x_labels),
        y=[str(y) for y in y_labels] if categorical else list(y_labels),
        zmin=zmin, zmax=zmax, zmid=zmid, colorscale=colorscale, showscale=showscale, textfont=dict(size=12),
        text=np.round(matrix, 3) if annotate else None, texttemplate="%{text}" if annotate else None,
        hovertemplate=f"{y_title or 'row'} %{{y}}<br>{x_title or 'column'} %{{x}}<br>value %{{z:.4f}}<extra></extra>",
    ))
    kind = "category" if categorical else "linear"
    fig.update_yaxes(autorange="reversed", title=y_title, type=kind)
    fig.update_xaxes(title=x_title, type=kind)
    return _style(fig, title, height)


def lines(x: Sequence[float], series: Mapping[str, Sequence[float]], title: str = "", x_title: str = "",
          y_title: str = "", log_x: bool = False, log_y: bool = False, markers: bool = True,
          dashed: Sequence[str] = (), height: int = 360) -> go.Figure:
    """Several named curves over one x axis; names in `dashed` are drawn dashed (references)."""
    fig = go.Figure()
    for name, ys in series.items():
        reference = dict(dash="dash", width=1.5, color="#666666")  # drawn thin and grey, under nothing
        fig.add_trace(go.Scatter(x=list(x), y=list(ys), name=name, mode="lines+markers" if markers else "lines",
                                 line=reference if name in dashed else dict()))
    if len(series) > 10:  # plotly's default palette has ten colours
        fig.update_layout(colorway=px.colors.qualitative.Dark24)
    # log axes labelled at powers of ten only: minor labels read as misplaced numbers
    fig.update_xaxes(title=x_title, type="log" if log_x else "linear", dtick=1 if log_x else None)
    fig.update_yaxes(title=y_title, type="log" if log_y else "linear", dtick=1 if log_y else None)
    fig.update_layout(legend=dict(orientation="h", y=-0.2))
    return _style(fig, title, height)


def points_and_curves(points: Mapping[str, tuple[Sequence[float], Sequence[float]]],
                      curves: Mapping[str, tuple[Sequence[float], Sequence[float]]], title: str = "",
                      x_title: str = "", y_title: str = "", height: int = 380, equal_axes: bool = False) -> go.Figure:
    """Scattered observations with fitted curves over them (NaN leaves a gap in a curve).

    equal_axes keeps one unit the same length on both axes, so rotations draw circles."""
    fig = go.Figure()
    for name, (xs, ys) in points.items():
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), name=name, mode="markers", marker=dict(size=7, opacity=0.6)))
    for name, (xs, ys) in curves.items():
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), name=name, mode="lines", line=dict(width=3)))
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title, scaleanchor="x" if equal_axes else None)
    fig.update_layout(legend=dict(orientation="h", y=-0.2))
    return _style(fig, title, height)


def bars(labels: Sequence[str], series: Mapping[str, Sequence[float]], title: str = "", y_title: str = "",
         height: int = 320) -> go.Figure:
    """Grouped bars, one group per label and one colour per series."""
    fig = go.Figure([go.Bar(x=[str(label) for label in labels], y=list(ys), name=name) for name, ys in series.items()])
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=-0.2))
    fig.update_xaxes(type="category")
    fig.update_yaxes(title=y_title)
    return _style(fig, title, height)
