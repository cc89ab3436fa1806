import numpy as np
import streamlit as st
import torch

from engine.attention import kernel_regression as kr
from ui import figures
from ui.page import Page, equations

page = Page("kernel_regression")
page.intro(
    "The query is where we want an estimate, the keys are where we observed data and the values are "
    "what we observed. Attention pooling is a weighted average of the values, weighted by how similar "
    "each key is to the query."
)
KERNEL_LABELS = {"Gaussian": "gaussian", "Boxcar": "boxcar", "Epanechnikov": "epanechnikov"}
c1, c2, c3, c4, c5 = st.columns(5)
kernel_label = page.select("Kernel", "kernel", list(KERNEL_LABELS), where=c1)
bandwidth = page.slider("Bandwidth h", "h", 0.05, 3.0, 0.5, 0.05, where=c2)
n_train = page.slider("Training points", "n", 5, 200, 50, where=c3)
noise = page.slider("Noise σ", "noise", 0.0, 2.0, 0.5, 0.1, where=c4)
seed = page.slider("Seed", "seed", 0, 99, 0, where=c5)
kernel = KERNEL_LABELS[kernel_label]


@st.cache_data(max_entries=64)
def sweep(n_train: int, noise: float, seed: int) -> tuple[list[float], dict[str, list[float]]]:
    data = kr.make_regression_data(n_train, noise, seed)
    bandwidths = torch.logspace(np.log10(0.05), np.log10(3.0), 25)
    errors = kr.bandwidth_sweep(data, bandwidths)
    return bandwidths.tolist(), {name.title(): e.tolist() for name, e in errors.items()}


data = kr.make_regression_data(n_train, noise, seed)
fit = kr.nadaraya_watson(data.x_query, data.x_train, data.y_train, kernel, bandwidth)
covered = ~torch.isnan(fit.predictions)
mse = float(((fit.predictions[covered] - data.y_true[covered]) ** 2).mean()) if covered.any() else float("nan")

left, right = st.columns([3, 2])
with left:
    figures.show(figures.points_and_curves(
        {"observations (k_i, v_i)": (data.x_train.tolist(), data.y_train.tolist())},
        {"true curve 2 sin x + x^0.8": (data.x_query.tolist(), data.y_true.tolist()),
         f"f(q), {kernel_label.lower()} kernel": (data.x_query.tolist(), fit.predictions.tolist())},
        title="Nadaraya-Watson estimate", x_title="x (queries and keys)", y_title="y (values)"))
    m1, m2 = st.columns(2)
    m1.metric("Mean squared error against the true curve", f"{mse:.4f}")
    m2.metric("Queries with no key inside the kernel", fit.uncovered)
    if fit.uncovered:
        st.warning(f"{fit.uncovered} of {len(data.x_query)} queries have no training point within h = {bandwidth} "
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
    fit.weights.numpy(), data.x_train.tolist(), data.x_query.tolist(), categorical=False,
    title=f"α(q, k) / Σ α, {kernel_label.lower()} kernel, h = {bandwidth}", x_title="key k_i", y_title="query q",
    zmax=None, height=520))

st.subheader("Choosing the bandwidth")
bandwidths, errors = sweep(n_train, noise, seed)
figures.show(figures.lines(bandwidths, errors, title="Error against the true curve over h (bias against variance)",
                           x_title="bandwidth h", y_title="mean squared error", log_x=True, log_y=True))
