"""SmolLM2-135M-Instruct loaded once: our Llama with the file's weights, and its tokenizer."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.llm import files
from engine.llm.gguf_file import LlamaConfig, read_gguf
from engine.llm.model import Llama, from_gguf
from engine.llm.tokenizer import SmolTokenizer


@dataclass(frozen=True)
class SmolLM:
    model: Llama  # read-only after loading: sessions share it
    tokenizer: SmolTokenizer
    config: LlamaConfig
    path: Path


def load(path: Path | None = None) -> SmolLM:
    """The checked file (files.checked_path) read into our Llama: a missing or damaged file raises
    ModelFileError before a single weight is read, so there is never a half-loaded model."""
    path = path or files.checked_path()
    contents = read_gguf(path)
    return SmolLM(from_gguf(contents), SmolTokenizer(contents.tokenizer), contents.config, path)
