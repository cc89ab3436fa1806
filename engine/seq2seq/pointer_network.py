"""A pointer network (000 §7.2.1-7.2.3, eq. 51-52) that sorts numbers.

The output at step i is not a word but a position of the input: Pr(C_i | C_1..C_{i-1}, P) (eq. 51) is the
additive attention of eq. 52 itself, a_ij = softmax_j(vᵀ tanh(W1 h_i + W2 z_j)). Positions already
chosen are masked, so the answer is always a permutation; the decoder reads the number it just pointed at.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from engine.seq2seq.checkpoint import CHECKPOINTS, load_half, save_half
from engine.seq2seq.fit import fit


@dataclass
class PointerConfig:
    d_hidden: int = 128
    min_len: int = 5
    max_len: int = 10


def number_sets(n_sets: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """Sets of distinct-enough random numbers in [0, 1): (n_sets, length)."""
    return torch.rand(n_sets, length, generator=generator)


class PointerNetwork(nn.Module):
    def __init__(self, config: PointerConfig = PointerConfig()):
        super().__init__()
        self.config = config
        H = config.d_hidden
        self.embed = nn.Linear(1, H)
        self.encoder = nn.GRU(H, H, batch_first=True)
        self.cell = nn.GRUCell(H, H)
        self.start = nn.Parameter(torch.zeros(H))  # the decoder's first input
        self.W1, self.W2, self.v = nn.Linear(H, H, bias=False), nn.Linear(H, H, bias=False), nn.Linear(H, 1, bias=False)

    def forward(self, numbers: torch.Tensor, targets: torch.Tensor | None = None):
        """numbers (B, n). With targets (B, n) (teacher forcing) or greedily: log Pr(C_i | ...) (B, n, n)
        and the chosen positions (B, n)."""
        B, n = numbers.shape
        inputs = self.embed(numbers[:, :, None])  # (B, n, H)
        z, last = self.encoder(inputs)
        keys, h = self.W2(z), last[0]  # W2 z_j once; h_0 the encoder's final state
        x, chosen = self.start.expand(B, -1), torch.zeros(B, n, dtype=torch.bool)
        log_probs, picks = [], []
        for i in range(n):
            h = self.cell(x, h)
            scores = self.v(torch.tanh(self.W1(h)[:, None, :] + keys)).squeeze(2)  # eq. 52, (B, n)
            log_a = torch.log_softmax(scores.masked_fill(chosen, float("-inf")), dim=1)
            pick = targets[:, i] if targets is not None else log_a.argmax(1)
            log_probs.append(log_a)
            picks.append(pick)
            chosen = chosen | nn.functional.one_hot(pick, n).bool()
            x = inputs[torch.arange(B), pick]  # the number just pointed at
        return torch.stack(log_probs, 1), torch.stack(picks, 1)


def train_pointer_network(steps: int = 3000, batch_size: int = 128, seed: int = 0, log=print):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    model = PointerNetwork()

    def step_loss():
        length = int(torch.randint(model.config.min_len, model.config.max_len + 1, (1,), generator=g))
        numbers = number_sets(batch_size, length, g)
        targets = numbers.argsort(1)
        log_probs, _ = model(numbers, targets)
        loss = -log_probs.gather(2, targets[:, :, None]).mean()
        return loss, loss

    losses = fit(model, step_loss, steps, lr=1e-3, clip=1.0, log_every=500, one_cycle=False, log=log)
    return model.eval(), losses


@torch.no_grad()
def sorting_accuracy(model: PointerNetwork, length: int, n_sets: int = 1000, seed: int = 10_000) -> dict:
    """Share of sets sorted exactly, and of positions right, on held-out sets of one length."""
    numbers = number_sets(n_sets, length, torch.Generator().manual_seed(seed))
    _, picks = model(numbers)
    right = picks == numbers.argsort(1)
    return {"sorted": right.all(1).float().mean().item(), "positions": right.float().mean().item()}


def save_pointer_network(model: PointerNetwork, path, **extra) -> None:
    save_half(model, path, **extra)


def load_pointer_network(path) -> tuple[PointerNetwork, dict]:
    return load_half(path, lambda config: PointerNetwork(PointerConfig(**config)))


def load_shipped_pointer_network() -> tuple[PointerNetwork, dict]:
    """The shipped number sorter in eval mode, and its training losses and held-out metrics per set length."""
    return load_pointer_network(CHECKPOINTS / "pointer_network.pt")
