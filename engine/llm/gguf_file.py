"""Read a Llama GGUF file: its hyperparameters, its tokenizer's vocabulary and merges, and its weights
dequantized to float32 by the `gguf` package (Q4_1: blocks of 32 weights sharing a scale and a minimum).

GGUF names weights as llama.cpp does (blk.3.attn_q.weight) and stores q and k rows permuted so that RoPE
rotates neighbouring dimensions (2i, 2i+1): the interleaved layout of 000 §8.6, not rotate_half's."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from engine.checkpoint_files import ModelFileError

SPECIAL_TOKEN_TYPE = 3  # llama.cpp's CONTROL tokens: <|im_start|>, <|im_end|>, <|endoftext|>, ...


@dataclass(frozen=True)
class LlamaConfig:
    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    n_kv_heads: int  # GQA: each key-value head serves n_heads / n_kv_heads query heads
    d_ff: int
    context_length: int
    rope_base: float
    norm_eps: float

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def cache_per_token(self) -> int:
        """Numbers the KV cache holds per token: K and V of every key-value head in every layer."""
        return 2 * self.n_layers * self.n_kv_heads * self.head_dim


@dataclass(frozen=True)
class TokenizerSpec:
    tokens: list[str]  # byte-level strings: "Ġthe" is " the"
    special: list[int]  # ids whose token is matched whole, never split
    merges: list[str]  # "Ġ t" in order of priority
    bos_id: int
    eos_id: int
    chat_template: str


@dataclass(frozen=True)
class GGUFContents:
    config: LlamaConfig
    tokenizer: TokenizerSpec
    weights: dict[str, torch.Tensor]  # float32, (out, in) as nn.Linear holds them


def _value(reader, key: str):
    field = reader.fields.get(key)
    if field is None:
        raise ModelFileError(f"the GGUF file has no {key}: it is not a Llama model this app can read")
    return field.contents()


def read_gguf(path: Path) -> GGUFContents:
    import gguf  # imported here: pages that never open the model do not pay for it

    reader = gguf.GGUFReader(path)
    if _value(reader, "general.architecture") != "llama":
        raise ModelFileError(f"{path.name} holds a {_value(reader, 'general.architecture')} model, not llama")
    config = LlamaConfig(
        vocab_size=len(reader.fields["tokenizer.ggml.tokens"].data),
        d_model=int(_value(reader, "llama.embedding_length")),
        n_layers=int(_value(reader, "llama.block_count")),
        n_heads=int(_value(reader, "llama.attention.head_count")),
        n_kv_heads=int(_value(reader, "llama.attention.head_count_kv")),
        d_ff=int(_value(reader, "llama.feed_forward_length")),
        context_length=int(_value(reader, "llama.context_length")),
        rope_base=float(_value(reader, "llama.rope.freq_base")),
        norm_eps=float(_value(reader, "llama.attention.layer_norm_rms_epsilon")),
    )
    token_types = _value(reader, "tokenizer.ggml.token_type")
    tokenizer = TokenizerSpec(
        tokens=list(_value(reader, "tokenizer.ggml.tokens")),
        special=[i for i, kind in enumerate(token_types) if kind == SPECIAL_TOKEN_TYPE],
        merges=list(_value(reader, "tokenizer.ggml.merges")),
        bos_id=int(_value(reader, "tokenizer.ggml.bos_token_id")),
        eos_id=int(_value(reader, "tokenizer.ggml.eos_token_id")),
        chat_template=str(_value(reader, "tokenizer.chat_template")),
    )
    # np.array copies: float32 tensors come back as views of the memory-mapped file, which must not stay open
    weights = {tensor.name: torch.from_numpy(np.array(gguf.quants.dequantize(tensor.data, tensor.tensor_type),
                                                      dtype=np.float32))
               for tensor in reader.tensors}
    return GGUFContents(config, tokenizer, weights)
