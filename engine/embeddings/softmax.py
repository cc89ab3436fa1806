"""The skip-gram probability and its objectives: full softmax (000 eq. 3-4, 8, 12) and negative
sampling (000 eq. 13-16). v_c is the centre (input) vector, u_o the output vector, as in eq. 3.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F


def context_distribution(v_c: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
    """000 eq. 4: p(o|c) = exp(u_o·v_c) / Σ_o' exp(u_o'·v_c) for every o. v_c: (d,), U: (V, d) -> (V,)"""
    return torch.softmax(U @ v_c, dim=0)


def log_prob_gradient(v_c: torch.Tensor, U: torch.Tensor, o: int) -> torch.Tensor:
    """000 eq. 12: ∂ log p(o|c) / ∂v_c = u_o − Σ_o' p(o'|c) u_o'. -> (d,)"""
    return U[o] - context_distribution(v_c, U) @ U


def pair_log_probs(V: torch.Tensor, U: torch.Tensor, targets: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
    """log p(context|target) for each (target, context) pair of eq. 6. V, U: (W, d); ids: (P,) -> (P,)"""
    return torch.log_softmax(V[targets] @ U.T, dim=1).gather(1, contexts[:, None]).squeeze(1)


def full_softmax_step(V: torch.Tensor, U: torch.Tensor, targets: torch.Tensor, contexts: torch.Tensor,
                      lr: float) -> float:
    """One gradient-ascent step on eq. 8's log-likelihood over the pairs; updates V and U in place and
    returns the log-likelihood before the step."""
    V.requires_grad_(True)
    U.requires_grad_(True)
    log_likelihood = pair_log_probs(V, U, targets, contexts).sum()
    grad_V, grad_U = torch.autograd.grad(log_likelihood, (V, U))
    log_likelihood = log_likelihood.detach()
    with torch.no_grad():
        V += lr * grad_V
        U += lr * grad_U
    V.requires_grad_(False)
    U.requires_grad_(False)
    return log_likelihood.item()


def negative_sampling_objective(v_c: torch.Tensor, u_w: torch.Tensor, u_neg: torch.Tensor) -> torch.Tensor:
    """000 eq. 16 for one pair: log σ(u_w·v_c) + Σ_k log σ(−u_w̄k·v_c). v_c, u_w: (d,), u_neg: (k, d)"""
    return F.logsigmoid(u_w @ v_c) + F.logsigmoid(-(u_neg @ v_c)).sum()
