import streamlit as st

from engine.seq2seq.decode import translate
from engine.seq2seq.model import load_shipped_seq2seq
from ui import figures, tables
from ui.loaders import seq2seq_checkpoint, translated
from ui.page import Page, equations
from ui.seq2seq import LABEL_KEY, attention_heatmap, checked_input, metrics_table, output_labels

page = Page("pointer_generator")
page.intro(
    "See et al.'s pointer-generator (2017), not the model 000 §7.2.4 describes: the same mixture as eq. 53, "
    "but inside a seq2seq decoder and with a sigmoid gate computed from the decoder's state, where Merity et "
    "al.'s pointer sentinel LM (the previous page) predicts the next word of a text and takes g from a sentinel "
    "in the pointer's own softmax. The task: “call ximena on 3 march 2021” → “ximena 2021-03-03”. Names are "
    "random syllables and the output vocabulary has digits, “-” and the space but **no letters**, so a name "
    "can only be copied from the input. At each step the gate g decides how much probability comes from the "
    "vocabulary (generate) and how much from the attention over the input (copy); characters outside the "
    "vocabulary are written through an extended vocabulary made of the input's own characters."
)
text = checked_input(page, page.text("Input", "text", "call ximena on the 3rd of march 2021", max_chars=200))
code = page.code
model, record = code.call("model, record", load_shipped_seq2seq, "pointer", via=seq2seq_checkpoint,
                         note="record: training losses and held-out metrics")
with page.guard():
    result = code.call("result", translate, model, text, via=lambda *_: translated("pointer", text),
                       note="greedy decoding; every step mixes generating and copying (000 eq. 52-53)")
    code.let("output", lambda: result.output)
    attention = code.let("attention", lambda: result.attention, note="000 eq. 52: a_tj, the pointer's distribution")
    gate = code.let("gate", lambda: result.gate, note="See et al.'s gate g at every step: 1 generates, 0 copies")
    p_vocab = code.let("p_vocab", lambda: result.p_vocab, note="the written character's probability under each part")
    p_ptr = code.let("p_ptr", lambda: result.p_ptr)
    p_final = code.let("p_final", lambda: result.p_final)
    mixture = code.let("mixture", lambda: gate * p_vocab + (1 - gate) * p_ptr, note="000 eq. 53's mixture, by hand")
    gap = code.let("gap", lambda: float((mixture - p_final).abs().max()), note="against the model's own p(y)")
    st.subheader(f"“{result.source}” → {result.output}")
    labels = output_labels(result.output, len(result.attention))
    left, right = st.columns([3, 2])
    with left:
        figures.show(figures.bars(labels, {"g (generate)": gate.tolist(), "1 − g (copy)": (1 - gate).tolist()},
                                  title="The gate at every step", y_title="weight"))
        numbers = {"g": gate.numpy(), "p_vocab(y)": p_vocab.numpy(), "p_ptr(y)": p_ptr.numpy(),
                   "g·p_vocab + (1−g)·p_ptr": mixture.numpy(), "p(y) from the model": p_final.numpy()}
        tables.dataframe({"step": labels, **numbers}, hide_index=True,
                         column_config={k: st.column_config.NumberColumn(format="%.4f") for k in numbers})
        attention_heatmap(attention, result.source, result.output, "Attention a_tj: the pointer's distribution")
        st.caption(LABEL_KEY + " Each step is labelled with the character it writes.")
    with right:
        equations(
            ("000 eq. 52", r"a_{tj} = \operatorname{softmax}_j\big(v^\top \tanh(W_1 s_{t-1} + W_2 z_j)\big)"),
            ("pointer distribution", r"p_{\text{ptr}}(w) = \sum_{j:\, x_j = w} a_{tj}"),
            ("000 eq. 53's mixture", r"p(w) = g\, p_{\text{vocab}}(w) + (1 - g)\, p_{\text{ptr}}(w)"),
            ("See et al.'s gate (not a sentinel)",
             r"g = \sigma(w_g^\top [s_t;\, c_t;\, \operatorname{emb}(y_{t-1})] + b_g)"),
        )
        st.metric("max |mixture − model's p(y)|", f"{gap:.1e}")
        st.markdown("**Held-out (2,000 generated names and dates)**")
        metrics_table({"pointer-generator": record["metrics"]})
code.figure('px.bar(x=[f"{t} {c}" for t, c in enumerate(output + "■")][:len(gate)], y=gate.numpy(), '
            'labels={"x": "step", "y": "g"}, title="The gate at every step: g generates, 1 − g copies")')
