"""The margins plotly.js's automargin will give a figure, worked out before it is sent, so the browser draws it once.

plotly draws a new figure with the margins it is given, measures its tick labels and colour bar, and if they need
more room draws the whole figure again (`Plots.doAutoMargin`). Streamlit mounts every changed chart anew, so each
figure a control changed was drawn twice: 40% of Plotly's time on the coverage page. A figure sent with the margins
automargin would choose is drawn once. automargin stays on: where a guess falls short (a label plotly rotates to
fit), plotly grows the margin as before, and nothing is cut off. A legend's rows depend on the page's width: the
margin holds one, and ui/client.js adds those it wraps into before plotly draws.

The rules below are plotly's, read off what it drew in chromium (Streamlit 1.67's plotly.js, the page's Source Sans)
for 74 heatmaps and 72 line charts at 13 and 20 px; tests/e2e checks that heatmaps and line charts come out of their
first draw unchanged.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

# Advance widths in em of Source Sans, the page's font and the figures' (measured in chromium: canvas measureText
# at 13 px, divided by 13; at 20 px they are the same to 1e-5)
EM = {
    **dict.fromkeys("0123456789#$+<=>^~−×≤≥", 0.497), " ": 0.2, "!": 0.289, '"': 0.426, "%": 0.824, "&": 0.609,
    "'": 0.249, "(": 0.303, ")": 0.303, "*": 0.418, ",": 0.249, "-": 0.311, ".": 0.249, "/": 0.35, ":": 0.249,
    ";": 0.249, "?": 0.425, "@": 0.847, "[": 0.303, "\\": 0.35, "]": 0.303, "_": 0.5, "`": 0.542, "{": 0.303,
    "|": 0.241, "}": 0.303, "A": 0.543, "B": 0.588, "C": 0.571, "D": 0.615, "E": 0.527, "F": 0.494, "G": 0.617,
    "H": 0.652, "I": 0.263, "J": 0.479, "K": 0.579, "L": 0.486, "M": 0.727, "N": 0.647, "O": 0.664, "P": 0.566,
    "Q": 0.664, "R": 0.569, "S": 0.534, "T": 0.536, "U": 0.645, "V": 0.515, "W": 0.786, "X": 0.513, "Y": 0.476,
    "Z": 0.539, "a": 0.504, "b": 0.553, "c": 0.456, "d": 0.555, "e": 0.496, "f": 0.292, "g": 0.504, "h": 0.544,
    "i": 0.246, "j": 0.247, "k": 0.495, "l": 0.255, "m": 0.829, "n": 0.547, "o": 0.542, "p": 0.555, "q": 0.555,
    "r": 0.347, "s": 0.419, "t": 0.338, "u": 0.544, "v": 0.467, "w": 0.719, "x": 0.446, "y": 0.467, "z": 0.425,
    "…": 0.948, "·": 0.249, "√": 0.557, "Σ": 0.538, "α": 0.56, "β": 0.565, "γ": 0.484, "λ": 0.494, "ω": 0.701,
    "θ": 0.522, "π": 0.586, "ᵀ": 0.356, "′": 0.249, "“": 0.426, "”": 0.426, "’": 0.249, "–": 0.48, "—": 0.8,
    "°": 0.331, "→": 0.619, "←": 0.619, "é": 0.496, "è": 0.496, "à": 0.504, "ü": 0.544, "ö": 0.542, "ä": 0.504,
    "ñ": 0.547, **dict.fromkeys("₀₁₂₃₄₅₆₇₈₉⁰¹²³⁴⁵⁶⁷⁸⁹⁻", 0.367), **dict.fromkeys("■□", 0.6), "▁": 0.769,
    "Ġ": 0.617, "Ċ": 0.571, "⏎": 0.838, "↵": 0.838, "␣": 0.635, "∞": 0.782, "≈": 0.497, "≠": 0.497, "÷": 0.497,
    "§": 0.497, "⋯": 1.0, "ε": 0.448, "δ": 0.531, "μ": 0.562, "σ": 0.546, "τ": 0.458, "φ": 0.68, "η": 0.541,
    "ρ": 0.549, "Δ": 0.588, "Θ": 0.664, "∂": 0.528, "∝": 0.714, "⟶": 1.434, "½": 0.808, "ℓ": 0.409, "‑": 0.311,
    **dict.fromkeys("▒▌", 0.708), "⊙": 0.838, "‖": 0.391,
}
UNKNOWN_EM = 1.0  # a character not above (a CJK one, an emoji): as wide as the widest, so the margin errs wide
# a drawn label's box is up to 2.5 px (at 13 px) wider than its advances; a margin this much wider is never short
SLACK_EM = 0.2
# plotly's room beside the labels, in px, from its drawn figures: a left y axis takes its widest label plus
# 26.8 + 0.8 em (title band included, titled or not); a bottom x axis of level labels 25.2 + 2.23 em; a colour bar
# its widest label plus 60 (bar, padding and tick gap)
Y_GAP_PX, Y_GAP_EM = 26.8, 0.8
X_DEPTH_PX, X_DEPTH_EM = 25.2, 2.2286
COLOUR_BAR_PX = 60
COLOUR_BAR_PAD_PX = 20  # a colour bar runs the plot's height less its padding above and below
BASE_PX = 10  # the margin of a side nothing pushes (the figures' own)
# what plotly adds to each push: 12 px, or the smallest margin sent if less (BASE_PX where a side is not given)
PUSH_PAD_PX = 12
# a horizontal legend's row is its line height (1.3 em, at least 16 px) and 3 px; 10 px above and below the rows
LEGEND_ROW_EM, LEGEND_ROW_MIN_PX, LEGEND_ROW_PAD_PX, LEGEND_PAD_PX = 1.3, 16, 3, 10
AUTORANGE_PAD = 0.05  # autorange keeps the data 5% of the axis's length (and a marker's size) from each end
# the labels plotly writes at the powers of ten on a log axis ticked every decade (dtick 1; SI suffixes from 10^4)
DECADE_LABELS = {-3: "0.001", -2: "0.01", -1: "0.1", 0: "1", 1: "10", 2: "100", 3: "1000", 4: "10k", 5: "100k",
                 6: "1M", 7: "10M", 8: "100M", 9: "1B"}


def label_px(text: str, font_px: float) -> float:
    """How wide plotly draws text in the page's font at font_px."""
    return font_px * sum(EM.get(ch, UNKNOWN_EM) for ch in text)


def widest_px(texts: Iterable[str], font_px: float) -> float:
    return max((label_px(text, font_px) for text in texts), default=0.0)


def linear_tick_labels(low: float, high: float, length_px: float) -> list[str] | None:
    """The labels plotly's automatic ticks write on a linear axis of that length from low to high (a colour bar's),
    as it writes them: dtick the first of 2, 5, 10 times a power of ten above the range over 4-9 ticks and one,
    as few decimals as dtick needs, "−" for minus. None where plotly would switch to SI suffixes or exponents."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return None
    dtick = _linear_dtick(high - low, min(max(length_px / 40, 4), 9) + 1)
    if dtick < 1e-4 or max(abs(low), abs(high)) >= 1e4:
        return None
    decimals = max(0, -math.floor(math.log10(dtick) + 1e-9))
    first, last = math.ceil(low / dtick - 1e-9), math.floor(high / dtick + 1e-9)
    labels = []
    for k in range(first, last + 1):
        text = f"{k * dtick:.{decimals}f}"
        text = text.rstrip("0").rstrip(".") if "." in text else text
        labels.append("0" if text in ("-0", "") else text.replace("-", "−"))
    return labels


def _linear_dtick(span: float, ticks: float) -> float:
    """plotly's automatic tick step for about that many ticks over span: the first of 2, 5, 10 times a power of
    ten above the rough step."""
    rough = span / ticks
    base = 10 ** math.floor(math.log10(rough))
    return base * next(step for step in (2, 5, 10) if step > rough / base)


def marker_pad_px(size: float) -> float:
    """What autorange keeps beside a marker of that size: its size / 1.6, at least 3 px."""
    return max(size / 1.6, 3)


MARKER_PAD_PX = marker_pad_px(6)  # a marker of plotly's default size


def _plotted(values: Iterable[float], log: bool) -> list[float]:
    """The values an axis shows (finite; positive on a log axis), or none where they span nothing."""
    points = [float(v) for v in values if v is not None and math.isfinite(v) and (v > 0 or not log)]
    return points if points and max(points) > min(points) else []


def decade_labels(low: float, high: float) -> list[str] | None:
    """The labels of a log axis ticked every decade from 10^low to 10^high; None outside DECADE_LABELS."""
    exponents = range(math.ceil(low - 1e-9), math.floor(high + 1e-9) + 1)
    if any(k not in DECADE_LABELS for k in exponents):
        return None
    return [DECADE_LABELS[k] for k in exponents]


def autorange_labels(values: Iterable[float], log: bool, marker_px: float, length_px: float) -> list[str] | None:
    """The tick labels plotly writes on an autoranged numeric y axis of that length through values (markers of
    radius marker_px, 0 for plain lines; a log axis ticked every decade). The range is taken a px wider at each end
    than plotly's, so that an end tick it keeps is never missed. None where plotly's labels are not foreseen."""
    points = _plotted(values, log)
    if not points:
        return None
    if log:
        points = [math.log10(v) for v in points]
    pad = AUTORANGE_PAD * length_px + marker_px
    if length_px <= 2 * pad + 1:
        return None
    per_px = (max(points) - min(points)) / (length_px - 2 * pad)
    low, high = min(points) - per_px * (pad + 1), max(points) + per_px * (pad + 1)
    return decade_labels(low, high) if log else linear_tick_labels(low, high, length_px)


def end_label(values: Iterable[float], log: bool) -> str | None:
    """The label at the right end of an x axis that autorange fits tight to values (plain lines: no markers, so no
    room beside them), where a tick sits there whatever the axis's length: at a power of ten on a log axis ticked
    every decade, at a multiple of every step plotly could choose for 5 to 10 ticks on a linear one. Half of it
    hangs past the plot and pushes the right margin. None elsewhere."""
    if not (points := _plotted(values, log)):
        return None
    low, high = min(points), max(points)
    if log:
        exponent = math.log10(high)
        return DECADE_LABELS.get(round(exponent)) if abs(exponent - round(exponent)) < 1e-9 else None
    for ticks in range(5, 11):
        steps = high / _linear_dtick(high - low, ticks)
        if abs(steps - round(steps)) > 1e-9:
            return None
    labels = linear_tick_labels(low, high, 40 * 4)
    return labels[-1] if labels else None


def colour_range(matrix: np.ndarray, zmin: float | None, zmax: float | None,
                 zmid: float | None) -> tuple[float, float]:
    """The range a heatmap's colour bar spans: zmin and zmax where given, else the data's; zmid centres it."""
    finite = matrix[np.isfinite(matrix)]
    low = float(finite.min()) if zmin is None and finite.size else zmin
    high = float(finite.max()) if zmax is None and finite.size else zmax
    if low is None or high is None:
        return math.nan, math.nan
    if zmid is not None and (zmin is None or zmax is None):
        half = max(abs(high - zmid), abs(low - zmid))
        low, high = (zmid - half if zmin is None else low), (zmid + half if zmax is None else high)
    return float(low), float(high)


def left_of_ranges(font_px: int, ranges: Sequence[tuple[float, float]], length_px: float) -> int | None:
    """The left margin of a numeric y axis of that length that shows each of ranges in turn (a stepped figure's
    frames): room for the widest label any of them writes. None where plotly's labels are not foreseen."""
    labels = [linear_tick_labels(low, high, length_px) for low, high in ranges]
    if not labels or any(frame is None for frame in labels):
        return None
    return _left_of(max(widest_px(frame, font_px) for frame in labels), font_px)


def _left_of(widest_label_px: float, font_px: int) -> int:
    """The left margin a y axis whose widest label is that wide asks for, and the slack."""
    return math.ceil(widest_label_px + Y_GAP_PX + Y_GAP_EM * font_px + SLACK_EM * font_px)


def heatmap(font_px: int, below_top_px: int, y_labels: Sequence[str] | None,
            colours: tuple[float, float] | None) -> dict:
    """A heatmap's left, right and bottom margins: y_labels its category rows' labels (None: a numeric axis, left to
    automargin), colours the colour bar's range (None: no colour bar). below_top_px is the figure's height under its
    top margin; the x labels are taken to stand level (plotly turns them when they crowd, and grows the margin)."""
    slack = SLACK_EM * font_px
    bottom = X_DEPTH_PX + X_DEPTH_EM * font_px
    margin = {"b": math.ceil(bottom + slack)}
    if y_labels is not None:
        margin["l"] = _left_of(widest_px(y_labels, font_px), font_px)
    if colours is None:
        margin["r"] = BASE_PX
    elif labels := linear_tick_labels(*colours, below_top_px - bottom - COLOUR_BAR_PAD_PX):
        margin["r"] = math.ceil(widest_px(labels, font_px) + COLOUR_BAR_PX + slack)
    return margin


def lines(font_px: int, below_top_px: int, x: Sequence[float], values: Sequence[float], log_x: bool, log_y: bool,
          marker_px: float, legend: bool) -> dict:
    """A line chart's left, right and bottom margins: x its x values where autorange fits the x axis tight to them
    (plain lines, no error bars; else empty), values every y it draws (error bars' ends too), marker_px the markers'
    radius (0 for plain lines), legend whether plotly shows one (two curves or more).
    below_top_px is the figure's height under its top margin. A legend is taken as one row: how many it takes
    depends on the page's width, so ui/client.js adds the rows it wraps into there (figures.LEGEND_ROW), and no
    margin is wider than plotly's by more than the slack."""
    slack = SLACK_EM * font_px
    bottom = X_DEPTH_PX + X_DEPTH_EM * font_px + (legend_row_px(font_px) + LEGEND_PAD_PX if legend else 0)
    margin = {"b": math.ceil(bottom + slack)}
    if labels := autorange_labels(values, log_y, marker_px, below_top_px - margin["b"]):
        margin["l"] = _left_of(widest_px(labels, font_px), font_px)
    if last := end_label(x, log_x):
        margin["r"] = max(BASE_PX, math.ceil(label_px(last, font_px) / 2 + PUSH_PAD_PX + slack))
    return margin


def scatter(font_px: int, below_top_px: int, traces: Sequence[dict], log_x: bool, log_y: bool) -> dict:
    """lines() for scatter traces as plotly reads them (dicts of x, y, mode, marker, error_y): every y and error
    bar's end, the widest marker's padding, x fitted tight where no trace has markers or error bars (autorange gives
    those room beside them), and a legend for two traces or more."""
    marked = [trace for trace in traces if "markers" in trace["mode"]]
    errors = [trace for trace in traces if trace.get("error_y")]
    values = [y for trace in traces for y in trace["y"]] + [
        y + end for trace in errors
        for y, below, above in zip(trace["y"], trace["error_y"]["arrayminus"], trace["error_y"]["array"])
        if y is not None for end in (-below, above)]
    marker_px = max((marker_pad_px(size) if (size := (trace.get("marker") or {}).get("size")) else MARKER_PAD_PX
                     for trace in marked), default=0)
    x = [x for trace in traces for x in trace["x"]] if not marked and not errors else []
    return lines(font_px, below_top_px, x, values, log_x, log_y, marker_px, legend=legend_shown(traces))


def legend_row_px(font_px: int) -> float:
    """The height of a horizontal legend's row of one-line entries."""
    return max(LEGEND_ROW_EM * font_px, LEGEND_ROW_MIN_PX) + LEGEND_ROW_PAD_PX


def legend_shown(traces: Sequence[dict]) -> bool:
    """Whether plotly shows these scatter traces' legend: for two or more."""
    return len(traces) > 1
