"""Training on a page, shared by the word2vec and GloVe pages: Train and Stop, a progress bar and a live loss
curve, the last model kept in the session; the neighbours of a few words; a checkpoint's stored scores.

Training is a job of the server's line of heavy work (ui/jobs.py): two students pressing Train on the same
settings share one run. Stop is an ordinary button: pressing it reruns the page, which leaves the job (and so
does any other control); a run nobody waits for stops at its next report. Each report has already put the model
so far in the session, so the rerun shows it, "stopped at n%".
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner_utils.exceptions import ScriptControlException

from engine.embeddings.evaluation import PAIR_TITLES
from engine.embeddings.vectors import UnknownWordError, WordVectors
from engine.waiting_line import LineFull
from ui import figures, queued
from ui.snippet import Name
from ui.tables import neighbour_table


def loss_curve(losses: list[float], label: str = "loss per example",
               x_label: str = "report (equal stretches of updates)", live: bool = False) -> None:
    """The training loss; a single number until there are two points to join. A shared figure: every student
    watching one training draws the same curve at each report, built once (an Altair chart built per session and
    report held the server's Python for long enough that 30 students training at once made those moving controls
    wait seconds). The live curve, under a running job's bar, is titled apart from the trained model's: the last
    report can show the same losses in the same run, and two charts of one figure would share an element id."""
    if len(losses) < 2:
        st.metric(label[:1].upper() + label[1:], f"{losses[-1]:.3f}" if losses else "–")
    else:
        figures.show(figures.lines(list(range(1, len(losses) + 1)), {label: list(losses)},
                                   title="Training loss so far" if live else "Training loss", x_title=x_label,
                                   y_title=label, markers=False, height=260))


def buttons() -> bool:
    """Train and Stop in one row; whether Train was pressed."""
    b1, b2, _ = st.columns([1, 1, 4])
    start = b1.button("Train", key="train", type="primary")
    b2.button("Stop", key="stop")  # its rerun ends the run in progress
    return start


def run(kind: str, key: str, settings: Hashable, train: Callable[[Callable[[Any], bool]], Any],
        describe: Callable[[Any], str], estimate: float, reads: Hashable = None, **curve: str) -> None:
    """train(on_progress) as a job of the server's line (ui/queued.py), shared with every session training the
    same settings: its place while it waits, then a progress bar and a live loss curve. Each report keeps
    (settings, model so far) in st.session_state[key]; a run that fails leaves no half-trained model there.
    The progress objects carry .fraction, .losses and .model; describe(progress) is the bar's text. settings and
    `reads` (the corpus, where settings do not name it) are the job's key: together, everything train reads.
    estimate: seconds, until a run of this kind has been timed on the server."""
    chart, latest, drawn = None, None, None  # the live curve's place is made under the job's bar, at its first report

    def work(report) -> Any:
        return train(lambda p: report(p.fraction, f"{describe(p)} · Stop to keep the model so far", p.model))

    def show(model) -> None:
        nonlocal chart, latest, drawn
        if chart is None:
            chart = st.empty()
        latest = model
        st.session_state[key] = (settings, model)
        if tuple(model.losses) != drawn:  # a report without a new loss would draw the same chart: one element id twice
            drawn = tuple(model.losses)
            with chart:
                loss_curve(model.losses, live=True, **curve)

    try:
        model = queued.run(kind, repr((settings, reads)), work, "Training", estimate, show)
    except ScriptControlException:  # Stop, another control, or the student left: keep the model so far
        if latest is not None and latest.fraction_done < 1:
            # the run may go on for another session that trains the same settings: keep a copy it cannot move
            st.session_state[key] = (settings, copy.deepcopy(latest))
        raise
    except LineFull:  # nothing ran: the model of an earlier run stays
        raise
    except Exception:
        st.session_state.pop(key, None)
        raise
    st.session_state[key] = (settings, model)
    if chart is not None:
        chart.empty()  # the finished curve is drawn below with the model
    st.progress(1.0, text=f"Finished in {model.seconds:.1f} s")


def finished(result: tuple[Hashable, Any] | None, settings: Hashable) -> bool:
    """Whether the session's last (settings, model) is a finished run of these settings: what the Code view
    records as the training it writes."""
    return result is not None and result[0] == settings and result[1].fraction_done >= 1


def state(model) -> str:
    return "finished" if model.fraction_done >= 1 else f"stopped at {model.fraction_done:.0%}"


def words_in(text: str) -> list[str]:
    """Comma-separated words, lower-cased, blanks dropped."""
    return [w.strip().lower() for w in text.split(",") if w.strip()]


def neighbour_columns(page, vectors: WordVectors, words: list[str], recorded: bool, topn: int = 8) -> None:
    """The nearest neighbours of up to four words, side by side; a bad word gets its message in its column. When
    `recorded` (vectors is a value of the Code view's), each known word's neighbours are recorded as
    `nearest_<word>`; an unknown word is left out of the code."""
    for i, (column, word) in enumerate(zip(st.columns(max(1, len(words[:4]))), words[:4])):
        with column:
            if word not in vectors:  # one column's typo, not the page's: the code keeps the other words
                st.warning(str(UnknownWordError(word, vectors.suggest(word), len(vectors))), icon=":material/warning:")
                continue
            found = (page.code.call(nearest_name(word, i), vectors.neighbours, word, topn) if recorded
                     else vectors.neighbours(word, topn))
            neighbour_table(found, f"nearest to “{word}”")
            if found and found[-1][1] > 0.95:
                st.caption("Cosines near 1 for every neighbour: the vectors have barely moved apart yet. "
                           "Train longer, or on more text.")


def later_neighbours(code, words: list[str], vocab, topn: int = 8) -> None:
    """What neighbour_columns will show once `vectors` (a later step's result) is trained, for the Code view:
    the words of the first four that are in the vocabulary."""
    for i, word in enumerate(words[:4]):
        if word in vocab.index:
            code.later(nearest_name(word, i), WordVectors.neighbours, Name("vectors"), word, topn)


def nearest_name(word: str, i: int) -> str:
    """The snippet's name for a looked-up word's neighbours: nearest_<word>, or nearest_<i + 1> where the word
    cannot be part of a Python name."""
    name = f"nearest_{word}"
    return name if name.isidentifier() else f"nearest_{i + 1}"


def scores_text(metrics: dict) -> str:
    """A checkpoint's stored scores (engine.embeddings.evaluation.scores) in one line."""
    return (f"analogies {metrics['analogy_accuracy']:.1%} of {metrics['analogy_questions']:,}; "
            + "; ".join(f"{title} ρ = {metrics[f'{name}_spearman']:.3f}" for name, title in PAIR_TITLES.items()))
