import numpy as np
import streamlit as st

from engine.embeddings.cooccurrence import ratio_table, weighting
from ui import boundary, figures, glove, tables
from ui.page import Page, equations
from ui.training import words_in

TOP = 20  # words in the heatmap: the most frequent, whose counts are large enough to read
PAPER = ("ice", "steam")  # Pennington et al.'s table 1
page = Page("glove_counts")
page.intro(
    "GloVe starts from counts, not from a sliding prediction: X_ij is how often word j occurs within a window "
    "of word i over the whole corpus, each occurrence weighted 1/distance as the paper's glove.c counts it "
    "(000 §4.2 calls this matrix P). Ratios of conditional probabilities P(k|i)/P(k|j) separate the words "
    "related to i from those related to j, and GloVe asks u_iᵀv_j to fit log X_ij (000 eq. 19-20), "
    "weighted by f (eq. 21) so that pairs seen never or rarely count little."
)
c1, c2, c3 = st.columns([2, 2, 1])
source = glove.choose_corpus(page, c1)
window = page.slider("Window (words each side)", "window", 1, 10, 10, where=c2)
harmonic = page.toggle("1/d weights", "harmonic", True, where=c3,
                       help="On: a pair d words apart adds 1/d, as glove.c; off: every pair in the window adds 1")
left, right = st.columns([3, 2])
with right:
    equations(
        ("X_ij, as glove.c counts it", r"X_{ij} = \sum_{\text{$j$ at distance } d \le m \text{ of } i} \tfrac{1}{d}"),
        ("Pennington et al., table 1", r"P(k \mid i) = X_{ik} \big/ \textstyle\sum_{k'} X_{ik'}"),
        ("000 eq. 19 (the notes write P for X)", r"J = \tfrac12 \sum_{i,j} f(P_{ij}) (u_i^\top v_j - \log P_{ij})^2"),
        ("000 eq. 21; the paper's f", r"f(x) = \min\!\big(1, (x / x_{\max})^{\alpha}\big),\ f(0) = 0"),
    )
code = page.code
counts = None
with left, page.guard():
    counts = glove.count(source, window, code, harmonic)
if counts is not None:
    vocab, X = counts.vocab, counts.X
    with left:
        shown = code.let("heatmap", lambda: np.log10(1 + X[:TOP, :TOP].toarray()),
                         note=f"the {TOP} most frequent words: counts span four orders of magnitude")  # (top, top)
        top = len(shown)
        figures.show(figures.heatmap(
            shown, vocab.words[:top], vocab.words[:top], zmax=float(shown.max()), y_title="word i", height=460,
            title=f"log₁₀(1 + X_ij) for the {top} most frequent words of {source}", x_title="context word j"))
        code.figure(f'px.imshow(heatmap, x=vocab.words[:{TOP}], y=vocab.words[:{TOP}], '
                    f'title="log10(1 + X_ij) for the {TOP} most frequent words", labels=dict(x="context word j", '
                    'y="word i"))')
    nonzero = code.let("nonzero", lambda: X.nnz)
    right.caption(f"{counts.words:,} running words; {len(vocab):,} in the vocabulary; X has {nonzero:,} nonzero "
                  f"entries of {len(vocab) ** 2:,}, {nonzero / len(vocab) ** 2:.2%}. It is symmetric: the window "
                  "reaches both ways.")

    st.subheader("Ratios P(k|i) / P(k|j): which probe words belong to i, to j, to both")
    r1, r2, r3 = st.columns([1, 1, 3])
    i = page.text("Word i", "i", "he", max_chars=40, where=r1).strip().lower()
    j = page.text("Word j", "j", "she", max_chars=40, where=r2).strip().lower()
    probes = words_in(page.text("Probe words k", "probes", "his, her, was, and, water", max_chars=200, where=r3))
    with page.guard():
        table = code.call("table", ratio_table, X, vocab, i, j, code.let("probe_words", lambda: probes),
                          note="Pennington et al. table 1: P(k|i) = X_ik / Σ_k' X_ik', and P(k|i) / P(k|j)")
        ratio = np.array(table["ratio"])
        reading = np.select([np.isnan(ratio), np.isinf(ratio), ratio == 0, ratio >= 2, ratio <= 0.5],
                            ["never near either", f"only seen near {i}", f"only seen near {j}", f"near {i}",
                             f"near {j}"], "near both, or neither")
        tables.dataframe({"k": probes, f"X({i}, k)": table["X_ik"], f"X({j}, k)": table["X_jk"],
                          f"P(k | {i})": table["P(k|i)"], f"P(k | {j})": table["P(k|j)"], "ratio": table["ratio"],
                          "reads as": reading},
                         hide_index=True, column_config={c: st.column_config.NumberColumn(format="%.5f")
                                                         for c in (f"P(k | {i})", f"P(k | {j})")})
    known = ", ".join(f"“{w}” {vocab.counts[vocab.index[w]]:,} times" if w in vocab.index
                      else f"“{w}” not in the vocabulary" for w in PAPER)
    st.caption(f"The paper's example is i = ice, j = steam (probes solid, gas, water, fashion) on 6 billion words. "
               f"Here: {known}; too rare to count on. Pronouns are frequent enough: a ratio of 2 or more marks a "
               "word near i, ½ or less a word near j, and function words near both sit close to 1. A ratio of "
               "∞ or 0 means one of the counts is zero: a small corpus cannot measure the rarer pairs.")

@boundary.fragment  # its controls rerun this section alone: the counts above stay as drawn
def weighting_section(counts, window: int, harmonic: bool) -> None:
    """f(x) at the chosen x_max and α, and what it does to this corpus's nonzero counts (None: none counted)."""
    f1, f2, _ = st.columns([1, 1, 2])
    x_max = page.number("x_max", "x_max", 100.0, step=10.0, where=f1)
    alpha = page.slider("Exponent α", "alpha", 0.05, 1.0, 0.75, 0.05, where=f2)
    with page.guard():
        x = code.let("x", lambda: np.linspace(0, 2 * x_max, 201))  # (201,)
        f = code.call("f", weighting, x, x_max, alpha, note="000 eq. 21: f(x) = min(1, (x / x_max)^α), f(0) = 0")
        f_linear = code.call("f_linear", weighting, x, x_max, 1.0)
        plot, numbers = st.columns([3, 2])
        with plot:
            figures.show(figures.lines(x, {f"f(x), α = {alpha:g}": f, "α = 1": f_linear},
                                       title=f"f(x) with x_max = {x_max:g}", x_title="x = X_ij", y_title="f(x)",
                                       markers=False, dashed=["α = 1"], height=300))
        if counts is not None:
            X = counts.X
            entries = code.let("entries", lambda: X.data)
            f_entries = code.call("f_entries", weighting, entries, x_max, alpha,
                                  via=lambda *_: glove.weights(counts, window, harmonic, x_max, alpha),
                                  note="f over the nonzero X_ij: the weights of eq. 19's terms")
            capped = code.let("capped", lambda: int((entries >= x_max).sum()))
            mean_f = code.let("mean_f", lambda: f_entries.mean())
            numbers.metric("Nonzero X_ij at x_max or above (f = 1)", f"{capped:,} of {X.nnz:,}")
            numbers.metric("Mean f over the nonzero X_ij", f"{mean_f:.3f}")
            numbers.caption("Most pairs are rare, so most terms of J are weighted well below 1; the few pairs above "
                            "x_max (mostly function words) are capped at 1 instead of dominating the sum. The paper's "
                            "x_max = 100 was set for billions of words: on ours f is tiny almost everywhere, and the "
                            "shipped checkpoints train with x_max = 10, as glove.c's demo does on 17 million words.")


st.subheader("The weighting f(x): rare pairs count less, frequent ones no more than x_max")
weighting_section(counts, window, harmonic)
