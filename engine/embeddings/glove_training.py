"""Training GloVe (000 §4.2, eq. 19-21; Pennington et al. 2014) on a co-occurrence matrix X.

J = ½ Σ_{X_ij > 0} f(X_ij) (u_i·v_j + b_i + b̃_j − log X_ij)², minimised by AdaGrad one nonzero X_ij at a time,
the loop of glove.c's glove_thread (GloVe 1.2, the paper's release), compiled: learning rate η = 0.05, every
parameter's squared-step sum G starting at 1, vectors and biases drawn from ±0.5/d. For each entry,

    e = u_i·v_j + b_i + b̃_j − log X_ij,   g = η f(X_ij) e,   J += ½ f(X_ij) e²
    u_i −= g v_j / √G_u_i,  v_j −= g u_i / √G_v_j  (per dimension, both from the values before the step),
    G_u_i += (g v_j)²,  G_v_j += (g u_i)²,  b_i −= g / √G_b_i,  G_b_i += g²  (and b̃_j alike).

glove.c skips an entry whose weighted error is NaN or infinite. Compiled with fastmath, which lets the compiler
assume every value finite, such a check is deleted (keeping it costs half as much time again), so instead
training stops with an error as soon as a stretch of entries sums to a J that is not finite. Parameters are
float32 (glove.c's are double: float32 takes under half the time and gave the same J per epoch to 6 digits).
glove.c shuffles the entries once, on disk; here they are reshuffled every epoch. Since 2019 glove.c clips each
component of f e v_j to ±100 and leaves η out of the bias step; the bias step here keeps η, as the paper's
release did. 000 eq. 19 writes the objective without the biases; `biases=False` trains that form. The word
vectors are u + v, glove.c's default.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numba
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
    seed: int = 0


@dataclass
class Parameters:
    u: torch.Tensor  # (V, d): word vectors u_i
    v: torch.Tensor  # (V, d): context vectors v_j
    b: torch.Tensor  # (V,): word biases, zero and untouched without biases; all float32
    b_context: torch.Tensor  # (V,)

    def arrays(self) -> tuple[np.ndarray, ...]:
        """u, v, b, b_context as NumPy arrays sharing the tensors' memory: what adagrad_steps updates."""
        return self.u.numpy(), self.v.numpy(), self.b.numpy(), self.b_context.numpy()


@numba.njit(cache=True, nogil=True, fastmath=True)
def adagrad_steps(u, v, b, b_context, G_u, G_v, G_b, G_b_context, rows, cols, log_x, f_x, first, last, lr, biases):
    """glove.c's AdaGrad step on entries first..last−1, one at a time, in place (see the module docstring).
    u, v, G_u, G_v: (V, d); b, b_context, G_b, G_b_context: (V,); rows, cols, log_x, f_x: (nnz,), the entries'
    i, j, log X_ij and f(X_ij), in the order to visit them. Returns J summed over the entries visited."""
    d = u.shape[1]
    cost = 0.0
    for e in range(first, last):
        i, j = rows[e], cols[e]
        diff = -log_x[e]
        for c in range(d):
            diff += u[i, c] * v[j, c]
        if biases:
            diff += b[i] + b_context[j]
        fdiff = f_x[e] * diff
        cost += 0.5 * fdiff * diff
        fdiff *= lr
        for c in range(d):
            step_u, step_v = fdiff * v[j, c], fdiff * u[i, c]
            u[i, c] -= step_u / np.sqrt(G_u[i, c])
            v[j, c] -= step_v / np.sqrt(G_v[j, c])
            G_u[i, c] += step_u * step_u
            G_v[j, c] += step_v * step_v
        if biases:
            b[i] -= fdiff / np.sqrt(G_b[i])
            b_context[j] -= fdiff / np.sqrt(G_b_context[j])
            G_b[i] += fdiff * fdiff
            G_b_context[j] += fdiff * fdiff
    return cost


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
    draw = lambda *shape: ((torch.rand(*shape, generator=g, dtype=torch.float64) - 0.5) / config.dim).float()  # noqa: E731
    p = Parameters(draw(vocab_size, config.dim), draw(vocab_size, config.dim), draw(vocab_size), draw(vocab_size))
    if not config.biases:
        p.b.zero_()
        p.b_context.zero_()
    return p


def train(X: sp.csr_matrix, vocab: Vocab, config: GloVeConfig = GloVeConfig(),
          on_progress: Callable[[Progress], bool] | None = None, reports: int = 50) -> GloVeModel:
    """AdaGrad over the nonzero entries of X, reshuffled every epoch. on_progress is called about `reports`
    times, after equal stretches of entries; returning False stops, keeping the model so far."""
    rows, cols, counts = nonzero_entries(X)
    if len(counts) == 0:
        raise InputError("no word pairs co-occur: the corpus is too small for this vocabulary and window")
    f_x = weighting(counts, config.x_max, config.alpha).astype(np.float32)  # (nnz,); refuses x_max ≤ 0
    log_x = np.log(counts).astype(np.float32)  # (nnz,)
    model = GloVeModel(vocab, config, initial_parameters(len(vocab), config))
    squares = [np.ones_like(a) for a in model.parameters.arrays()]  # AdaGrad's G, from 1 as glove.c
    rng = np.random.default_rng(config.seed + 1)
    n, start = len(counts), time.perf_counter()
    every = max(1, config.epochs * n // reports)  # entries between reports
    done = 0
    for epoch in range(config.epochs):
        order = rng.permutation(n)
        shuffled = rows[order], cols[order], log_x[order], f_x[order]  # (nnz,) each: read in order, not scattered
        total, first = 0.0, 0
        while first < n:
            last = min(n, first + every - done % every)
            total += adagrad_steps(*model.parameters.arrays(), *squares, *shuffled, first, last, np.float32(config.lr),
                                   config.biases)
            if not np.isfinite(total):
                raise InputError(f"J is no longer finite at epoch {epoch + 1}: training diverged")
            done, first = done + last - first, last
            model.fraction_done = done / (config.epochs * n)
            if on_progress is not None and done % every == 0:
                model.seconds = time.perf_counter() - start
                if not on_progress(Progress(model.fraction_done, epoch, model.losses, done / model.seconds, model)):
                    return model
        model.losses.append(total / n)
    model.seconds = time.perf_counter() - start
    return model


def objective(p: Parameters, X: sp.csr_matrix, config: GloVeConfig) -> float:
    """J over every nonzero entry of X, divided by their number, as glove.c reports it: the plain reference
    for the cost adagrad_steps adds up."""
    rows, cols, counts = nonzero_entries(X)
    u, v, b, b_context = (a.astype(np.float64) for a in p.arrays())
    error = np.einsum("nd,nd->n", u[rows], v[cols]) - np.log(counts)  # (nnz,)
    if config.biases:
        error += b[rows] + b_context[cols]
    return float(0.5 * (weighting(counts, config.x_max, config.alpha) * error ** 2).mean())


def nonzero_entries(X: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows, columns and counts of X's nonzero entries: (nnz,) each."""
    coo = X.tocoo()
    return coo.row.astype(np.int32), coo.col.astype(np.int32), coo.data.astype(np.float64)
