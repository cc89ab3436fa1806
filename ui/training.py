"""Training on a page, shared by the word2vec and GloVe pages: Train and Stop, a progress bar and a live loss
curve, the last model kept in the session; the neighbours of a few words; a checkpoint's stored scores.

Stop is an ordinary button: pressing it reruns the page, which ends the run in progress at its next report.
Each report has already put the model so far in the session, so the rerun shows it, "stopped at n%".
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from engine.embeddings.evaluation import PAIR_TITLES
from engine.embeddings.vectors import WordVectors
from ui.tables import neighbour_table


def loss_curve(where, losses: list[float], label: str = "loss per example",
               x_label: str = "report (equal stretches of updates)") -> None:
    """The training loss so far; a single number until there are two points to join."""
    if len(losses) < 2:
        where.metric(label[:1].upper() + label[1:], f"{losses[-1]:.3f}" if losses else "–")
    else:
        where.line_chart({label: losses}, height=220, x_label=x_label, y_label=label)


def buttons() -> bool:
    """Train and Stop in one row; whether Train was pressed."""
    b1, b2, _ = st.columns([1, 1, 4])
    start = b1.button("Train", type="primary")
    b2.button("Stop")  # its rerun ends the run in progress
    return start


def run(key: str, settings: Any, train: Callable[[Callable[[Any], bool]], Any], describe: Callable[[Any], str],
        **curve: str) -> None:
    """train(report) under a progress bar and a live loss curve. Each report keeps (settings, model so far) in
    st.session_state[key]; a run that fails on bad input (a ValueError) leaves no half-trained model there.
    The progress objects carry .fraction, .losses and .model; describe(progress) is the bar's text."""
    bar, chart = st.progress(0.0, text="Preparing the corpus…"), st.empty()

    def report(progress) -> bool:
        st.session_state[key] = (settings, progress.model)
        bar.progress(progress.fraction, text=f"{describe(progress)} · Stop to keep the model so far")
        loss_curve(chart, progress.losses, **curve)
        return True

    try:
        model = train(report)
    except ValueError:
        st.session_state.pop(key, None)
        raise
    st.session_state[key] = (settings, model)
    bar.progress(1.0, text=f"Finished in {model.seconds:.1f} s")
    chart.empty()  # the finished curve is drawn below with the model


def state(model) -> str:
    return "finished" if model.fraction_done >= 1 else f"stopped at {model.fraction_done:.0%}"


def words_in(text: str) -> list[str]:
    """Comma-separated words, lower-cased, blanks dropped."""
    return [w.strip().lower() for w in text.split(",") if w.strip()]


def neighbour_columns(page, vectors: WordVectors, words: list[str], topn: int = 8) -> None:
    """The nearest neighbours of up to four words, side by side; a bad word gets its message in its column."""
    for column, word in zip(st.columns(max(1, len(words[:4]))), words[:4]):
        with column, page.guard():
            found = vectors.neighbours(word, topn)
            neighbour_table(found, f"nearest to “{word}”")
            if found and found[-1][1] > 0.95:
                st.caption("Cosines near 1 for every neighbour: the vectors have barely moved apart yet. "
                           "Train longer, or on more text.")


def scores_text(metrics: dict) -> str:
    """A checkpoint's stored scores (engine.embeddings.evaluation.scores) in one line."""
    return (f"analogies {metrics['analogy_accuracy']:.1%} of {metrics['analogy_questions']:,}; "
            + "; ".join(f"{title} ρ = {metrics[f'{name}_spearman']:.3f}" for name, title in PAIR_TITLES.items()))
