"""The TransformerLM of 000 §8.3 (eq. 64-83), with a KV cache (000 §8.5, 002 §2.5).

CausalSelfAttention, TransformerBlock and TransformerLM follow the notes' code; additions are
the cache, returning attention weights for the app, and a `causal` switch so the same stack
can be trained with the masked-LM objective of 001 §1.9.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from engine import checkpoint_files
from engine.attention.scoring import causal_mask
from engine.errors import InputError

# One (K, V) pair per layer, each (B, H, t, d): what a decoder keeps so a new token needs only its own q, k, v.
KVCache = list[tuple[torch.Tensor, torch.Tensor]]


@dataclass
class ModelConfig:
    vocab_size: int = 96
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int = 512  # 4 d_model, as in the notes' MLP
    max_seq_len: int = 512
    dropout: float = 0.0
    causal: bool = True  # False: a bidirectional encoder for the masked-LM objective


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        assert cfg.d_model % cfg.n_heads == 0
        self.n_heads = cfg.n_heads
        self.head_dim = cfg.d_model // cfg.n_heads
        self.causal = cfg.causal
        self.qkv = nn.Linear(cfg.d_model, 3 * cfg.d_model)  # one matmul for q, k, v (000 eq. 72-73)
        self.proj = nn.Linear(cfg.d_model, cfg.d_model)
        self.attn_dropout = nn.Dropout(cfg.dropout)
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """x (B, T, C) new tokens; cache holds K, V of earlier ones. Returns y, attention (B, H, T, t+T), cache."""
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)  # each (B, H, T, d)
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)  # (B, H, t + T, d)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, T, t + T)
        if self.causal and T > 1:  # one new token (a decoding step) may see every key
            att = att.masked_fill(~causal_mask(T, k.shape[2], x.device), float("-inf"))
        att = F.softmax(att.float(), dim=-1)
        y = (self.attn_dropout(att) if self.training else att) @ v  # (B, H, T, d)
        y = self.proj(y.transpose(1, 2).reshape(B, T, C))  # (B, T, C)
        return (self.resid_dropout(y) if self.training else y), att, (k, v)


class TransformerBlock(nn.Module):
    """Pre-LayerNorm block: x + attn(ln1(x)), then x + mlp(ln2(x)) (000 §8.3.3)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.d_model)
        self.attn = CausalSelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.d_model)
        self.mlp = nn.Sequential(nn.Linear(cfg.d_model, cfg.d_ff), nn.GELU(), nn.Dropout(cfg.dropout),
                                 nn.Linear(cfg.d_ff, cfg.d_model), nn.Dropout(cfg.dropout))

    def forward(self, x: torch.Tensor, cache=None):
        a, att, cache = self.attn(self.ln1(x), cache)
        x = x + a
        return x + self.mlp(self.ln2(x)), att, cache


@dataclass
class LMOutput:
    logits: torch.Tensor  # (B, T, vocab)
    loss: torch.Tensor | None
    attentions: list[torch.Tensor]  # per layer (B, H, T, t + T)
    cache: KVCache
    hidden: torch.Tensor  # (B, T, C) after the final LayerNorm: h_n of 003 eq. 66-67


class TransformerLM(nn.Module):
    """Token plus learned position embeddings, n blocks, final LayerNorm, LM head (000 §8.3.4)."""

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.config = cfg
        self.token_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_seq_len, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([TransformerBlock(cfg) for _ in range(cfg.n_layers)])
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("attn.proj.weight") or name.endswith("mlp.3.weight"):
                # GPT-2's scaled init: each residual branch adds to the stream, so shrink it by sqrt(2 n_layers)
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layers))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        """nanoGPT's initialisation: N(0, 0.02) weights and zero biases."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None, cache: KVCache | None = None
                ) -> LMOutput:
        """idx (B, T) new tokens after the len(cache) already seen; targets (B, T) with -100 where ignored."""
        B, T = idx.shape
        past = cache[0][0].shape[2] if cache else 0
        if past + T > self.config.max_seq_len:
            raise InputError(f"{past + T} tokens exceed the context window of {self.config.max_seq_len}")
        pos = torch.arange(past, past + T, device=idx.device).unsqueeze(0)  # (1, T), eq. 83 shifted by the cache
        x = self.drop(self.token_emb(idx) + self.pos_emb(pos))
        attentions, new_cache = [], []
        for i, block in enumerate(self.blocks):
            x, att, layer_cache = block(x, cache[i] if cache else None)
            attentions.append(att)
            new_cache.append(layer_cache)
        hidden = self.ln_f(x)
        logits = self.lm_head(hidden)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.reshape(-1), ignore_index=-100)
        return LMOutput(logits, loss, attentions, new_cache, hidden)


def sampling_distribution(logits: torch.Tensor, temperature: float, top_k: int | None = None,
                          top_p: float | None = None) -> torch.Tensor:
    """softmax(logits / T) kept to the top k, then to the nucleus: the fewest most likely tokens whose
    probabilities reach top_p (Holtzman et al.), renormalised: logits (B, V) -> probabilities (B, V).
    The order of the filters is transformers' (temperature, top-k, top-p). T > 0."""
    if temperature <= 0:
        raise InputError(f"the temperature must be positive to sample, got {temperature}")
    logits = logits.float()
    # shifted by the maximum first (softmax does not change): a tiny T then sends the rest to -inf, not every
    # logit to ±inf, whose softmax is NaN; T = 1e-45 from a URL is a greedy pick, not a crash
    logits = (logits - logits.amax(dim=-1, keepdim=True)) / temperature
    if top_k is not None:
        if top_k < 1:
            raise InputError(f"top-k must be at least 1, got {top_k}")
        kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        if not 0 < top_p <= 1:
            raise InputError(f"top-p must be in (0, 1], got {top_p}")
        logits = logits.masked_fill(outside_nucleus(F.softmax(logits, dim=-1), top_p), float("-inf"))
    return F.softmax(logits, dim=-1)


NUCLEUS_FIRST = 512  # the most likely tokens ranked first, in case the nucleus lies among them


def outside_nucleus(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """(B, V) True where a token is not in the nucleus: its `before`, the mass of the tokens ranked above it, is
    top_p or more (so the top token always stays). Ranking all 49,152 of SmolLM2's tokens takes 4 ms a row; the
    nucleus almost always lies among the first few hundred, so those are ranked first (topk) and the whole row
    only when their mass falls short. The margin keeps float rounding in the sum of the rest from mattering."""
    k = min(NUCLEUS_FIRST, probs.size(-1))
    top, order = torch.topk(probs, k, dim=-1)  # (B, k), largest first
    before = torch.cumsum(top, dim=-1) - top
    if k == probs.size(-1) or bool((before[:, -1] + top[:, -1] >= top_p + 1e-6).all()):
        return torch.ones_like(probs, dtype=torch.bool).scatter(-1, order, before >= top_p)
    ranked, order = torch.sort(probs, dim=-1, descending=True)  # (B, V)
    before = torch.cumsum(ranked, dim=-1) - ranked
    return torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, before >= top_p)


def draw_next(logits: torch.Tensor, temperature: float, top_k: int | None,
              generator: torch.Generator | list[torch.Generator] | None,
              top_p: float | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """A token (B, 1) drawn from sampling_distribution, and that distribution (B, V); greedy at temperature 0,
    the distribution then softmax(logits). `generator` is one for all rows, or one per row (inverse_cdf).

    One uniform number per row from the generator, and the token where it falls in the cumulative distribution
    (inverse CDF), as engine/transformer/sampler.py draws: torch.multinomial scans a 49,152-word row in 1 ms, ten
    times this (the random numbers differ, so a seed gives other tokens than it). The draw realises each
    probability to within about 2^-24, not exactly: the cumulative sum is float32 and torch.rand's float32
    uniforms hold 24 random bits, so a token much less likely than that may never come."""
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True), F.softmax(logits.float(), dim=-1)
    distribution = sampling_distribution(logits, temperature, top_k, top_p)
    return inverse_cdf(distribution, generator), distribution


def inverse_cdf(distribution: torch.Tensor, generator: torch.Generator | list[torch.Generator] | None
                ) -> torch.Tensor:
    """(B, V) -> (B, 1): for each row one uniform number u from the generator (or from the row's own, given one
    per row), times the row's total, and the first token whose cumulative probability passes u (so never one of
    probability 0)."""
    cdf = torch.cumsum(distribution, dim=-1)  # (B, V)
    if isinstance(generator, list):
        uniform = torch.cat([torch.rand(1, 1, generator=g) for g in generator])  # (B, 1)
    else:
        uniform = torch.rand(cdf.shape[0], 1, generator=generator)
    uniform = uniform * cdf[:, -1:]  # below the row's total
    token = torch.searchsorted(cdf, uniform, right=True)
    if bool((token == distribution.size(-1)).any()) or not bool(distribution.gather(-1, token).all()):
        # u within float rounding of the total fell past the end: the row's last token of nonzero probability
        last = distribution.size(-1) - 1 - torch.argmax((distribution.flip(-1) > 0).to(torch.int8), dim=-1,
                                                        keepdim=True)
        token = torch.minimum(token, last)
    return token


def sample_next(logits: torch.Tensor, temperature: float, top_k: int | None, generator: torch.Generator | None,
                top_p: float | None = None) -> torch.Tensor:
    """Sample from sampling_distribution: logits (B, V) -> (B, 1). T = 0 is greedy."""
    if temperature < 0:
        raise InputError(f"the temperature must be 0 (greedy) or positive, got {temperature}")
    if temperature == 0:
        return logits.argmax(dim=-1, keepdim=True)
    return torch.multinomial(sampling_distribution(logits, temperature, top_k, top_p), 1, generator=generator)


def check_context(prompt_length: int, n_new: int, max_seq_len: int) -> None:
    """A prompt and the tokens to add must fit the model's position embeddings."""
    if prompt_length + n_new > max_seq_len:
        raise InputError(f"prompt plus new tokens ({prompt_length} + {n_new}) exceed the context window of "
                         f"{max_seq_len}")


@torch.inference_mode()
def generate(model: TransformerLM, idx: torch.Tensor, max_new_tokens: int, temperature: float = 1.0,
             top_k: int | None = None, use_cache: bool = True, seed: int = 0) -> torch.Tensor:
    """Extend idx (B, T0) by max_new_tokens (000 §8.3.4's generate). With the cache each step feeds one token;
    without it each step reruns the whole prefix. The same seed gives the same tokens either way."""
    check_context(idx.shape[1], max_new_tokens, model.config.max_seq_len)
    model.eval()
    generator = torch.Generator().manual_seed(seed)
    out = model(idx)
    for _ in range(max_new_tokens):
        next_id = sample_next(out.logits[:, -1, :], temperature, top_k, generator)
        idx = torch.cat([idx, next_id], dim=1)
        out = model(next_id, cache=out.cache) if use_cache else model(idx)
    return idx


def save_checkpoint(model: TransformerLM, path, **extra) -> None:
    """Weights, config and plain-data extras, loadable with torch.load(weights_only=True)."""
    checkpoint_files.save({"config": asdict(model.config), "state_dict": model.state_dict(), **extra}, path)


def load_checkpoint(path) -> tuple[TransformerLM, dict]:
    data = checkpoint_files.load(path)
    model = TransformerLM(ModelConfig(**data.pop("config")))
    model.load_state_dict(data.pop("state_dict"))
    return model.eval(), data


@torch.no_grad()
def attention_maps(model: TransformerLM, idx: torch.Tensor) -> list[torch.Tensor]:
    """Every layer's attention for one sequence idx (T,): a list of (H, T, T), rows summing to 1."""
    model.eval()
    return [att[0] for att in model(idx[None]).attentions]


def head_attention(model: TransformerLM, idx: torch.Tensor, layer: int, head: int) -> torch.Tensor:
    """One head's attention over one sequence idx (T,), layer and head counted from 1: (T, T), rows summing to 1
    (000 eq. 79-80, causal)."""
    return attention_maps(model, idx)[layer - 1][head - 1]
