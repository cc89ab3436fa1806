"""Word vectors seen in 2-D or 3-D: PCA and t-SNE, and the choice of words to show (an embedding projector).

000 §2 makes words vectors in d dimensions (50 for GloVe 6B, 100 for ours); to look at them we map N of them
to k = 2 or 3 dimensions. PCA is linear: the k directions of largest variance, by an SVD of the centred
vectors. t-SNE (van der Maaten & Hinton, 2008) is not: it places the points so that who is near whom is kept,
matching a Gaussian neighbourhood P in d dimensions with a Student-t neighbourhood Q in k dimensions by
minimising KL(P || Q). Distances between clusters in a t-SNE picture mean little; neighbourhoods do.

Our t-SNE is exact (every pair in the gradient), which costs N² per step: the budget below keeps it to
N ≤ 2,000. P is calibrated on each word's 3·perplexity nearest neighbours and is 0 beyond them, as in
Barnes-Hut t-SNE (van der Maaten, 2014): 0.04 s for 2,000 GloVe words where the exact P takes 1.5 s. In 50
dimensions distances crowd together, so the exact rows would put 7% of their mass (24% at most) beyond
those 90 words; neighbours=0 computes the exact P.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from engine.efficiency.measure import torch_threads
from engine.errors import InputError

# ---------------------------------------------------------------------------------------------------- PCA


@dataclass(frozen=True)
class PCAResult:
    coords: np.ndarray  # (N, k) the centred vectors projected on the first k principal axes
    explained: np.ndarray  # (k,) share of the total variance along each axis, largest first
    axes: np.ndarray  # (k, d) the principal axes, unit rows


def pca(X: np.ndarray, k: int) -> PCAResult:
    """The first k principal components of the rows of X (N, d), by an SVD of the centred matrix.

    The SVD's signs are arbitrary, so each axis is turned to give the point farthest from the centre a
    positive coordinate: the same words land on the same side on every machine.
    """
    X = torch.as_tensor(np.asarray(X), dtype=torch.float64)
    N, d = X.shape
    if N < 2:
        raise InputError("a projection needs at least two words")
    centred = X - X.mean(dim=0)  # (N, d)
    U, S, Vh = torch.linalg.svd(centred, full_matrices=False)  # U (N, r), S (r,), Vh (r, d), r = min(N, d)
    k = min(k, S.shape[0])
    coords = U[:, :k] * S[:k]  # (N, k) = centred @ Vh[:k].T
    farthest = coords.abs().argmax(dim=0)  # (k,)
    sign = torch.where(coords[farthest, torch.arange(k)] < 0, -1.0, 1.0).to(X.dtype)  # (k,)
    variance = S**2  # (r,) N − 1 times each component's variance
    explained = variance[:k] / variance.sum() if variance.sum() > 0 else torch.zeros(k, dtype=X.dtype)
    return PCAResult((coords * sign).numpy(), explained.numpy(), (Vh[:k] * sign[:, None]).numpy())


# ---------------------------------------------------------------------------------------------------- t-SNE


@dataclass(frozen=True)
class TSNEConfig:
    dims: int = 2
    perplexity: float = 30.0  # the effective number of neighbours each word's P_i spreads over
    # van der Maaten runs 1,000 iterations, 250 exaggerated. On 2,000 GloVe words that ends at KL 1.78 in about
    # 10 s of one core; 350 iterations, 75 exaggerated, end at 1.84 (+3%) in about 3 s and keep as many of
    # each word's 10 nearest neighbours (40%). The limit is 5 s until the picture shows.
    iterations: int = 350
    exaggeration: float = 12.0  # α: P multiplied by this at first, so clusters form before they spread out
    exaggeration_iterations: int = 75
    learning_rate: float | None = None  # None: max(N / exaggeration, 200) / 4 (Belkina et al., 2019; /4: our
    #                                     gradient keeps the 4 of its formula, van der Maaten's code drops it)
    neighbours: int | None = None  # P's support per row; None: 3·perplexity (Barnes-Hut); 0: every word
    init: str = "pca"  # "pca" (deterministic, keeps the global layout) or "random"
    seed: int = 0  # draws the random start, or a jitter of 1% of the PCA start that parts duplicate vectors
    report_every: int = 25  # iterations between on_progress calls (each also computes the KL divergence)


@dataclass
class TSNEResult:
    coords: np.ndarray  # (N, dims)
    kl: list[tuple[int, float]] = field(default_factory=list)  # (iteration, KL(P || Q)) at each report
    iterations: int = 0  # iterations run: fewer than asked if on_progress stopped it
    beta: np.ndarray | None = None  # (N,) precision 1/(2σ_i²) of each word's Gaussian in P


MOMENTUM = (0.5, 0.8)  # before and after the exaggeration ends (van der Maaten's reference code)
MIN_GAIN = 0.01
ENTROPY_TOL = 1e-5  # nats: |H(P_i) − log perplexity| at which a row's search stops
SEARCH_STEPS = 100


def squared_distances(X: torch.Tensor) -> torch.Tensor:
    """|x_i − x_j|² for every pair of rows of X (N, d) -> (N, N), clamped at 0 against rounding."""
    sq = (X * X).sum(dim=1)  # (N,)
    return torch.addmm(sq[:, None] + sq[None, :], X, X.T, alpha=-2.0).clamp_(min=0.0)


def conditional_p(D: torch.Tensor, perplexity: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows p_{j|i} ∝ exp(−β_i D_ij), each β_i found by bisection so that the row's entropy is log(perplexity).

    D (N, M): squared distances from each word to its M candidate neighbours (itself excluded).
    Returns P (N, M), rows summing to 1, and β (N,). All rows are searched at once; each halves its bracket.
    """
    target = math.log(perplexity)
    D = D - D.min(dim=1, keepdim=True).values  # (N, M) a shift per row cancels in p, and keeps exp finite
    beta = torch.ones(D.shape[0], dtype=D.dtype)  # (N,)
    low = torch.zeros_like(beta)
    high = torch.full_like(beta, math.inf)
    for _ in range(SEARCH_STEPS):
        P, H = _row_entropy(D, beta)
        too_flat = H > target  # entropy too high: the Gaussian is too wide, raise β
        if (H - target).abs().max() < ENTROPY_TOL:
            break
        low = torch.where(too_flat, beta, low)
        high = torch.where(too_flat, high, beta)
        beta = torch.where(torch.isinf(high), beta * 2, (low + high) / 2)
    return P, beta


def _row_entropy(D: torch.Tensor, beta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """p_{j|i} = exp(−β_i D_ij) / Z_i and H_i = log Z_i + β_i Σ_j p_{j|i} D_ij (nats). D (N, M), β (N,)."""
    W = torch.exp(-D * beta[:, None])  # (N, M)
    Z = W.sum(dim=1)  # (N,)
    P = W / Z[:, None]
    return P, torch.log(Z) + beta * (P * D).sum(dim=1)


def joint_p(X: torch.Tensor, perplexity: float, neighbours: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The symmetric P of t-SNE, p_ij = (p_{j|i} + p_{i|j}) / 2N, (N, N) summing to 1, and β (N,).

    neighbours: each row's support (None: 3·perplexity, at most N − 1; 0: all N − 1 other words).
    """
    N = X.shape[0]
    M = N - 1 if not neighbours and neighbours is not None else min(N - 1, neighbours or int(3 * perplexity))
    D = squared_distances(X)  # (N, N)
    D.fill_diagonal_(math.inf)  # a word is not its own neighbour
    D_near, near = torch.topk(D, M, dim=1, largest=False)  # (N, M) each word's M nearest
    P_cond, beta = conditional_p(D_near.double(), perplexity)  # (N, M) in float64: entropies to 10⁻⁵ nats
    P = torch.zeros(N, N, dtype=X.dtype).scatter_(1, near, P_cond.to(X.dtype))  # (N, N) p_{j|i}, zero off the support
    return (P + P.T) / (2 * N), beta


def kl_gradient(P: torch.Tensor, Y: torch.Tensor, exaggeration: float = 1.0,
                work: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """∂KL(P || Q)/∂y_i = 4 Σ_j (α p_ij − q_ij) w_ij (y_i − y_j), with α = exaggeration (1: the true gradient).

    q_ij = w_ij / Z, Z = Σ_kl w_kl, w_ij = (1 + |y_i − y_j|²)⁻¹: the Student-t kernel with one degree of
    freedom. P (N, N) symmetric, zero diagonal, summing to 1; Y (N, k) -> grad (N, k), and W (N, N) with Z
    (needed by kl_divergence). work: two (N, N) buffers to reuse, so a loop does not allocate 2N² floats a step.
    Each pass over N² numbers is the cost, so the passes are in place and counted in the comments.
    """
    N, k = Y.shape
    W, F = work if work is not None else (torch.empty(N, N, dtype=Y.dtype), torch.empty(N, N, dtype=Y.dtype))
    a = (Y * Y).sum(dim=1) + 0.5  # (N,) a_i + a_j − 2 y_i·y_j = 1 + |y_i − y_j|²
    torch.addmm(a[:, None], Y, Y.T, alpha=-2.0, out=W).add_(a).reciprocal_()  # (N, N) w_ij, 3 passes
    W.fill_diagonal_(0.0)
    Z = W.sum()  # 1 pass
    torch.mul(P, W, out=F)  # (N, N) p_ij w_ij, 1 pass
    if exaggeration != 1.0:
        F.mul_(exaggeration)  # 1 pass, only while exaggerating
    F.addcmul_(W, W, value=-1.0 / float(Z))  # (α p_ij − q_ij) w_ij, 1 pass
    # F is symmetric, so F @ [Y | 1] = ([Y | 1]ᵀ F)ᵀ, the faster product (a wide row times a matrix, 1 pass):
    # its first k columns are F Y and its last Σ_j F_ij
    FY = (torch.cat([Y, torch.ones(N, 1, dtype=Y.dtype)], dim=1).T @ F).T  # (N, k + 1)
    return 4.0 * (FY[:, k:] * Y - FY[:, :k]), (W, Z)


def kl_divergence(P: torch.Tensor, W: torch.Tensor, Z: torch.Tensor, support: torch.Tensor | None = None) -> float:
    """KL(P || Q) = Σ p_ij log(p_ij / q_ij) in nats over the pairs with p_ij > 0 (0 log 0 = 0); q_ij = w_ij / Z.

    support: the flat indices of P's non-zero entries, when the caller asks often (finding them is a pass).
    """
    support = torch.flatten(P).nonzero().squeeze(1) if support is None else support  # (S,)
    p = torch.take(P, support)  # (S,)
    return float((p * torch.log(p * Z / torch.take(W, support))).sum())


def tsne(X: np.ndarray, config: TSNEConfig = TSNEConfig(),
         on_progress: Callable[[int, int, float], bool | None] | None = None) -> TSNEResult:
    """t-SNE of the rows of X (N, d): gradient descent on KL(P || Q) with momentum and per-coordinate gains.

    on_progress(iteration, total, kl) is called every config.report_every iterations; returning False stops
    the run early, and the result holds the points as they were.
    """
    X = torch.as_tensor(np.asarray(X), dtype=torch.float32)
    N = X.shape[0]
    P, beta = joint_p(X, config.perplexity, config.neighbours)  # (N, N), (N,)
    Y = _start(X, config)  # (N, k)
    eta = config.learning_rate or max(N / config.exaggeration, 200.0) / 4
    step = torch.zeros_like(Y)  # (N, k) the last update, for momentum
    gains = torch.ones_like(Y)  # (N, k)
    work = (torch.empty(N, N), torch.empty(N, N))
    support = torch.flatten(P).nonzero().squeeze(1)  # (S,) pairs that are neighbours in d dimensions
    result = TSNEResult(Y.numpy(), beta=beta.numpy())
    for it in range(1, config.iterations + 1):
        report = it % config.report_every == 0 or it == config.iterations
        early = it <= config.exaggeration_iterations
        grad, (W, Z) = kl_gradient(P, Y, config.exaggeration if early else 1.0, work)
        # van der Maaten's gains: grow a coordinate's step while its gradient keeps its sign, else shrink it
        same_sign = (grad > 0) == (step > 0)
        gains = torch.where(same_sign, gains * 0.8, gains + 0.2).clamp_(min=MIN_GAIN)
        step = MOMENTUM[0 if early else 1] * step - eta * gains * grad
        Y = Y + step
        Y -= Y.mean(dim=0)  # KL is unchanged by a shift; keep the picture centred
        if report:
            kl = kl_divergence(P, W, Z, support)
            result.kl.append((it, kl))
            result.iterations = it
            if on_progress is not None and on_progress(it, config.iterations, kl) is False:
                break
    result.coords = Y.numpy()
    result.iterations = it
    return result


def _start(X: torch.Tensor, config: TSNEConfig) -> torch.Tensor:
    """Initial Y (N, k): the PCA coordinates scaled to a standard deviation of 10⁻⁴ (small, so the first
    steps are driven by P alone) plus a seeded jitter of 1% of that, or seeded Gaussian noise of that size."""
    generator = torch.Generator().manual_seed(config.seed)
    noise = torch.randn(X.shape[0], config.dims, generator=generator, dtype=torch.float32)  # (N, k)
    if config.init == "random":
        return 1e-4 * noise
    coords = torch.from_numpy(pca(X.numpy(), config.dims).coords).float()  # (N, k)
    return 1e-4 * (coords / coords[:, 0].std() + 0.01 * noise)


@dataclass(frozen=True)
class Projection:
    """What the projector draws of N words: their places and how faithful the picture is."""

    coords: np.ndarray  # (N, dims)
    explained: np.ndarray | None  # (dims,) PCA's share of the variance per axis; None for t-SNE
    kl: list[tuple[int, float]]  # t-SNE's (iteration, KL(P || Q)) reports; empty for PCA
    kept: float  # share of each word's 10 nearest neighbours (cosine) also nearest in the picture


def project(X: np.ndarray, method: str, dims: int, perplexity: float = 30.0,
            on_progress: Callable[[int, int, float], bool | None] | None = None) -> Projection:
    """The rows of X (N, d) in dims dimensions by "PCA" or "t-SNE" (with TSNEConfig's defaults at this perplexity;
    on_progress as tsne's), and the share of neighbourhoods the picture keeps.

    t-SNE runs on one thread, as the app's server runs everything: on two threads float32 sums round differently,
    and 350 iterations carry that into places whole units apart (6.7 on 1,000 GloVe words), so a picture made
    here would not be the one the app drew.
    """
    if method == "PCA":
        found = pca(X, dims)
        coords, explained, kl = found.coords, found.explained, []
    elif method == "t-SNE":
        with torch_threads(1):
            found = tsne(X, TSNEConfig(dims=dims, perplexity=perplexity), on_progress)
        coords, explained, kl = found.coords, None, found.kl
    else:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    return Projection(coords, explained, kl, neighbours_kept(X, coords))


# ---------------------------------------------------------------------------------------------- what to show

METHODS = ("PCA", "t-SNE")
# Most words each method draws. t-SNE's exact gradient costs N² per step: 2,000 words take about 4 s of one
# core (the limit is 5 s shown). PCA is one SVD (0.1 s at 10,000 × 100); the limit there is the
# browser, which still pans 10,000 hover-labelled points smoothly (TensorFlow's projector loads as many).
BUDGET = {"PCA": 10_000, "t-SNE": 2_000}
OWN_WORDS = 50  # words a person adds by hand, on top of the frequent ones


def parse_words(text: str) -> list[str]:
    """Words typed in a box: split at commas and white space, lower-cased, each kept once in order.

    An entry without a letter or digit ("?!", "--") is refused: GloVe knows punctuation marks as tokens, but
    a projector of words is not the place for them, and a stray comma is more often a typo.
    """
    words = list(dict.fromkeys(w for w in text.lower().replace(",", " ").split() if w))
    bare = [w for w in words if not any(ch.isalnum() for ch in w)]
    if bare:
        raise InputError(f"{' '.join(bare[:5])!r} is punctuation only: type words, separated by commas or spaces")
    if len(words) > OWN_WORDS:
        raise InputError(f"{len(words)} words typed; at most {OWN_WORDS} can be added by hand")
    return words


def choose_words(vocabulary: Sequence[str], n: int, method: str, own: Sequence[str] = ()) -> list[str]:
    """The n most frequent words of vocabulary (most frequent first) that contain a letter, then the words
    of own not among them. Punctuation and numbers are passed over: they crowd the centre and say little.

    InputError when n is past the method's budget. Checking that own's words are in the vocabulary is the
    caller's: WordVectors.id names the word and suggests spellings.
    """
    if method not in BUDGET:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if n > BUDGET[method]:
        raise InputError(f"{method} draws at most {BUDGET[method]:,} words here ({n:,} asked): "
                         + ("choose fewer words, or PCA, which takes up to 10,000" if method == "t-SNE"
                            else "choose fewer words"))
    if n < 1:
        raise InputError("choose at least one frequent word to draw")
    frequent = [w for w in vocabulary[: 4 * n] if any(ch.isalpha() for ch in w)][:n]
    taken = set(frequent)
    return frequent + [w for w in own if w not in taken]


def nearest(X: np.ndarray, i: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k rows of X (N, d) of highest cosine with row i, itself left out: indices (k,) best first, cosines."""
    unit = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)  # (N, d)
    cos = unit @ unit[i]  # (N,)
    cos[i] = -np.inf
    k = min(k, len(X) - 1)
    best = np.argsort(-cos, kind="stable")[:k]  # (k,)
    return best, cos[best]


def neighbours_kept(X: np.ndarray, coords: np.ndarray, k: int = 10) -> float:
    """Mean share of each point's k nearest neighbours (cosine, d dimensions) that are also among its k
    nearest in the picture (Euclidean): 1 when the projection keeps every neighbourhood.

    At most 1,000 points are asked (evenly spaced), so the cost stays 1,000 × N at PCA's 10,000 words.
    """
    N = len(X)
    k = min(k, N - 1)
    asked = np.unique(np.linspace(0, N - 1, min(N, 1000)).astype(int))  # (A,)
    unit = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-12)  # (N, d)
    cos = unit[asked] @ unit.T  # (A, N)
    sq = (coords**2).sum(axis=1)  # (N,)
    near = sq[asked, None] + sq[None, :] - 2 * coords[asked] @ coords.T  # (A, N) squared distances
    cos[np.arange(len(asked)), asked] = -np.inf
    near[np.arange(len(asked)), asked] = np.inf
    before = np.argpartition(-cos, k - 1, axis=1)[:, :k]  # (A, k)
    after = np.argpartition(near, k - 1, axis=1)[:, :k]  # (A, k)
    return float(np.mean([len(set(b) & set(a)) / k for b, a in zip(before, after)]))
