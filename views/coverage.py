import streamlit as st

from engine.seq2seq.dates import distracted_examples
from engine.seq2seq.decode import held_out_metrics, mean_coverage, translate
from ui import figures
from ui.loaders import seq2seq_checkpoint
from ui.page import Page, equations
from ui.seq2seq import attention_heatmap, char_labels, checked_input, metrics_table

DISTRACTED_SEED = 20_000
page = Page("coverage")
weight = seq2seq_checkpoint("additive_coverage")[0].config.coverage_weight
MODELS = {"additive": "without coverage", "additive_coverage": f"with coverage, loss weight λ = {weight}"}


@st.cache_data(show_spinner="Decoding 1,000 distracted dates with both models…")
def distracted_metrics() -> dict[str, dict]:
    held_out = distracted_examples(1000, DISTRACTED_SEED)
    return {MODELS[name]: held_out_metrics(seq2seq_checkpoint(name)[0], held_out) for name in MODELS}


page.intro(
    "A decoder that forgets where it has already looked may repeat itself or skip part of the input. The "
    "coverage vector c^t adds up the attention of all earlier steps (eq. 48); the coverage loss charges "
    "each step for looking again where c^t is already high (eq. 49). The second model was trained with "
    "that loss added and sees c^t inside its scores (See et al., 2017); both use additive scores."
)
c1, c2, c3 = st.columns([3, 1, 1])
text = checked_input(page, page.text("A date, as you would write it", "text", "march 3rd, 2021 at 4 pm",
                                     max_chars=200, where=c1, help="Also try “tuesday, the 3rd of march 2021, not "
                                     "the 4th”, or just “3”, where the plain model repeats itself"))
mean = page.toggle("Mean (eq. 50)", "mean", False, where=c2,
                   help="000 eq. 48 sums earlier attention; eq. 50 divides by t, so c^t stays a distribution")
step = page.slider("Step t", "step", 1, 20, 4, where=c3)
with page.guard():
    results = {name: translate(seq2seq_checkpoint(name)[0], text) for name in MODELS}
    columns = st.columns(2)
    for column, (name, result) in zip(columns, results.items()):
        with column:
            st.subheader(f"{MODELS[name]}: {result.output}")
            attention_heatmap(result.attention, result.source, result.output, f"Attention a_tj ({MODELS[name]})")
            t = min(step, len(result.coverage))
            coverage = mean_coverage(result.coverage) if mean else result.coverage
            labels = char_labels(result.source)
            figures.show(figures.lines(list(range(1, len(coverage) + 1)),
                                       {labels[j]: coverage[:, j].tolist() for j in range(len(labels))},
                                       title=f"Coverage c^t_j, one curve per source character ({MODELS[name]})",
                                       x_title="step t", y_title="c^t_j", markers=False))
            figures.show(figures.bars(labels, {"c^t": coverage[t - 1].tolist(), "a^t": result.attention[t - 1].tolist()},
                                      title=f"Step {t}: coverage before it against its attention ({MODELS[name]})",
                                      y_title="weight"))
            figures.show(figures.lines(list(range(1, len(result.covloss) + 1)), {"covloss_t": result.covloss.tolist()},
                                       title=f"Coverage loss per step, sum {float(result.covloss.sum()):.3f} ({MODELS[name]})",
                                       x_title="step t", y_title="Σ_i min(a_i^t, c_i^t)"))
    equations(
        ("000 eq. 48", r"c^t = \sum_{t'=0}^{t-1} a^{t'}"),
        ("000 eq. 49", r"\operatorname{covloss}_t = \sum_i \min(a_i^t, c_i^t)"),
        ("000 eq. 50 (the notes' alternative)", r"c^t = \frac{1}{t} \sum_{t'=0}^{t-1} a^{t'}"),
    )
    st.markdown("**Held-out (2,000 generated dates)**: exact match, outputs longer than the answer "
                "(repeats), outputs shorter (skips)")
    metrics_table({MODELS[name]: seq2seq_checkpoint(name)[1]["metrics"] for name in MODELS})
    st.markdown("**The same dates followed by a distraction** (“ at 4 pm”, “, not the 4th”, …), never seen in training")
    metrics_table(distracted_metrics())
