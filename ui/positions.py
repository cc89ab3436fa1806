"""Controls and figures shared by the pages that rotate by RoPE."""
from __future__ import annotations

import plotly.graph_objects as go
import torch

from engine.positions import rope
from ui import figures
from ui.page import Page


def rope_base(page: Page, where=None) -> float:
    """The RoPE base is a choice wherever RoPE is computed, because the notes disagree on it."""
    return page.number("Base", "base", 10000.0, step=10000.0,
                       help="000's and 004's code: 100000; 001 and 002: 10000", where=where)


def pair_paths(path: torch.Tensor, base: float, pairing: str, title: str) -> go.Figure:
    """Where the first two, the middle and the last pair of q travel as RoPE turns q to positions 0..m: path
    (m + 1, d) is q rotated to each; every pair's circle is drawn with a dot where it is at m (000 eq. 108)."""
    m, head_dim = path.shape[0] - 1, path.shape[1]
    first, second = rope.pair_indices(head_dim, pairing)
    frequencies = rope.rope_frequencies(head_dim, base)
    n_pairs = head_dim // 2
    pairs = sorted({0, min(1, n_pairs - 1), n_pairs // 2, n_pairs - 1})
    return figures.points_and_curves(
        {f"pair {i} at m = {m}": ([float(path[-1, first[i]])], [float(path[-1, second[i]])]) for i in pairs},
        {f"pair {i} ({int(first[i])}, {int(second[i])}), {float(frequencies[i]):.2g} rad/step":
         (path[:, first[i]].tolist(), path[:, second[i]].tolist()) for i in pairs},
        title=title, x_title="first coordinate", y_title="second coordinate", height=460, equal_axes=True,
        paired=True)
