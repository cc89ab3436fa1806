"""One search over any model that extends prefixes (000 §6, eq. 27-30): exhaustive (width N), greedy
(width 1) and beam (width W), batched across live prefixes, returning the whole search tree.

A model is a Stepper: `start()` resets it for a new search; `step(last, parents)` extends the prefixes
of the previous call, the b-th new prefix being prefix parents[b] followed by token last[b], and
returns log-probabilities of the next token (B, N) and, for models with attention, each prefix's
attention over the source at that step (B, S). Carrying state by `parents` lets a model keep its
decoder states instead of rereading every prefix.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import repeat
from typing import Protocol

import torch

from engine.decoding.penalties import RULES, Scoring
from engine.errors import InputError

MAX_EXPANSIONS = 200_000  # exhaustive search refuses trees larger than this


class Stepper(Protocol):
    bos: int
    eos: int
    vocab_size: int
    source_length: int  # |X| for the length-ratio bonus and cp; 0 for a language model

    def start(self) -> None: ...

    def step(self, last: torch.Tensor, parents: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]: ...


@dataclass
class Node:
    id: int
    parent: int | None
    token: int
    log_p: float  # log Pr(token | prefix)
    cum_log_p: float  # log Pr of the whole prefix, eq. 31
    score: float  # what the search ranked it by: cum_log_p, or a rule's penalised score of the prefix
    depth: int
    status: str = "kept"  # "kept", "pruned" (dropped from the beam) or "finished" (ended with EOS or at max length)
    attention: torch.Tensor | None = None  # (S,) this step's attention over the source


@dataclass
class SearchTree:
    method: str
    width: int
    nodes: list[Node] = field(default_factory=list)

    def path(self, node_id: int) -> list[Node]:
        """Root excluded, in order."""
        out = []
        while node_id is not None and self.nodes[node_id].parent is not None:
            out.append(self.nodes[node_id])
            node_id = self.nodes[node_id].parent
        return out[::-1]

    def tokens(self, node_id: int) -> list[int]:
        return [n.token for n in self.path(node_id)]

    def attention(self, node_id: int) -> torch.Tensor | None:
        """The hypothesis' attention matrix (|Y|, |X|), one row per generated token."""
        rows = [n.attention for n in self.path(node_id)]
        return torch.stack(rows) if rows and rows[0] is not None else None

    def coverages(self, nodes: list[Node]) -> torch.Tensor | None:
        """Each node's coverage vector Σ_i a_ij over its path (eq. 37's inner sum): (len(nodes), |X|), float64;
        None for a model without attention. Summed depth by depth, each row its parent's plus its own, in path
        order as search() sums a prefix's coverage to prune by it (torch's sum(0) over the stacked rows may differ
        in the last bit), and an exhaustive tree of 50,000 hypotheses costs one addition per depth."""
        if not nodes or nodes[0].attention is None:
            return None
        on_paths = set()  # the nodes on the asked nodes' paths: in a beam search's tree, a few of its nodes
        for n in nodes:
            while n.parent is not None and n.id not in on_paths:
                on_paths.add(n.id)
                n = self.nodes[n.parent]
        levels = defaultdict(list)  # depth -> its nodes on those paths, each a child of one a depth above
        for n in self.nodes:
            if n.id in on_paths:
                levels[n.depth].append(n)
        level_sums = [torch.zeros(1, nodes[0].attention.numel(), dtype=torch.float64)]  # the root sums nothing
        row, above = {self.nodes[0].id: 0}, 0  # node id -> its row in torch.cat(level_sums); the depth above's first
        for depth in range(1, len(levels) + 1):
            parents = torch.tensor([row[n.parent] - above for n in levels[depth]])  # rows in the depth above's sums
            level_sums.append(level_sums[-1][parents] + torch.stack([n.attention for n in levels[depth]]).double())
            above += len(level_sums[-2])
            row.update((n.id, above + i) for i, n in enumerate(levels[depth]))
        return torch.cat(level_sums)[torch.tensor([row[n.id] for n in nodes])]

    def most_likely(self, count: int) -> list[Node]:
        """The nodes of the `count` most likely prefixes (largest log P), in the tree's order; all nodes when there
        are no more. They form a tree of their own: a prefix is at least as likely as any of its extensions, since
        log P only falls as tokens are added, and a tie goes to the older node, the parent."""
        if len(self.nodes) <= count:
            return self.nodes
        return sorted(sorted(self.nodes, key=lambda n: (-n.cum_log_p, n.id))[:count], key=lambda n: n.id)

    @property
    def finished(self) -> list[Node]:
        return [n for n in self.nodes if n.status == "finished"]


@dataclass(frozen=True)
class Pruning:
    """Prune the beam by a rule's penalised score of each prefix at every step, as GNMT's decoder scores its
    beams, instead of by raw log P. |Y| of a prefix counts its generated tokens, this step's included."""

    scoring: Scoring
    rule: str = "gnmt"

    def __post_init__(self):
        if self.rule not in RULES:
            raise ValueError(f"unknown rule {self.rule!r}")


def search(model: Stepper, method: str, width: int, max_len: int, pruned_shown: int | None = None,
           pruning: Pruning | None = None) -> SearchTree:
    """method "greedy" (width 1), "beam" (width W) or "exhaustive" (every prefix kept). The tree holds every
    survivor and, per step, the best `pruned_shown` of the dropped candidates (None: all of them). Without
    `pruning` the beam keeps the best raw log P; the penalties then only rank the finished hypotheses."""
    if max_len < 1:
        raise InputError("the maximum length must be at least 1")
    if method == "exhaustive":
        count = sum(model.vocab_size ** t for t in range(1, max_len + 1))
        if count > MAX_EXPANSIONS:
            raise InputError(f"exhaustive search would expand {count:,} nodes ({model.vocab_size} tokens, "
                             f"depth {max_len}); at most {MAX_EXPANSIONS:,}: lower the maximum length")
        width = None
    elif method == "greedy":
        width = 1
    elif method == "beam":
        if width < 1:
            raise InputError("the beam width W must be at least 1")
        if width > model.vocab_size:
            raise InputError(f"W = {width} is wider than the vocabulary ({model.vocab_size}): "
                             f"at most {model.vocab_size}")
    else:
        raise ValueError(f"unknown method {method!r}")
    return _expand(model, method, width, max_len, pruned_shown, pruning)


def _expand(model: Stepper, method: str, width: int | None, max_len: int, pruned_shown: int | None,
            pruning: Pruning | None) -> SearchTree:
    tree = SearchTree(method, width or model.vocab_size)
    tree.nodes.append(Node(0, None, model.bos, 0.0, 0.0, 0.0, 0))
    model.start()
    live = [0]  # node ids of the prefixes the model's last call extended
    coverage = None  # (B, S) Σ of each live prefix's attention rows, for cp while pruning
    last, parents = torch.tensor([model.bos]), torch.tensor([0])
    for depth in range(1, max_len + 1):
        log_p, attention = model.step(last, parents)  # (B, N), (B, S) or None
        cum = torch.tensor([tree.nodes[i].cum_log_p for i in live], dtype=torch.float64)[:, None] + log_p.double()
        if attention is not None:
            coverage = attention.double() + (coverage[parents] if coverage is not None else 0.0)
        score = cum if pruning is None else pruning.scoring.prefix_scores(
            pruning.rule, cum, depth, coverage, model.source_length)
        keep = cum.numel() if width is None else min(width, cum.numel())
        order = score.flatten().argsort(descending=True, stable=True)
        chosen = set(order[:keep].tolist())
        shown = order if pruned_shown is None else order[:keep + pruned_shown]
        rows, tokens = shown // log_p.shape[1], shown % log_p.shape[1]
        # each shown candidate's numbers gathered at once: read one by one from the tensors, they were a third of
        # a search's time
        candidates = zip(shown.tolist(), rows.tolist(), tokens.tolist(), log_p[rows, tokens].tolist(),
                         cum[rows, tokens].tolist(), score[rows, tokens].tolist(),
                         attention[rows].unbind() if attention is not None else repeat(None))
        next_live, next_last, next_parents = [], [], []
        for flat, b, token, token_log_p, prefix_log_p, prefix_score, row in candidates:
            # the best `keep` survive; the rest are pruned
            node = Node(len(tree.nodes), live[b], token, token_log_p, prefix_log_p, prefix_score, depth,
                        attention=row)
            tree.nodes.append(node)
            if flat not in chosen:
                node.status = "pruned"
            elif token == model.eos or depth == max_len:
                node.status = "finished"
            else:
                next_live.append(node.id)
                next_last.append(token)
                next_parents.append(b)
        if not next_live:  # every survivor finished: the beam has shrunk to nothing
            break
        live, last, parents = next_live, torch.tensor(next_last), torch.tensor(next_parents)
    return tree
