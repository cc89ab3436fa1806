"""KV-cache sizes of real models from their published configurations.

Per token and layer a model with KV heads caches 2 * kv_heads * head_dim numbers (K and V);
an MLA model caches its latent plus the shared RoPE key, d_c + d_h^R (000 §8.5.1, §8.7).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from engine.errors import InputError

DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp8": 1}


@dataclass(frozen=True)
class CacheConfig:
    name: str
    layers: int
    heads: int  # query heads
    kv_heads: int  # heads with their own K and V; 0 for MLA
    head_dim: int
    latent_dim: int = 0  # MLA's d_c
    rope_dim: int = 0  # MLA's decoupled RoPE key d_h^R

    def __post_init__(self):
        if self.layers < 1 or self.heads < 1 or self.head_dim < 1:
            raise InputError(f"{self.name}: layers, heads and head dimension must be at least 1")
        if self.latent_dim == 0 and (self.kv_heads < 1 or self.heads % self.kv_heads):
            raise InputError(f"{self.name}: {self.kv_heads} KV heads must be at least 1 and divide {self.heads} heads")

    @property
    def attention(self) -> str:
        if self.latent_dim:
            return "MLA"
        return "MHA" if self.kv_heads == self.heads else "MQA" if self.kv_heads == 1 else "GQA"

    def elements_per_token_layer(self) -> int:
        if self.latent_dim:
            return self.latent_dim + self.rope_dim
        return 2 * self.kv_heads * self.head_dim

    def elements_per_token(self) -> int:
        return self.layers * self.elements_per_token_layer()

    def bytes_per_token(self, dtype: str) -> int:
        return self.elements_per_token() * DTYPE_BYTES[dtype]

    def total_bytes(self, context: int, batch: int, dtype: str) -> int:
        return self.bytes_per_token(dtype) * context * batch


# Published configurations (config.json of each release; the DeepSeek-V2 and V3 papers for MLA).
MODELS = (
    CacheConfig("GPT-2 small", layers=12, heads=12, kv_heads=12, head_dim=64),
    CacheConfig("Llama-2-7B", layers=32, heads=32, kv_heads=32, head_dim=128),
    CacheConfig("Llama-2-70B", layers=80, heads=64, kv_heads=8, head_dim=128),
    CacheConfig("Llama-3-8B", layers=32, heads=32, kv_heads=8, head_dim=128),
    CacheConfig("Llama-3-70B", layers=80, heads=64, kv_heads=8, head_dim=128),
    CacheConfig("Mistral-7B", layers=32, heads=32, kv_heads=8, head_dim=128),
    CacheConfig("Falcon-7B", layers=32, heads=71, kv_heads=1, head_dim=64),
    CacheConfig("SmolLM2-135M", layers=30, heads=9, kv_heads=3, head_dim=64),
    CacheConfig("DeepSeek-V2", layers=60, heads=128, kv_heads=0, head_dim=128, latent_dim=512, rope_dim=64),
    CacheConfig("DeepSeek-V3", layers=61, heads=128, kv_heads=0, head_dim=128, latent_dim=512, rope_dim=64),
)
BY_NAME = {m.name: m for m in MODELS}

# DeepSeek-V2 (arXiv 2405.04434) reports a KV cache 93.3% smaller than DeepSeek 67B's, its dense predecessor,
# not than itself with MHA; and it stores its cache at about 6 bits a number where 67B used 16.
DEEPSEEK_V2_REPORTED_REDUCTION = 0.933
DEEPSEEK_67B = CacheConfig("DeepSeek 67B", layers=95, heads=64, kv_heads=8, head_dim=128)
DEEPSEEK_V2_CACHE_BITS = 6


def with_mha(model: CacheConfig) -> CacheConfig:
    """The same layers and heads, caching full K and V for every head."""
    return CacheConfig(f"{model.name} with MHA", model.layers, model.heads, model.heads, model.head_dim)


def deepseek_v2_reductions() -> dict[str, float]:
    """DeepSeek-V2's cache per token against three baselines, as fractions saved."""
    v2 = BY_NAME["DeepSeek-V2"]
    v2_elements = v2.layers * v2.elements_per_token_layer()

    def saved(elements: float, baseline: CacheConfig, bits: float = 16, baseline_bits: float = 16) -> float:
        return 1 - elements * bits / (baseline.layers * baseline.elements_per_token_layer() * baseline_bits)

    return {
        "against itself with MHA, same precision": saved(v2_elements, with_mha(v2)),
        "against DeepSeek 67B, same precision": saved(v2_elements, DEEPSEEK_67B),
        f"against DeepSeek 67B, V2's cache at {DEEPSEEK_V2_CACHE_BITS} bits": saved(
            v2_elements, DEEPSEEK_67B, bits=DEEPSEEK_V2_CACHE_BITS),
    }


def published(name: str) -> CacheConfig:
    """A published model's configuration by its name in MODELS."""
    return BY_NAME[name]


def with_published(yours: CacheConfig) -> list[CacheConfig]:
    """A configuration of one's own first, then every published one (MODELS): the rows the page compares."""
    return [yours, *MODELS]


def cache_bytes(models: Sequence[CacheConfig], context: int, batch: int, dtype: str) -> tuple[list[int], list[int]]:
    """Each model's cache in bytes: per token (layers × numbers per token and layer × bytes per number), and in
    total for `context` tokens of `batch` sequences."""
    return [m.bytes_per_token(dtype) for m in models], [m.total_bytes(context, batch, dtype) for m in models]


def coinciding(models: Sequence[CacheConfig]) -> list[list[CacheConfig]]:
    """Models grouped by cache per token, in the order given: within a group the totals are equal at every
    context, batch and number format, so the group is one line on a chart."""
    groups: dict[int, list[CacheConfig]] = {}
    for model in models:
        groups.setdefault(model.elements_per_token(), []).append(model)
    return list(groups.values())


def nearly_coinciding(groups: Sequence[Sequence[CacheConfig]], within: float = 0.05
                      ) -> list[tuple[CacheConfig, CacheConfig, float]]:
    """Neighbours in size whose caches per token differ by less than `within` (a fraction of the larger):
    on a log axis their lines almost touch. Each as (smaller, larger, relative difference)."""
    ordered = sorted((group[0] for group in groups), key=CacheConfig.elements_per_token)
    pairs = []
    for small, large in pairwise(ordered):
        gap = 1 - small.elements_per_token() / large.elements_per_token()
        if gap < within:
            pairs.append((small, large, gap))
    return pairs
