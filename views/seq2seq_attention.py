import streamlit as st

from engine import errata
from engine.seq2seq.decode import translate
from engine.seq2seq.model import load_shipped_seq2seq
from ui import boundary, errata_panel, figures
from ui.loaders import seq2seq_checkpoint, timed_translation, translated
from ui.page import Page, equations
from ui.seq2seq import (DATE_EXAMPLE, LABEL_KEY, attention_heatmap, char_labels, checked_input, metrics_table,
                        output_labels)

# 000 scores with the step's own state h_t; our models query with s_{t-1}, as 001 §1.5 does (see the panel below)
SCORE_EQUATIONS = {
    "dot": ("000 eq. 42, queried by 001 §1.5's s_{t−1}", r"e_{tj} = s_{t-1}^\top z_j"),
    "general": ("000 eq. 46, queried by s_{t−1}", r"e_{tj} = s_{t-1}^\top W z_j"),
    "additive": ("000 eq. 47, queried by s_{t−1}, with a bias b", r"e_{tj} = v^\top \tanh(W_1 s_{t-1} + W_2 z_j + b)"),
}
page = Page("seq2seq_attention")
page.intro(
    "A bidirectional GRU reads a date as written by a person, one character at a time; a GRU decoder writes "
    "it in ISO form. At every step the decoder's previous state asks which input characters matter now "
    "(Bahdanau's step, 001 §1.5). Three checkpoints differ only in how they score a match. Each was trained "
    "on generated dates (day first: 03/04/21 is the 3rd of April)."
)


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2 = st.columns([1, 3])
    score = page.select("Scoring function", "score", list(SCORE_EQUATIONS), "additive", where=c1)
    text = checked_input(page, page.text("A date, as you would write it", "text", DATE_EXAMPLE,
                                         max_chars=200, where=c2))
    code = page.code
    model, record = code.call("model, record", load_shipped_seq2seq, score, via=seq2seq_checkpoint,
                              note="record: what was saved with the model (training losses, held-out metrics)")
    with page.guard():
        # one read of the cache: each read copies the translation out of it; elapsed_ms is its first decoding here
        decoded, elapsed_ms = timed_translation(score, text)
        result = code.call("result", translate, model, text, via=lambda *_: decoded,
                           note="greedy decoding; every step scores the source with s_{t-1} (000 eq. 42-47, 001 §1.5)")
        output = code.let("output", lambda: result.output)
        attention = code.let("attention", lambda: result.attention,
                             note="000 eq. 42-43: a_tj, one row per output character")
        st.subheader(f"“{result.source}” → {result.output}")
        left, right = st.columns([3, 2])
        with left:
            attention_heatmap(attention, result.source, output,
                              f"Attention a_tj of the {score} model: one row per output character")
            st.caption(LABEL_KEY)
            # steps count from 0 like the heatmap's rows, so step t writes the output character labelled t
            last = len(result.attention) - 1
            step = page.slider("Decoding step t", "step", 0, last, min(4, last))
            weights = code.let("weights", lambda: attention[step],
                               note="step t's weights over the source: they sum to 1")
            context = code.let("context", lambda: result.context[step], note="000 eq. 44: c_t = Σ_j a_tj z_j")
            weight_sum = code.let("weight_sum", lambda: float(weights.sum()))
            produced = output_labels(result.output, len(result.attention))[step]
            figures.show(figures.bars(char_labels(result.source), {"a_tj": weights.tolist()},
                                      title=f"Step {step} (writes “{produced}”): weights over the source",
                                      y_title="a_tj"))
            figures.show(figures.heatmap(context[None].numpy(), list(range(len(context))),
                                         ["c_t"], f"Context vector c_{step} = Σ_j a_tj z_j ({len(context)} numbers)",
                                         zmin=None, zmax=None, zmid=0, colorscale="RdBu", annotate=False, height=160))
        with right:
            equations(
                SCORE_EQUATIONS[score],
                ("000 eq. 42-43", r"a_{tj} = \frac{\exp(e_{tj})}{\sum_{j'} \exp(e_{tj'})},\quad \sum_j a_{tj} = 1"),
                ("000 eq. 44", r"c_t = \sum_j a_{tj} z_j"),
                ("001 §1.5", r"s_t = \operatorname{GRU}([c_t;\, \operatorname{emb}(y_{t-1})],\ s_{t-1})"),
                ("000 eq. 45: the output layer reads", r"\tilde h_t = [c_t;\, s_t]"),
            )
            st.metric(f"Σ_j a_{step}j", f"{weight_sum:.6f}")
            st.metric("Decoding time, attention captured", f"{elapsed_ms:.0f} ms",
                      help="issue goal: 100 ms for 40 characters")
            st.markdown("**Held-out (2,000 generated dates)**")
            metrics_table({name: seq2seq_checkpoint(name)[1]["metrics"] for name in SCORE_EQUATIONS})
        errata_panel.show(errata.model_bahdanau_query(model, result, step))
        code.figure('px.imshow(attention.numpy(), x=[f"{j} {c}" for j, c in enumerate(result.source)], '
                    'y=[f"{t} {c}" for t, c in enumerate(output + "■")][:len(attention)], '
                    f'title="Attention a_tj of the {score} model")')
        additive = seq2seq_checkpoint("additive")[0]  # the bias belongs to the additive model, whichever is shown
        additive_result = result if score == "additive" else translated("additive", text)
        errata_panel.show(errata.model_additive_bias(additive, additive_result))


body()
