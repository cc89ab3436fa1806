"""Greedy decoding with everything the pages draw, and the held-out metrics of a model."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.errors import InputError
from engine.seq2seq.dates import BOS, EOS, MAX_SOURCE, SOURCE, TARGET, Example, batch, decode_target
from engine.seq2seq.model import Memory, Seq2Seq

MAX_OUTPUT = 24  # characters: an ISO date is 10, a name and a date about 20


@dataclass
class Translation:
    source: str  # as the model read it: lower case, clipped to MAX_SOURCE
    output: str
    output_ids: list[int]
    attention: torch.Tensor  # (T, S) row t: a_t over the source (eq. 42)
    context: torch.Tensor  # (T, D) c_t (eq. 44)
    queries: torch.Tensor  # (T, D) s_{t-1}, the query of step t (001 §1.5)
    states: torch.Tensor  # (T, D) s_t, the state step t ends in
    coverage: torch.Tensor  # (T, S) c^t before step t (eq. 48)
    covloss: torch.Tensor  # (T,) eq. 49
    gate: torch.Tensor | None  # (T,) g of eq. 53
    p_vocab: torch.Tensor | None  # (T,) p_vocab of the chosen character
    p_ptr: torch.Tensor | None  # (T,) p_ptr of the chosen character
    p_final: torch.Tensor  # (T,) probability of the chosen character


@torch.no_grad()
def greedy(model: Seq2Seq, x: torch.Tensor, max_len: int = MAX_OUTPUT) -> tuple[torch.Tensor, list, torch.Tensor]:
    """Most likely character at every step for a batch x (B, S): ids (B, T), the Step of each t and s_0 (B, D)."""
    memory, s = model.encode(x)
    s0 = s
    coverage = torch.zeros(x.shape)
    y = torch.full((len(x),), TARGET.index[BOS])
    ids, steps = [], []
    for _ in range(max_len):
        step = model.step(y, s, coverage, memory)
        y = step.log_p.argmax(1)
        ids.append(y)
        steps.append(step)
        s, coverage = step.state, step.coverage
        if (torch.stack(ids, 1) == TARGET.index[EOS]).any(1).all():
            break
    return torch.stack(ids, 1), steps, s0


def _until_eos(ids: list[int]) -> list[int]:
    eos = TARGET.index[EOS]
    return ids[:ids.index(eos)] if eos in ids else ids


def translate(model: Seq2Seq, text: str) -> Translation:
    """One input, decoded greedily, with its attention, coverage and (pointer model) mixture per step."""
    if not text.strip():
        raise InputError("type a date to normalise: the input is empty")
    source = text.lower()[:MAX_SOURCE]
    x, _ = batch([Example(source, "")])
    ids, steps, s0 = greedy(model, x)
    out = _until_eos(ids[0].tolist())
    T = min(len(out) + 1, len(steps))  # the EOS step included
    chosen = ids[0, :T]

    def picked(rows):
        return torch.stack([r[0, chosen[t]] for t, r in enumerate(rows[:T])])

    pointer = model.config.pointer
    return Translation(
        source, decode_target(out), out,
        torch.stack([st.attention[0] for st in steps[:T]]), torch.stack([st.context[0] for st in steps[:T]]),
        torch.stack([s0[0]] + [st.state[0] for st in steps[:T - 1]]), torch.stack([st.state[0] for st in steps[:T]]),
        torch.stack([st.coverage[0] - st.attention[0] for st in steps[:T]]),
        torch.stack([st.covloss[0] for st in steps[:T]]),
        torch.stack([st.gate[0] for st in steps[:T]]) if pointer else None,
        picked([st.p_vocab for st in steps]) if pointer else None,
        picked([st.p_ptr for st in steps]) if pointer else None,
        picked([st.log_p.exp() for st in steps]))


@torch.no_grad()
def rescored_attention(model: Seq2Seq, result: Translation, queries: torch.Tensor,
                       query_bias: bool = True) -> torch.Tensor:
    """Every step's attention over result's source scored again with other queries (T, D), e.g. s_t where the
    model used s_{t-1}, or without W1's bias: (T, S). The coverage fed to the score is the translation's."""
    x, _ = batch([Example(result.source, "")])
    memory, _ = model.encode(x)
    T = len(queries)
    expanded = Memory(*(part.expand(T, *part.shape[1:]) for part in
                        (memory.z, memory.keys, memory.mask, memory.copy_ids)))
    scores = model.scores(queries, expanded, result.coverage, query_bias).masked_fill(~expanded.mask, float("-inf"))
    return torch.softmax(scores.float(), dim=1)


@torch.no_grad()
def held_out_metrics(model: Seq2Seq, examples: list[Example], batch_size: int = 500) -> dict:
    """Exact match, and how often the output is longer (a repeat) or shorter (a skip) than the answer."""
    exact = longer = shorter = 0
    for i in range(0, len(examples), batch_size):
        chunk = examples[i:i + batch_size]
        x, _ = batch(chunk)
        ids, _, _ = greedy(model, x)
        for row, example in zip(ids.tolist(), chunk):
            output = decode_target(_until_eos(row))
            exact += output == example.target
            longer += len(output) > len(example.target)
            shorter += len(output) < len(example.target)
    n = len(examples)
    return {"exact_match": exact / n, "repetition_rate": longer / n, "skip_rate": shorter / n, "n": n}


def unknown_characters(text: str) -> list[str]:
    """Characters of text the encoder never saw; they are read as unknown."""
    return SOURCE.unknown(text.lower())


def mean_coverage(coverage: torch.Tensor) -> torch.Tensor:
    """000 eq. 50: c^t divided by the t attention rows it sums (row 0 sums none and stays 0). (T, S)"""
    earlier = torch.arange(len(coverage)).clamp(min=1)[:, None]
    return coverage / earlier


def coverage_vectors(result: Translation, mean: bool = False) -> torch.Tensor:
    """c^t before every step of a translation: the sum of the earlier steps' attention (000 eq. 48), or, when
    `mean`, that sum divided by t (eq. 50). (T, S)"""
    return mean_coverage(result.coverage) if mean else result.coverage
