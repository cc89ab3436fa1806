"""SmolLM2's tokenizer rebuilt from the GGUF's own vocabulary and merges with `tokenizers`: byte-level BPE
(GPT-2's byte-to-character map, so any UTF-8 text, emoji included, round-trips), digits split one by one
first (llama.cpp's "smollm" pre-tokenizer), and the control tokens matched whole as special tokens."""
from __future__ import annotations

from dataclasses import dataclass

from engine.llm.gguf_file import TokenizerSpec

DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"  # the GGUF's template


@dataclass(frozen=True)
class Token:
    id: int
    piece: str  # the vocabulary's byte-level string, "Ġthe"
    text: str  # what it decodes to on its own, " the"; a lone part of a multi-byte character shows as "�"


def visible(text: str) -> str:
    """A token's text as a label: spaces as ␣ and new lines as ⏎, so " the" and "the" stay apart."""
    return text.replace(" ", "␣").replace("\n", "⏎")


class SmolTokenizer:
    def __init__(self, spec: TokenizerSpec):
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

        vocab = {piece: i for i, piece in enumerate(spec.tokens)}
        merges = [tuple(merge.split(" ", 1)) for merge in spec.merges]
        bpe = Tokenizer(models.BPE(vocab=vocab, merges=merges))
        bpe.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ])
        bpe.decoder = decoders.ByteLevel()
        bpe.add_special_tokens([AddedToken(spec.tokens[i], special=True, normalized=False) for i in spec.special])
        self._bpe, self.spec = bpe, spec
        self.pieces = spec.tokens
        self.bos_id, self.eos_id = spec.bos_id, spec.eos_id
        self.special_ids = frozenset(spec.special)

    def encode(self, text: str) -> list[int]:
        return self._bpe.encode(text, add_special_tokens=False).ids

    def token_starts(self, text: str) -> list[int]:
        """The character offsets in text where its tokens begin, in order; the byte-level pieces of one
        character (an emoji's bytes can take several tokens) share its offset, listed once."""
        return sorted({start for start, _ in self._bpe.encode(text, add_special_tokens=False).offsets})

    def decode(self, ids: list[int], skip_special: bool = False) -> str:
        return self._bpe.decode(list(ids), skip_special_tokens=skip_special)

    def tokens(self, ids: list[int]) -> list[Token]:
        return [Token(i, self.pieces[i], self.decode([i])) for i in ids]

    def chat_prompt(self, user: str, system: str = DEFAULT_SYSTEM) -> str:
        """The GGUF's ChatML template for one user turn, ending where the assistant's answer begins."""
        return (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
                "<|im_start|>assistant\n")
