"""What both GloVe pages share: the corpus to count (a shipped one or pasted text) and its co-occurrence counts X
(000 §4.2, where the notes call them P), counted once per server and setting for the shipped corpora."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import streamlit as st

from engine.embeddings.cooccurrence import cooccurrence, weighting
from engine.embeddings.corpus import Vocab, chunked, load_corpus, tokenize
from engine.embeddings.evaluation import on_shared_vocabulary
from engine.embeddings.vectors import WordVectors
from engine.errors import InputError
from ui.loaders import cooccurrence_counts, corpus, corpus_vocab, encoded_corpus, glove, glove_checkpoint

SOURCES = ("wikipedia", "lee", "pasted")
SOURCE_HELP = "wikipedia: 106 articles, 453k words; lee: 300 news stories, 60k words; pasted: your text"
MIN_COUNT = 5  # the shipped corpora keep words seen 5 times, as the checkpoint does; pasted text keeps every word
PASTE_KEY = "glove_paste"


@dataclass(frozen=True)
class Counts:
    source: str
    text: str  # the pasted text; empty for a shipped corpus
    words: int  # running words of the corpus
    vocab: Vocab
    X: sp.csr_matrix  # (V, V)


def choose_corpus(page, where, default: str = "wikipedia") -> str:
    return page.select("Corpus", "corpus", SOURCES, default, where=where, help=SOURCE_HELP)


def count(source: str, window: int, code, harmonic: bool | None = None) -> Counts:
    """X of the chosen corpus; pasted text is typed in a box drawn here. An InputError when nothing co-occurs.
    Recorded in `code`, the page's recipe (ui/code.py), from the corpus on. harmonic: the page's switch between
    1/d and 1 per pair; None, glove.c's 1/d, left out of the code."""
    text = ""
    if source == "pasted":
        text = st.text_area("Your corpus (one sentence or paragraph per line)", max_chars=200_000, key=PASTE_KEY,
                            placeholder="Paste a few thousand words of text…")
        sentences = code.call("sentences", chunked, code.call("lines", tokenize, text))
        vocab = code.call("vocab", Vocab.build, sentences, 1, note="pasted text keeps every word")
        ids, sentence = code.call("ids, sentence", vocab.encode, sentences)
    else:
        sentences = code.call("sentences", load_corpus, source, via=corpus)
        vocab = code.call("vocab", Vocab.build, sentences, MIN_COUNT, via=lambda _, m: corpus_vocab(source, m))
        ids, sentence = code.call("ids, sentence", vocab.encode, sentences,
                                  via=lambda _: encoded_corpus(source, MIN_COUNT))
    V = code.let("V", lambda: len(vocab))
    weighted = harmonic is None or harmonic
    shipped = None if source == "pasted" else lambda *_: cooccurrence_counts(source, window, weighted, MIN_COUNT)
    X = code.call("X", cooccurrence, ids, sentence, V, window, *(() if harmonic is None else (harmonic,)), via=shipped,
                  note="X_ij: word j within the window of word i, a pair d words apart adding 1/d as glove.c"
                       + ("" if harmonic is None else " (or 1, harmonic off)"))
    words = code.let("words", lambda: sum(len(s) for s in sentences))
    if words == 0:
        raise InputError("Paste some text to count: the corpus is empty.")
    if X.nnz == 0:
        raise InputError(f"No two words of these {words} co-occur within {window} words of each other: "
                         "paste more text, a few sentences at least.")
    return Counts(source, text, words, vocab, X)


def weights(counts: Counts, window: int, weighted: bool, x_max: float, alpha: float) -> np.ndarray:
    """f over the nonzero X_ij (000 eq. 21), (nnz,): a shipped corpus's once per server for each setting, shared
    read-only (a million entries, which every warm change of both GloVe pages weighed again: a third of its run);
    pasted text's on each run."""
    if counts.source == "pasted":
        return weighting(counts.X.data, x_max, alpha)
    return _shipped_weights(counts.source, window, weighted, x_max, alpha, counts.X.data)


# few: one setting's weights of Wikipedia's 2.4 million entries are 18.5 MiB
@st.cache_resource(max_entries=4, show_spinner=False)
def _shipped_weights(source: str, window: int, weighted: bool, x_max: float, alpha: float,
                     _entries: np.ndarray) -> np.ndarray:
    return weighting(_entries, x_max, alpha)


@st.cache_resource(show_spinner="Loading 400,000 GloVe vectors (once per server)…")
def shared_with_glove_6b(name: str) -> tuple[WordVectors, WordVectors]:
    """The shipped GloVe checkpoint `name` and GloVe 6B, each cut to the words both hold, in the checkpoint's
    order (engine's on_shared_vocabulary)."""
    return on_shared_vocabulary(glove_checkpoint(name)[0], glove())
