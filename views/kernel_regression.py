import streamlit as st

from engine.attention import kernel_regression as kr
from ui import boundary, figures
from ui.page import Page, equations

page = Page("kernel_regression")
page.intro(
    "The query is where we want an estimate, the keys are where we observed data and the values are "
    "what we observed. Attention pooling is a weighted average of the values, weighted by how similar "
    "each key is to the query."
)
KERNEL_LABELS = {"Gaussian": "gaussian", "Boxcar": "boxcar", "Epanechnikov": "epanechnikov"}


@boundary.fragment  # its controls rerun the page's body alone: the title, the introduction and the app's frame stay
def body() -> None:
    c1, c2, c3, c4, c5 = st.columns(5)
    kernel_label = page.select("Kernel", "kernel", list(KERNEL_LABELS), where=c1)
    bandwidth = page.slider("Bandwidth h", "h", 0.05, 3.0, 0.5, 0.05, where=c2)
    n_train = page.slider("Training points", "n", 5, 200, 50, where=c3)
    noise = page.slider("Noise σ", "noise", 0.0, 2.0, 0.5, 0.1, where=c4)
    seed = page.slider("Seed", "seed", 0, 99, 0, where=c5)
    kernel = KERNEL_LABELS[kernel_label]


    @st.cache_data(max_entries=64)
    def sweep(n_train: int, noise: float, seed: int) -> dict:
        """The bandwidth sweep once per server for each data set: 75 fits, the page's slowest step."""
        return kr.bandwidth_sweep(kr.make_regression_data(n_train, noise, seed), kr.bandwidth_grid())

    code = page.code
    data = code.call("data", kr.make_regression_data, n_train, noise, seed,
                     note="noisy samples of 2 sin x + x^0.8 at random points of [0, 5), and 51 evenly spaced queries")
    queries, keys, values, truth = code.let(
        "queries, keys, values, truth", lambda: (data.x_query, data.x_train, data.y_train, data.y_true),
        note="001 §1.3: the queries are where we estimate, the keys where we observed, the values what we observed")
    fit = code.call("fit", kr.nadaraya_watson, queries, keys, values, kernel, bandwidth,
                    note="001 §1.3, Nadaraya-Watson: f(q) = Σ_i v_i α(q, k_i) / Σ_j α(q, k_j)")
    mse = code.call("mse", kr.fit_error, fit, truth, note="mean squared error against the true curve")
    code.figure('go.Figure([go.Scatter(x=keys, y=values, mode="markers", name="observations (k_i, v_i)"),\n'
                '           go.Scatter(x=queries, y=truth, name="true curve 2 sin x + x^0.8"),\n'
                f'           go.Scatter(x=queries, y=fit.predictions, name="f(q), {kernel} kernel")],\n'
                '          layout={"title": "Nadaraya-Watson estimate", "xaxis_title": "x", "yaxis_title": "y"})')

    left, right = st.columns([3, 2])
    with left:
        figures.show(figures.points_and_curves(
            {"observations (k_i, v_i)": (keys.tolist(), values.tolist())},
            {"true curve 2 sin x + x^0.8": (queries.tolist(), truth.tolist()),
             f"f(q), {kernel_label.lower()} kernel": (queries.tolist(), fit.predictions.tolist())},
            title="Nadaraya-Watson estimate", x_title="x (queries and keys)", y_title="y (values)"))
        m1, m2 = st.columns(2)
        m1.metric("Mean squared error against the true curve", f"{mse:.4f}")
        m2.metric("Queries with no key inside the kernel", fit.uncovered)
        if fit.uncovered:
            st.warning(f"{fit.uncovered} of {len(queries)} queries have no training point within h = {bandwidth} "
                       "under this compact kernel, so f(q) is 0/0 there and the curve has gaps. Widen h.")
    with right:
        equations(
            ("001 §1.3, Nadaraya-Watson", r"f(q) = \frac{\sum_i v_i\, \alpha(q, k_i)}{\sum_j \alpha(q, k_j)}"),
            ("Gaussian", r"\alpha(q,k) = \exp\!\left(-\tfrac{1}{2}\left(\tfrac{q-k}{h}\right)^2\right)"),
            ("Boxcar", r"\alpha(q,k) = \mathbb{1}\left[\,|q-k| \le h\,\right]"),
            ("Epanechnikov", r"\alpha(q,k) = \max\!\left(0,\ 1-\left(\tfrac{q-k}{h}\right)^2\right)"),
        )
        st.caption("With the Gaussian kernel the weights are exactly softmax(−(q−k)²/2h²) over the keys: "
                   "attention with a negative squared distance as the score.")

    st.subheader("Attention weights")
    st.caption("Row i is one query; its weights over the keys sum to 1. Smaller h sharpens the diagonal.")
    figures.show(figures.heatmap(
        fit.weights.numpy(), keys.tolist(), queries.tolist(), categorical=False, zmax=None, height=520,
        title=f"α(q, k) / Σ α, {kernel_label.lower()} kernel, h = {bandwidth}", x_title="key k_i", y_title="query q"))

    st.subheader("Choosing the bandwidth")
    bandwidths = code.call("bandwidths", kr.bandwidth_grid,
                           note="the error of every kernel over the slider's range of h: bias against variance")
    errors = code.call("errors", kr.bandwidth_sweep, data, bandwidths, via=lambda *_: sweep(n_train, noise, seed))
    figures.show(figures.lines(bandwidths.tolist(), {name.title(): e.tolist() for name, e in errors.items()},
                               title="Error against the true curve over h (bias against variance)",
                               x_title="bandwidth h", y_title="mean squared error", log_x=True, log_y=True))


body()
