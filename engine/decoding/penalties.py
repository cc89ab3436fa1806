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
    return float(coverage_penalty(attention.double().sum(0), beta))


def coverage_penalty(coverage: torch.Tensor, beta: float) -> torch.Tensor:
    """Eq. 37 from the coverage vectors Σ_i a_ij (..., |X|) it sums over: (...,)."""
    if beta == 0:
        return torch.zeros(coverage.shape[:-1], dtype=torch.float64)
    return beta * torch.log(coverage.double().clamp(max=1.0)).sum(-1)


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
        return self.terms_given_cp(log_p, length, cp(attention, self.beta) if attention is not None else 0.0,
                                   source_length)

    def terms_given_cp(self, log_p: float, length: int, coverage: float, source_length: int) -> dict:
        """terms() with the hypothesis' coverage penalty cp already worked out (ranking works out all at once)."""
        length = max(length, 1)
        return {"log_p": log_p, "length": length, "lp": lp(length, self.alpha), "lp_star": lp_star(length, self.alpha),
                "cp": coverage, "ep": ep(length, source_length, self.gamma),
                **{rule: self.score(rule, log_p, length, coverage, source_length) for rule in RULES}}

    def prefix_scores(self, rule: str, log_p: torch.Tensor, length: int, coverage: torch.Tensor | None,
                      source_length: int) -> torch.Tensor:
        """`rule`'s score of every candidate prefix at one step of a search, as terms() scores a finished
        hypothesis: log P (B, N) of prefixes of `length` tokens, coverage (B, |X|) of each parent's path with
        this step's attention, or None for a model without a source. (B, N), float64."""
        penalty = coverage_penalty(coverage, self.beta)[:, None] if coverage is not None else 0.0  # (B, 1)
        return self.score(rule, log_p.double(), max(length, 1), penalty, source_length)

    def score(self, rule: str, log_p, length: int, coverage, source_length: int):
        """One rule from log P and cp: floats for a hypothesis, or tensors that broadcast for a step's prefixes."""
        if rule == "raw":
            return log_p
        if rule == "mean":
            return log_p / lp_star(length, self.alpha)  # eq. 32
        divisor = lp(length, self.alpha) if rule == "gnmt" else lp_star(length, self.alpha)  # eq. 35, or lp*
        return log_p / divisor + coverage + ep(length, source_length, self.gamma)  # eq. 34, plus eq. 41


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
