"""A Llama decoder (SmolLM2-135M) in the manner of transformers' modeling_llama, written with the engine's own
pieces: RoPE from engine.positions.rope, grouped-query attention from engine.transformer.variants and the
engine's KV cache layout (one (K, V) per layer).

Per block (000 §8.3.3 with Llama's choices): x + attention(RMSNorm(x)), then x + SwiGLU(RMSNorm(x)); a final
RMSNorm and the tied embedding as the unembedding. RoPE's base and pairing are arguments of forward, so a
page can run the same weights with the wrong ones and show what they cost.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from engine.errors import InputError
from engine.llm.gguf_file import GGUFContents, LlamaConfig
from engine.positions.rope import rope_cos_sin, rotate_pairs
from engine.transformer.model import KVCache
from engine.transformer.variants import causal_attention_weights

GGUF_PAIRING = "interleaved"  # llama.cpp's converter permutes q and k rows so that RoPE rotates (2i, 2i+1)


class RMSNorm(nn.Module):
    """x / sqrt(mean(x²) + eps) * g: LayerNorm without the mean and the bias."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(dim)), eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


@dataclass
class Rope:
    """The cos and sin of every new position, shared by all layers of one forward pass."""
    cos: torch.Tensor  # (T, d/2)
    sin: torch.Tensor
    pairing: str

    def __call__(self, x: torch.Tensor) -> torch.Tensor:  # (B, heads, T, d)
        return rotate_pairs(x, self.cos, self.sin, self.pairing)


@dataclass
class Capture:
    """What forward keeps for the page besides logits; each list has one entry per layer when asked for."""
    attentions: bool = False  # (B, H, T, t) weights of every head
    residuals: bool = False  # (B, T, C) the residual stream after each block: the logit lens reads it
    qk_layer: int | None = None  # one layer's q and k before and after RoPE: the neuron view reads them
    attention: list[torch.Tensor] = field(default_factory=list)
    residual: list[torch.Tensor] = field(default_factory=list)
    qk: dict[str, torch.Tensor] = field(default_factory=dict)  # q, k (B, H or g, t, d) and q_rot, k_rot


class LlamaAttention(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        self.W_q = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, bias=False)
        self.W_k = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, bias=False)
        self.W_v = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, bias=False)
        self.W_o = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor, rope: Rope, cache, capture: Capture | None, layer: int):
        """cache: None, this layer's (K, V) (B, g, t, d), or a batch's view with attend(q, k, v) (batching.py)."""
        B, T, C = x.shape
        q = self.W_q(x).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)
        k = self.W_k(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)  # (B, g, T, d)
        v = self.W_v(x).view(B, T, self.n_kv_heads, self.head_dim).transpose(1, 2)
        q_rot, k_rot = rope(q), rope(k)
        if hasattr(cache, "attend"):  # a batch of sequences, each attending over its own cache (llm/batching.py)
            y = cache.attend(q_rot, k_rot, v)  # (B, H, 1, d)
            return self.W_o(y.transpose(1, 2).reshape(B, T, C)), cache
        if cache is not None:
            k_rot, v = torch.cat([cache[0], k_rot], dim=2), torch.cat([cache[1], v], dim=2)  # (B, g, t, d)
        weights = causal_attention_weights(q_rot, k_rot)  # (B, H, T, t)
        t = k_rot.shape[2]
        y = (weights.view(B, self.n_kv_heads, -1, t) @ v).view(B, self.n_heads, T, self.head_dim)
        if capture is not None:
            if capture.attentions:
                capture.attention.append(weights)
            if capture.qk_layer == layer:
                capture.qk.update(q=q, k=k, q_rot=q_rot, k_rot=k_rot)
        return self.W_o(y.transpose(1, 2).reshape(B, T, C)), (k_rot, v)


class SwiGLU(nn.Module):
    """W_down (silu(W_gate x) * W_up x)."""

    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.W_gate = nn.Linear(cfg.d_model, cfg.d_ff, bias=False)
        self.W_up = nn.Linear(cfg.d_model, cfg.d_ff, bias=False)
        self.W_down = nn.Linear(cfg.d_ff, cfg.d_model, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.W_down(F.silu(self.W_gate(x)) * self.W_up(x))


class LlamaBlock(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.attn_norm, self.attn = RMSNorm(cfg.d_model, cfg.norm_eps), LlamaAttention(cfg)
        self.mlp_norm, self.mlp = RMSNorm(cfg.d_model, cfg.norm_eps), SwiGLU(cfg)

    def forward(self, x, rope, cache, capture, layer):
        a, cache = self.attn(self.attn_norm(x), rope, cache, capture, layer)
        x = x + a
        return x + self.mlp(self.mlp_norm(x)), cache


@dataclass
class LlamaOutput:
    logits: torch.Tensor  # (B, T, V), or (B, 1, V) for the last position only
    cache: KVCache  # per layer (K, V), each (B, g, t, d); K after RoPE, as llama.cpp and transformers keep it
    capture: Capture | None


class Llama(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.config = cfg
        # given its weight, Embedding skips its random init, which on the meta device imports torch._dynamo
        self.embed = nn.Embedding(cfg.vocab_size, cfg.d_model, _weight=torch.empty(cfg.vocab_size, cfg.d_model))
        self.blocks = nn.ModuleList([LlamaBlock(cfg) for _ in range(cfg.n_layers)])
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)

    def unembed(self, residual: torch.Tensor) -> torch.Tensor:
        """Logits from a residual stream (..., C): the final RMSNorm, then the tied embedding's transpose."""
        return self.norm(residual) @ self.embed.weight.T

    def forward(self, idx: torch.Tensor, cache: KVCache | None = None, *, last_only: bool = False,
                n_blocks: int | None = None, rope_base: float | None = None, pairing: str = GGUF_PAIRING,
                capture: Capture | None = None, ends: torch.Tensor | None = None) -> LlamaOutput:
        """idx (B, T) new tokens after the t already in the cache. last_only computes the logits of the last
        position alone: a 49,152-word unembedding per prompt token is a fifth of the work otherwise. ends (B,)
        does so for prompts of different lengths padded on the right, each row's at its last real token (causal
        attention keeps the padding after it out of its sight). n_blocks runs the first n blocks alone, for the
        views that read one layer; the logits are then the logit lens's, from the residual stream after block n."""
        if n_blocks is not None and not 1 <= n_blocks <= self.config.n_layers:
            raise InputError(f"SmolLM2 has blocks 1-{self.config.n_layers}, not {n_blocks}")
        B, T = idx.shape
        past = cache[0][0].shape[2] if cache else 0
        if past + T > self.config.context_length:
            raise InputError(f"{past + T} tokens exceed SmolLM2's context of {self.config.context_length}")
        positions = torch.arange(past, past + T)
        cos, sin = rope_cos_sin(positions, self.config.head_dim, rope_base or self.config.rope_base)
        rope = Rope(cos, sin, pairing)
        x = self.embed(idx)  # (B, T, C); no position embedding: RoPE carries position inside attention
        new_cache = []
        for layer, block in enumerate(self.blocks[:n_blocks]):
            x, layer_cache = block(x, rope, cache[layer] if cache else None, capture, layer)
            new_cache.append(layer_cache)
            if capture is not None and capture.residuals:
                capture.residual.append(x)
        if ends is not None:
            x = x[torch.arange(B), ends][:, None]  # (B, 1, C)
        logits = self.unembed(x[:, -1:] if last_only else x)
        return LlamaOutput(logits, new_cache, capture)


# llama.cpp's tensor names for our parameters (blk.{i} prefixed for the blocks)
GGUF_NAMES = {"embed.weight": "token_embd.weight", "norm.weight": "output_norm.weight"}
BLOCK_NAMES = {"attn_norm.weight": "attn_norm.weight", "attn.W_q.weight": "attn_q.weight",
               "attn.W_k.weight": "attn_k.weight", "attn.W_v.weight": "attn_v.weight",
               "attn.W_o.weight": "attn_output.weight", "mlp_norm.weight": "ffn_norm.weight",
               "mlp.W_gate.weight": "ffn_gate.weight", "mlp.W_up.weight": "ffn_up.weight",
               "mlp.W_down.weight": "ffn_down.weight"}


def from_gguf(contents: GGUFContents) -> Llama:
    """Our Llama holding the file's weights; every parameter must be found with its shape."""
    cfg = contents.config
    with torch.device("meta"):
        model = Llama(cfg)  # no memory until the weights are assigned
    names = dict(GGUF_NAMES)
    for i in range(cfg.n_layers):
        names.update({f"blocks.{i}.{ours}": f"blk.{i}.{theirs}" for ours, theirs in BLOCK_NAMES.items()})
    state = {ours: contents.weights[theirs] for ours, theirs in names.items()}
    model.load_state_dict(state, assign=True, strict=True)
    return model.eval().requires_grad_(False)
