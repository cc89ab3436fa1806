"""Encoder-decoder with attention (000 §7 eq. 42-53; 001 §1.5), at the character level.

A bidirectional GRU reads the source into z_1..z_m; a GRU decoder takes Bahdanau's step: the query is
the previous decoder state s_{t-1}, the attention weights a_t over the z_j (eq. 42-43) give the context
c_t = Σ a_tj z_j (eq. 44), the GRU reads [c_t; embedding of y_{t-1}] and the output layer reads the
augmented state [s_t; c_t] (eq. 45). Scores: dot s·z (eq. 42), general sᵀWz (eq. 46) or additive
vᵀ tanh(W1 s + W2 z) (eq. 47). Options: coverage (eq. 48-49) and the pointer-generator mixture (eq. 53).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from engine.seq2seq.checkpoint import CHECKPOINTS, load_half, save_half
from engine.seq2seq.dates import SOURCE, TARGET

SCORES = ("dot", "general", "additive")


@dataclass
class Seq2SeqConfig:
    score: str = "additive"
    coverage: bool = False  # feed c^t to the additive score and add λ·covloss to the loss (See et al., 2017)
    pointer: bool = False  # g·p_vocab + (1 − g)·p_ptr over an extended vocabulary (eq. 53)
    d_emb: int = 32
    d_enc: int = 64  # per direction: z_j and the decoder state both have 2·d_enc, so s·z is defined
    coverage_weight: float = 1.0  # λ

    def __post_init__(self):
        if self.score not in SCORES:
            raise ValueError(f"score must be one of {SCORES}")


@dataclass
class Memory:
    """What the decoder attends to, computed once per source."""

    z: torch.Tensor  # (B, S, D) encoder states
    keys: torch.Tensor  # (B, S, D): W2 z (additive), W z (general) or z (dot)
    mask: torch.Tensor  # (B, S) True on real characters
    copy_ids: torch.Tensor  # (B, S) each source character's id in the extended output vocabulary


@dataclass
class Step:
    log_p: torch.Tensor  # (B, V) log-probabilities of the next character
    attention: torch.Tensor  # (B, S) a_t, rows summing to 1 (eq. 43)
    context: torch.Tensor  # (B, D) c_t (eq. 44)
    state: torch.Tensor  # (B, D) s_t
    coverage: torch.Tensor  # (B, S) c^{t+1} = Σ_{t' ≤ t} a^{t'} (eq. 48), for the next step
    covloss: torch.Tensor  # (B,) Σ_i min(a_i^t, c_i^t) (eq. 49)
    gate: torch.Tensor | None  # (B,) g of eq. 53, pointer model only
    p_vocab: torch.Tensor | None  # (B, V) the generator's distribution, padded to the extended vocabulary
    p_ptr: torch.Tensor | None  # (B, V) the attention mass on each character of the source


def copy_vocabulary() -> torch.Tensor:
    """Each source character's id among the outputs: its TARGET id when TARGET has it, else len(TARGET) + id."""
    return torch.tensor([TARGET.index.get(c, len(TARGET) + i) for i, c in enumerate(SOURCE.chars)])


class Seq2Seq(nn.Module):
    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        self.config = config
        E, H, D = config.d_emb, config.d_enc, 2 * config.d_enc
        self.output_size = len(TARGET) + (len(SOURCE) if config.pointer else 0)
        self.src_emb = nn.Embedding(len(SOURCE), E, padding_idx=0)
        self.tgt_emb = nn.Embedding(self.output_size, E)
        self.encoder = nn.GRU(E, H, batch_first=True, bidirectional=True)
        self.init_state = nn.Linear(D, D)
        self.W_key = nn.Linear(D, D, bias=False) if config.score != "dot" else None  # W of eq. 46, W2 of eq. 47
        if config.score == "additive":
            self.W_query, self.v = nn.Linear(D, D), nn.Linear(D, 1, bias=False)  # W1 and v of eq. 47
            self.w_coverage = nn.Linear(1, D, bias=False) if config.coverage else None
        self.cell = nn.GRUCell(E + D, D)
        self.out = nn.Linear(2 * D, len(TARGET))  # reads [s_t; c_t] (eq. 45)
        self.gate = nn.Linear(2 * D + E, 1) if config.pointer else None
        self.register_buffer("copy_table", copy_vocabulary(), persistent=False)

    def encode(self, x: torch.Tensor) -> tuple[Memory, torch.Tensor]:
        """x: (B, S) source ids -> memory and the first decoder state s_0 (B, D)."""
        mask = x != 0
        lengths = mask.sum(1).clamp(min=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(self.src_emb(x), lengths, batch_first=True, enforce_sorted=False)
        out, last = self.encoder(packed)
        z, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])  # (B, S, D)
        s0 = torch.tanh(self.init_state(torch.cat([last[0], last[1]], dim=1)))  # both directions' final states
        keys = z if self.W_key is None else self.W_key(z)
        return Memory(z, keys, mask, self.copy_table[x]), s0

    def scores(self, s: torch.Tensor, memory: Memory, coverage: torch.Tensor, query_bias: bool = True) -> torch.Tensor:
        """e_tj for every source position j: (B, S). query_bias=False leaves out W1's bias, which eq. 47 lacks."""
        if self.config.score == "additive":
            query = self.W_query(s) if query_bias else s @ self.W_query.weight.T
            features = query[:, None, :] + memory.keys  # (B, S, D)
            if self.w_coverage is not None:
                features = features + self.w_coverage(coverage[:, :, None])
            return self.v(torch.tanh(features)).squeeze(2)
        return torch.bmm(memory.keys, s[:, :, None]).squeeze(2)  # s·z (eq. 42) or s·Wz (eq. 46)

    def step(self, y_prev: torch.Tensor, s: torch.Tensor, coverage: torch.Tensor, memory: Memory) -> Step:
        """One Bahdanau decoder step (001 §1.5). y_prev: (B,), s: (B, D), coverage: (B, S)."""
        e = self.scores(s, memory, coverage).masked_fill(~memory.mask, float("-inf"))
        a = torch.softmax(e.float(), dim=1)  # eq. 42
        c = torch.bmm(a[:, None, :], memory.z).squeeze(1)  # eq. 44
        emb = self.tgt_emb(y_prev)
        s_new = self.cell(torch.cat([emb, c], dim=1), s)
        augmented = torch.cat([s_new, c], dim=1)  # eq. 45
        p_vocab = torch.softmax(self.out(augmented), dim=1)  # (B, len(TARGET))
        gate = p_ptr = None
        if self.gate is not None:  # eq. 53: g p_vocab + (1 − g) p_ptr, p_ptr = attention mass per character
            gate = torch.sigmoid(self.gate(torch.cat([augmented, emb], dim=1))).squeeze(1)
            p_vocab = F.pad(p_vocab, (0, self.output_size - p_vocab.shape[1]))
            p_ptr = torch.zeros(len(a), self.output_size).scatter_add_(1, memory.copy_ids, a)
            p = gate[:, None] * p_vocab + (1 - gate[:, None]) * p_ptr
        else:
            p = p_vocab
        covloss = torch.minimum(a, coverage).sum(1)  # eq. 49
        return Step(torch.log(p.clamp(min=1e-12)), a, c, s_new, coverage + a, covloss, gate,
                    p_vocab if gate is not None else None, p_ptr)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher-forced loss on targets y (B, T) that start with BOS: (NLL per character, mean covloss)."""
        memory, s = self.encode(x)
        coverage = torch.zeros(x.shape, dtype=torch.float)
        nll, covloss, count = 0.0, 0.0, (y[:, 1:] != 0).sum()
        for t in range(y.shape[1] - 1):
            step = self.step(y[:, t], s, coverage, memory)
            real = y[:, t + 1] != 0
            nll = nll - (step.log_p.gather(1, y[:, t + 1:t + 2]).squeeze(1) * real).sum()
            covloss = covloss + (step.covloss * real).sum()
            s, coverage = step.state, step.coverage
        return nll / count, covloss / count


def save_seq2seq(model: Seq2Seq, path, **extra) -> None:
    save_half(model, path, **extra)


def load_seq2seq(path) -> tuple[Seq2Seq, dict]:
    return load_half(path, lambda config: Seq2Seq(Seq2SeqConfig(**config)))


def load_shipped_seq2seq(name: str) -> tuple[Seq2Seq, dict]:
    """A shipped model by name ("dot", "general", "additive", "additive_coverage" or "pointer") in eval mode, and
    what was saved beside it: the task, training losses and held-out metrics."""
    return load_seq2seq(CHECKPOINTS / f"{name}.pt")
