import streamlit as st

from engine.embeddings.softmax import autograd_log_prob_gradient, context_distribution, log_prob_gradient
from engine.embeddings.train import load_shipped_word2vec
from ui import boundary, figures
from ui.loaders import checkpoint_vectors, word2vec_checkpoint
from ui.page import Page, equations, gaps

page = Page("softmax_gradient")
code = page.code
model, extra = code.call("model, extra", load_shipped_word2vec, "lee_softmax", via=word2vec_checkpoint,
                         note="skip-gram trained with the full softmax of 000 eq. 3 on the Lee corpus")
V, d = model.input_vectors.shape
page.intro(
    f"A skip-gram model trained with the full softmax of eq. 3 on the Lee news corpus ({V:,} words, "
    f"d = {d}, trained by this project). Choose a centre word c and an output word o: the "
    "page computes p(·|c) over the whole vocabulary and the gradient of log p(o|c) with respect to v_c, "
    "once by eq. 12 and once by autograd. 60,000 words of news are too few for good word vectors: its "
    f"neighbours are often topical rather than similar (WordSim-353 ρ = {extra['metrics']['wordsim353_spearman']:.2f} "
    "on the 60 pairs it knows), but p(·|c) already puts a word's usual company first."
)


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2, c3 = st.columns(3)
    c = page.text("Centre word c", "c", "united", max_chars=40, where=c1).strip().lower()
    o = page.text("Output word o", "o", "states", max_chars=40, where=c2).strip().lower()
    top = page.slider("Words shown", "top", 5, 40, 15, where=c3)
    code.setting("c", c, "Centre word c")  # the words as used, trimmed and lower-cased: the Code view names them
    code.setting("o", o, "Output word o")
    with page.guard():
        vocabulary = code.call("vocabulary", model.word_vectors, via=lambda: checkpoint_vectors("lee_softmax"))
        centre = code.call("centre", vocabulary.id, c)
        output = code.call("output", vocabulary.id, o)
        v_c = code.let("v_c", lambda: model.input_vectors[centre],
                       note="v_c: the centre word's input vector; U: (V, d)")
        U = code.let("U", lambda: model.output_vectors)
        p = code.call("p", context_distribution, v_c, U, note="000 eq. 4: softmax(U v_c) over the whole vocabulary")
        best = p.topk(top).indices.tolist()
        code.figure(f"best = p.topk({top}).indices\n"
                    f"px.bar(x=[vocabulary.words[i] for i in best], y=p[best], labels={{'x': 'o', 'y': 'p(o | c)'}},\n"
                    f"       title='The {top} most likely outputs given c = {c}')")
        shown = best if output in best else best + [output]  # the chosen o always appears, marked ▶
        left, right = st.columns([3, 2])
        with left:
            figures.show(figures.bars([("▶ " if i == output else "") + model.vocab.words[i] for i in shown],
                                      {"p(o | c)": p[shown].tolist()}, y_title="p(o | c)",
                                      title=f"The {top} most likely outputs of the {V:,} given c = “{c}”"))
            ours = code.call("gradient", log_prob_gradient, v_c, U, output, note="000 eq. 12: u_o − Σ_o' p(o'|c) u_o'")
            reference = code.call("autograd", autograd_log_prob_gradient, v_c, U, output, note="the same by autograd")
            expected_u = code.let("expected_u", lambda: p @ U, note="000 eq. 12, last line: E[u] under p(·|c)")
            dims = list(range(d))
            figures.show(figures.lines(dims, {"u_o": U[output].tolist(), "E[u] = Σ p(o'|c) u_o'": expected_u.tolist(),
                                              "eq. 12: u_o − E[u]": ours.tolist(), "autograd": reference.tolist()},
                                       title="∂ log p(o|c) / ∂v_c, coordinate by coordinate", x_title="coordinate",
                                       markers=False, dashed=["autograd"]))
        with right:
            equations(
                ("000 eq. 4", r"p(\cdot \mid c) = \operatorname{softmax}(U v_c)"),
                ("000 eq. 12",
                 r"\frac{\partial \log p(o \mid c)}{\partial v_c} = u_o - \sum_{o'} p(o' \mid c)\, u_{o'}"),
                ("000 eq. 12, last line", r"= u_o - \mathbb{E}_{o' \sim p(\cdot \mid c)}[u_{o'}]"),
            )
            p_o = code.let("p_o", lambda: float(p[output]), note="p(o|c), and its rank among the V words")
            rank = code.let("rank", lambda: int((p > p[output]).sum()) + 1)
            st.metric(f"p(“{o}” | “{c}”)", f"{p_o:.5f}",
                      delta=f"rank {rank} of {V:,}; uniform would be {1 / V:.5f}", delta_color="off")
            st.metric("Σ over the vocabulary", f"{float(p.sum()):.6f}")
            st.metric("Multiply-adds for one p(o|c)", f"{V * d:,}", help="V · d: the cost negative sampling and "
                      "hierarchical softmax avoid")
            gaps(("max |eq. 12 − autograd|", ours.numpy(), reference.numpy()))


body()
