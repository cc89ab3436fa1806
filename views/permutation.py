import streamlit as st

from engine.attention.equivariance import check_equivariance, shuffled_order, token_embeddings
from engine.attention.multihead import init_multihead
from ui import boundary, figures
from ui.inputs import parse_order, parse_tokens
from ui.page import Page, equations

page = Page("permutation")
ENCODING_LABELS = {"None": "none", "Sinusoidal, added to X (002 §2.3.2)": "sinusoidal",
                   "RoPE, rotating q and k (002 §2.3.3)": "rope"}
page.intro(
    "Self-attention compares every token with every other, but nothing in Q Kᵀ knows where a token sits. "
    "Shuffle the tokens and, with no positions added, the attention map is the same map with its rows and "
    "columns shuffled the same way."
)


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2, c3 = st.columns([3, 2, 1])
    text = page.text("Sentence", "text", "I feel good", 200, where=c1)
    how = page.select("New order", "order", ["Reversed", "Shuffled", "Typed"], where=c2)
    seed = page.slider("Seed", "seed", 0, 99, 0, where=c3)
    c4, c5 = st.columns([3, 3])
    d_model = page.slider("d_model", "C", 2, 64, 8, 2, where=c4)
    encoding = page.select("Positions", "pos", list(ENCODING_LABELS), help="Positions belong to the slots: "
                           "after shuffling, slot t still gets position t", where=c5)

    with page.guard():
        code = page.code
        parse_tokens(text)  # refuses an empty or over-long sentence before anything is recorded
        tokens = code.let("tokens", lambda: text.split(), note="the sentence's tokens")
        if how == "Reversed":
            new_order = code.let("new_order", lambda: list(range(len(tokens)))[::-1], note="the new order: reversed")
        elif how == "Shuffled":
            new_order = code.call("new_order", shuffled_order, tokens, seed, note="the new order: shuffled")
        else:
            typed = parse_order(page.text("Order (new position i takes old token order[i])", "perm",
                                          " ".join(map(str, range(len(tokens)))), 100), len(tokens))
            new_order = code.let("new_order", lambda: typed,
                                 note="the new order: new position i takes old token order[i]")
        X = code.call("X", token_embeddings, tokens, d_model, seed, note="a fixed random vector per word, (T, C)")
        weights = code.call("weights", init_multihead, d_model, seed, note="one head: W_Q, W_K, W_V, each (C, C)")
        check = code.call("check", check_equivariance, X, weights, new_order, ENCODING_LABELS[encoding],
                          note="002 §2.3.1: attention of X and of X' = P X; without positions A' = P A Pᵀ")
        weights_error, output_error = code.let(
            "weights_error, output_error", lambda: (check.weights_error, check.output_error),
            note="max |A' − P A Pᵀ| and max |Attention(P X) − P Attention(X)|: float32 rounding without positions")
        code.figure('slots = [f"{t} {tokens[i]}" for t, i in enumerate(new_order)]'
                    '  # a repeated word keeps its own row\n'
                    'px.imshow(check.A_permuted.numpy(), x=slots, y=slots,'
                    ' title="A′ of P X (P A Pᵀ without positions)")')
        shuffled = [tokens[i] for i in new_order]
        st.markdown(f"**X:** {' · '.join(tokens)}  \n**X′ = P X:** {' · '.join(shuffled)}")

        maps = {"A of X": (check.A, tokens), "A′ of P X": (check.A_permuted, shuffled),
                "P A Pᵀ": (check.A_reordered, shuffled)}
        for column, (title, (A, labels)) in zip(st.columns(3), maps.items()):
            with column:
                figures.show(figures.heatmap(A.numpy(), labels, labels, title=title, x_title="key", y_title="query",
                                             showscale=False))
        left, right = st.columns([3, 2])
        with left:
            m1, m2 = st.columns(2)
            m1.metric("max |A′ − P A Pᵀ|", f"{weights_error:.1e}")
            m2.metric("max |Attention(P X) − P Attention(X)|", f"{output_error:.1e}")
            if weights_error < 1e-5:
                st.success("A′ = P A Pᵀ to float32 rounding: the shuffled sentence gets the same attention, shuffled.")
            else:
                st.info("With positions, each token's query and key depend on the slot it now sits in, "
                        "so the attention is no longer a shuffled copy of the original.")
            st.caption("P is a permutation matrix, so Pᵀ P = I; the row-wise softmax commutes with reordering "
                       "rows and columns.")
        with right:
            equations(
                ("002 §2.3.1", r"X' = PX,\quad Q' = PQ,\quad K' = PK"),
                ("002 §2.3.1", r"S' = \frac{PQ(PK)^\top}{\sqrt{d_k}} = P S P^\top,\quad A' = P A P^\top"),
                ("002 §2.3.1", r"\operatorname{Attention}(X') = A'V' = P\,\operatorname{Attention}(X)"),
            )


body()
