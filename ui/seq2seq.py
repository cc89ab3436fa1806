"""Pieces the seq2seq pages share: character labels, the source × output attention heatmap, metrics."""
from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go

from engine.seq2seq.dates import MAX_SOURCE
from engine.seq2seq.decode import unknown_characters
from ui import figures, tables

SYMBOLS = "␣ is a space, ■ the end of the output"
DATE_EXAMPLE = "the 3rd of march 2021"  # the Encoder-decoder attention page's default input
LABEL_KEY = f"Axis labels are a position, counted from 0, and a character: {SYMBOLS}."


def char_labels(text: str) -> list[str]:
    """One unique label per character (a heatmap axis merges equal labels): position and character."""
    return [f"{j} {'␣' if c == ' ' else c}" for j, c in enumerate(text)]


def word_columns(text: str) -> dict[str, list[int]]:
    """The character positions of each word, labelled with its first position, and of all spaces together:
    a few curves instead of one per character."""
    groups = {f"{match.start()} {match.group()}": list(range(match.start(), match.end()))
              for match in re.finditer(r"\S+", text)}
    spaces = [j for j, c in enumerate(text) if c.isspace()]
    return groups | ({"␣ (every space)": spaces} if spaces else {})


def output_labels(output: str, steps: int) -> list[str]:
    return char_labels(output + "■")[:steps]  # the last step emits the end symbol


def attention_heatmap(weights, source: str, output: str, title: str, x_title: str = "source character",
                      y_title: str = "output character") -> None:
    """Rows: decoding steps; columns: source positions; each row sums to 1."""
    figures.show(figures.heatmap(weights.numpy(), char_labels(source), output_labels(output, len(weights)), title,
                                 x_title=x_title, y_title=y_title, annotate=False))


@figures.shared
def coverage_steps(labels: list[str], coverage: np.ndarray, attention: np.ndarray, start: int,
                   model: str) -> go.Figure:
    """c^t before each step against the step's attention a^t, one pair of bars per source character: every step
    a frame with its own title and scale, which the figure's own slider steps through in the browser from `start`.
    Once per server for each translation and step: its frames are most of a coverage page's run."""
    heading = f"Step {{}}: coverage before it against its attention ({model})".format
    steps = range(len(coverage))
    bars = figures.bars(labels, {"c^t": coverage[start].tolist(), "a^t": attention[start].tolist()},
                        title=heading(start), y_title="weight")
    return figures.animate(
        bars, [[dict(y=coverage[s].tolist()), dict(y=attention[s].tolist())] for s in steps],
        [str(s) for s in steps], start, prefix="step t = ",
        layouts=[{"title": {"text": heading(s)},
                  "yaxis": {"range": [0, 1.05 * max(float(coverage[s].max()), float(attention[s].max()))]}}
                 for s in steps])


def checked_input(page, text: str) -> str:
    """Say on the page what the model will not see as typed."""
    if len(text) > MAX_SOURCE:
        page.notice(f"The input has {len(text)} characters; the model reads the first {MAX_SOURCE}.")
    if unknown := unknown_characters(text[:MAX_SOURCE]):
        page.notice(f"Characters the model never saw are read as unknown: {' '.join(map(repr, unknown))}")
    return text


def metrics_table(rows: dict[str, dict]) -> None:
    """Held-out metrics stored with each checkpoint, one row per model."""
    tables.dataframe({"model": list(rows), **{key: [f"{r[key]:.1%}" for r in rows.values()]
                                               for key in ("exact_match", "repetition_rate", "skip_rate")}},
                     hide_index=True)
