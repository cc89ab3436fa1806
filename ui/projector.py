"""The embedding projector's vector sets, its projections (computed once per server and shared) and its figure."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from engine.embeddings.glove import load_glove
from engine.embeddings.projection import Projection, TSNEConfig, choose_words, project
from engine.embeddings.train import load_shipped_word2vec
from engine.embeddings.train_fasttext import load_shipped_fasttext
from engine.embeddings.train_glove import load_shipped_glove
from engine.embeddings.vectors import WordVectors
from ui import figures, palette, queued
from ui.code import Recipe
from ui.jobs import Report
from ui.loaders import checkpoint_vectors, fasttext_checkpoint, glove, glove_checkpoint, word2vec_checkpoint


def _glove_6b(code: Recipe) -> WordVectors:
    return code.call("word_vectors", load_glove, via=glove, note="GloVe 6B 50d")


def _word2vec(code: Recipe) -> WordVectors:
    model, _ = code.call("model, extra", load_shipped_word2vec, "wikipedia_sgns", via=word2vec_checkpoint,
                         note="our skip-gram on the Wikipedia sample: its input vectors")
    return code.call("word_vectors", model.word_vectors, via=lambda: checkpoint_vectors("wikipedia_sgns"))


def _our_glove(code: Recipe) -> WordVectors:
    return code.call("word_vectors, extra", load_shipped_glove, "glove_wikipedia", via=glove_checkpoint,
                     note="our GloVe on the Wikipedia sample's counts: u + v")[0]


def _fasttext(code: Recipe) -> WordVectors:
    model, _ = code.call("model, extra", load_shipped_fasttext, via=lambda: fasttext_checkpoint()[::2],
                         note="our FastText on the Wikipedia sample: a word is the mean of its own and n-gram rows")
    return code.call("word_vectors", model.word_vectors, via=lambda: fasttext_checkpoint()[1])


@dataclass(frozen=True)
class VectorSet:
    label: str
    load: Callable[[], WordVectors]  # a cached loader: one copy per server
    about: str
    record: Callable[[Recipe], WordVectors]  # the same copy, recorded as the engine calls that load it (ui/code.py)


# The URL names the key; a new vector set is one entry here.
VECTOR_SETS = {
    "glove_6b": VectorSet("GloVe 6B 50d", glove, "400,000 words, 50 dimensions, trained on 6 billion tokens (000 §4.2)",
                          _glove_6b),
    "word2vec": VectorSet("our word2vec", lambda: checkpoint_vectors("wikipedia_sgns"),
                          "9,002 words, 100 dimensions: our skip-gram on the Wikipedia sample (000 §2.2, §3)",
                          _word2vec),
    "our_glove": VectorSet("our GloVe", lambda: glove_checkpoint("glove_wikipedia")[0],
                           "9,002 words, 50 dimensions: our GloVe on the Wikipedia sample's counts (000 §4.2)",
                           _our_glove),
    "fasttext": VectorSet("our FastText", lambda: fasttext_checkpoint()[1],
                          "9,002 words, 100 dimensions: our FastText on the Wikipedia sample, each word the mean of "
                          "its own and its n-grams' vectors (000 §4.1)", _fasttext),
}


# The page's defaults: its view is computed as the server starts (ui/defaults.py), before the first visitor
DEFAULT = dict(source="glove_6b", method="t-SNE", dims=2, n=1000, perplexity=30, analogy=("man", "king", "woman"))


def analogy_arrows(a: str, b: str, c: str, d: str) -> list[tuple[str, str, str]]:
    """The arrows b − a and d − c, d the 3CosAdd answer to a : b :: c : ? (000 eq. 1)."""
    return [(f"b − a: {a} → {b}", a, b), (f"d − c: {c} → {d} (3CosAdd)", c, d)]


@dataclass(frozen=True)
class View:
    """One projection of some words, shared by every session that asks for it: never modify it."""

    words: tuple[str, ...]
    projection: Projection
    seconds: float  # to compute, on this server


# the words keyed by their pickle: Streamlit hashes a tuple word by word, and a view's thousand words were most of a
# warm change's run (issue 47)
@st.cache_resource(max_entries=32, show_spinner=False, hash_funcs=figures.PICKLED)
def _kept(source: str, words: tuple[str, ...], method: str, dims: int, perplexity: int) -> list[View]:
    """One setting's view once computed (an empty list until then), kept for every visitor of the server."""
    return []


@st.cache_data(max_entries=64, show_spinner=False)
def analogy_answer(source: str, a: str, b: str, c: str) -> list[tuple[str, float]]:
    """The 3CosAdd answer to a : b :: c : ? in a vector set, once per server for each analogy: it scores every word
    of the set (400,000 of GloVe's), which every run of the page did again."""
    return VECTOR_SETS[source].load().analogy(a, b, c, topn=1)


@st.cache_data(max_entries=64, show_spinner=False, hash_funcs=figures.PICKLED)
def chosen_words(source: str, n: int, method: str, own: tuple[str, ...]) -> list[str]:
    """choose_words over a vector set's vocabulary, once per server for each setting (it reads 4n words)."""
    return choose_words(VECTOR_SETS[source].load().words, n, method, own)


def view(source: str, words: tuple[str, ...], method: str, dims: int, perplexity: int) -> View:
    """The projection of words of a vector set by "PCA" or "t-SNE", computed once per server and setting. PCA
    takes a moment and runs here; t-SNE takes seconds and is a job of the server's line (ui/queued.py), whose
    place and progress every visitor asking for the same setting sees, and shares."""
    if not (kept := _kept(source, words, method, dims, perplexity)):
        X = _rows(source, words)  # (N, d)
        if method == "PCA":
            kept[:] = [_compute(X, words, method, dims, perplexity)]
        else:
            kept[:] = [queued.run("t-SNE", (source, words, dims, perplexity), _tsne_job(X, words, dims, perplexity),
                                  f"t-SNE of {len(words):,} words", estimate=1 + len(words) / 400)]
    return kept[0]


def default_view() -> View:
    """The view a visitor sees first: one t-SNE of 1,000 GloVe words and the default analogy's, per server,
    computed as the server starts (ui/defaults.py): a visitor arriving meanwhile joins the same job."""
    vectors = VECTOR_SETS[DEFAULT["source"]].load()
    own = [*DEFAULT["analogy"], vectors.analogy(*DEFAULT["analogy"], topn=1)[0][0]]
    words = tuple(choose_words(vectors.words, DEFAULT["n"], DEFAULT["method"], own))
    setting = (DEFAULT["source"], words, DEFAULT["dims"], DEFAULT["perplexity"])
    kept = _kept(DEFAULT["source"], words, DEFAULT["method"], DEFAULT["dims"], DEFAULT["perplexity"])
    if not kept:
        kept[:] = [queued.outside_a_page("t-SNE", setting, _tsne_job(_rows(DEFAULT["source"], words), *setting[1:]))]
    return kept[0]


def _rows(source: str, words: tuple[str, ...]) -> np.ndarray:
    vectors = VECTOR_SETS[source].load()
    return vectors.vectors[[vectors.index[w] for w in words]]  # (N, d)


def _tsne_job(X: np.ndarray, words: tuple[str, ...], dims: int, perplexity: int) -> Callable[[Report], View]:
    def work(report: Report) -> View:
        def progress(it: int, total: int, kl: float) -> bool:
            state = f"KL(P‖Q) = {kl:.3f}" if kl == kl else "calibrating P to the perplexity"  # NaN before the first
            return report(it / total, f"t-SNE of {len(words):,} words: iteration {it} of {total}, {state}")
        return _compute(X, words, "t-SNE", dims, perplexity, progress)
    return work


def _compute(X, words, method, dims, perplexity, on_progress=None) -> View:
    start = time.perf_counter()
    if on_progress is not None:
        on_progress(0, TSNEConfig.iterations, float("nan"))
    return View(words, project(X, method, dims, perplexity, on_progress), time.perf_counter() - start)


# vermillion and reddish purple arrows (b − a and d − c), orange neighbour lines: apart from each other and from the
# pale blue words under simulated colour-vision deficiencies (tests/unit/test_palettes.py)
ARROW_COLOURS = (palette.SERIES_COLOURS[4], palette.SERIES_COLOURS[5])
NEIGHBOUR_COLOUR = palette.SERIES_COLOURS[0]


@figures.shared
def projection(coords: np.ndarray, words: tuple[str, ...], title: str, labelled: tuple[int, ...] = (),
               centre: int | None = None, neighbours: tuple[int, ...] = (),
               arrows: tuple[tuple[str, int, int], ...] = ()) -> go.Figure:
    """Every word a small point (its name on hover); the labelled ones named; lines from the centre word to
    its neighbours; arrows (name, from, to) between words. coords (N, 2) or (N, 3)."""
    flat = coords.shape[1] == 2
    kind = "scatter" if flat else "scatter3d"

    def at(rows, **kwargs):  # the x, y (and z) of some rows, None between segments passed through
        columns = [[None if r is None else float(coords[r, j]) for r in rows] for j in range(coords.shape[1])]
        return dict(type=kind, **dict(zip("xyz", columns)), **kwargs)

    # plain dicts, as figures.specified takes them: plotly's validation of 10,000 points' hover texts took 46 ms of
    # each new picture (a new neighbour count redraws it)
    traces = [at(range(len(words)), mode="markers", name="words", hovertext=list(words), hoverinfo="text",
                 marker=dict(size=5 if flat else 2, color="#7f9fbf", opacity=0.6))]
    if centre is not None and neighbours:
        rows = [r for n in neighbours for r in (centre, n, None)]
        traces.append(at(rows, mode="lines", name=f"neighbours of {words[centre]}", hoverinfo="skip",
                         line=dict(color=NEIGHBOUR_COLOUR, width=2)))
    for (name, a, b), colour in zip(arrows, ARROW_COLOURS):
        tip = dict(symbol="arrow", angleref="previous", size=[0, 16]) if flat else dict(symbol="diamond", size=[0, 6])
        traces.append(at([a, b], mode="lines+markers", name=name, hoverinfo="skip", line=dict(color=colour, width=3),
                         marker=dict(color=colour, **tip)))
    if labelled:
        traces.append(at(labelled, mode="markers+text", name="named", text=[words[i] for i in labelled],
                         textposition="top center", hoverinfo="text", showlegend=False,
                         marker=dict(size=8 if flat else 4, color="#1f2f4f")))
    # one unit as long on both axes (or all three): distances read the same every way
    layout = dict(legend=dict(orientation="h", y=-0.08), xaxis=figures.axis_spec(),
                  yaxis=figures.axis_spec(scaleanchor="x" if flat else None))
    if not flat:
        layout["scene"] = dict(aspectmode="data")
    return figures.specified(traces, layout, title, 560)
