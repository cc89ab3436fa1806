import streamlit as st

from engine.embeddings.projection import BUDGET, METHODS, choose_words, nearest, parse_words
from engine.errors import InputError
from ui import figures, tables
from ui.page import Page, equations
from ui.projector import DEFAULT, VECTOR_SETS, View, analogy_arrows, projection, view

page = Page("projector")
page.intro(
    "Word vectors (000 §2) have 50 or 100 dimensions; here the most frequent words of a vector set are drawn in "
    "two or three. PCA keeps the directions of largest variance, a linear view in which king − man + woman ≈ "
    "queen (000 eq. 1) still shows as parallel arrows. t-SNE (van der Maaten and Hinton, 2008) bends space to "
    "keep each word's neighbours near it, so clusters show, but distances between clusters mean little. "
    "Neighbours are found by cosine in all dimensions, among the words drawn; their lines show what the "
    "picture kept and what it tore apart."
)
c = st.columns([1.3, 1, 0.8, 0.9, 1.2, 1.6])
source = page.select("Vectors", "vectors", list(VECTOR_SETS), DEFAULT["source"], where=c[0],
                     help="; ".join(f"{key}: {s.label}, {s.about}" for key, s in VECTOR_SETS.items()))
method = page.select("Method", "method", list(METHODS), DEFAULT["method"], where=c[1])
dims = int(page.select("View", "dims", ["2-D", "3-D"], f"{DEFAULT['dims']}-D", where=c[2])[0])
n = int(page.select("Words", "n", ["250", "500", "1000", "2000", "5000", "10000"], str(DEFAULT["n"]), where=c[3],
                    help=f"the most frequent words; t-SNE draws up to {BUDGET['t-SNE']:,}, PCA {BUDGET['PCA']:,}"))
perplexity = page.slider("Perplexity", "perp", 5, 50, DEFAULT["perplexity"], where=c[4], disabled=method != "t-SNE",
                         help="t-SNE: how many neighbours each word's Gaussian spreads over")
typed = page.text("Also draw", "add", "", max_chars=400, where=c[5], placeholder="frog, toad, newt")
a1, a2, a3, _ = st.columns([1, 1, 1, 3])
analogy = [page.text(label, key, word, max_chars=40, where=col).strip().lower()
           for label, key, word, col in zip(("Analogy a", "is to b", "as c is to ?"), "abc", DEFAULT["analogy"],
                                             (a1, a2, a3))]

vectors = VECTOR_SETS[source].load()
own = []
with page.guard():
    own = [vectors.words[vectors.id(w)] for w in parse_words(typed)]  # unknown: a warning with spellings
arrows = []
with page.guard():  # a, b, c and the answer d join the words drawn
    if any(analogy):
        if not all(analogy):
            raise InputError("an analogy needs all three words a, b and c (or none, to draw none)")
        arrows, four = analogy_arrows(vectors, *analogy)
        own += [w for w in four if w not in own]
try:
    words = tuple(choose_words(vectors.words, n, method, own))
except InputError as error:
    page.refuse(str(error))

EQUATIONS = {
    "PCA": (("PCA: SVD of the centred vectors", r"X - \bar X = U S V^\top,\ Y = U_k S_k"),
            ("share of the variance on axis j", r"s_j^2 \big/ \textstyle\sum_i s_i^2"),
            ("000 eq. 1, drawn as two arrows", r"\text{king} - \text{man} + \text{woman} \approx \text{queen}")),
    "t-SNE": (("β_i by bisection: H(P_i) = log Perp", r"p_{j|i} \propto e^{-\beta_i \|x_i - x_j\|^2}"),
              ("symmetric P over N words", r"p_{ij} = \frac{p_{j|i} + p_{i|j}}{2N}"),
              ("Student-t in the picture", r"q_{ij} \propto (1 + \|y_i - y_j\|^2)^{-1}"),
              ("gradient of KL(P‖Q)", r"4 \textstyle\sum_j \frac{(p_{ij} - q_{ij})(y_i - y_j)}{1 + \|y_i - y_j\|^2}")),
}
try:
    shown = view(source, words, method, dims, perplexity)  # t-SNE for new settings waits in the server's line
except InputError as error:  # the line is full
    page.refuse(str(error))


@st.fragment
def picture(shown: View, arrows: list[tuple[str, str, str]], own: list[str]) -> None:
    """The figure and its highlighted word: changing the word or its neighbours reruns only this part."""
    left, right = st.columns([3, 1.2])
    slot = left.container()
    h1, h2 = left.columns([2, 1])
    word = page.text("Neighbours of", "word", "war", max_chars=40, where=h1).strip().lower()
    k = page.slider("Neighbours", "k", 1, 20, 8, where=h2)
    index = {w: i for i, w in enumerate(shown.words)}
    centre, near = None, []
    with right, page.guard():
        if word:
            if word not in index:
                vectors.id(word)  # not in the vocabulary at all: suggest spellings
                raise InputError(f"{word!r} is not among the {len(shown.words):,} words drawn: add it under "
                                 "Also draw, or draw more words")
            centre = index[word]
            X = vectors.vectors[[vectors.index[w] for w in shown.words]]  # (N, d)
            best, cosines = nearest(X, centre, k)
            near = best.tolist()
            flat = ((shown.coords - shown.coords[centre]) ** 2).sum(axis=1)  # (N,) squared distances drawn
            rank = flat.argsort(kind="stable").argsort()  # 0 for the word itself
            tables.dataframe({"neighbour": [shown.words[i] for i in near], "cosine": cosines.round(3),
                              "rank in picture": rank[best]}, hide_index=True, height=min(36 * (k + 1) + 2, 330))
    labelled = sorted({i for i in [centre, *near] if i is not None} | {index[w] for w in own if w in index})
    title = f"{method} of {len(shown.words):,} {VECTOR_SETS[source].label} words"
    with slot:
        figures.show(projection(shown.coords, shown.words, title, tuple(labelled), centre, tuple(near),
                                tuple((name, index[a], index[b]) for name, a, b in arrows)))
    with right:
        if shown.explained is not None:
            st.metric("Variance drawn", f"{shown.explained.sum():.1%}",
                      help="PCA: " + ", ".join(f"axis {j + 1} {e:.1%}" for j, e in enumerate(shown.explained)))
        else:
            st.metric("KL(P‖Q)", f"{shown.kl[-1][1]:.3f}", help=f"after {shown.kl[-1][0]} iterations, "
                      f"{shown.seconds:.1f} s on this server, perplexity {perplexity}")
        st.metric("10 nearest kept", f"{shown.kept:.0%}",
                  help="Share of each word's 10 nearest by cosine that are also its 10 nearest in the picture")
        equations(*EQUATIONS[method])


picture(shown, arrows, own)
