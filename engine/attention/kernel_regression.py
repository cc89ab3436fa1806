"""Nadaraya-Watson kernel regression as attention pooling (001 §1.3).

f(q) = sum_i v_i alpha(q, k_i) / sum_j alpha(q, k_j): the query is where we estimate,
the keys are observed locations and the values their labels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.errors import InputError

KERNELS = ("gaussian", "boxcar", "epanechnikov")


def kernel(name: str, distance: torch.Tensor, bandwidth: float) -> torch.Tensor:
    """Unnormalised similarity alpha(q, k) of a distance q - k at bandwidth h.

    gaussian exp(-u^2 / 2), boxcar 1[|u| <= 1], epanechnikov max(0, 1 - u^2), u = (q - k) / h.
    Constant factors (1/sqrt(2 pi), 1/2, 3/4) are dropped: they cancel in f(q).
    """
    if bandwidth <= 0:
        raise InputError(f"the bandwidth must be positive, got {bandwidth}")
    u = distance / bandwidth
    if name == "gaussian":
        return torch.exp(-0.5 * u**2)
    if name == "boxcar":
        return (u.abs() <= 1).to(u.dtype)
    if name == "epanechnikov":
        return torch.clamp(1 - u**2, min=0)
    raise ValueError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)}")


@dataclass
class KernelFit:
    predictions: torch.Tensor  # (n_q,) NaN where no key lies inside a compact kernel
    weights: torch.Tensor  # (n_q, n_k) rows sum to 1, or 0 where the query has no support
    uncovered: int  # queries with no key inside the kernel's support


def nadaraya_watson(
    queries: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, name: str, bandwidth: float
) -> KernelFit:
    """Estimate f at each query from (key, value) pairs: queries (n_q,), keys and values (n_k,)."""
    similarity = kernel(name, queries[:, None] - keys[None, :], bandwidth)  # (n_q, n_k)
    totals = similarity.sum(dim=1, keepdim=True)  # (n_q, 1)
    covered = totals > 0
    weights = torch.where(covered, similarity / torch.where(covered, totals, 1.0), 0.0)
    predictions = torch.where(covered[:, 0], weights @ values, torch.nan)
    return KernelFit(predictions, weights, uncovered=int((~covered).sum()))


def true_function(x: torch.Tensor) -> torch.Tensor:
    """The curve behind the data, as in d2l's kernel-regression chapter: 2 sin x + x^0.8."""
    return 2 * torch.sin(x) + x**0.8


@dataclass
class RegressionData:
    x_train: torch.Tensor  # (n,) sorted keys in [0, 5)
    y_train: torch.Tensor  # (n,) noisy values
    x_query: torch.Tensor  # (Q,) evenly spaced queries over [0, 5]
    y_true: torch.Tensor  # (Q,) noise-free curve at the queries


def make_regression_data(n_train: int, noise: float, seed: int, n_query: int = 51) -> RegressionData:
    """Seeded noisy samples of `true_function` on [0, 5)."""
    if n_train < 1:
        raise InputError("need at least one training point")
    g = torch.Generator().manual_seed(seed)
    x_train, _ = torch.sort(torch.rand(n_train, generator=g) * 5)
    y_train = true_function(x_train) + noise * torch.randn(n_train, generator=g)
    x_query = torch.linspace(0, 5, n_query)
    return RegressionData(x_train, y_train, x_query, true_function(x_query))


def fit_error(fit: KernelFit, truth: torch.Tensor) -> float:
    """Mean squared error of the estimate against the true curve (Q,), over the queries a key covers; NaN when
    no query is covered."""
    covered = ~torch.isnan(fit.predictions)
    if not covered.any():
        return float("nan")
    return float(((fit.predictions[covered] - truth[covered]) ** 2).mean())


def bandwidth_grid(low: float = 0.05, high: float = 3.0, count: int = 25) -> torch.Tensor:
    """Bandwidths evenly spaced in log h, (count,): the kernel regression page's slider range."""
    return torch.logspace(math.log10(low), math.log10(high), count)


def bandwidth_sweep(data: RegressionData, bandwidths: torch.Tensor) -> dict[str, torch.Tensor]:
    """Mean squared error against the true curve per kernel and bandwidth (uncovered queries skipped)."""
    errors = {}
    for name in KERNELS:
        row = [fit_error(nadaraya_watson(data.x_query, data.x_train, data.y_train, name, h), data.y_true)
               for h in bandwidths.tolist()]
        errors[name] = torch.tensor(row)
    return errors
