"""SmolLM2's attention heads for the RoPE and GQA pages: one head's queries and keys before and after RoPE,
RoPE's relative property checked on them (000 §8.6), and the query heads that share one K and V (GQA)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engine.attention.scoring import causal_mask
from engine.errors import InputError
from engine.llm.gguf_file import LlamaConfig
from engine.llm.model import GGUF_PAIRING, Capture
from engine.llm.smollm import SmolLM
from engine.positions import rope
from engine.transformer.variants import group_membership

PATH_POSITIONS = 64  # q's pairs drawn at positions 0..63: the fastest turns ten times, the slowest barely moves
SHIFTS = 256  # the prompt moved 0..255 positions later


def kv_head_of(cfg: LlamaConfig, head: int) -> int:
    """The key-value head query head `head` reads: head // (n_heads / n_kv_heads)."""
    return int(group_membership(cfg.n_heads, cfg.n_kv_heads)[head].argmax())


def check_layer_head(cfg: LlamaConfig, layer: int, head: int) -> None:
    if not 0 <= layer < cfg.n_layers or not 0 <= head < cfg.n_heads:
        raise InputError(f"layer must be 0-{cfg.n_layers - 1} and head 0-{cfg.n_heads - 1}")


@dataclass(frozen=True)
class HeadQK:
    """One query head's queries and its key-value head's keys over a prompt, as the model computed them."""
    q: torch.Tensor  # (T, d) before RoPE
    k: torch.Tensor  # (T, d)
    q_rot: torch.Tensor  # (T, d) after RoPE at positions 0..T-1
    k_rot: torch.Tensor  # (T, d)
    kv_head: int


@torch.no_grad()
def head_qk(lm: SmolLM, ids: list[int], layer: int, head: int, pairing: str = GGUF_PAIRING) -> HeadQK:
    check_layer_head(lm.config, layer, head)
    if not ids:
        raise InputError("type a prompt: it is empty")
    capture = Capture(qk_layer=layer)
    lm.model(torch.tensor([ids]), capture=capture, pairing=pairing, last_only=True, n_blocks=layer + 1)
    qk, kv_head = capture.qk, kv_head_of(lm.config, head)
    return HeadQK(qk["q"][0, head], qk["k"][0, kv_head], qk["q_rot"][0, head], qk["k_rot"][0, kv_head], kv_head)


@dataclass(frozen=True)
class RealRotation:
    """000 §8.6 on a real head, query token i against every key j <= i (SmolLM2's base, interleaved pairs)."""
    path: torch.Tensor  # (PATH_POSITIONS, d) q_i before RoPE, rotated to positions 0, 1, ...
    frequencies: torch.Tensor  # (d/2,) radians per position of each pair
    computed: torch.Tensor  # (i+1,) q~_i . k~_j as the model computed them (before the 1/sqrt(d))
    closed_form: torch.Tensor  # (i+1,) q_i . R_(j-i) k_j (001 appendix, M(i, j) = R_(j-i)): no position in it
    shifted: torch.Tensor  # (SHIFTS, i+1) the same q_i and k_j moved s = 0, 1, ... positions later
    spread: float  # the largest spread of one key's shifted scores, in units of eps ||q|| ||k|| (float32)
    kv_head: int


@torch.no_grad()
def rope_on_head(lm: SmolLM, ids: list[int], layer: int, head: int, query: int) -> RealRotation:
    """Where RoPE moves the real q_i of one head, and that its scores depend only on the offset i - j: the
    model's own q~_i . k~_j equal the closed form, and moving both vectors s positions later changes nothing
    but rounding (rope.scores_at_offset, rope.score_deviation on the real vectors)."""
    if not 0 <= query < len(ids):
        raise InputError(f"the query token must be one of the {len(ids)} tokens, 0-{len(ids) - 1}")
    heads = head_qk(lm, ids[:query + 1], layer, head)
    base, d = lm.config.rope_base, lm.config.head_dim
    q, keys = heads.q[query], range(query + 1)  # (d,)
    path = rope.apply_rope(q.expand(PATH_POSITIONS, -1), torch.arange(PATH_POSITIONS), base, GGUF_PAIRING)
    closed = torch.cat([rope.relative_score(q, heads.k[j], torch.tensor([query - j]), base, GGUF_PAIRING)
                        for j in keys])  # (i+1,) float64
    positions = query + torch.arange(SHIFTS)  # (S,) where q_i goes; k_j goes to j + s
    shifted = torch.stack([rope.scores_at_offset(q, heads.k[j], query - j, positions, base, GGUF_PAIRING)
                           for j in keys], dim=1)  # (S, i+1) float32, as the model computes
    spread = max(float(dev.max() - dev.min()) for dev in (
        rope.score_deviation(q, heads.k[j], query - j, positions, base, GGUF_PAIRING, torch.float32) for j in keys))
    return RealRotation(path, rope.rope_frequencies(d, base).float(), heads.k_rot @ heads.q_rot[query], closed,
                        shifted, spread, heads.kv_head)


@dataclass(frozen=True)
class GroupAttention:
    """The query heads of one GQA group (001 appendix): one K, one V, several ways of attending."""
    kv_head: int
    heads: list[int]  # the query heads that read it
    weights: torch.Tensor  # (n, T, T) each head's attention as the model computed it
    recomputed_gap: float  # max |weights - softmax(q~_h K~_g^T / sqrt(d), causal)|, from the group's one K
    differences: dict[tuple[int, int], float]  # each pair of its heads: the mean over queries of the total
    # variation 1/2 sum_j |a_hj - a_h'j|, the share of weight the two heads put in different places


@torch.no_grad()
def group_attention(lm: SmolLM, ids: list[int], layer: int, kv_head: int) -> GroupAttention:
    cfg = lm.config
    if not 0 <= kv_head < cfg.n_kv_heads:
        raise InputError(f"the key-value head must be 0-{cfg.n_kv_heads - 1}")
    check_layer_head(cfg, layer, 0)
    if not ids:
        raise InputError("type a prompt: it is empty")
    capture = Capture(attentions=True, qk_layer=layer)
    lm.model(torch.tensor([ids]), capture=capture, last_only=True, n_blocks=layer + 1)
    heads = group_membership(cfg.n_heads, cfg.n_kv_heads)[:, kv_head].nonzero().flatten()  # (n,)
    weights = capture.attention[layer][0, heads]  # (n, T, T)
    K = capture.qk["k_rot"][0, kv_head]  # (T, d) the one K the group's heads score against
    scores = capture.qk["q_rot"][0, heads] @ K.T / math.sqrt(cfg.head_dim)  # (n, T, T)
    T = len(ids)
    recomputed = torch.softmax(scores.masked_fill(~causal_mask(T, T), float("-inf")), dim=-1)
    tv = 0.5 * (weights[:, None] - weights[None]).abs().sum(-1).mean(-1)  # (n, n)
    n = len(heads)
    differences = {(int(heads[a]), int(heads[b])): float(tv[a, b]) for a in range(n) for b in range(a + 1, n)}
    return GroupAttention(kv_head, heads.tolist(), weights, float((weights - recomputed).abs().max()), differences)
