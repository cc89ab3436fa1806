"""The decoder's attention as one cross-attention (000 §8.4): queries from the target side, keys and
values from the source side, every step at once."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.attention.scoring import AttentionResult, attention
from engine.errors import InputError
from engine.seq2seq.dates import Example, batch
from engine.seq2seq.decode import Translation
from engine.seq2seq.model import Seq2Seq


@dataclass
class CrossAttention:
    Q: torch.Tensor  # (T, D) decoder states s_{t-1}
    K: torch.Tensor  # (S, D) keys: z_j (dot) or W z_j (general)
    V: torch.Tensor  # (S, D) values: z_j
    at_once: AttentionResult  # softmax(Q Kᵀ) V: the same weights and contexts as the step-by-step decoder
    scaled: AttentionResult  # softmax(Q Kᵀ / √D) V, as a transformer would score them (000 eq. 57)


@torch.no_grad()
def as_cross_attention(model: Seq2Seq, translation: Translation) -> CrossAttention:
    if model.config.score == "additive":
        raise InputError("additive scores are not a product QKᵀ: choose the dot or general model")
    x, _ = batch([Example(translation.source, "")])
    memory, _ = model.encode(x)
    K, V = memory.keys[0], memory.z[0]
    Q = translation.queries
    return CrossAttention(Q, K, V, attention(Q, K, V, kind="dot"), attention(Q, K, V, kind="scaled_dot"))
