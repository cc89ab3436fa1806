"""What both GloVe pages share: the corpus to count (a shipped one or pasted text) and its co-occurrence counts X
(000 §4.2, where the notes call them P), counted once per server and setting for the shipped corpora."""
from __future__ import annotations

from dataclasses import dataclass

import scipy.sparse as sp
import streamlit as st

from engine.embeddings.cooccurrence import cooccurrence
from engine.embeddings.corpus import Vocab, chunked, tokenize
from engine.embeddings.evaluation import on_shared_vocabulary
from engine.embeddings.vectors import WordVectors
from engine.errors import InputError
from ui.loaders import cooccurrence_counts, corpus, corpus_vocab, glove, glove_checkpoint

SOURCES = ("wikipedia", "lee", "pasted")
SOURCE_HELP = "wikipedia: 106 articles, 453k words; lee: 300 news stories, 60k words; pasted: your text"
MIN_COUNT = 5  # the shipped corpora keep words seen 5 times, as the checkpoint does; pasted text keeps every word
PASTE_KEY = "glove_paste"


@dataclass(frozen=True)
class Counts:
    source: str
    words: int  # running words of the corpus
    vocab: Vocab
    X: sp.csr_matrix  # (V, V)


def choose_corpus(page, where, default: str = "wikipedia") -> str:
    return page.select("Corpus", "corpus", SOURCES, default, where=where, help=SOURCE_HELP)


def count(source: str, window: int, harmonic: bool) -> Counts:
    """X of the chosen corpus; pasted text is typed in a box drawn here. An InputError when nothing co-occurs."""
    if source == "pasted":
        text = st.text_area("Your corpus (one sentence or paragraph per line)", max_chars=200_000, key=PASTE_KEY,
                            placeholder="Paste a few thousand words of text…")
        sentences = chunked(tokenize(text))
        vocab = Vocab.build(sentences, 1)
        X = cooccurrence(*vocab.encode(sentences), len(vocab), window, harmonic)
    else:
        sentences = corpus(source)
        vocab, X = corpus_vocab(source, MIN_COUNT), cooccurrence_counts(source, window, harmonic, MIN_COUNT)
    words = sum(len(s) for s in sentences)
    if words == 0:
        raise InputError("Paste some text to count: the corpus is empty.")
    if X.nnz == 0:
        raise InputError(f"No two words of these {words} co-occur within {window} words of each other: "
                         "paste more text, a few sentences at least.")
    return Counts(source, words, vocab, X)


@st.cache_resource(show_spinner="Loading 400,000 GloVe vectors (once per server)…")
def glove_6b_on(name: str) -> WordVectors:
    """GloVe 6B cut to the words of the shipped GloVe checkpoint `name` that it holds, in the checkpoint's order."""
    return on_shared_vocabulary(glove_checkpoint(name)[0], glove())[1]
