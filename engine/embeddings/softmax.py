"""The skip-gram probability and its objectives: full softmax (000 eq. 3-4, 8, 12) and negative
sampling (000 eq. 13-16). v_c is the centre (input) vector, u_o the output vector, as in eq. 3.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from engine.errors import InputError


def context_distribution(v_c: torch.Tensor, U: torch.Tensor) -> torch.Tensor:
    """000 eq. 4: p(o|c) = exp(u_o·v_c) / Σ_o' exp(u_o'·v_c) for every o. v_c: (d,), U: (V, d) -> (V,)"""
    return torch.softmax(U @ v_c, dim=0)


def log_prob_gradient(v_c: torch.Tensor, U: torch.Tensor, o: int) -> torch.Tensor:
    """000 eq. 12: ∂ log p(o|c) / ∂v_c = u_o − Σ_o' p(o'|c) u_o'. -> (d,)"""
    return U[o] - context_distribution(v_c, U) @ U


def autograd_log_prob_gradient(v_c: torch.Tensor, U: torch.Tensor, o: int) -> torch.Tensor:
    """The same derivative by torch.autograd, the independent check of eq. 12. -> (d,)"""
    v = v_c.detach().clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(torch.log_softmax(U @ v, dim=0)[o], v)
    return grad


def pair_log_probs(V: torch.Tensor, U: torch.Tensor, targets: torch.Tensor, contexts: torch.Tensor) -> torch.Tensor:
    """log p(context|target) for each (target, context) pair of eq. 6. V, U: (W, d); ids: (P,) -> (P,)"""
    return torch.log_softmax(V[targets] @ U.T, dim=1).gather(1, contexts[:, None]).squeeze(1)


def full_softmax_step(V: torch.Tensor, U: torch.Tensor, targets: torch.Tensor, contexts: torch.Tensor,
                      lr: float) -> float:
    """One gradient-ascent step on eq. 8's log-likelihood over the pairs, averaged per pair so one
    learning rate suits any sentence length; updates V and U in place and returns the (summed)
    log-likelihood before the step."""
    V.requires_grad_(True)
    U.requires_grad_(True)
    log_likelihood = pair_log_probs(V, U, targets, contexts).sum()
    grad_V, grad_U = torch.autograd.grad(log_likelihood / len(targets), (V, U))
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


@dataclass
class SentenceFit:
    """Eq. 7-8 on one sentence: its own vocabulary, vectors v (centre) and u (output) for each word."""

    vocab: list[str]
    pairs: list[tuple[str, str]]  # (target, context) of eq. 6
    pair_probs: torch.Tensor  # (P,) Pr(context | target) with the final vectors: eq. 7's factors
    log_likelihood: list[float]  # eq. 8 before each step and after the last


def fit_sentence(pairs: list[tuple[str, str]], dim: int, steps: int, lr: float, seed: int) -> SentenceFit:
    """Gradient ascent on eq. 10 over a sentence's pairs with the full softmax of eq. 3."""
    if not pairs:
        raise InputError("no (target, context) pairs: the sentence needs at least one full window")
    vocab = list(dict.fromkeys(w for pair in pairs for w in pair))
    index = {w: i for i, w in enumerate(vocab)}
    targets = torch.tensor([index[t] for t, _ in pairs])
    contexts = torch.tensor([index[c] for _, c in pairs])
    g = torch.Generator().manual_seed(seed)
    V, U = torch.randn(len(vocab), dim, generator=g) * 0.1, torch.randn(len(vocab), dim, generator=g) * 0.1
    history = [full_softmax_step(V, U, targets, contexts, lr) for _ in range(steps)]
    with torch.no_grad():
        log_probs = pair_log_probs(V, U, targets, contexts)
    return SentenceFit(vocab, pairs, torch.exp(log_probs), history + [float(log_probs.sum())])


def max_log_likelihood(pairs: list[tuple[str, str]]) -> float:
    """The ceiling of eq. 8 on these pairs: a softmax can at best give each target's contexts their
    observed frequencies, so the maximum is Σ n(t, c) log(n(t, c) / n(t))."""
    pair_counts = Counter(pairs)
    target_counts = Counter(t for t, _ in pairs)
    return sum(n * math.log(n / target_counts[t]) for (t, _), n in pair_counts.items())
