import streamlit as st

from engine.seq2seq.dates import distracted_examples
from engine.seq2seq.decode import MAX_OUTPUT, coverage_vectors, held_out_metrics, translate
from engine.seq2seq.model import load_shipped_seq2seq
from ui import boundary, figures
from ui.defaults import DISTRACTED_SEED, distracted_metrics
from ui.loaders import distracted_dates, seq2seq_checkpoint, translated
from ui.page import Page, equations
from ui.seq2seq import (
    LABEL_KEY,
    attention_heatmap,
    char_labels,
    checked_input,
    coverage_steps,
    metrics_table,
    word_columns,
)

page = Page("coverage")
weight = seq2seq_checkpoint("additive_coverage")[0].config.coverage_weight
MODELS = {"additive": "without coverage", "additive_coverage": f"with coverage, loss weight λ = {weight}"}
SHORT = {"additive": "plain", "additive_coverage": "covered"}  # the snippet's name of each model's values

page.intro(
    "A decoder that forgets where it has already looked may repeat itself or skip part of the input. The "
    "coverage vector c^t adds up the attention of all earlier steps (eq. 48); the coverage loss charges "
    "each step for looking again where c^t is already high (eq. 49). The second model was trained with "
    "that loss added and sees c^t inside its scores (See et al., 2017); both use additive scores."
)


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2, c3 = st.columns([3, 1, 1])
    text = checked_input(page, page.text("A date, as you would write it", "text", "march 3rd, 2021 at 4 pm",
                                         max_chars=200, where=c1, help="Also try “tuesday, the 3rd of march 2021, not "
                                         "the 4th”, or just “3”, where the plain model repeats itself"))
    mean = page.toggle("Mean (eq. 50)", "mean", False, where=c2,
                       help="000 eq. 48 sums earlier attention; eq. 50 divides by t, so c^t stays a distribution")
    # steps count from 0, as eq. 48 does (c^0 = 0) and as the output labels do
    step = page.slider("Step t", "step", 0, MAX_OUTPUT - 1, 3, where=c3)
    code = page.code


    def described(name: str):
        """One model's translation, coverage and coverage loss, recorded under its short name."""
        short = SHORT[name]
        model, _ = code.call(f"{short}_model, {short}_record", load_shipped_seq2seq, name, via=seq2seq_checkpoint,
                             note=f"{MODELS[name]} (record: training losses and held-out metrics)")
        result = code.call(f"{short}_result", translate, model, text, via=lambda *_: translated(name, text))
        code.let(f"{short}_output", lambda: result.output)  # `result` is written as the step's name, {short}_result
        code.let(f"{short}_attention", lambda: result.attention)
        coverage = code.call(f"{short}_coverage", coverage_vectors, result, mean,
                             note="000 eq. 48: c^t sums the attention of every earlier step (eq. 50: divided by t)")
        covloss = code.let(f"{short}_covloss", lambda: result.covloss,
                           note="000 eq. 49: covloss_t = Σ_i min(a_i^t, c_i^t)")
        covloss_total = code.let(f"{short}_covloss_total", lambda: float(covloss.sum()))
        return model, result, coverage, covloss_total


    with page.guard():
        models = {}
        for column, name in zip(st.columns(2), MODELS):
            models[name], result, coverage, covloss_total = described(name)
            with column:
                st.subheader(f"{MODELS[name]}: {result.output}")
                attention_heatmap(result.attention, result.source, result.output, f"Attention a_tj ({MODELS[name]})")
                t = min(step, len(result.coverage) - 1)
                labels = char_labels(result.source)
                steps = list(range(len(coverage)))
                figures.show(figures.lines(steps, {word: coverage[:, positions].sum(1).tolist()
                                                   for word, positions in word_columns(result.source).items()},
                                           title=f"Coverage c^t summed over each word ({MODELS[name]})",
                                           x_title="step t", y_title="Σ_(j in word) c^t_j", markers=False))
                figures.show(coverage_steps(labels, coverage.numpy(), result.attention.numpy(), t, MODELS[name]))
                figures.show(figures.lines(steps, {"covloss_t": result.covloss.tolist()},
                                           title=f"Coverage loss per step, sum {covloss_total:.3f} ({MODELS[name]})",
                                           x_title="step t", y_title="Σ_i min(a_i^t, c_i^t)"))
        st.caption(LABEL_KEY + " The coverage curves sum each word's characters; the bars show them one by one.")
        equations(
            ("000 eq. 48", r"c^t = \sum_{t'=0}^{t-1} a^{t'}"),
            ("000 eq. 49", r"\operatorname{covloss}_t = \sum_i \min(a_i^t, c_i^t)"),
            ("000 eq. 50 (the notes' alternative)", r"c^t = \frac{1}{t} \sum_{t'=0}^{t-1} a^{t'}"),
        )
        st.markdown("**Held-out (2,000 generated dates)**: exact match, outputs longer than the answer "
                    "(repeats), outputs shorter (skips)")
        metrics_table({MODELS[name]: seq2seq_checkpoint(name)[1]["metrics"] for name in MODELS})
        st.markdown("**The same dates followed by a distraction** (“ at 4 pm”, “, not the 4th”, …), never seen in "
                    "training")
        examples = code.call("distracted", distracted_examples, 1000, DISTRACTED_SEED, via=distracted_dates,
                             note="held-out dates followed by a distraction (“ at 4 pm”, …), never seen in training")
        distracted = {MODELS[name]: code.call(f"{SHORT[name]}_distracted_metrics", held_out_metrics, models[name],
                                              examples, via=lambda *_, name=name: distracted_metrics()[name])
                      for name in MODELS}
        code.figure('px.imshow(covered_coverage.numpy(), title="Coverage c^t before each step, the model trained with '
                    'coverage", labels={"x": "source position j", "y": "step t"})')
        metrics_table(distracted)
        plain, covered = (distracted[MODELS[name]] for name in MODELS)
        st.caption(f"Coverage does its job here, skips fall from {plain['skip_rate']:.1%} to "
                   f"{covered['skip_rate']:.1%}, "
                   f"yet exact matches fall too ({plain['exact_match']:.1%} → {covered['exact_match']:.1%}): trained "
                   "only on dates, where every input character belongs in the answer, the coverage model also covers "
                   "the distraction and writes its digits (“the 2nd of october 1952, 9:30” → 1993-10-02). Coverage "
                   "suits tasks where all the input should be used, like translation; it does not filter out noise.")


body()
