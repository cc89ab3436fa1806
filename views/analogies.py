from functools import partial

import streamlit as st

from engine.embeddings.evaluation import PAIR_FILES, PAIR_TITLES, analogy_accuracy, word_pair_correlation
from engine.embeddings.glove import load_glove
from engine.embeddings.train import load_shipped_word2vec
from engine.embeddings.vectors import WordVectors
from ui import boundary, figures, queued
from ui.loaders import checkpoint_vectors, glove, word2vec_checkpoint
from ui.page import Page, equations
from ui.tables import neighbour_table
from ui.training import words_in

page = Page("analogies")
page.intro(
    "a is to b as c is to ?: find the word x whose vector is nearest to b − a + c (000 eq. 1). 3CosAdd "
    "adds cosines, 3CosMul (Levy and Goldberg, 2014) multiplies them, so one large similarity cannot "
    "drown the others; a, b and c are never answers. GloVe (000 eq. 19-21) was trained on 6 billion "
    "tokens, ours on 453 thousand."
)
c1, c2, c3, c4, c5 = st.columns(5)
source = page.select("Vectors", "vectors", ["glove", "ours"], where=c1,
                     help="glove: GloVe 6B 50d, 400k words, 6 billion tokens; ours: our skip-gram on the "
                          "Wikipedia sample, 9k words, 453 thousand tokens")
a = page.text("Word a", "a", "man", max_chars=40, where=c2).strip().lower()
b = page.text("is to b", "b", "king", max_chars=40, where=c3).strip().lower()
c = page.text("as c is to ?", "c", "woman", max_chars=40, where=c4).strip().lower()
topn = page.slider("Answers shown", "topn", 1, 20, 8, where=c5)
code = page.code
# the words as used, trimmed and lower-cased: the Code view writes them by their controls' names
for name, word, label in zip("abc", (a, b, c), ("Word a", "is to b", "as c is to ?")):
    code.setting(name, word, label)

# each choice of vectors as the server holds it, shared by every session
SHARED_VECTORS = {"glove": glove, "ours": lambda: checkpoint_vectors("wikipedia_sgns")}


def vectors_of(name: str) -> WordVectors:
    if name == "glove":
        with st.spinner("Loading 400,000 GloVe vectors (once per server)…"):
            return code.call("word_vectors", load_glove, via=SHARED_VECTORS[name], note="GloVe 6B 50d (000 eq. 19-21)")
    model, _ = code.call("model, extra", load_shipped_word2vec, "wikipedia_sgns", via=word2vec_checkpoint,
                         note="our skip-gram with negative sampling on the Wikipedia sample")
    return code.call("word_vectors", model.word_vectors, via=SHARED_VECTORS[name])


@st.cache_data(max_entries=256, show_spinner=False)
def asked(source: str, question: str, *args, **kwargs):
    """WordVectors.<question>(*args) on the vectors of `source`, once per server for the same words: the page's
    other controls rerun without searching all 400,000 vectors again."""
    return getattr(SHARED_VECTORS[source](), question)(*args, **kwargs)


@boundary.fragment  # its box reruns the picture alone: the answers beside it stay as found
def picture(vectors: WordVectors, source: str, a: str, b: str, c: str, best: str) -> None:
    """a, b, c, the best answer and any more words the box names, on their principal-component plane."""
    with page.guard():  # in its own rerun as in the page's
        extra = words_in(page.text("More words in the picture", "more", "prince, princess, boy, girl", max_chars=200))
        if unknown := [w for w in extra if w not in vectors]:
            st.caption(f"Not in this vocabulary, left out of the picture: {', '.join(unknown)}")
        shown = list(dict.fromkeys([a, b, c, best] + [w for w in extra if w in vectors]))
        xy = code.call("xy", vectors.pca_2d, shown, via=partial(asked, source, "pca_2d"), note="the principal-component plane of these words")
        code.figure(f"px.scatter(x=xy[:, 0], y=xy[:, 1], text={shown!r},\n"
                    f"           title='Principal-component plane of these words: the analogy parallelogram')")
        corner = {w: xy[i] for i, w in enumerate(shown)}
        sides = {f"{a} → {b}": (a, b), f"{c} → {best}": (c, best), f"{a} → {c}": (a, c), f"{b} → {best}": (b, best)}
        figures.show(figures.points_and_curves(
            {"words": (xy[:, 0], xy[:, 1])},
            {name: ([corner[p][0], corner[q][0]], [corner[p][1], corner[q][1]]) for name, (p, q) in sides.items()},
            title="Principal-component plane of these words: the analogy parallelogram", equal_axes=True,
            labels={"words": shown}))


@boundary.fragment  # its box reruns this table alone
def neighbours_of(vectors: WordVectors, source: str, topn: int) -> None:
    """The topn words nearest to the one the box names, by cosine."""
    near = page.text("Neighbours of", "near", "frog", max_chars=40).strip().lower()
    code.setting("near", near, "Neighbours of")
    with page.guard():
        neighbour_table(code.call("neighbours", vectors.neighbours, near, topn, via=partial(asked, source, "neighbours"),
                                  note="the nearest words by cosine"),
                        f"nearest to “{near}”")


vectors = vectors_of(source)
left, right = st.columns([3, 2])
with left, page.guard():
    code.note("000 eq. 1: the words x nearest to b − a + c, by 3CosAdd and by 3CosMul; a, b and c left out")
    cos_add = code.call("cos_add", vectors.analogy, a, b, c, topn, method="3CosAdd", via=partial(asked, source, "analogy"))
    cos_mul = code.call("cos_mul", vectors.analogy, a, b, c, topn, method="3CosMul", via=partial(asked, source, "analogy"))
    answers = {"3CosAdd": cos_add, "3CosMul": cos_mul}
    for column, (method, found) in zip(st.columns(2), answers.items()):
        with column:
            neighbour_table(found, method, word_title="answer", score_title="score")
    best = code.let("best", lambda: cos_add[0][0])
    if source == "ours":
        st.caption("Our vectors saw 453 thousand words, GloVe's 6 billion: most analogies fail here "
                   "(3% of the Google questions against GloVe's 46%), which is the point of training on more text.")
    picture(vectors, source, a, b, c, best)
with right:
    equations(
        ("000 eq. 1", r"\text{king} - \text{man} + \text{woman} \approx \text{queen}"),
        ("3CosAdd", r"\arg\max_x \cos(x, b) - \cos(x, a) + \cos(x, c)"),
        ("3CosMul, ε = 10⁻⁶", r"\arg\max_x \frac{\tilde{\cos}(x, b)\,\tilde{\cos}(x, c)}{\tilde{\cos}(x, a) + \varepsilon},\ \tilde{\cos} = \tfrac{1 + \cos}{2}"),
        ("000 eq. 19, GloVe", r"J = \tfrac12 \sum_{i,j} f(P_{ij}) (u_i^\top v_j - \log P_{ij})^2"),
    )
    neighbours_of(vectors, source, topn)

st.subheader("Evaluation: Google analogies, WordSim-353, SimLex-999")
c1, c2 = st.columns(2)
restrict = int(page.select("Answers searched among the most frequent", "restrict",
                           ["10000", "30000", "100000", "300000"], "30000", where=c1))
method = page.select("Analogy method", "method", ["3CosAdd", "3CosMul"], where=c2)
code.setting("restrict", restrict, "Answers searched among the most frequent")  # the number, not the option's text

EVALUATIONS = "analogies_evaluations"  # session key: {(vectors, restrict, method): (analogies, word pairs)}
evaluations = st.session_state.setdefault(EVALUATIONS, {})


def evaluate(report) -> tuple:
    """The job behind Evaluate (ui/queued.py): the analogy questions, then the rated pairs."""
    analogies = analogy_accuracy(vectors, restrict, method,
                                 progress=lambda f: report(0.95 * f, f"Answering analogy questions… {f:.0%}"))
    report(0.95, "Correlating the rated word pairs…")
    return analogies, {name: word_pair_correlation(vectors, name, restrict) for name in PAIR_FILES}


with page.guard():  # a full line of heavy jobs says so here
    if st.button("Evaluate", key="evaluate",
                 help="19,544 analogy questions: a few seconds at 30,000 words, about a minute at 300,000"):
        evaluations[(source, restrict, method)] = queued.run("evaluate", (source, restrict, method), evaluate,
                                                             "Evaluating", estimate=restrict / 5000)
analogies, pairs = evaluations.get((source, restrict, method), (None, {}))


def evaluation_step(target: str, fn, *args, done, note: str):
    """One step of the evaluation: only written out until Evaluate ran (the long work behind it), then recorded
    with the page's result, done, which it returns."""
    if done is None:
        return code.later(target, fn, *args, note=note)
    return code.call(target, fn, *args, via=lambda *_: done, note=note)


code.slow(f"Evaluating takes about {max(1, round(restrict / 5000))} s on a laptop CPU "
          f"({restrict:,} candidate answers for each of 19,544 questions)")
analogy_scores = evaluation_step("analogy_scores", analogy_accuracy, vectors, restrict, method, done=analogies,
                                 note="the Google analogy questions, answered among the most frequent words")
wordsim353, simlex999 = [evaluation_step(name, word_pair_correlation, vectors, name, restrict, done=pairs.get(name),
                                         note=f"{PAIR_TITLES[name]}: human ratings against cosines")
                         for name in ("wordsim353", "simlex999")]  # by name: the lets below read them
if analogies is not None:
    code.let("accuracy", lambda: analogy_scores.overall.accuracy)
    code.let("wordsim353_spearman", lambda: wordsim353.spearman)
    code.let("simlex999_spearman", lambda: simlex999.spearman)
    e1, e2, e3 = st.columns(3)
    e1.metric("Analogy accuracy", f"{analogies.overall.accuracy:.1%}",
              help=f"{analogies.overall.correct:,} of {analogies.overall.total:,}; {analogies.skipped:,} questions "
                   f"skipped for a word outside the first {restrict:,}")
    for column, (name, result) in zip((e2, e3), pairs.items()):
        column.metric(f"{PAIR_TITLES[name]} Spearman ρ", f"{result.spearman:.3f}",
                      help=f"Pearson {result.pearson:.3f}; {result.oov_percent:.1f}% of pairs out of vocabulary")
    asked = [s for s in analogies.sections if s.total]
    figures.show(figures.bars([s.name for s in asked], {"accuracy": [s.accuracy for s in asked]},
                              title="Accuracy per section of questions-words.txt", y_title="accuracy", height=420))
else:
    st.caption("Press Evaluate to score these vectors; the numbers match gensim's evaluate_word_analogies "
               "and evaluate_word_pairs on the same vectors (tested to 0.005).")
