"""Why scaled dot-product attention divides by sqrt(d_k) (000 eq. 56-57, 001 §1.4).

With q and k of independent zero-mean, unit-variance entries, q.k has variance d_k, so the
softmax over raw logits grows peaky as d_k grows and its gradient vanishes; dividing by
sqrt(d_k) restores unit variance. Everything here is measured over random draws.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.errors import InputError

DRAW_CHUNK = 128  # draws per batched matmul: keeps (chunk, m, d_k) under ~35 MB at d_k = 1024


def softmax_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Shannon entropy in nats of each row of weights (..., m); 0 log 0 taken as 0."""
    return -(torch.special.xlogy(weights, weights)).sum(dim=-1)


def softmax_jacobian_norm(weights: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of d softmax / d logits = diag(p) - p p^T, per row of weights (..., m).

    Closed form: ||J||^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2. It goes to 0 as the softmax
    saturates, which is 000 eq. 56's vanishing gradient.
    """
    p2 = (weights**2).sum(dim=-1)
    p3 = (weights**3).sum(dim=-1)
    return torch.sqrt(torch.clamp(p2 - 2 * p3 + p2**2, min=0))


def sample_logits(d_k: int, n_keys: int, n_draws: int, generator: torch.Generator) -> torch.Tensor:
    """Raw logits q.k_j for n_draws queries against n_keys keys each, entries ~ N(0, 1): (n_draws, m)."""
    chunks = []
    for start in range(0, n_draws, DRAW_CHUNK):
        b = min(DRAW_CHUNK, n_draws - start)
        q = torch.randn(b, 1, d_k, generator=generator)  # (b, 1, d_k)
        K = torch.randn(b, n_keys, d_k, generator=generator)  # (b, m, d_k)
        chunks.append((q @ K.transpose(1, 2))[:, 0, :])  # (b, m)
    return torch.cat(chunks)


def one_query_weights(d_k: int, n_keys: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One random query against n_keys random keys at width d_k: the softmax of the raw logits q.k_j and of the
    scaled ones q.k_j / sqrt(d_k) (000 eq. 57), each (m,)."""
    logits = sample_logits(d_k, n_keys, 1, torch.Generator().manual_seed(seed))[0]  # (m,)
    return torch.softmax(logits, dim=0), torch.softmax(logits / math.sqrt(d_k), dim=0)


@dataclass
class ScalingStudy:
    d_k: list[int]
    logit_std: dict[str, list[float]]  # "raw" and "scaled": measured std of the logits
    entropy: dict[str, list[float]]  # mean softmax entropy as a fraction of log m
    max_weight: dict[str, list[float]]  # mean largest attention weight
    jacobian_norm: dict[str, list[float]]  # mean ||d softmax / d logits||_F


def nested_logits(dims: list[int], n_keys: int, n_draws: int, generator: torch.Generator) -> torch.Tensor:
    """Raw logits for every d_k in dims (ascending) from one draw at the largest: (len(dims), n_draws, m).

    The logit at d_k sums the first d_k products q_i k_i, so each width adds the products since the one before to
    the last: half the random numbers of separate draws, and the curves over d_k share their noise. Those stretches
    are summed in float64, as torch's running sum (cumsum) adds float32 on the CPU, so the logits are the running
    sum's to the bit, in half its time.
    """
    bounds = [0, *dims]
    chunks = []
    for start in range(0, n_draws, DRAW_CHUNK):
        b = min(DRAW_CHUNK, n_draws - start)
        q = torch.randn(b, 1, dims[-1], generator=generator)  # (b, 1, D)
        K = torch.randn(b, n_keys, dims[-1], generator=generator)  # (b, m, D)
        products = K.mul_(q)  # (b, m, D), in K's place: no new (b, m, D) tensor for every chunk
        added = torch.stack([products[..., lo:hi].sum(-1, dtype=torch.float64) for lo, hi in zip(bounds, bounds[1:])],
                            dim=-1)  # (b, m, len(dims))
        chunks.append(added.cumsum(dim=-1).float())
    return torch.cat(chunks).permute(2, 0, 1)


def scaling_study(max_log2_d: int, n_keys: int, n_draws: int, seed: int) -> ScalingStudy:
    """Measure raw and 1/sqrt(d_k)-scaled logits for d_k = 1, 2, 4, ..., 2^max_log2_d."""
    if n_keys < 2:
        raise InputError("need at least two keys for a softmax to choose between")
    dims = [2**i for i in range(max_log2_d + 1)]
    study = ScalingStudy(dims, {"raw": [], "scaled": []}, {"raw": [], "scaled": []},
                         {"raw": [], "scaled": []}, {"raw": [], "scaled": []})
    for d_k, raw in zip(dims, nested_logits(dims, n_keys, n_draws, torch.Generator().manual_seed(seed))):
        for name, logits in (("raw", raw), ("scaled", raw / math.sqrt(d_k))):
            weights = torch.softmax(logits, dim=-1)
            study.logit_std[name].append(float(logits.std()))
            study.entropy[name].append(float(softmax_entropy(weights).mean() / math.log(n_keys)))
            study.max_weight[name].append(float(weights.max(dim=-1).values.mean()))
            study.jacobian_norm[name].append(float(softmax_jacobian_norm(weights).mean()))
    return study
