"""word2vec in torch: skip-gram and CBOW (000 §2.2-2.3), each with full softmax (eq. 3-4), negative
sampling (eq. 13-16) or hierarchical softmax (eq. 22-26).

Updates are word2vec's plain SGD with a linearly decaying rate. Skip-gram with negative sampling, the
configuration people train, runs word2vec.c's loop one pair at a time, compiled (engine/embeddings/sgns.py),
on `workers` threads. The other configurations, shown for teaching, apply it to a batch of examples at
once: gradients are computed by hand (eq. 12 and its sigmoid analogues) and scattered into the rows they
touch with index_add_, so a step costs a few batched matrix products, not a Python loop per pair.
Initialisation and subsampling follow gensim, which the tests and benchmark compare against.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from engine import checkpoint_files
from engine.embeddings import sgns
from engine.embeddings.corpus import Vocab
from engine.embeddings.huffman import huffman_tree
from engine.embeddings.pairs import cbow_examples, shrunk_windows, training_pairs
from engine.embeddings.vectors import WordVectors
from engine.errors import InputError

ARCHITECTURES = ("skipgram", "cbow")
NOISE_TABLE = 1_000_000  # quantiles of P_n(w): a batch draws its negatives with one randint and one gather
OBJECTIVES = ("negative", "hierarchical", "softmax")


@dataclass
class Word2VecConfig:
    architecture: str = "skipgram"
    objective: str = "negative"
    dim: int = 100
    window: int = 5  # words each side at most; each centre draws its own reach in 1..window
    negatives: int = 5  # k of eq. 16
    min_count: int = 5
    sample: float = 1e-3  # subsampling threshold t of word2vec (0: keep every word)
    epochs: int = 5
    lr: float = 0.025  # gensim's alpha
    min_lr: float = 1e-4
    batch_size: int = 1024  # examples per update of the batched configurations
    seed: int = 0
    workers: int = 1  # threads of the compiled skip-gram with negative sampling; one gives the same vectors everywhere

    def check(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}")
        if self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}")
        if self.objective == "negative" and self.negatives < 1:
            raise InputError("negative sampling needs k ≥ 1 negative words per pair")
        for name in ("dim", "window", "epochs", "batch_size", "min_count", "workers"):
            if getattr(self, name) < 1:
                raise InputError(f"{name} must be at least 1")


@dataclass
class Progress:
    fraction: float  # of all epochs
    epoch: int
    losses: list[float]  # mean loss of each reported stretch of updates
    words_per_second: float
    model: Word2VecModel  # the model being trained, as it is now


@dataclass
class Word2VecModel:
    vocab: Vocab
    config: Word2VecConfig
    input_vectors: torch.Tensor  # (V, d): v, the word vectors
    output_vectors: torch.Tensor  # (V, d): u for softmax and negative sampling; (V − 1, d) inner nodes for HS
    losses: list[float] = field(default_factory=list)
    fraction_done: float = 0.0
    seconds: float = 0.0

    def word_vectors(self) -> WordVectors:
        """The input vectors v with their words: what neighbours and analogies read."""
        return WordVectors(self.vocab.words, self.input_vectors.numpy())


class _Objective:
    """The output layer: given hidden vectors h and the word each should predict, its loss and ∂/∂h
    (already times the learning rate); updates its own weights in place."""

    def __init__(self, vocab: Vocab, config: Word2VecConfig, W_out: torch.Tensor, generator: torch.Generator):
        self.config, self.W_out, self.generator = config, W_out, generator
        if config.objective == "hierarchical":
            self.path_points, self.path_signs, self.path_mask = huffman_tree(vocab.counts).padded()  # (V, L)
        if config.objective == "negative":
            cumulative = np.cumsum(vocab.noise_distribution())
            quantiles = (np.arange(NOISE_TABLE) + 0.5) / NOISE_TABLE
            self.noise_table = torch.from_numpy(np.searchsorted(cumulative, quantiles).clip(0, len(vocab) - 1))
            k, B = config.negatives, config.batch_size
            self.pair_signs = torch.cat([torch.ones(B, 1), -torch.ones(B, k)], dim=1)  # (B, 1 + k)
            self.true_word = torch.ones(B, 1, dtype=torch.bool)

    def step(self, h: torch.Tensor, words: torch.Tensor, lr: float) -> tuple[float, torch.Tensor]:
        if self.config.objective == "softmax":
            return self._softmax(h, words, lr)
        if self.config.objective == "hierarchical":  # eq. 24: one logistic term per node on the path
            paths = (t.index_select(0, words) for t in (self.path_points, self.path_signs, self.path_mask))
            return self._logistic(h, *paths, lr)
        return self._negative(h, words, lr)

    def _logistic(self, h, rows, signs, mask, lr):
        """Σ_j log σ(s_j u_j·h) over rows j: gradient s_j σ(−s_j u_j·h) for u_j and h. h: (B, d), rows: (B, M)"""
        U = self.W_out.index_select(0, rows.reshape(-1)).view(*rows.shape, -1)  # (B, M, d)
        scores = signs * (U * h[:, None, :]).sum(2)  # (B, M); 5x faster than bmm for these shapes on CPU
        loss = -(F.logsigmoid(scores) * mask).sum()
        g = lr * signs * torch.sigmoid(-scores) * mask  # (B, M)
        grad_h = torch.bmm(g[:, None, :], U).squeeze(1)  # (B, d)
        self.W_out.index_add_(0, rows.reshape(-1), (g[:, :, None] * h[:, None, :]).reshape(-1, h.shape[1]))
        return float(loss), grad_h

    def _negative(self, h, words, lr):
        """Eq. 16: the true word with sign +1 and k words drawn from P_n(w) with sign −1; a draw equal
        to the true word is skipped, as in word2vec.c."""
        B, k = len(words), self.config.negatives
        draws = torch.randint(len(self.noise_table), (B * k,), generator=self.generator)
        noise = self.noise_table.index_select(0, draws).view(B, k)  # index_select: W[ids] is ~10x slower
        rows = torch.cat([words[:, None], noise], dim=1)  # (B, 1 + k)
        mask = torch.cat([self.true_word[:B], noise != words[:, None]], dim=1)  # (B, 1 + k)
        return self._logistic(h, rows, self.pair_signs[:B], mask, lr)

    def _softmax(self, h, words, lr):
        """Eq. 12: ∂ log p(o|c)/∂h = u_o − Σ p(o'|c) u_o', and ∂/∂u_o' = (1[o' = o] − p(o'|c)) h."""
        log_p = torch.log_softmax(h @ self.W_out.T, dim=1)  # (B, V)
        error = -torch.exp(log_p)
        error[torch.arange(len(words)), words] += 1.0
        grad_h = lr * error @ self.W_out
        self.W_out += lr * error.T @ h
        return float(-log_p.gather(1, words[:, None]).sum()), grad_h


def _epoch_examples(ids, sentence, keep, config, rng):
    """Subsample, then (inputs, outputs): skip-gram centre → context ids (P,), (P,); CBOW context ids
    padded with −1 → centre ids (N, 2·window), (N,)."""
    kept = rng.random(len(ids)) < keep[ids]
    ids, sentence = ids[kept], sentence[kept]
    reach = shrunk_windows(len(ids), config.window, rng)
    if config.architecture == "skipgram":
        centre, context = training_pairs(sentence, reach)
        return torch.from_numpy(ids[centre]), torch.from_numpy(ids[context])
    centre, context = cbow_examples(sentence, reach, config.window)
    return torch.from_numpy(np.where(context >= 0, ids[context], -1)), torch.from_numpy(ids[centre])


def _hidden(W_in, inputs):
    """h: the centre's vector (skip-gram) or the mean of the context vectors (CBOW, gensim's cbow_mean)."""
    if inputs.dim() == 1:
        return W_in.index_select(0, inputs), None
    mask = inputs >= 0  # (B, 2·window)
    vectors = W_in.index_select(0, inputs.clamp(min=0).reshape(-1)).view(*inputs.shape, -1)  # (B, 2·window, d)
    h = (vectors * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True)
    return h, mask


def _scatter(W_in, inputs, mask, grad_h):
    if mask is None:
        W_in.index_add_(0, inputs, grad_h)
    else:  # every context word gets the whole error, as word2vec.c and gensim do with cbow_mean
        W_in.index_add_(0, inputs[mask], grad_h[:, None, :].expand(-1, mask.shape[1], -1)[mask])


def train(sentences, config: Word2VecConfig = Word2VecConfig(),
          on_progress: Callable[[Progress], bool] | None = None, reports: int = 50) -> Word2VecModel:
    """Train on sentences of words. on_progress is called about `reports` times; returning False stops
    early and the model so far is returned (fraction_done says how far it got)."""
    config.check()
    vocab = Vocab.build(sentences, config.min_count)
    if len(vocab) < 2:
        times = "once" if config.min_count == 1 else f"{config.min_count} times"
        raise InputError(f"fewer than two different words occur at least {times}: too little text to train on")
    ids, sentence = vocab.encode(sentences)
    rng, generator = np.random.default_rng(config.seed), torch.Generator().manual_seed(config.seed)
    W_in = (torch.rand(len(vocab), config.dim, generator=generator) - 0.5) / config.dim  # gensim: U(±0.5/d)
    W_out = torch.zeros(len(vocab) - (config.objective == "hierarchical"), config.dim)
    model = Word2VecModel(vocab, config, W_in, W_out)
    keep = vocab.keep_probability(config.sample)
    if config.architecture == "skipgram" and config.objective == "negative":
        return _train_compiled(model, ids, sentence, keep, on_progress, reports)
    objective = _Objective(vocab, config, W_out, generator)
    start, loss_sum, count, total_steps = time.perf_counter(), 0.0, 0, None
    for epoch in range(config.epochs):
        inputs, outputs = _epoch_examples(ids, sentence, keep, config, rng)
        if len(outputs) == 0:  # subsampling can leave a tiny corpus without a single pair
            continue
        steps = -(-len(outputs) // config.batch_size)
        total_steps = total_steps or steps * config.epochs  # subsampling makes epochs about equally long
        for step in range(steps):
            done = epoch * steps + step
            lr = max(config.min_lr, config.lr - (config.lr - config.min_lr) * done / total_steps)
            batch = slice(step * config.batch_size, (step + 1) * config.batch_size)
            h, mask = _hidden(W_in, inputs[batch])
            loss, grad_h = objective.step(h, outputs[batch], lr)
            _scatter(W_in, inputs[batch], mask, grad_h)
            loss_sum, count = loss_sum + loss, count + len(outputs[batch])
            last = epoch == config.epochs - 1 and step == steps - 1
            if (done + 1) % max(1, total_steps // reports) == 0 or last:
                model.losses.append(loss_sum / count)
                loss_sum, count = 0.0, 0
                model.fraction_done = 1.0 if last else min((done + 1) / total_steps, 0.999)
                model.seconds = time.perf_counter() - start
                speed = len(ids) * config.epochs * model.fraction_done / model.seconds
                if on_progress is not None and on_progress(Progress(model.fraction_done, epoch, model.losses,
                                                                    speed, model)) is False:
                    return model
    if total_steps is None:
        raise InputError(sgns.NO_PAIRS)
    if count:  # the last epoch drew no pairs, so the last report came early
        model.losses.append(loss_sum / count)
    model.fraction_done, model.seconds = 1.0, time.perf_counter() - start
    return model


def _train_compiled(model: Word2VecModel, ids, sentence, keep, on_progress, reports) -> Word2VecModel:
    """Skip-gram with negative sampling through sgns.train_epochs, which updates the model's vectors in place."""
    config, start, corpus_words = model.config, time.perf_counter(), len(ids)

    def report(fraction: float, epoch: int, loss: float) -> bool:
        model.losses.append(loss)
        model.fraction_done, model.seconds = fraction, time.perf_counter() - start
        speed = corpus_words * config.epochs * fraction / model.seconds
        return on_progress is None or on_progress(Progress(fraction, epoch, model.losses, speed, model)) is not False

    vocab_rows = np.arange(len(model.vocab))  # each word enters through its own row only
    model.fraction_done = sgns.train_epochs(
        model.input_vectors.numpy(), model.output_vectors.numpy(), np.arange(len(model.vocab) + 1), vocab_rows,
        ids, sentence, keep, model.vocab.noise_distribution(), window=config.window,
        negatives=config.negatives, epochs=config.epochs, lr=config.lr, min_lr=config.min_lr, seed=config.seed,
        workers=config.workers, on_report=report, reports=reports)
    model.seconds = time.perf_counter() - start
    return model


def save_model(model: Word2VecModel, path, **extra) -> None:
    """Vectors in float16 (half the size), vocabulary and config; loads with torch.load(weights_only=True)."""
    checkpoint_files.save({"words": model.vocab.words, "counts": torch.from_numpy(model.vocab.counts),
                "config": asdict(model.config), "input_vectors": model.input_vectors.half(),
                "output_vectors": model.output_vectors.half(), "losses": model.losses, **extra}, path)


def load_model(path) -> tuple[Word2VecModel, dict]:
    data = checkpoint_files.load(path)
    vocab = Vocab(data.pop("words"), data.pop("counts").numpy())
    model = Word2VecModel(vocab, Word2VecConfig(**data.pop("config")), data.pop("input_vectors").float(),
                          data.pop("output_vectors").float(), data.pop("losses"), fraction_done=1.0)
    return model, data
