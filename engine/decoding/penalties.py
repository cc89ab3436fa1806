"""Scores for finished hypotheses (000 §6.2-6.4): raw log P, 1/T^α (eq. 32), GNMT's length penalty lp
(eq. 35) or lp* = |Y|^α, the coverage penalty cp (eq. 37) and the length-ratio bonus ep (eq. 41)."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.errors import InputError

RULES = ("raw", "mean", "gnmt", "gnmt_star")


def lp(length: int, alpha: float) -> float:
    """000 eq. 35: (5 + |Y|)^α / (5 + 1)^α."""
    return (5 + length) ** alpha / 6 ** alpha


def lp_star(length: int, alpha: float) -> float:
    """000 §6.3.1: |Y|^α, the plain power eq. 32 divides by."""
    return length ** alpha


def cp(attention: torch.Tensor, beta: float) -> float:
    """000 eq. 37: β Σ_j log(min(Σ_i a_ij, 1)) over an attention matrix (|Y|, |X|). A source position no
    step attended to gives log 0 = −∞, as eq. 40's first matrix shows."""
    if beta == 0:
        return 0.0
    column = attention.double().sum(0).clamp(max=1.0)  # (|X|,)
    total = float(torch.log(column).sum())
    return beta * total


def ep(length: int, source_length: int, gamma: float) -> float:
    """000 eq. 41: γ |Y| / |X|."""
    return gamma * length / source_length if source_length else 0.0


@dataclass(frozen=True)
class Scoring:
    alpha: float = 0.0
    beta: float = 0.0
    gamma: float = 0.0

    def __post_init__(self):
        if self.alpha < 0 or self.beta < 0 or self.gamma < 0:
            raise InputError("α, β and γ must not be negative: each is the strength of a penalty or bonus")

    def terms(self, log_p: float, length: int, attention: torch.Tensor | None, source_length: int) -> dict:
        """Every term and every rule's score for one finished hypothesis of `length` tokens."""
        length = max(length, 1)
        coverage = cp(attention, self.beta) if attention is not None else 0.0
        bonus = ep(length, source_length, self.gamma)
        gnmt_lp, gnmt_lp_star = lp(length, self.alpha), lp_star(length, self.alpha)
        return {
            "log_p": log_p, "length": length, "lp": gnmt_lp, "lp_star": gnmt_lp_star, "cp": coverage, "ep": bonus,
            "raw": log_p,
            "mean": log_p / gnmt_lp_star,  # eq. 32
            "gnmt": log_p / gnmt_lp + coverage + bonus,  # eq. 34 with eq. 35, plus eq. 41
            "gnmt_star": log_p / gnmt_lp_star + coverage + bonus,  # the same with lp*
        }


def figure_1(alphas: list[float], max_length: int = 50) -> dict[str, list[float]]:
    """000 Figure 1: lp and lp* against |Y| = 1..max_length for each α."""
    lengths = range(1, max_length + 1)
    curves = {}
    for a in alphas:
        curves[f"lp, α = {a:g}"] = [lp(n, a) for n in lengths]
        curves[f"lp*, α = {a:g}"] = [lp_star(n, a) for n in lengths]
    return curves


def eq40_matrices() -> dict[str, torch.Tensor]:
    """000 eq. 40: all attention on the first source word (cp minimal) and one word each (cp maximal)."""
    return {"minimised cp": torch.tensor([[1.0, 0, 0], [1.0, 0, 0], [1.0, 0, 0]]), "maximised cp": torch.eye(3)}
