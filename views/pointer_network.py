import streamlit as st
import torch

from engine.errors import InputError
from engine.seq2seq.pointer_network import load_shipped_pointer_network, number_sets
from ui import figures, tables
from ui.inputs import parse_numbers
from ui.loaders import pointer_network
from ui.page import Page, equations


@st.cache_resource(max_entries=256, show_spinner=False)
def pointed(values: tuple[float, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """The shipped network's forward on one set, once per server for each set, the default first. Keyed by the
    numbers: under a class its few ms of small torch steps each gave up the GIL and queued behind other sessions.
    Shared, as the page only reads its tensors: st.cache_data unpickled them at every run."""
    with torch.no_grad():
        return pointer_network()[0].forward(torch.tensor([values]))


page = Page("pointer_network")
page.intro(
    "A pointer network's answer is a list of positions in its own input (000 §7.2.1). Here it sorts "
    "numbers: at every step the additive attention of eq. 52 *is* the output distribution over the input "
    "positions, and the number it points at is fed back in. Trained on 5 to 10 numbers in [0, 1)."
)
code = page.code
model, record = code.call("model, record", load_shipped_pointer_network, via=pointer_network,
                         note="record: training losses and the held-out share sorted per set length")
c1, c2, c3 = st.columns([1, 1, 3])
n = page.slider("How many numbers", "n", 2, 20, 8, where=c1)
seed = page.slider("Seed", "seed", 0, 99, 0, where=c2)
typed = page.text("Or type numbers (commas between)", "numbers", "", max_chars=300, where=c3)
with page.guard():
    if typed.strip():
        values = parse_numbers(typed)
        inputs = code.let("inputs", lambda: torch.tensor([values]), note="one set of typed numbers")
    else:
        generator = code.let("generator", lambda: torch.Generator().manual_seed(seed))
        inputs = code.call("inputs", number_sets, 1, length=n, generator=generator,
                           note="one set of n random numbers in [0, 1)")
    if inputs.shape[1] < 2:
        raise InputError("type at least two numbers")
    with torch.no_grad():
        log_probs, picks = code.call("log_probs, picks", model.forward, inputs,
                                     via=lambda numbers: pointed(tuple(numbers[0].tolist())),
                                     note="000 eq. 51-52: log Pr(C_i = j | earlier choices, P) at every step i")
    order = code.let("order", lambda: picks[0].tolist(),
                     note="the positions in the order the network points at them")
    pointed = code.let("pointed", lambda: [inputs[0, j].item() for j in order])
    probabilities = code.let("probabilities", lambda: log_probs[0].exp().detach())
    correct = code.let("correct", lambda: order == inputs[0].argsort().tolist(), note="sorted correctly?")
    positions = [f"{j}: {v:.3f}" for j, v in enumerate(inputs[0].tolist())]
    st.subheader("→ " + ", ".join(f"{v:.3f}" for v in pointed))
    if correct:
        st.success("sorted correctly", icon=":material/check:")
    else:  # the model's own mistake on valid input, shown honestly: not a fault of the page
        st.warning("not sorted: the network made a mistake", icon=":material/swap_vert:")
    left, right = st.columns([3, 2])
    with left:
        figures.show(figures.heatmap(probabilities.numpy(), positions, [f"step {i}" for i in range(len(order))],
                                     "Where each step points: Pr(C_i = j | earlier choices, P)",
                                     x_title="input position j: number", y_title="output step i",
                                     annotate=len(order) <= 10))
    with right:
        equations(
            ("000 eq. 51", r"\Pr(C_i \mid C_1, \dots, C_{i-1}, \mathcal{P})"),
            ("000 eq. 52", r"a_{ij} = \operatorname{softmax}_j\big(v^\top \tanh(W_1 h_i + W_2 z_j)\big)"),
        )
        st.markdown("**Held-out: share of 1,000 random sets sorted exactly**")
        held_out = record["metrics"]
        tables.dataframe({"numbers": list(held_out), "sorted": [m["sorted"] for m in held_out.values()],
                          "positions right": [m["positions"] for m in held_out.values()]}, hide_index=True)
        st.caption("Steps and positions count from 0.")
        st.caption("15 numbers is longer than any set seen in training.")
code.figure('px.imshow(probabilities.numpy(), labels={"x": "input position j", "y": "output step i"}, '
            'title="Where each step points: Pr(C_i = j | earlier choices, P)")')
