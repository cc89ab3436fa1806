"""The finished hypotheses of a search, scored by every rule and ranked by each."""
from __future__ import annotations

from dataclasses import dataclass

from engine.decoding.penalties import RULES, Scoring, coverage_penalty
from engine.decoding.search import SearchTree


@dataclass
class Hypothesis:
    node: int  # id of its last node in the tree
    tokens: list[int]
    terms: dict  # log_p, length, lp, lp_star, cp, ep and one score per rule
    rank: dict  # rule -> 1-based rank among the finished


def ranked_hypotheses(tree: SearchTree, scoring: Scoring, source_length: int) -> list[Hypothesis]:
    """Every finished hypothesis, best raw log P first; |Y| counts generated tokens, the end symbol included."""
    finished = tree.finished
    coverages = tree.coverages(finished)  # (finished, |X|), or None without attention
    penalties = coverage_penalty(coverages, scoring.beta).tolist() if coverages is not None else [0.0] * len(finished)
    found = [Hypothesis(n.id, tree.tokens(n.id), scoring.terms_given_cp(n.cum_log_p, n.depth, penalty, source_length),
                        {})
             for n, penalty in zip(finished, penalties)]
    for rule in RULES:
        for position, h in enumerate(sorted(found, key=lambda h: -h.terms[rule]), start=1):
            h.rank[rule] = position
    return sorted(found, key=lambda h: h.rank["raw"])


def winners(hypotheses: list[Hypothesis]) -> dict[str, int]:
    """The node each rule would output."""
    return {rule: next(h.node for h in hypotheses if h.rank[rule] == 1) for rule in RULES} if hypotheses else {}


def winning_outputs(model, tree: SearchTree, best: dict[str, int]) -> dict[str, str]:
    """What each rule outputs: its winner's tokens as the model (a Stepper) labels them, ■ for the end symbol."""
    return {rule: model.text(tree.tokens(node)) for rule, node in best.items()}
