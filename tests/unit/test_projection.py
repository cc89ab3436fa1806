"""PCA and t-SNE of the embedding projector against independent computations: the covariance's eigenvectors,
entropies and joint probabilities recomputed in numpy, the KL gradient by torch.autograd, and t-SNE's
behaviour on Gaussian blobs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from engine.embeddings import projection as pj
from engine.errors import InputError


@pytest.fixture(scope="module")
def blobs():
    """Four Gaussian blobs of 30 points in 20 dimensions, centres 20 apart and spread 1: labels, points."""
    rng = np.random.default_rng(0)
    centres = rng.normal(0, 20 / np.sqrt(2), (4, 20))
    labels = np.repeat(np.arange(4), 30)
    return labels, (centres[labels] + rng.normal(0, 1, (120, 20))).astype(np.float32)


def test_pca_matches_the_covariance_eigenvectors():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 6)) * np.array([5.0, 3.0, 2.0, 1.0, 0.5, 0.1])  # distinct variances
    result = pj.pca(X, 3)
    centred = X - X.mean(axis=0)
    values, vectors = np.linalg.eigh(np.cov(centred, rowvar=False))  # ascending
    values, vectors = values[::-1], vectors[:, ::-1]
    np.testing.assert_allclose(result.explained, values[:3] / values.sum(), rtol=1e-10)
    for j in range(3):  # each axis is an eigenvector, up to the sign PCA chooses
        sign = np.sign(result.axes[j] @ vectors[:, j])
        np.testing.assert_allclose(result.axes[j], sign * vectors[:, j], atol=1e-10)
        np.testing.assert_allclose(result.coords[:, j], sign * centred @ vectors[:, j], atol=1e-9)


def test_pca_sign_gives_the_farthest_point_a_positive_coordinate():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 5))
    for Xs in (X, -X):  # the SVD's signs flip with the data; ours do not depend on them
        coords = pj.pca(Xs, 2).coords
        farthest = np.abs(coords).argmax(axis=0)
        assert (coords[farthest, [0, 1]] > 0).all()
    np.testing.assert_allclose(np.abs(pj.pca(X, 2).coords), np.abs(pj.pca(-X, 2).coords), atol=1e-12)


@pytest.mark.parametrize("neighbours", [None, 0])  # 3·perplexity nearest, and every other point
@pytest.mark.parametrize("perplexity", [5.0, 20.0])
def test_each_row_of_p_has_the_entropy_of_its_perplexity(blobs, neighbours, perplexity):
    _, X = blobs
    P, beta = pj.joint_p(torch.as_tensor(X, dtype=torch.float64), perplexity, neighbours)
    P, beta = P.numpy(), beta.numpy()
    # recompute each conditional row from β alone: p_{j|i} ∝ exp(−β_i |x_i − x_j|²) over the support
    D = ((X[:, None, :].astype(np.float64) - X[None, :, :]) ** 2).sum(axis=2)
    np.fill_diagonal(D, np.inf)
    M = len(X) - 1 if neighbours == 0 else int(3 * perplexity)
    support = np.argsort(D, axis=1)[:, :M]
    d = np.take_along_axis(D, support, axis=1)
    logits = -beta[:, None] * (d - d.min(axis=1, keepdims=True))
    cond = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    entropy = -(cond * np.log(np.maximum(cond, 1e-300))).sum(axis=1)
    np.testing.assert_allclose(entropy, np.log(perplexity), atol=1e-4)
    full = np.zeros_like(D)
    np.put_along_axis(full, support, cond, axis=1)
    np.testing.assert_allclose(P, (full + full.T) / (2 * len(X)), atol=1e-12)
    assert P.sum() == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_array_equal(P, P.T)
    assert (np.diag(P) == 0).all()


@pytest.mark.parametrize("exaggeration", [1.0, 12.0])
def test_gradient_matches_autograd(blobs, exaggeration):
    _, X = blobs
    P, _ = pj.joint_p(torch.as_tensor(X[:25], dtype=torch.float64), 5.0, neighbours=0)
    Y = torch.randn(25, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    grad, (W, Z) = pj.kl_gradient(P, Y, exaggeration)
    Yg = Y.clone().requires_grad_(True)
    diff = Yg[:, None, :] - Yg[None, :, :]
    w = 1 / (1 + (diff**2).sum(dim=2))
    w = w - torch.diag(torch.diag(w))  # q_ii = 0
    # KL(P || Q) = Σ p log p − Σ p log w + log Z; exaggeration α multiplies P in the attraction only,
    # so its gradient is that of −α Σ p log w + log Z
    off = ~torch.eye(25, dtype=torch.bool)
    objective = -exaggeration * (P[off] * torch.log(w[off])).sum() + torch.log(w.sum())
    (expected,) = torch.autograd.grad(objective, Yg)
    torch.testing.assert_close(grad, expected, rtol=1e-10, atol=1e-12)
    Q = (w / w.sum()).detach()
    kl = float((P[off] * torch.log(P[off].clamp(min=1e-300) / Q[off]) * (P[off] > 0)).sum())
    assert pj.kl_divergence(P, W, Z) == pytest.approx(kl, rel=1e-10)


def test_kl_falls_after_the_exaggeration(blobs):
    _, X = blobs
    config = pj.TSNEConfig(perplexity=10, iterations=300, exaggeration_iterations=50, report_every=10)
    kl = [k for it, k in pj.tsne(X, config).kl if it > config.exaggeration_iterations]
    assert kl[-1] < 0.5 * kl[0], kl
    assert all(b <= a + 1e-3 for a, b in zip(kl, kl[1:])), kl  # momentum may wobble, by very little


def test_well_separated_blobs_stay_separated(blobs):
    labels, X = blobs
    Y = pj.tsne(X, pj.TSNEConfig(perplexity=10, iterations=300, exaggeration_iterations=50)).coords
    D = ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(axis=2)
    np.fill_diagonal(D, np.inf)
    assert (labels[D.argmin(axis=1)] == labels).all()  # every point's nearest neighbour is in its blob
    centres = np.array([Y[labels == b].mean(axis=0) for b in range(4)])
    spread = max(np.linalg.norm(Y[labels == b] - centres[b], axis=1).max() for b in range(4))
    gaps = np.linalg.norm(centres[:, None] - centres[None], axis=2)[~np.eye(4, dtype=bool)]
    assert gaps.min() > 2 * spread  # the blobs do not touch


@pytest.mark.parametrize("init", ["pca", "random"])
def test_the_seed_makes_it_reproducible(blobs, init):
    _, X = blobs
    config = pj.TSNEConfig(perplexity=10, iterations=60, exaggeration_iterations=20, init=init)
    first, again = pj.tsne(X, config).coords, pj.tsne(X, config).coords
    other = pj.tsne(X, pj.TSNEConfig(**{**config.__dict__, "seed": 1})).coords
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_progress_is_reported_and_can_stop_the_run(blobs):
    _, X = blobs
    seen = []

    def progress(iteration, total, kl):
        seen.append((iteration, total, kl))
        return iteration < 40

    result = pj.tsne(X, pj.TSNEConfig(iterations=200, report_every=20), on_progress=progress)
    assert [s[0] for s in seen] == [20, 40] and seen[0][1] == 200 and np.isfinite(seen[0][2])
    assert result.iterations == 40 and result.coords.shape == (120, 2)


def test_words_are_chosen_by_frequency_within_the_budget():
    vocabulary = ["the", ",", "of", "1999", "king", "queen", "frog"]
    assert pj.choose_words(vocabulary, 3, "PCA") == ["the", "of", "king"]  # punctuation and numbers passed over
    assert pj.choose_words(vocabulary, 3, "t-SNE", ["frog", "king"]) == ["the", "of", "king", "frog"]
    with pytest.raises(InputError, match="at most 2,000"):
        pj.choose_words(vocabulary, 2_001, "t-SNE")
    with pytest.raises(InputError, match="at most 10,000"):
        pj.choose_words(vocabulary, 10_001, "PCA")


def test_typed_words_are_parsed_or_refused():
    assert pj.parse_words(" King, queen  frog,king ") == ["king", "queen", "frog"]
    assert pj.parse_words("  ") == [] and pj.parse_words("u.s.") == ["u.s."]
    with pytest.raises(InputError, match="punctuation only"):
        pj.parse_words("king, ?! ...")
    with pytest.raises(InputError, match="at most 50"):
        pj.parse_words(" ".join(f"w{i}" for i in range(51)))


def test_nearest_and_neighbours_kept_against_brute_force():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 4))
    best, cos = pj.nearest(X, 7, 3)
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    brute = sorted(((float(unit[7] @ unit[j]), j) for j in range(30) if j != 7), reverse=True)[:3]
    assert best.tolist() == [j for _, j in brute] and np.allclose(cos, [c for c, _ in brute])
    angles = rng.uniform(0, 2 * np.pi, 40)
    circle = np.stack([np.cos(angles), np.sin(angles)], axis=1)  # on a unit circle cosine order = distance order
    assert pj.neighbours_kept(circle, circle, k=3) == 1.0


def test_first_steps_follow_van_der_maatens_update(blobs):
    """Five steps against his reference tsne.py's update (gains, momentum, recentring), written in numpy with
    the gradient's 4 kept and the same P, start and learning rate."""
    _, X = blobs
    config = pj.TSNEConfig(perplexity=10, iterations=5, exaggeration_iterations=3, seed=2)
    P = pj.joint_p(torch.as_tensor(X), 10.0)[0].double().numpy()
    Y = pj._start(torch.as_tensor(X), config).double().numpy()
    step, gains, eta = np.zeros_like(Y), np.ones_like(Y), 200 / 4
    for it in range(1, 6):
        alpha, momentum = (12.0, 0.5) if it <= 3 else (1.0, 0.8)
        num = 1 / (1 + ((Y[:, None] - Y[None]) ** 2).sum(axis=2))
        np.fill_diagonal(num, 0)
        PQ = alpha * P - num / num.sum()
        dY = 4 * np.einsum("ij,ijk->ik", PQ * num, Y[:, None] - Y[None])
        gains = np.where((dY > 0) != (step > 0), gains + 0.2, gains * 0.8).clip(min=0.01)
        step = momentum * step - eta * gains * dY
        Y = Y + step
        Y -= Y.mean(axis=0)
    # ours runs in float32, where 1 + |y_i − y_j|² rounds at 10⁻⁷ while the squared distances start near 10⁻⁴
    np.testing.assert_allclose(pj.tsne(X, config).coords, Y, atol=1e-3 * np.abs(Y).max())
