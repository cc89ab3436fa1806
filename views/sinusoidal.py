import streamlit as st

from engine.positions.sinusoidal import TABLE_EPS, offset_similarities, shift_error, shift_matrix, sinusoidal_encoding
from ui import boundary, figures, tables
from ui.page import Page, equations


@st.cache_resource(max_entries=64, show_spinner=False)
def similarities(n_positions: int, d_model: int, base: float) -> tuple:
    """offset_similarities once per server for each table, the default first: moving the offset k, or a second
    student's default view, ran it again (1.2 ms alone, longer under a class as its torch steps wait for the GIL).
    Shared, as the page only reads its tensors: st.cache_data unpickled them at every run."""
    return offset_similarities(n_positions, d_model, base)


page = Page("sinusoidal")
page.intro(
    "Each position gets a fixed vector of sines and cosines at geometrically spaced frequencies, added to "
    "the token embedding. Two properties make it useful: the similarity of two positions depends only on how "
    "far apart they are, and moving k steps is the same rotation for every position."
)


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2, c3, c4 = st.columns(4)
    d_model = page.slider("d_model", "d", 2, 256, 64, 2, where=c1)
    n_positions = page.slider("Positions", "n", 1, 512, 100, where=c2)
    base = page.number("Base", "base", 10000.0, step=1000.0, help="001 and 002 use 10000", where=c3)
    offset = page.slider("Offset k", "k", 0, 64, 5, where=c4)

    code = page.code
    with page.guard():
        pe = code.call("pe", sinusoidal_encoding, n_positions, d_model, base,
                       note="001 §1.7, 002 §2.3.2: PE(p, 2i) = sin(p ω_i), PE(p, 2i+1) = cos(p ω_i)")  # (n, d)
        code.figure('px.imshow(pe.numpy(), zmin=-1, zmax=1, color_continuous_scale="RdBu_r", aspect="auto", '
                    'labels={"x": "dimension j", "y": "position"}, title="PE(pos, j)")')
        left, right = st.columns([3, 2])
        with left:
            figures.show(figures.heatmap(pe.numpy(), list(range(d_model)), list(range(n_positions)),
                                         title=f"PE(pos, j), d_model = {d_model}, base = {base:g}",
                                         x_title="dimension j",
                                         y_title="position", zmin=-1, zmax=1, colorscale="RdBu_r", annotate=False,
                                         height=420))
        with right:
            equations(
                ("001 §1.7, 002 §2.3.2", r"\mathrm{PE}(p, 2i) = \sin(p\,\omega_i)"),
                ("001 §1.7, 002 §2.3.2", r"\mathrm{PE}(p, 2i{+}1) = \cos(p\,\omega_i)"),
                ("frequencies", r"\omega_i = \mathrm{base}^{-2i/d_{\mathrm{model}}}"),
                ("depends on k alone", r"\mathrm{PE}(p)\cdot\mathrm{PE}(p{+}k) = \textstyle\sum_i \cos(k\,\omega_i)"),
                ("one rotation per frequency, the same for every p",
                 r"\mathrm{PE}_i(p{+}k) = \begin{pmatrix}\cos k\omega_i & \sin k\omega_i \\ -\sin k\omega_i & "
                 r"\cos k\omega_i\end{pmatrix} \mathrm{PE}_i(p)"),
            )

        st.subheader("The worked example of 002 §2.3.2")
        example = code.call("example", sinusoidal_encoding, 2, 4, note="the worked example of 002 §2.3.2")
        tables.dataframe({
            "position": [0, 1],
            "printed in 002": ["[0, 1, 0, 1]", "[0.84147, 0.54030, 0.00999983, 0.99995]"],
            "computed here (d_model = 4, base 10000)": [", ".join(f"{x:.8g}" for x in row.tolist()) for row in example],
        }, hide_index=True)

        st.subheader("Similarity depends on the offset alone")
        offsets, dots, closed_form, deviation = code.call(  # (K,), (n, K), (K,), (n, K)
            "offsets, dots, closed_form, deviation", offset_similarities, n_positions, d_model, base, via=similarities,
            note="PE(p) · PE(p + k) from every p against Σ cos(k ω_i), which has no p in it; the rest is rounding")
        starts = sorted({0, n_positions // 2, n_positions - 1})
        g1, g2 = st.columns(2)
        with g1:
            figures.show(figures.points_and_curves(
                {f"from p = {p}": (offsets.tolist(), dots[p].tolist()) for p in starts},
                {"Σ cos(k ω_i)": (offsets.tolist(), closed_form.tolist())},
                title=f"PE(p) · PE(p + k) from p = {', '.join(map(str, starts))}", x_title="offset k",
                y_title="dot product"))
            spread = code.let("spread", lambda: float((dots.max(dim=0).values - dots.min(dim=0).values).max()),
                              note="the largest difference between starting positions, any k: rounding")
            st.metric("Largest difference between starting positions, any k", f"{spread:.1e}",
                      help="0 in exact arithmetic; what is left is the float32 table's rounding")
            figures.show(figures.lines(offsets.tolist(), {f"from p = {p}": deviation[p].tolist() for p in starts},
                                       title="… minus Σ cos(k ω_i): rounding only", x_title="offset k",
                                       y_title="deviation / (ε·d_model/2)", markers=False, height=300))
            st.caption(f"ε = {TABLE_EPS:.1e}, float32's, because the table is stored in float32; "
                       "d_model/2 = ‖PE(p)‖² is "
                       f"the size of the products summed. Every start stays within {float(deviation.abs().max()):.2f} "
                       "of these units: the similarity depends on k alone.")
        with g2:
            M = code.call("M", shift_matrix, offset, d_model, base,
                          note="one rotation per frequency moves every position by k: PE(p + k) = M_k PE(p)")
            error = code.call("error", shift_error, n_positions, offset, d_model, base,
                              note="max |M_k PE(p) − PE(p + k)| over every p: rounding only")
            shown = min(16, d_model)
            figures.show(figures.heatmap(M.numpy()[:shown, :shown], list(range(shown)), list(range(shown)),
                                         title=f"M_k for k = {offset} (first {shown} dimensions)", zmin=-1, zmax=1,
                                         colorscale="RdBu_r", annotate=False, height=360))
            st.metric(f"max |M_k PE(p) − PE(p + {offset})| over every p", f"{error:.1e}",
                      help="0 in exact arithmetic; what is left is the float32 table's rounding")
            st.caption(f"That is {error / TABLE_EPS:.2f} ε (float32, ε = {TABLE_EPS:.1e}; every entry is at most 1): "
                       "one rotation moves every position by k, up to rounding.")


body()
