"""Decoupled RoPE for multi-head latent attention (000 §8.7, eq. 110-121).

Each query and key has a content part, computed from latents, and a small RoPE part:
q_t = [W_uq c_t^Q ; RoPE(W_qr c_t^Q)],  k_j = [W_uk c_j^KV ; k_j^R],  score = q_t . k_j / sqrt(d_h + d_h^R).
Only c^KV and the key's RoPE part k^R are cached. Where the key's RoPE part comes from differs:
000 eq. 117 rotates W_K^R c_j^KV (from the latent), DeepSeek-V2 rotates W^KR h_j (from the hidden state)
and shares it across heads. Both are offered; in both k^R is one vector per token, shared by the heads.
Vectors are rows here (h is (T, d_model)), so the notes' W x is x @ W.T.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.attention.scoring import causal_mask
from engine.positions.rope import apply_rope

ROPE_KEY_SOURCES = ("latent", "hidden")  # 000 eq. 117, DeepSeek-V2


@dataclass
class MLAConfig:
    d_model: int = 64
    n_heads: int = 4
    d_h: int = 16  # content dimension per head
    d_h_rope: int = 8  # d_h^R, RoPE dimension per head; must be even
    d_c: int = 16  # KV latent c^KV, the cached part
    d_c_q: int = 24  # query latent c^Q, never cached
    base: float = 10000.0
    rope_key_from: str = "latent"


@dataclass
class MLAWeights:
    W_dq: torch.Tensor  # (d_c_q, d_model)   c^Q = W_dq h
    W_uq: torch.Tensor  # (H d_h, d_c_q)     q^C = W_uq c^Q
    W_qr: torch.Tensor  # (H d_h^R, d_c_q)   q^R = RoPE(W_qr c^Q)
    W_dkv: torch.Tensor  # (d_c, d_model)    c^KV = W_dkv h
    W_uk: torch.Tensor  # (H d_h, d_c)       k^C = W_uk c^KV
    W_uv: torch.Tensor  # (H d_h, d_c)       v^C = W_uv c^KV
    W_kr: torch.Tensor  # (d_h^R, d_c or d_model)  k^R = RoPE(W_kr c^KV or W_kr h)
    W_o: torch.Tensor  # (d_model, H d_h)


def init_mla(cfg: MLAConfig, seed: int) -> MLAWeights:
    if cfg.rope_key_from not in ROPE_KEY_SOURCES:
        raise ValueError(f"the RoPE key comes from one of {', '.join(ROPE_KEY_SOURCES)}, not {cfg.rope_key_from!r}")
    g = torch.Generator().manual_seed(seed)

    def linear(out_dim: int, in_dim: int) -> torch.Tensor:
        return torch.randn(out_dim, in_dim, generator=g, dtype=torch.float64) / math.sqrt(in_dim)

    H = cfg.n_heads
    kr_in = cfg.d_c if cfg.rope_key_from == "latent" else cfg.d_model
    return MLAWeights(
        W_dq=linear(cfg.d_c_q, cfg.d_model), W_uq=linear(H * cfg.d_h, cfg.d_c_q),
        W_qr=linear(H * cfg.d_h_rope, cfg.d_c_q), W_dkv=linear(cfg.d_c, cfg.d_model),
        W_uk=linear(H * cfg.d_h, cfg.d_c), W_uv=linear(H * cfg.d_h, cfg.d_c),
        W_kr=linear(cfg.d_h_rope, kr_in), W_o=linear(cfg.d_model, H * cfg.d_h),
    )


def hidden_states(n_tokens: int, cfg: MLAConfig, seed: int = 1) -> torch.Tensor:
    """n_tokens random inputs h_t: (T, d_model) float64, from their own generator (init_mla's seed is another)."""
    return torch.randn(n_tokens, cfg.d_model, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@dataclass
class MLAOutput:
    output: torch.Tensor  # (T, d_model)
    weights: torch.Tensor  # (H, T, T) causal attention
    cache: dict[str, torch.Tensor]  # what a decoder keeps per token


def _query_parts(h: torch.Tensor, w: MLAWeights, cfg: MLAConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """q^C (H, T, d_h) and RoPE'd q^R (H, T, d_h^R) of 000 eq. 116."""
    T = h.shape[0]
    c_q = h @ w.W_dq.T  # (T, d_c_q)
    q_c = (c_q @ w.W_uq.T).view(T, cfg.n_heads, cfg.d_h).transpose(0, 1)  # (H, T, d_h)
    q_r = (c_q @ w.W_qr.T).view(T, cfg.n_heads, cfg.d_h_rope).transpose(0, 1)  # (H, T, d_h^R)
    return q_c, apply_rope(q_r, torch.arange(T), cfg.base)


def _cache(h: torch.Tensor, w: MLAWeights, cfg: MLAConfig) -> dict[str, torch.Tensor]:
    """c^KV (T, d_c) and the shared k^R (T, d_h^R): everything a decoder keeps (000 after eq. 121)."""
    c_kv = h @ w.W_dkv.T
    source = c_kv if cfg.rope_key_from == "latent" else h
    return {"c_kv": c_kv, "k_rope": apply_rope(source @ w.W_kr.T, torch.arange(h.shape[0]), cfg.base)}


def _causal_softmax(scores: torch.Tensor) -> torch.Tensor:
    T = scores.shape[-1]
    return torch.softmax(scores.masked_fill(~causal_mask(T, T), float("-inf")), dim=-1)


def mla_explicit(h: torch.Tensor, w: MLAWeights, cfg: MLAConfig) -> MLAOutput:
    """Build every head's full q_t and k_j and attend (000 eq. 115-118): the reference."""
    T, H = h.shape[0], cfg.n_heads
    q_c, q_r = _query_parts(h, w, cfg)
    cache = _cache(h, w, cfg)
    k_c = (cache["c_kv"] @ w.W_uk.T).view(T, H, cfg.d_h).transpose(0, 1)  # (H, T, d_h)
    v_c = (cache["c_kv"] @ w.W_uv.T).view(T, H, cfg.d_h).transpose(0, 1)  # (H, T, d_h)
    q = torch.cat([q_c, q_r], dim=-1)  # (H, T, d_h + d_h^R)
    k = torch.cat([k_c, cache["k_rope"].expand(H, T, cfg.d_h_rope)], dim=-1)
    att = _causal_softmax(q @ k.transpose(-2, -1) / math.sqrt(cfg.d_h + cfg.d_h_rope))  # (H, T, T)
    o = (att @ v_c).transpose(0, 1).reshape(T, H * cfg.d_h)  # heads side by side, eq. 114
    return MLAOutput(o @ w.W_o.T, att, cache)


def mla_absorbed(h: torch.Tensor, w: MLAWeights, cfg: MLAConfig) -> MLAOutput:
    """Attend from the cache alone: W_uk folded into the query, W_uv into the output projection.

    content score q^C . (W_uk c_j) = (W_uk^T q^C) . c_j, a d_c-dimensional dot product with the cache;
    rope score q^R . k_j^R uses the cached k^R, which needs no up-projection.
    """
    H = cfg.n_heads
    q_c, q_r = _query_parts(h, w, cfg)
    cache = _cache(h, w, cfg)
    W_uk = w.W_uk.view(H, cfg.d_h, cfg.d_c)  # per head (d_h, d_c)
    W_uv = w.W_uv.view(H, cfg.d_h, cfg.d_c)
    q_absorbed = q_c @ W_uk  # (H, T, d_c)
    scores = q_absorbed @ cache["c_kv"].T + q_r @ cache["k_rope"].T  # (H, T, T)
    att = _causal_softmax(scores / math.sqrt(cfg.d_h + cfg.d_h_rope))
    o_latent = att @ cache["c_kv"]  # (H, T, d_c)
    W_o_absorbed = w.W_o.view(cfg.d_model, H, cfg.d_h).permute(1, 0, 2) @ W_uv  # (H, d_model, d_c)
    return MLAOutput((o_latent @ W_o_absorbed.transpose(1, 2)).sum(0), att, cache)


def rope_on_content_error(h: torch.Tensor, w: MLAWeights, cfg: MLAConfig) -> float:
    """Why RoPE cannot sit on the content part (000 eq. 111-112): rotate q^C and k^C by their positions and
    the score is q^C R_{n-m} (W_uk c_n), whose middle factor changes with n, so no fixed matrix absorbs it.
    Returns the largest error of pretending it does (scoring with W_uk^T q^C . c_n, rotation dropped)."""
    T, H = h.shape[0], cfg.n_heads
    q_c, _ = _query_parts(h, w, cfg)
    c_kv = _cache(h, w, cfg)["c_kv"]
    k_c = (c_kv @ w.W_uk.T).view(T, H, cfg.d_h).transpose(0, 1)
    positions = torch.arange(T)
    rotated = apply_rope(q_c, positions, cfg.base) @ apply_rope(k_c, positions, cfg.base).transpose(-2, -1)
    absorbed = (q_c @ w.W_uk.view(H, cfg.d_h, cfg.d_c)) @ c_kv.T
    return float((rotated - absorbed)[:, causal_mask(T, T)].abs().max())


def cache_elements_per_token(cfg: MLAConfig) -> dict[str, int]:
    """Numbers kept per token and layer: MLA's c^KV plus k^R against full multi-head K and V."""
    return {"MLA (c^KV + k^R)": cfg.d_c + cfg.d_h_rope, "MHA (K and V of every head)": 2 * cfg.n_heads * cfg.d_h}
