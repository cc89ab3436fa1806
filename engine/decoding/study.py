"""Search error against model error (000 §6.1) on small cases exhaustive search can still solve."""
from __future__ import annotations

from dataclasses import dataclass

from engine.decoding.models import Seq2SeqStepper
from engine.decoding.search import search
from engine.seq2seq.dates import Example
from engine.seq2seq.model import Seq2Seq


@dataclass
class ErrorStudy:
    widths: list[int]
    search_error: list[float]  # share of inputs where the beam's best log P is below the exhaustive best
    mean_gap: list[float]  # mean (exhaustive best − beam best) log P
    model_error: float  # share where even the exhaustive best is not the right answer
    n: int


def best_prefix(tree) -> tuple[list[int], float]:
    node = max(tree.finished, key=lambda n: n.cum_log_p)
    return tree.tokens(node.id), node.cum_log_p


def search_error_study(model: Seq2Seq, examples: list[Example], widths: list[int], length: int = 4) -> ErrorStudy:
    """The first `length` output characters (the year) of each example: exhaustive search over all
    len(vocabulary)^length of them against beams of each width."""
    errors, gaps, wrong = [[] for _ in widths], [[] for _ in widths], 0
    for example in examples:
        stepper = Seq2SeqStepper(model, example.source)
        exact_tokens, exact = best_prefix(search(stepper, "exhaustive", 0, length))
        wrong += stepper.text(exact_tokens) != example.target[:length]
        for i, w in enumerate(widths):
            _, found = best_prefix(search(stepper, "beam", w, length, pruned_shown=0))
            errors[i].append(found < exact - 1e-5)  # float32 log-probabilities, batched differently
            gaps[i].append(exact - found)
    n = len(examples)
    return ErrorStudy(widths, [sum(e) / n for e in errors], [sum(g) / n for g in gaps], wrong / n, n)
