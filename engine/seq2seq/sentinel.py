"""The pointer sentinel mixture model (000 §7.2.4 eq. 53; Merity, Xiong, Bradbury and Socher, 2016).

Not a seq2seq model: a word-level LSTM language model predicting w_N from w_1..w_{N-1}, as the notes
stress. After reading w_t the LSTM's state h_t gives two distributions over the next word:
- p_vocab = softmax(E h_t + b), the usual softmax over the vocabulary (tied input/output embeddings E);
- a pointer over the last L words: the query q = tanh(W h_t + b_q) scores each window state, z_i = q·h_i,
  and a learned sentinel s scores q·s; one softmax over [z; q·s] gives a.
The sentinel's share is the gate, g = a_sentinel, and the pointer's distribution is the window's
share renormalised, p_ptr(w) = Σ_{i ∈ window, w_i = w} a_i / (1 − g). Eq. 53 mixes them:
p(w) = g p_vocab(w) + (1 − g) p_ptr(w). The pointer copies words by identity, so a word outside the
vocabulary (read as <unk> by the LSTM) can still be predicted when it occurred in the window.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from engine.errors import InputError
from engine.seq2seq.checkpoint import CHECKPOINTS, load_half

UNK = "<unk>"
WINDOW = 100  # L: the paper's window, and what the shipped model was trained with


@dataclass
class SentinelConfig:
    vocab_size: int
    d_model: int = 256  # embedding = LSTM state = tied output embedding
    pointer: bool = True  # False: the plain LSTM language model the paper compares with
    dropout: float = 0.3


@dataclass
class Mixture:
    """Every position t of a passage, predicting word t + 1 (eq. 53)."""

    gate: torch.Tensor  # (T,) g, the sentinel's share of the pointer softmax
    p_vocab: torch.Tensor  # (T,) p_vocab of the next word (0 for a word outside the vocabulary)
    p_ptr: torch.Tensor  # (T,) p_ptr of the next word
    p: torch.Tensor  # (T,) g p_vocab + (1 − g) p_ptr
    attention: torch.Tensor  # (T, T) the pointer's softmax over the window, rows summing to 1; 0 outside it

    def pointer_share(self) -> torch.Tensor:
        """(1 − g) p_ptr / p: the share of each next word's probability that came from the pointer, (T,)."""
        return (1 - self.gate) * self.p_ptr / self.p.clamp(min=1e-12)


class PointerSentinelLM(nn.Module):
    def __init__(self, config: SentinelConfig):
        super().__init__()
        self.config = config
        V, D = config.vocab_size, config.d_model
        self.emb = nn.Embedding(V, D)
        self.lstm = nn.LSTM(D, D, batch_first=True)
        self.drop = nn.Dropout(config.dropout)
        self.out_bias = nn.Parameter(torch.zeros(V))
        if config.pointer:
            self.W_query = nn.Linear(D, D)  # q = tanh(W h + b_q)
            self.sentinel = nn.Parameter(torch.randn(D) / D ** 0.5)  # s

    def states(self, ids: torch.Tensor) -> torch.Tensor:
        """(B, T) word ids -> (B, T, D) h_t, the state after reading word t."""
        h, _ = self.lstm(self.drop(self.emb(ids)))
        return self.drop(h)

    def log_p_vocab(self, h: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., V) log p_vocab, through the tied embedding."""
        return F.log_softmax(h @ self.emb.weight.T + self.out_bias, dim=-1)

    def pointer(self, h: torch.Tensor, window: int, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T, D) -> for the queries t ≥ start, log a over the window (B, T', T), −∞ outside it, and
        log g (B, T'): one log-softmax over the window's scores and the sentinel's, split in two parts."""
        T = h.shape[1]
        q = torch.tanh(self.W_query(h[:, start:]))  # (B, T', D)
        scores = q @ h.transpose(1, 2)  # (B, T', T): z_ti = q_t · h_i
        t, i = torch.arange(start, T)[:, None], torch.arange(T)[None, :]
        in_window = (i <= t) & (i > t - window)  # the last L words, the current one included
        scores = scores.masked_fill(~in_window, float("-inf"))
        sentinel = (q * self.sentinel).sum(-1, keepdim=True)  # (B, T', 1): q · s
        log_a = torch.log_softmax(torch.cat([scores, sentinel], dim=-1).float(), dim=-1)  # (B, T', T + 1)
        return log_a[..., :T], log_a[..., T]

    def log_prob(self, ids: torch.Tensor, copy_ids: torch.Tensor, targets: torch.Tensor,
                 window: int = WINDOW, start: int = 0) -> torch.Tensor:
        """log p(target_t | words ≤ t) for t ≥ start, (B, T − start). ids (B, T) are what the LSTM reads;
        copy_ids (B, T) what the pointer copies from each position (the words themselves, beyond the
        vocabulary too); targets (B, T) the next words in copy_ids' numbering (ids ≥ V: words the vocabulary
        lacks). Positions before `start` only warm the LSTM up and fill the window, which keeps the cost of
        the softmax over V to the positions scored."""
        h = self.states(ids)
        targets = targets[:, start:]
        log_pv = self.log_p_vocab(h[:, start:])  # (B, T', V)
        V = log_pv.shape[-1]
        log_pv_target = log_pv.gather(-1, targets.clamp(max=V - 1)[..., None])[..., 0]
        log_pv_target = log_pv_target.masked_fill(targets >= V, float("-inf"))
        if not self.config.pointer:
            return log_pv_target
        log_a, log_g = self.pointer(h, window, start)
        copies = log_a.masked_fill(copy_ids[:, None, :] != targets[:, :, None], float("-inf"))  # w_i = target
        # eq. 53 in log space: log(g p_vocab + Σ a_i); one sum keeps a finite term, so no gradient of log 0
        return torch.logsumexp(torch.cat([copies, (log_g + log_pv_target)[..., None]], dim=-1), dim=-1)


def mixture(model: PointerSentinelLM, ids: torch.Tensor, copy_ids: torch.Tensor, targets: torch.Tensor,
            window: int) -> Mixture:
    """Eq. 53's terms for one passage (T,), each position predicting the next word."""
    if window < 1:
        raise InputError("the window L must hold at least one word")
    with torch.no_grad():
        h = model.states(ids[None])  # (1, T, D)
        p_vocab = model.log_p_vocab(h)[0].exp()  # (T, V)
        log_a, log_g = model.pointer(h, window)
        a, g = log_a[0].exp(), log_g[0].exp()
    V = p_vocab.shape[1]
    pv = torch.where(targets < V, p_vocab.gather(1, targets.clamp(max=V - 1)[:, None])[:, 0], 0.0)
    attention = a / (1 - g)[:, None]  # the window's share renormalised: p_ptr's softmax
    p_ptr = (attention * (copy_ids[None, :] == targets[:, None])).sum(1)
    return Mixture(g, pv, p_ptr, g * pv + (1 - g) * p_ptr, attention)


def next_word_distribution(model: PointerSentinelLM, ids: torch.Tensor, copy_ids: torch.Tensor,
                           window: int) -> torch.Tensor:
    """The full mixture after the last word of ids (T,), over the extended vocabulary: the model's V words,
    then the ids above V that copy_ids holds. (V + extra,), summing to 1."""
    with torch.no_grad():
        h = model.states(ids[None])
        p_vocab = model.log_p_vocab(h[:, -1])[0].exp()  # (V,)
        log_a, log_g = model.pointer(h, window)
    a, g = log_a[0, -1].exp(), log_g[0, -1].exp()  # (T,), ()
    size = max(p_vocab.shape[0], int(copy_ids.max()) + 1)
    p = torch.zeros(size)
    p[: p_vocab.shape[0]] = g * p_vocab
    return p.index_add_(0, copy_ids, a)  # (1 − g) p_ptr(w) = Σ a_i over w's occurrences


MAX_WORDS = 400  # a passage longer than this is cut: the table is read word by word


@dataclass
class Passage:
    """A passage read word by word: position t predicts words[t + 1]."""

    words: list[str]
    known: list[bool]  # in the model's vocabulary; an unknown word is read as <unk>
    mixture: Mixture
    cut: bool  # the passage was longer than MAX_WORDS and was cut

    def first_copy(self) -> int:
        """The first position whose next word repeats an earlier one the vocabulary lacks, else the first
        whose next word repeats any earlier word, else the last position: where the pointer has work to do."""
        for needs_unknown in (True, False):
            for t in range(len(self.words) - 1):
                word = self.words[t + 1]
                if word in self.words[:t + 1] and not (needs_unknown and self.known[t + 1]):
                    return t
        return len(self.words) - 2

    def pointer_softmax(self, word: int, window: int) -> tuple[list[int], torch.Tensor]:
        """The one softmax that predicts words[word] (1 ≤ word): the positions of the window it points at, and a
        over them with the sentinel's share g last, (len(positions) + 1,), summing to 1."""
        t = word - 1  # the position read last
        start = max(0, t - window + 1)
        a = self.mixture.attention[t, start:t + 1] * (1 - self.mixture.gate[t])  # back to shares of one softmax
        return list(range(start, t + 1)), torch.cat([a, self.mixture.gate[t:t + 1]])


def read_passage(model: PointerSentinelLM, vocab: list[str], words: list[str], window: int) -> Passage:
    """Eq. 53 at every word after the first. The pointer copies words themselves: an unknown word gets its own
    id past the vocabulary, so a name the vocabulary lacks can be predicted by pointing at an earlier mention."""
    if len(words) < 2:
        raise InputError("type at least two words: each word after the first is predicted from those before it")
    cut = len(words) > MAX_WORDS
    words = words[:MAX_WORDS]
    index = {w: i for i, w in enumerate(vocab)}
    unknown = {w: len(vocab) + k for k, w in enumerate(dict.fromkeys(w for w in words if w not in index))}
    ids = encode(words, index)  # what the LSTM reads
    copy_ids = torch.tensor([index.get(w, unknown.get(w)) for w in words])  # what the pointer copies
    result = mixture(model, ids[:-1], copy_ids[:-1], copy_ids[1:], window)
    return Passage(words, [w in index for w in words], result, cut)


def perplexity_as_unk(model: PointerSentinelLM, vocab: list[str], words: list[str], window: int) -> float:
    """Perplexity of a passage with every unknown word read and predicted as <unk>, as the held-out
    perplexities are measured (the paper's Penn Treebank convention)."""
    ids = encode(words[:MAX_WORDS], {w: i for i, w in enumerate(vocab)})
    return float(torch.exp(-log_probs_as_unk(model, ids, window).double().mean()))


def encode(words, index: dict[str, int]) -> torch.Tensor:
    """Word ids, 0 (<unk>) for a word outside the vocabulary: (T,)."""
    return torch.tensor([index.get(w, 0) for w in words])


def log_probs_as_unk(model: PointerSentinelLM, ids: torch.Tensor, window: int) -> torch.Tensor:
    """log p of every word of ids (T,) after the first, an unknown word read, copied and predicted as <unk>:
    (T − 1,)."""
    with torch.no_grad():
        return model.log_prob(ids[None, :-1], ids[None, :-1], ids[None, 1:], window)[0]


def load_sentinel(path) -> tuple[PointerSentinelLM, dict]:
    return load_half(path, lambda config: PointerSentinelLM(SentinelConfig(**config)))


def load_shipped_sentinel(name: str) -> tuple[PointerSentinelLM, dict]:
    """A shipped model by name, "sentinel" (the pointer sentinel LM) or "sentinel_lstm" (the same LSTM without a
    pointer), in eval mode, with its vocabulary and held-out perplexity."""
    return load_sentinel(CHECKPOINTS / f"{name}.pt")
