import streamlit as st

from engine.embeddings.projection import BUDGET, METHODS, choose_words, nearest, parse_words, project
from engine.errors import InputError
from ui import boundary, figures, tables
from ui.page import Page, equations
from ui.projector import DEFAULT, VECTOR_SETS, View, analogy_answer, analogy_arrows, chosen_words, projection, view

ANALOGY_LABELS = ("Analogy a", "is to b", "as c is to ?")  # the controls of a, b and c
page = Page("projector")
page.intro(
    "Word vectors (000 §2) have 50 or 100 dimensions; here the most frequent words of a vector set are drawn in "
    "two or three. PCA keeps the directions of largest variance, a linear view in which king − man + woman ≈ "
    "queen (000 eq. 1) still shows as parallel arrows. t-SNE (van der Maaten and Hinton, 2008) bends space to "
    "keep each word's neighbours near it, so clusters show, but distances between clusters mean little. "
    "Neighbours are found by cosine in all dimensions, among the words drawn; their lines show what the "
    "picture kept and what it tore apart."
)
cols = st.columns([1.3, 1, 0.8, 0.9, 1.2, 1.6])
source = page.select("Vectors", "vectors", list(VECTOR_SETS), DEFAULT["source"], where=cols[0],
                     help="; ".join(f"{key}: {s.label}, {s.about}" for key, s in VECTOR_SETS.items()))
method = page.select("Method", "method", list(METHODS), DEFAULT["method"], where=cols[1])
dims = int(page.select("View", "dims", ["2-D", "3-D"], f"{DEFAULT['dims']}-D", where=cols[2])[0])
n = int(page.select("Words", "n", ["250", "500", "1000", "2000", "5000", "10000"], str(DEFAULT["n"]), where=cols[3],
                    help=f"the most frequent words; t-SNE draws up to {BUDGET['t-SNE']:,}, PCA {BUDGET['PCA']:,}"))
perplexity = page.slider("Perplexity", "perp", 5, 50, DEFAULT["perplexity"], where=cols[4], disabled=method != "t-SNE",
                         help="t-SNE: how many neighbours each word's Gaussian spreads over")
typed = page.text("Also draw", "add", "", max_chars=400, where=cols[5], placeholder="frog, toad, newt")
analogy = [page.text(label, key, word, max_chars=40, where=column).strip().lower()
           for label, key, word, column in zip(ANALOGY_LABELS, "abc", DEFAULT["analogy"], st.columns([1, 1, 1, 3]))]

code = page.code
# the values as used, numbers and trimmed lower-cased words: the Code view writes them by their controls' names
for name, value, label in (("dims", dims, "View"), ("n", n, "Words"), *zip("abc", analogy, ANALOGY_LABELS)):
    code.setting(name, value, label)

word_vectors = VECTOR_SETS[source].record(code)
own, typed_words = [], None
with page.guard():
    typed_words = code.call("own", parse_words, typed, note="the words typed under Also draw")
    for word in typed_words:
        word_vectors.id(word)  # unknown: a warning with spellings, and none of them drawn
    own = typed_words
arrows = []
with page.guard():  # a, b, c and the answer d join the words drawn
    if any(analogy):
        if not all(analogy):
            raise InputError("an analogy needs all three words a, b and c (or none, to draw none)")
        a, b, c = analogy  # the settings' names, which the lets read
        answer = code.call("answer", word_vectors.analogy, a, b, c, topn=1,
                           via=lambda *_, **__: analogy_answer(source, a, b, c),
                           note="000 eq. 1: d, the 3CosAdd answer to a : b :: c : ?, drawn as b − a and d − c")
        d = code.let("d", lambda: answer[0][0])
        arrows = analogy_arrows(*analogy, d)
        if own is typed_words:  # recorded: the snippet adds a, b, c and d to them
            own = code.let("own", lambda: own + [w for w in (a, b, c, d) if w not in own])
        else:  # the typed words were refused above, and so is the Code view
            own = [*analogy, d]
vocabulary = code.let("vocabulary", lambda: word_vectors.words,
                      note="the most frequent words with a letter, and those above")
try:
    words = code.call("words", choose_words, vocabulary, n, method, own,
                      via=lambda *_: chosen_words(source, n, method, tuple(own)))
except InputError as error:
    page.refuse(str(error))
X = code.let("X", lambda: word_vectors.vectors[[word_vectors.index[w] for w in words]],
             note="their vectors, a row each")
drawn_words = tuple(words)  # hashable: the key of the projections kept

EQUATIONS = {
    "PCA": (("PCA: SVD of the centred vectors", r"X - \bar X = U S V^\top,\ Y = U_k S_k"),
            ("share of the variance on axis j", r"s_j^2 \big/ \textstyle\sum_i s_i^2"),
            ("000 eq. 1, drawn as two arrows", r"\text{king} - \text{man} + \text{woman} \approx \text{queen}")),
    "t-SNE": (("β_i by bisection: H(P_i) = log Perp", r"p_{j|i} \propto e^{-\beta_i \|x_i - x_j\|^2}"),
              ("symmetric P over N words", r"p_{ij} = \frac{p_{j|i} + p_{i|j}}{2N}"),
              ("Student-t in the picture", r"q_{ij} \propto (1 + \|y_i - y_j\|^2)^{-1}"),
              ("gradient of KL(P‖Q)", r"4 \textstyle\sum_j \frac{(p_{ij} - q_{ij})(y_i - y_j)}{1 + \|y_i - y_j\|^2}")),
}
if method == "t-SNE":
    code.slow(f"t-SNE of {len(drawn_words):,} words takes about {1 + len(words) / 400:.0f} s on a laptop CPU")
try:  # t-SNE for new settings waits in the server's line
    shown = view(source, drawn_words, method, dims, perplexity)
    projected = code.call("projected", project, X, method, dims, *([perplexity] if method == "t-SNE" else []),
                          via=lambda *_: shown.projection,
                          note=f"{method} in {dims} dimensions, and the share of each word's 10 nearest it keeps")
except InputError as error:  # the line is full
    page.refuse(str(error))
code.let("coords", lambda: projected.coords)
code.let("kept", lambda: projected.kept)
if method == "PCA":
    code.let("explained", lambda: projected.explained, note="share of the variance on each axis")
else:
    code.let("kl", lambda: projected.kl[-1][1], note="KL(P || Q) at the last iteration")
plot = "px.scatter" if dims == 2 else "px.scatter_3d"
axes = ", ".join(f"{axis}=projected.coords[:, {j}]" for j, axis in enumerate("xyz"[:dims]))
code.figure(f"{plot}({axes}, hover_name=words,\n"
            f"    title='{method} of {len(drawn_words):,} {VECTOR_SETS[source].label} words')")


@boundary.fragment
def picture(shown: View, arrows: list[tuple[str, str, str]], own: list[str]) -> None:
    """The figure and its highlighted word: changing the word or its neighbours reruns only this part."""
    left, right = st.columns([3, 1.2])
    slot = left.container()
    h1, h2 = left.columns([2, 1])
    word = page.text("Neighbours of", "word", "war", max_chars=40, where=h1).strip().lower()
    code.setting("word", word, "Neighbours of")
    k = page.slider("Neighbours", "k", 1, 20, 8, where=h2)
    index = {w: i for i, w in enumerate(shown.words)}
    drawn = shown.projection
    centre, near = None, []
    with right, page.guard():
        if word:
            if word not in index:
                word_vectors.id(word)  # not in the vocabulary at all: suggest spellings
                raise InputError(f"{word!r} is not among the {len(shown.words):,} words drawn: add it under "
                                 "Also draw, or draw more words")
            centre = code.call("centre", words.index, word)
            best, cosines = code.call("best, cosines", nearest, X, centre, k,
                                      note="its k nearest by cosine in all dimensions, among the words drawn")
            near = best.tolist()
            flat = ((drawn.coords - drawn.coords[centre]) ** 2).sum(axis=1)  # (N,) squared distances drawn
            rank = flat.argsort(kind="stable").argsort()  # 0 for the word itself
            tables.dataframe({"neighbour": [shown.words[i] for i in near], "cosine": cosines.round(3),
                              "rank in picture": rank[best]}, hide_index=True, height=min(36 * (k + 1) + 2, 330))
    labelled = sorted({i for i in [centre, *near] if i is not None} | {index[w] for w in own if w in index})
    title = f"{method} of {len(shown.words):,} {VECTOR_SETS[source].label} words"
    with slot:
        figures.show(projection(drawn.coords, shown.words, title, tuple(labelled), centre, tuple(near),
                                tuple((name, index[a], index[b]) for name, a, b in arrows)))
    with right:
        if drawn.explained is not None:
            st.metric("Variance drawn", f"{drawn.explained.sum():.1%}",
                      help="PCA: " + ", ".join(f"axis {j + 1} {e:.1%}" for j, e in enumerate(drawn.explained)))
        else:
            st.metric("KL(P‖Q)", f"{drawn.kl[-1][1]:.3f}", help=f"after {drawn.kl[-1][0]} iterations, "
                      f"{shown.seconds:.1f} s on this server, perplexity {perplexity}")
        st.metric("10 nearest kept", f"{drawn.kept:.0%}",
                  help="Share of each word's 10 nearest by cosine that are also its 10 nearest in the picture")
        equations(*EQUATIONS[method])


picture(shown, arrows, own)
