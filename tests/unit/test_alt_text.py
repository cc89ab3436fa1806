"""The words a screen reader says for a figure (ui/alt_text.py): made from the figure's own data, so each number
said is checked against numpy on the same data, for each kind of figure the shared builders make."""
from __future__ import annotations

import numpy as np
import pytest
from plotly.subplots import make_subplots

from ui import alt_text, figures


def test_a_line_chart_names_its_axes_and_where_each_series_goes():
    fig = figures.lines.__wrapped__([0, 1, 2, 3], {"cache": [275.0, 281.5, 279.0, 290.0], "budget": [300.0] * 4},
                                    title="<b>Cache size</b>", x_title="position", y_title="KiB", dashed=["budget"])
    said = alt_text.describe(fig)
    assert said.startswith("Cache size. Line chart of KiB against position.")
    assert "cache: 4 points, rising from 275 to 290" in said
    assert "budget: 4 points, level at 300" in said


@pytest.mark.parametrize("seed", range(5))
def test_a_series_extremes_are_numpys(seed):
    ys = np.random.default_rng(seed).normal(size=30)
    said = alt_text.describe(figures.lines.__wrapped__(list(range(30)), {"s": ys.tolist()}, title="T"))
    trend = "rising" if ys[-1] > ys[0] else "falling"
    assert f"{trend} from {ys[0]:.3g} to {ys[-1]:.3g}" in said
    if ys.max() not in (ys[0], ys[-1]) or ys.min() not in (ys[0], ys[-1]):
        assert f"lowest {ys.min():.3g}, highest {ys.max():.3g}" in said


def test_a_heatmap_gives_its_size_range_and_largest_cell():
    matrix = np.random.default_rng(0).random((3, 5))
    said = alt_text.describe(figures.heatmap.__wrapped__(matrix, list("abcde"), ["q1", "q2", "q3"], title="Weights",
                                                         x_title="key", y_title="query"))
    row, column = np.unravel_index(matrix.argmax(), matrix.shape)
    assert said.startswith("Weights. Heatmap of query against key: 3 rows by 5 columns")
    assert f"values from {matrix.min():.3g} to {matrix.max():.3g}" in said
    assert f"largest (row q{row + 1}, column {'abcde'[column]})" in said


def test_bars_name_their_highest():
    said = alt_text.describe(figures.bars.__wrapped__(["x", "y", "z"], {"A": [1.0, 3.0, 2.0]}, title="B",
                                                      y_title="count"))
    assert "Bar chart of count. A: 3 bars, highest 3 at y, lowest 1" in said


def test_a_tree_lists_its_labels():
    nodes = [figures.TreeNode("0", None, "root", "", 0.0), figures.TreeNode("1", "0", "left", "", 1.0),
             figures.TreeNode("2", "0", "right", "", 2.0)]
    assert "Diagram of 3 labelled nodes: root, left, right" in alt_text.describe(figures.tree.__wrapped__(nodes))


def test_panels_are_said_under_their_titles_and_steps_are_counted():
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Scores", "Output"))
    fig.add_scatter(x=[1, 2], y=[1.0, 2.0], name="a", row=1, col=1)
    fig.add_bar(x=["p", "q"], y=[5.0, 4.0], name="b", row=1, col=2)
    frames = [[{"y": [1.0, 2.0]}], [{"y": [2.0, 1.0]}]]
    said = alt_text.describe(figures.animate(fig, frames, ["1", "2"], 0))
    assert "Scores: Line chart" in said and "Output: Bar chart" in said and "highest 5 at p" in said
    assert "Plays through 2 steps" in said


def test_a_shared_figure_carries_its_words_to_the_browser():
    fig = figures.lines([1, 2], {"s": [1.0, 2.0]}, title="Carried")
    assert fig.to_dict()["layout"]["meta"][figures.ALT] == alt_text.describe(fig)
