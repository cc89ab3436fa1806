import math

import streamlit as st

from engine.embeddings.corpus import tokenize
from engine.embeddings.pairs import skipgram_pairs, windows
from engine.embeddings.softmax import SentenceFit, fit_sentence, max_log_likelihood
from ui import boundary, figures, tables
from ui.page import Page, equations


@st.cache_data(max_entries=256, show_spinner=False)
def fitted(pairs: list[tuple[str, str]], dim: int, steps: int, lr: float, seed: int) -> SentenceFit:
    """fit_sentence once per server for each setting, the default first: every student's run took the gradient steps
    again (17 ms at the default 100, 50 ms at 300), 3.9% of the server's samples under a class of 300 (py-spy)."""
    return fit_sentence(pairs, dim, steps, lr, seed)


page = Page("skipgram_pairs")
page.intro(
    "Slide a window of odd size over the sentence; its middle word is the target and the rest are "
    "its context (000 §2.2.2). Each (target, context) pair is one factor of the likelihood word2vec "
    "raises. Below, the sentence's own words get random vectors and full-softmax gradient ascent "
    "raises eq. 8 towards its ceiling."
)


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2, c3, c4 = st.columns([3, 1, 1, 1])
    text = page.text("Sentence", "text", "the cat sit on the mat", max_chars=300, where=c1)
    size = page.slider("Window size 2m + 1", "window", 3, 9, 3, 2, where=c2)
    steps = page.slider("Gradient steps", "steps", 0, 300, 100, 10, where=c3)
    lr = page.slider("Learning rate", "lr", 0.1, 4.0, 1.0, 0.1, where=c4)
    code = page.code
    lines = code.call("lines", tokenize, text)
    words = code.let("words", lambda: [w for line in lines for w in line])
    if size % 2 == 0:
        page.refuse(f"The window size must be odd (the target sits in the middle); {size} is even.")
    if not words:
        page.refuse("Type a sentence (letters; digits and punctuation are dropped).")
    with page.guard():
        found = code.call("found", windows, words, size,
                          note="000 §2.2.2: the middle word of each window is the target")
        pairs = code.call("pairs", skipgram_pairs, words, size,
                          note="000 eq. 5-6: one (target, context) pair per context")
        left, right = st.columns([3, 2])
        with left:
            st.subheader(f"Step 1: {len(found)} windows")
            tables.dataframe({"window": [" ".join(w.words) for w in found], "target": [w.target for w in found],
                              "context": [", ".join(w.contexts) for w in found]}, hide_index=True)
            fit = code.call("fit", fit_sentence, pairs, dim=8, steps=steps, lr=lr, seed=0, via=fitted,
                            note="000 eq. 8, 10: gradient ascent on log L with the full softmax of eq. 3")
            pair_probs = code.let("pair_probs", lambda: fit.pair_probs,
                                  note="000 eq. 7: its factors, Pr(context | target) of each pair")
            log_likelihood = code.let("log_likelihood", lambda: fit.log_likelihood,
                                      note="000 eq. 8: log L before each step and after the last")
            st.subheader(f"Step 2: {len(pairs)} pairs (x, y) = (target, context), eq. 5‑6")
            tables.dataframe({"target x": [t for t, _ in pairs], "context y": [c for _, c in pairs],
                              "Pr(context | target)": pair_probs.numpy()}, hide_index=True,
                             column_config={"Pr(context | target)": st.column_config.ProgressColumn(
                             format="%.4f", min_value=0.0, max_value=1.0)})
        if not math.isfinite(log_likelihood[-1]):
            st.warning("The steps overshot and the likelihood blew up: lower the learning rate.",
                       icon=":material/warning:")
        with right:
            equations(
                ("000 eq. 3",
                 r"\Pr(o \mid c) = \frac{\exp(u_o^\top v_c)}{\sum_{o' \in \mathcal{V}} \exp(u_{o'}^\top v_c)}"),
                ("000 eq. 7: the product of the factors on the left", r"\mathcal{L} = \prod_{n} \prod_{-m \le j \le m,\, j \ne 0} \Pr(w_{n+j} \mid w_n)"),
                ("000 eq. 8", r"\log \mathcal{L} = \sum_{n} \sum_{j} \log \Pr(w_{n+j} \mid w_n)"),
            )
            ceiling = code.call("ceiling", max_log_likelihood, pairs, note="the ceiling: Σ n(t, c) log(n(t, c) / n(t))")
            code.figure('px.line({"log L": log_likelihood, "ceiling": [ceiling] * len(log_likelihood)}, '
                        'labels={"index": "step", "value": "log L"}, title="Eq. 8 during gradient ascent (d = 8)")')
            st.metric("log L after the last step (eq. 8)", f"{log_likelihood[-1]:.4f}",
                      delta=f"{log_likelihood[-1] - log_likelihood[0]:+.4f} from random vectors")
            st.metric("Ceiling: Σ n(t, c) log(n(t, c) / n(t))", f"{ceiling:.4f}",
                      help="A softmax can at best give each target's contexts their observed frequencies.")
            figures.show(figures.lines(list(range(len(log_likelihood))),
                                       {"log L": log_likelihood, "ceiling": [ceiling] * len(log_likelihood)},
                                       title="Eq. 8 during gradient ascent (d = 8)", x_title="step", y_title="log L",
                                       markers=False, dashed=["ceiling"]))


body()
