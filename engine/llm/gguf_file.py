"""Read a Llama GGUF file: its hyperparameters, its tokenizer's vocabulary and merges, and its weights
dequantized to float32 (Q4_1: blocks of 32 weights sharing a scale and a minimum), bit for bit as the `gguf`
package reads them, in a seventh of its time (1.1 s against 8 s for SmolLM2 here).

GGUF names weights as llama.cpp does (blk.3.attn_q.weight) and stores q and k rows permuted so that RoPE
rotates neighbouring dimensions (2i, 2i+1): the interleaved layout of 000 §8.6, not rotate_half's."""
from __future__ import annotations

import math
import struct
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


# GGUF's metadata value types (the ggml/docs/gguf.md table): scalars by struct format (numpy reads the same
# strings as dtypes), then string and array
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_ALIGNMENT = 32  # where the tensor data begins, unless general.alignment says otherwise


class _Cursor:
    """Reads GGUF's little-endian header fields one after another from the file's bytes."""

    def __init__(self, data: np.ndarray):
        self.data, self.at = data, 0

    def scalar(self, fmt: str):
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        length = self.scalar("<Q")
        self.at += length
        return self.data[self.at - length:self.at].tobytes().decode("utf-8")

    def value(self, kind: int):
        if kind == _STRING:
            return self.string()
        if kind != _ARRAY:
            return self.scalar(_SCALARS[kind])
        item, count = self.scalar("<I"), self.scalar("<Q")
        if item in _SCALARS:  # 49,152 token types: one numpy read, not 49,152 struct calls
            values = np.frombuffer(self.data, np.dtype(_SCALARS[item]), count, self.at)
            self.at += values.nbytes
            return values.tolist()
        return [self.value(item) for _ in range(count)]


@dataclass(frozen=True)
class _TensorInfo:
    name: str
    shape: tuple[int, ...]  # ggml's order, innermost (a row's length) first
    kind: int  # ggml's type: 0 F32, 1 F16, 3 Q4_1, 8 Q8_0, ...
    offset: int  # from the start of the tensor data


def _parse(data: np.ndarray) -> tuple[dict, list[_TensorInfo], int]:
    """The metadata, the tensors' descriptions, and where their data begins (ggml/docs/gguf.md, versions 2 and 3).
    gguf.GGUFReader reads the same, but makes a numpy view of every string (a tokenizer's 100,000): 5 s here,
    holding the interpreter for every other session of a server, against a tenth of a second."""
    cursor = _Cursor(data)
    if data[:4].tobytes() != b"GGUF":
        raise ModelFileError("the file is not a GGUF file")
    version = cursor.scalar("<4xI")
    if version not in (2, 3):
        raise ModelFileError(f"GGUF version {version} is not one this app reads (2 or 3)")
    n_tensors, n_fields = cursor.scalar("<Q"), cursor.scalar("<Q")
    fields = {}
    for _ in range(n_fields):
        key = cursor.string()
        fields[key] = cursor.value(cursor.scalar("<I"))
    tensors = []
    for _ in range(n_tensors):
        name = cursor.string()
        shape = tuple(cursor.scalar("<Q") for _ in range(cursor.scalar("<I")))
        tensors.append(_TensorInfo(name, shape, cursor.scalar("<I"), cursor.scalar("<Q")))
    alignment = fields.get("general.alignment", _ALIGNMENT)
    return fields, tensors, -(-cursor.at // alignment) * alignment


def _value(fields: dict, key: str):
    if key not in fields:
        raise ModelFileError(f"the GGUF file has no {key}: it is not a Llama model this app can read")
    return fields[key]


def _dequantized(raw: torch.Tensor, begin: int, tensor: _TensorInfo) -> torch.Tensor:
    """A tensor's bytes, from `begin` in the file, as float32 in torch's order (outermost first). Q4_1 blocks hold
    32 weights as (d, m: float16; 16 bytes of 4-bit q, low nibbles first) with w = d·q + m; Q8_0 blocks
    (d: float16; 32 int8 q) with w = d·q. The same float32 operations as gguf.quants, so the same bits
    (tests/unit/test_llm.py), a few times faster than its numpy."""
    import gguf  # imported here: pages that never open the model do not pay for it

    kind = gguf.GGMLQuantizationType(tensor.kind)
    block, block_bytes = gguf.GGML_QUANT_SIZES[kind]
    blocks = raw[begin:begin + math.prod(tensor.shape) // block * block_bytes].view(-1, block_bytes)  # uint8
    if kind == gguf.GGMLQuantizationType.F32:
        weights = blocks.view(torch.float32).clone()
    elif kind == gguf.GGMLQuantizationType.F16:
        weights = blocks.view(torch.float16).float()
    elif kind == gguf.GGMLQuantizationType.Q4_1:
        scale, low = blocks[:, 0:2].contiguous().view(torch.float16).float(), blocks[:, 2:4].contiguous()
        quants = torch.cat((blocks[:, 4:] & 0x0F, blocks[:, 4:] >> 4), dim=1).float()  # (n_blocks, 32)
        weights = quants * scale + low.view(torch.float16).float()
    elif kind == gguf.GGMLQuantizationType.Q8_0:
        scale = blocks[:, 0:2].contiguous().view(torch.float16).float()
        weights = blocks[:, 2:].contiguous().view(torch.int8).float() * scale
    else:  # the types SmolLM2's file does not use
        weights = torch.from_numpy(gguf.quants.dequantize(blocks.numpy(), kind).copy())
    return weights.reshape(tensor.shape[::-1])


def read_gguf(path: Path) -> GGUFContents:
    data = np.fromfile(path, dtype=np.uint8)  # read once; nothing stays mapped to the file
    try:
        fields, tensors, start = _parse(data)
    except (struct.error, UnicodeDecodeError, KeyError, ValueError) as error:
        raise ModelFileError(f"{path.name} is not a readable GGUF file ({error})") from error
    if _value(fields, "general.architecture") != "llama":
        raise ModelFileError(f"{path.name} holds a {_value(fields, 'general.architecture')} model, not llama")
    config = LlamaConfig(
        vocab_size=len(_value(fields, "tokenizer.ggml.tokens")),
        d_model=int(_value(fields, "llama.embedding_length")),
        n_layers=int(_value(fields, "llama.block_count")),
        n_heads=int(_value(fields, "llama.attention.head_count")),
        n_kv_heads=int(_value(fields, "llama.attention.head_count_kv")),
        d_ff=int(_value(fields, "llama.feed_forward_length")),
        context_length=int(_value(fields, "llama.context_length")),
        rope_base=float(_value(fields, "llama.rope.freq_base")),
        norm_eps=float(_value(fields, "llama.attention.layer_norm_rms_epsilon")),
    )
    token_types = _value(fields, "tokenizer.ggml.token_type")
    tokenizer = TokenizerSpec(
        tokens=list(_value(fields, "tokenizer.ggml.tokens")),
        special=[i for i, kind in enumerate(token_types) if kind == SPECIAL_TOKEN_TYPE],
        merges=list(_value(fields, "tokenizer.ggml.merges")),
        bos_id=int(_value(fields, "tokenizer.ggml.bos_token_id")),
        eos_id=int(_value(fields, "tokenizer.ggml.eos_token_id")),
        chat_template=str(_value(fields, "tokenizer.chat_template")),
    )
    raw = torch.from_numpy(data)
    weights = {tensor.name: _dequantized(raw, start + tensor.offset, tensor) for tensor in tensors}
    return GGUFContents(config, tokenizer, weights)
