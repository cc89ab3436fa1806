import streamlit as st

from engine.seq2seq.cross import as_cross_attention
from engine.seq2seq.decode import translate
from engine.seq2seq.model import load_shipped_seq2seq
from ui import boundary
from ui.loaders import seq2seq_checkpoint, translated
from ui.page import Page, equations, gaps
from ui.seq2seq import LABEL_KEY, attention_heatmap, checked_input

page = Page("cross_attention")
page.intro(
    "In a transformer's cross-attention the queries come from one sequence and the keys and values from "
    "another (000 §8.4). The seq2seq decoder already does exactly this, one step at a time: its query is "
    "the state s_{t−1}, its keys and values are the encoder states z_j. Stack the decoder's queries into Q "
    "and the encoder's states into K and V, and one matrix product gives every step's weights at once."
)


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2 = st.columns([1, 3])
    name = page.select("Model (its scores are a product QKᵀ)", "model", ["dot", "general"], where=c1)
    text = checked_input(page, page.text("A date", "text", "march 3, 2021", max_chars=200, where=c2))
    code = page.code
    model, _ = code.call("seq2seq, record", load_shipped_seq2seq, name, via=seq2seq_checkpoint)
    with page.guard():
        result = code.call("result", translate, model, text, via=lambda *_: translated(name, text),
                           note="the decoder, step by step (000 eq. 42, 44)")
        code.let("output", lambda: result.output)
        step_by_step = code.let("step_by_step", lambda: result.attention)
        cross = code.call("cross", as_cross_attention, model, result,
                          note="000 eq. 84-85: Q = the decoder's queries s_{t-1}, K and V from the encoder's states")
        at_once = code.let("at_once", lambda: cross.at_once.weights, note="softmax(QKᵀ), every step at once")
        scaled = code.let("scaled", lambda: cross.scaled.weights,
                          note="000 eq. 57: softmax(QKᵀ/√D), as a transformer scores")
        code.let("weights_gap", lambda: float((step_by_step - at_once).abs().max()), note="the two ways agree")
        code.let("context_gap", lambda: float((result.context - cross.at_once.output).abs().max()))
        st.subheader(f"“{result.source}” → {result.output}")
        T, S, D = len(cross.Q), len(cross.K), cross.Q.shape[1]
        maps = {"The decoder, step by step": step_by_step, "softmax(QKᵀ), all steps at once": at_once,
                "softmax(QKᵀ/√D): scaled, as eq. 57": scaled}
        for column, (title, attention_map) in zip(st.columns(3), maps.items()):
            with column:
                attention_heatmap(attention_map, result.source, result.output, title)
        st.caption(LABEL_KEY)
        gaps(("max |step by step − softmax(QKᵀ)|", step_by_step.numpy(), at_once.numpy()),
             ("max |c_t − (softmax(QKᵀ) V)_t|", result.context.numpy(), cross.at_once.output.numpy()))
        st.caption(f"Q is {T} × {D} (one decoder state per output step), K and V are {S} × {D} (one encoder state per "
                   f"input character). The model was trained without the 1/√D, so the scaled weights are flatter than "
                   "the ones it learned to use: scaling is a choice made at training time, not a free change.")
        code.figure('px.imshow(torch.stack([at_once, scaled]).numpy(), facet_col=0, '
                    'title="softmax(QKᵀ) and softmax(QKᵀ/√D)", labels={"x": "source position j", "y": "step t"})')
    equations(
        ("000 eq. 84-85: cross-attention", r"Q \text{ from one sequence},\quad K = V\text{-side from the other}"),
        ("000 eq. 42, 44 as matrices", r"A = \operatorname{softmax}(Q K^\top),\quad C = A V"),
        ("000 eq. 57", r"\operatorname{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right) V"),
    )


body()
