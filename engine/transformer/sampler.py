"""The character TransformerLM's sampling as one compiled call that never needs the GIL (numba, nogil): what the
TransformerLM page draws.

Why a second implementation of model.py's forward pass: generate() runs about 70 small torch operators a
character, and each gives up the GIL and waits to take it back. Beside a class's sessions running Python every
wait can last the interpreter's switch interval: 60 characters took 0.19 s alone and 55 s beside two threads
running Python (benchmarks/gil_convoy.py). Here the prompt and every new character are one call that runs on
whichever core is free. It computes what model.py computes, one position at a time with a KV cache (000 §8.5),
in float32; tests check its logits against the torch model's at every position.

Draws: numpy's generator seeded by `seed` gives one uniform number per character, and the character is where
that number falls in the cumulative distribution (inverse CDF). torch.multinomial draws differently, so a seed
gives other characters than generate() does; the distribution is the same (sampling_distribution's rules:
temperature, then top-k; temperature 0 is the greedy pick).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from engine.errors import InputError
from engine.transformer.model import TransformerLM, check_context


@dataclass(frozen=True)
class Weights:
    """A TransformerLM's parameters as float32 arrays, per layer stacked: L layers, C = d_model, F = d_ff."""
    token_emb: np.ndarray  # (V, C)
    pos_emb: np.ndarray  # (P, C)
    ln1: np.ndarray  # (L, 2, C) weight and bias
    qkv_w: np.ndarray  # (L, 3C, C)
    qkv_b: np.ndarray  # (L, 3C)
    proj_w: np.ndarray  # (L, C, C)
    proj_b: np.ndarray  # (L, C)
    ln2: np.ndarray  # (L, 2, C)
    fc_w: np.ndarray  # (L, F, C)
    fc_b: np.ndarray  # (L, F)
    out_w: np.ndarray  # (L, C, F)
    out_b: np.ndarray  # (L, C)
    ln_f: np.ndarray  # (2, C)
    head: np.ndarray  # (V, C)
    n_heads: int
    eps: float

    def arrays(self) -> tuple:
        return (self.token_emb, self.pos_emb, self.ln1, self.qkv_w, self.qkv_b, self.proj_w, self.proj_b, self.ln2,
                self.fc_w, self.fc_b, self.out_w, self.out_b, self.ln_f, self.head)


def weights_of(model: TransformerLM) -> Weights:
    """A causal model's weights, copied: the compiled loop reads them while the model may be used elsewhere."""
    if not model.config.causal:
        raise ValueError("only a causal model samples left to right")

    def array(*tensors) -> np.ndarray:
        return np.ascontiguousarray(np.stack([t.detach().float().numpy() for t in tensors]))

    blocks = model.blocks
    return Weights(
        array(model.token_emb.weight)[0], array(model.pos_emb.weight)[0],
        np.stack([array(b.ln1.weight, b.ln1.bias) for b in blocks]),
        array(*(b.attn.qkv.weight for b in blocks)), array(*(b.attn.qkv.bias for b in blocks)),
        array(*(b.attn.proj.weight for b in blocks)), array(*(b.attn.proj.bias for b in blocks)),
        np.stack([array(b.ln2.weight, b.ln2.bias) for b in blocks]),
        array(*(b.mlp[0].weight for b in blocks)), array(*(b.mlp[0].bias for b in blocks)),
        array(*(b.mlp[3].weight for b in blocks)), array(*(b.mlp[3].bias for b in blocks)),
        array(model.ln_f.weight, model.ln_f.bias), array(model.lm_head.weight)[0],
        model.config.n_heads, blocks[0].ln1.eps)


@numba.njit(cache=True, nogil=True)
def _layer_norm(x, weight_and_bias, eps):
    centred = x - np.float32(x.mean())  # numba's mean of float32 is a float64: kept in float32, as torch computes
    return centred / np.float32(np.sqrt((centred * centred).mean() + eps)) * weight_and_bias[0] + weight_and_bias[1]


@numba.njit(cache=True, nogil=True)
def step_logits(token, position, keys, values, token_emb, pos_emb, ln1, qkv_w, qkv_b, proj_w, proj_b, ln2, fc_w,
                fc_b, out_w, out_b, ln_f, head, n_heads, eps):
    """The logits after `token` at `position` (V,), its keys and values written into the caches
    keys, values (L, H, P, d) at `position`, attending over positions 0..position (000 eq. 79-80)."""
    C = token_emb.shape[1]
    d = C // n_heads
    scale = np.float32(1.0 / math.sqrt(d))
    root_half = np.float32(1.0 / math.sqrt(2.0))
    x = token_emb[token] + pos_emb[position]  # (C,)
    y = np.empty(C, dtype=np.float32)
    for layer in range(qkv_w.shape[0]):
        qkv = qkv_w[layer] @ _layer_norm(x, ln1[layer], eps) + qkv_b[layer]  # (3C,)
        for h in range(n_heads):
            q = qkv[h * d:(h + 1) * d]
            keys[layer, h, position] = qkv[C + h * d:C + (h + 1) * d]
            values[layer, h, position] = qkv[2 * C + h * d:2 * C + (h + 1) * d]
            scores = keys[layer, h, :position + 1] @ q * scale  # (t,)
            weights = np.exp(scores - scores.max())
            y[h * d:(h + 1) * d] = (weights / weights.sum()) @ values[layer, h, :position + 1]
        x = x + proj_w[layer] @ y + proj_b[layer]
        hidden = fc_w[layer] @ _layer_norm(x, ln2[layer], eps) + fc_b[layer]  # (F,)
        for i in range(hidden.shape[0]):  # GELU, exact: x Φ(x)
            hidden[i] = np.float32(0.5) * hidden[i] * (np.float32(1.0) + np.float32(math.erf(hidden[i] * root_half)))
        x = x + out_w[layer] @ hidden + out_b[layer]
    return head @ _layer_norm(x, ln_f, eps)


@numba.njit(cache=True, nogil=True)
def choose(logits, temperature, top_k, uniform):
    """The token where `uniform` in [0, 1) falls in the cumulative distribution of softmax(logits / T) kept to
    the top_k logits (0: all); temperature 0 is the first largest logit."""
    if temperature == 0.0:
        return np.argmax(logits)
    z = (logits - logits.max()) / np.float32(temperature)
    if top_k > 0 and top_k < z.shape[0]:
        kth = np.sort(z)[z.shape[0] - top_k]
        z = np.where(z < kth, np.float32(-np.inf), z)
    cumulative = np.cumsum(np.exp(z.astype(np.float64)))
    return min(np.searchsorted(cumulative, uniform * cumulative[-1], side="right"), z.shape[0] - 1)


@numba.njit(cache=True, nogil=True)
def _sample(prompt, uniforms, temperature, top_k, token_emb, pos_emb, ln1, qkv_w, qkv_b, proj_w, proj_b, ln2,
            fc_w, fc_b, out_w, out_b, ln_f, head, n_heads, eps):
    n_new = uniforms.shape[0]
    length = prompt.shape[0] + n_new
    d = token_emb.shape[1] // n_heads
    keys = np.empty((qkv_w.shape[0], n_heads, length, d), dtype=np.float32)
    values = np.empty_like(keys)
    new = np.empty(n_new, dtype=np.int64)
    token = prompt[0]
    for position in range(length - 1):
        logits = step_logits(token, position, keys, values, token_emb, pos_emb, ln1, qkv_w, qkv_b, proj_w, proj_b,
                             ln2, fc_w, fc_b, out_w, out_b, ln_f, head, n_heads, eps)
        if position + 1 < prompt.shape[0]:
            token = prompt[position + 1]
        else:
            token = choose(logits, temperature, top_k, uniforms[position + 1 - prompt.shape[0]])
            new[position + 1 - prompt.shape[0]] = token
    return new


def sample(weights: Weights, prompt: list[int], n_new: int, temperature: float, top_k: int | None,
           seed: int) -> list[int]:
    """n_new token ids after `prompt` (ids), drawn as the module says; the GIL is free for the whole loop."""
    if not prompt:
        raise InputError("type a prompt: it is empty")
    if temperature < 0:
        raise InputError(f"the temperature must be 0 (greedy) or positive, got {temperature}")
    if top_k is not None and top_k < 1:
        raise InputError(f"top-k must be at least 1, got {top_k}")
    check_context(len(prompt), n_new, weights.pos_emb.shape[0])
    if n_new == 0:
        return []
    uniforms = np.random.default_rng(seed).random(n_new)  # (n_new,)
    new = _sample(np.asarray(prompt, dtype=np.int64), uniforms, float(temperature), top_k or 0, *weights.arrays(),
                  weights.n_heads, weights.eps)
    return new.tolist()
