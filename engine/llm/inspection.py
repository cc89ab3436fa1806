"""Looking inside SmolLM2: every head's attention, the logit lens and the neuron view of one score."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.errors import InputError
from engine.llm.heads import check_layer_head, head_qk
from engine.llm.model import GGUF_PAIRING, Capture
from engine.llm.smollm import SmolLM
from engine.positions.rope import rope_frequencies


@dataclass(frozen=True)
class Inside:
    """One forward pass over a prompt, kept for the page."""
    ids: list[int]
    logits: torch.Tensor  # (T, V)
    attentions: torch.Tensor  # (L, H, T, T) every layer's and head's weights
    residuals: torch.Tensor  # (L, T, C) the residual stream after each block


@torch.no_grad()
def look_inside(lm: SmolLM, ids: list[int]) -> Inside:
    if not ids:
        raise InputError("type a prompt: it is empty")
    capture = Capture(attentions=True, residuals=True)
    out = lm.model(torch.tensor([ids]), capture=capture)
    return Inside(ids, out.logits[0], torch.cat(capture.attention), torch.cat(capture.residual))


@dataclass(frozen=True)
class LogitLens:
    """nostalgebraist's logit lens: each layer's residual stream read as if it were the last, through the final
    RMSNorm and the tied unembedding."""
    top_ids: torch.Tensor  # (L, T) the most likely next token after each layer at each position
    top_probs: torch.Tensor  # (L, T)


@torch.no_grad()
def logit_lens(lm: SmolLM, inside: Inside) -> LogitLens:
    probs = torch.softmax(lm.model.unembed(inside.residuals).float(), dim=-1)  # (L, T, V)
    top = probs.max(dim=-1)
    return LogitLens(top.indices, top.values)


@dataclass(frozen=True)
class NeuronView:
    """BertViz's neuron view for a Llama head: query i's and key j's vectors before and after RoPE, their
    elementwise product / sqrt(d), and the products summed over each rotated pair, whose total is the score."""
    q: torch.Tensor  # (d,) before RoPE
    k: torch.Tensor  # (d,)
    q_rot: torch.Tensor  # (d,) after RoPE at position i
    k_rot: torch.Tensor  # (d,) after RoPE at position j
    products: torch.Tensor  # (d,) q_rot * k_rot / sqrt(d)
    pair_sums: torch.Tensor  # (d/2,) one per frequency, fastest first
    frequencies: torch.Tensor  # (d/2,) radians per position of each pair
    score: float  # sum of products: the pre-softmax score of key j for query i
    scores: torch.Tensor  # (i + 1,) query i's scores against every visible key, for the softmax
    kv_head: int  # the key-value head this query head reads (GQA)


@torch.no_grad()
def neuron_view(lm: SmolLM, ids: list[int], layer: int, head: int, query: int, key: int,
                pairing: str = GGUF_PAIRING) -> NeuronView:
    cfg = lm.config
    check_layer_head(cfg, layer, head)
    if not 0 <= key <= query < len(ids):
        raise InputError(f"the key must come at or before the query, both within the {len(ids)} tokens")
    heads = head_qk(lm, ids[:query + 1], layer, head, pairing)
    q, q_rot = heads.q[query], heads.q_rot[query]  # (d,)
    k, k_rot = heads.k[key], heads.k_rot[key]
    d = cfg.head_dim
    products = q_rot * k_rot / math.sqrt(d)
    first, second = (slice(0, d, 2), slice(1, d, 2)) if pairing == "interleaved" else (slice(0, d // 2),
                                                                                        slice(d // 2, d))
    pair_sums = products[first] + products[second]
    scores = heads.k_rot @ q_rot / math.sqrt(d)  # (query + 1,)
    return NeuronView(q, k, q_rot, k_rot, products, pair_sums, rope_frequencies(d, cfg.rope_base).float(),
                      float(products.sum()), scores, heads.kv_head)


@torch.no_grad()
def overview(lm: SmolLM, ids: list[int], lens_positions: int = 16, top: int = 12) -> dict:
    """One forward pass over ids, read three ways: the `top` most likely next tokens ("next_ids", "next_probs"),
    every layer's and head's attention ("attentions", (L, H, T, T)), and the logit lens over the last
    lens_positions positions ("lens_ids", "lens_probs", each (L, lens_positions))."""
    inside = look_inside(lm, ids)
    lens = logit_lens(lm, Inside(inside.ids[-lens_positions:], inside.logits[-lens_positions:], inside.attentions,
                                 inside.residuals[:, -lens_positions:]))
    next_probs = inside.logits[-1].float().softmax(-1)  # (V,)
    best = next_probs.topk(top)
    return {"attentions": inside.attentions.numpy(), "next_ids": best.indices.tolist(),
            "next_probs": best.values.tolist(), "lens_ids": lens.top_ids.tolist(), "lens_probs": lens.top_probs.numpy()}
