"""Self-attention is permutation equivariant without positions (002 §2.3.1).

With X' = P X: Q' = P Q, K' = P K, V' = P V, so S' = P S P^T, A' = P A P^T and
Attention(X') = P Attention(X). Adding positions to X after the shuffle breaks this.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import torch

from engine.attention.multihead import MultiHeadWeights
from engine.attention.scoring import attention
from engine.errors import InputError
from engine.positions.rope import apply_rope
from engine.positions.sinusoidal import sinusoidal_encoding

ENCODINGS = ("none", "sinusoidal", "rope")


def token_embeddings(tokens: list[str], d_model: int, seed: int) -> torch.Tensor:
    """A fixed random vector per distinct word (the same word always gets the same row): (T, C).

    crc32 rather than hash() so the vectors are the same in every process.
    """
    rows = [torch.randn(d_model, generator=torch.Generator().manual_seed(zlib.crc32(t.encode()) ^ seed))
            for t in tokens]
    return torch.stack(rows) if rows else torch.empty(0, d_model)


def shuffled_order(tokens: list[str], seed: int) -> list[int]:
    """A seeded random new order of the tokens' positions: new position i takes old token order[i]."""
    return torch.randperm(len(tokens), generator=torch.Generator().manual_seed(seed)).tolist()


def permutation_matrix(order: list[int]) -> torch.Tensor:
    """P with (P X)[i] = X[order[i]]; order must be a permutation of 0..n-1."""
    n = len(order)
    if sorted(order) != list(range(n)):
        raise InputError(f"{order} is not a permutation of 0..{n - 1}: each position must appear once")
    P = torch.zeros(n, n)
    P[torch.arange(n), torch.tensor(order, dtype=torch.long)] = 1.0
    return P


@dataclass
class EquivarianceCheck:
    P: torch.Tensor  # (T, T)
    A: torch.Tensor  # (T, T) attention of the original order
    A_permuted: torch.Tensor  # (T, T) attention of the shuffled order, A'
    A_reordered: torch.Tensor  # (T, T) P A P^T: the original attention with rows and columns shuffled
    weights_error: float  # max |A' - P A P^T|
    output_error: float  # max |Attention(X') - P Attention(X)|


def self_attention_weights(X: torch.Tensor, weights: MultiHeadWeights, encoding: str = "none",
                           base: float = 10000.0) -> tuple[torch.Tensor, torch.Tensor]:
    """One head of self-attention on X (T, C): Q = X W_Q, K = X W_K, V = X W_V (002 §2.1.1).

    encoding "sinusoidal" adds PE to X first (002 §2.3.2); "rope" rotates Q and K by position (002 §2.3.3).
    """
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown position encoding {encoding!r}; choose one of {', '.join(ENCODINGS)}")
    T, C = X.shape
    positions = torch.arange(T)
    if encoding == "sinusoidal":
        X = X + sinusoidal_encoding(T, C, base)
    W_Q, W_K, W_V = weights.W_qkv.split(C, dim=1)
    Q, K = X @ W_Q, X @ W_K
    if encoding == "rope":
        Q, K = apply_rope(Q, positions, base), apply_rope(K, positions, base)
    result = attention(Q, K, X @ W_V, "scaled_dot")
    return result.weights, result.output


def check_equivariance(X: torch.Tensor, weights: MultiHeadWeights, order: list[int], encoding: str = "none",
                       base: float = 10000.0) -> EquivarianceCheck:
    """Compare self-attention of X and of P X; positions, if any, belong to the slots, not the tokens."""
    P = permutation_matrix(order)
    A, out = self_attention_weights(X, weights, encoding, base)
    A_permuted, out_permuted = self_attention_weights(P @ X, weights, encoding, base)
    A_reordered = P @ A @ P.T
    return EquivarianceCheck(
        P=P,
        A=A,
        A_permuted=A_permuted,
        A_reordered=A_reordered,
        weights_error=float((A_permuted - A_reordered).abs().max()),
        output_error=float((out_permuted - P @ out).abs().max()),
    )
