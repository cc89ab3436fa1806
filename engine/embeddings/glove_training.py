"""Training GloVe (000 §4.2, eq. 19-21; Pennington et al. 2014) on a co-occurrence matrix X.

J = ½ Σ_{X_ij > 0} f(X_ij) (u_i·v_j + b_i + b̃_j − log X_ij)², minimised by AdaGrad as GloVe's glove.c does
(learning rate 0.05, squared-gradient sums starting at 1, vectors and biases drawn from ±0.5/d). 000 eq. 19
writes the objective without the biases b_i, b̃_j; `biases=False` trains that form. The word vectors are
u + v, glove.c's default. glove.c updates one X_ij at a time in parallel threads; here a shuffled batch of
entries at a time, each row's gradients summed before its AdaGrad step.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
import torch

from engine.embeddings.cooccurrence import weighting
from engine.embeddings.corpus import Vocab
from engine.embeddings.vectors import WordVectors
from engine.errors import InputError


@dataclass(frozen=True)
class GloVeConfig:
    dim: int = 50
    epochs: int = 25
    x_max: float = 100.0
    alpha: float = 0.75
    lr: float = 0.05
    biases: bool = True  # the paper's b_i + b̃_j; 000 eq. 19 has none
    batch_size: int = 2048
    seed: int = 0


@dataclass
class Parameters:
    u: torch.Tensor  # (V, d): word vectors u_i
    v: torch.Tensor  # (V, d): context vectors v_j
    b: torch.Tensor  # (V,): word biases, zero and untouched without biases
    b_context: torch.Tensor  # (V,)

    def tensors(self) -> tuple[torch.Tensor, ...]:
        return self.u, self.v, self.b, self.b_context


def entry_gradients(p: Parameters, rows: torch.Tensor, cols: torch.Tensor, x: torch.Tensor,
                    config: GloVeConfig) -> tuple[float, tuple[torch.Tensor, ...]]:
    """J over the entries (rows, cols) with counts x (B,), and each entry's gradient with respect to u_i,
    v_j, b_i and b̃_j: f(x) · e · (v_j, u_i, 1, 1) with e = u_i·v_j + b_i + b̃_j − log x (eq. 20)."""
    u, v = p.u.index_select(0, rows), p.v.index_select(0, cols)  # (B, d)
    error = (u * v).sum(1) + p.b.index_select(0, rows) + p.b_context.index_select(0, cols) - x.log()  # (B,)
    weighted = torch.from_numpy(weighting(x.numpy(), config.x_max, config.alpha)).to(x.dtype) * error
    cost = 0.5 * float((weighted * error).sum())
    bias_grad = weighted if config.biases else torch.zeros_like(weighted)
    return cost, (weighted[:, None] * v, weighted[:, None] * u, bias_grad, bias_grad)


@dataclass
class Progress:
    fraction: float  # of all epochs
    epoch: int
    losses: list[float]  # mean J per entry of each finished epoch
    entries_per_second: float
    model: GloVeModel


@dataclass
class GloVeModel:
    vocab: Vocab
    config: GloVeConfig
    parameters: Parameters
    losses: list[float] = field(default_factory=list)
    fraction_done: float = 0.0
    seconds: float = 0.0

    def word_vectors(self) -> WordVectors:
        """u + v, as glove.c writes them by default."""
        return WordVectors(self.vocab.words, (self.parameters.u + self.parameters.v).numpy())


def initial_parameters(vocab_size: int, config: GloVeConfig) -> Parameters:
    g = torch.Generator().manual_seed(config.seed)
    draw = lambda *shape: (torch.rand(*shape, generator=g, dtype=torch.float64) - 0.5) / config.dim  # noqa: E731
    p = Parameters(draw(vocab_size, config.dim), draw(vocab_size, config.dim), draw(vocab_size), draw(vocab_size))
    if not config.biases:
        p.b.zero_()
        p.b_context.zero_()
    return p


def train(X: sp.csr_matrix, vocab: Vocab, config: GloVeConfig = GloVeConfig(),
          on_progress: Callable[[Progress], bool] | None = None, reports: int = 50) -> GloVeModel:
    """AdaGrad over the nonzero entries of X, reshuffled every epoch. on_progress is called about `reports`
    times; returning False stops, keeping the model so far."""
    if config.x_max <= 0:
        raise InputError(f"x_max must be positive, not {config.x_max}")
    rows, cols, counts = nonzero_entries(X)
    if len(counts) == 0:
        raise InputError("no word pairs co-occur: the corpus is too small for this vocabulary and window")
    model = GloVeModel(vocab, config, initial_parameters(len(vocab), config))
    squares = [torch.ones_like(t) for t in model.parameters.tensors()]  # AdaGrad's Σ g², from 1 as glove.c
    g = torch.Generator().manual_seed(config.seed + 1)
    n, start = len(counts), time.perf_counter()
    batches = -(-n // config.batch_size)
    every = max(1, config.epochs * batches // reports)
    done = 0
    for epoch in range(config.epochs):
        order, total = torch.randperm(n, generator=g), 0.0
        for first in range(0, n, config.batch_size):
            batch = order[first:first + config.batch_size]
            r, c = rows.index_select(0, batch), cols.index_select(0, batch)
            cost, grads = entry_gradients(model.parameters, r, c, counts.index_select(0, batch), config)
            total += cost
            for tensor, square, grad, index in zip(model.parameters.tensors(), squares, grads, (r, c, r, c)):
                touched, slot = torch.unique(index, return_inverse=True)
                summed = grad.new_zeros((len(touched), *grad.shape[1:])).index_add_(0, slot, grad)
                square[touched] += summed ** 2
                tensor[touched] -= config.lr * summed / square[touched].sqrt()
            done += 1
            model.fraction_done = done / (config.epochs * batches)
            if on_progress is not None and done % every == 0:
                model.seconds = time.perf_counter() - start
                if not on_progress(Progress(model.fraction_done, epoch, model.losses,
                                            done * config.batch_size / model.seconds, model)):
                    return model
        model.losses.append(total / n)
    model.seconds = time.perf_counter() - start
    return model


def objective(p: Parameters, X: sp.csr_matrix, config: GloVeConfig) -> float:
    """J over every nonzero entry of X, divided by their number, as glove.c reports it."""
    rows, cols, counts = nonzero_entries(X)
    return entry_gradients(p, rows, cols, counts, config)[0] / len(counts)


def nonzero_entries(X: sp.csr_matrix) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rows, columns and counts of X's nonzero entries: (nnz,) each."""
    coo = X.tocoo()
    return (torch.from_numpy(coo.row.astype(np.int64)), torch.from_numpy(coo.col.astype(np.int64)),
            torch.from_numpy(coo.data.astype(np.float64)))
