import numpy as np
import pandas as pd
import streamlit as st

from engine.embeddings.corpus import tokenize
from engine.embeddings.glove import load_glove
from engine.embeddings.pairs import one_hot, pairwise_geometry
from ui import figures
from ui.loaders import glove
from ui.page import Page, equations

page = Page("one_hot")
page.intro(
    "Give every word of the vocabulary its own axis and a word is a vector of zeros with a single 1. "
    "Then every two different words are exactly √2 apart and orthogonal: the vectors say nothing about "
    "which words are alike, and each is as long as the vocabulary. Type a sentence and compare with the "
    "50 numbers per word of GloVe."
)
text = page.text("Sentence", "text", "the cat sit on the mat", max_chars=300)
code = page.code
lines = code.call("lines", tokenize, text)
words = code.let("words", lambda: [w for line in lines for w in line])
if not words:
    page.refuse("Type at least one word (letters; digits and punctuation are dropped).")
if len(set(words)) > 30:
    page.notice(f"The sentence has {len(set(words))} different words; the first 30 are shown.")
    words = code.let("words", lambda: [w for w in words if w in list(dict.fromkeys(words))[:30]],
                     note="the page shows the first 30 different words")
vocab, rows = code.call("vocab, rows", one_hot, words, note="000 eq. 2: one row per word, a single 1 in it")
left, right = st.columns([3, 2])
with left:
    st.subheader(f"One-hot rows: {len(words)} words, V = {len(vocab)}")
    st.dataframe(pd.DataFrame(rows.astype(int), columns=vocab, index=[f"{i + 1}. {w}" for i, w in enumerate(words)]))
with right:
    equations(
        ("000 eq. 2: one row per word of the vocabulary", r"e_w \in \{0, 1\}^{|\mathcal{V}|},\ \sum_j (e_w)_j = 1"),
        ("000 §2.1: any two different words", r"\lVert e_a - e_b \rVert = \sqrt{2},\quad e_a^\top e_b = 0"),
    )
    st.metric("Numbers per word, one-hot over GloVe's vocabulary", "400,000", help="against 50 for a GloVe vector")
    st.metric("Memory for 400k one-hot rows in float32", f"{400_000 ** 2 * 4 / 1e9:,.0f} GB",
              help="against 400,000 × 50 × 4 bytes = 80 MB for GloVe 50d")
distances, cosines = code.call("distances, cosines", pairwise_geometry,
                               code.let("first_rows", lambda: rows[[words.index(v) for v in vocab]]),
                               note="000 §2.1: every two different words are √2 apart and orthogonal")
code.figure('px.imshow(distances, x=vocab, y=vocab, title="One-hot: distance (√2 = 1.414)")')
g1, g2 = st.columns(2)
with g1:
    figures.show(figures.heatmap(distances, vocab, vocab, "One-hot: distance (√2 = 1.414)", zmax=2.0))
with g2:
    figures.show(figures.heatmap(cosines, vocab, vocab, "One-hot: cosine", zmin=-1, zmid=0, colorscale="RdBu"))
st.subheader("The same words as dense GloVe vectors (50 numbers each)")
with st.spinner("Loading 400,000 GloVe vectors (once per server)…"):
    vectors = code.call("vectors", load_glove, via=glove, note="the same words as dense GloVe vectors")
known = code.let("known", lambda: [w for w in vocab if w in vectors])
if len(known) < len(vocab):
    page.notice(f"Not in GloVe's vocabulary: {', '.join(w for w in vocab if w not in vectors)}")
if len(known) >= 2:
    dense_distances, dense_cosines = code.call("dense_distances, dense_cosines", pairwise_geometry,
                                               code.let("dense", lambda: np.stack([vectors.vector(w) for w in known])))
    g1, g2 = st.columns(2)
    with g1:
        figures.show(figures.heatmap(dense_distances, known, known, "GloVe: distance", zmax=None))
    with g2:
        figures.show(figures.heatmap(dense_cosines, known, known, "GloVe: cosine", zmin=-1, zmid=0, colorscale="RdBu"))
