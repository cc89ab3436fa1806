"""Cached loaders: one copy per process of each shipped model, shared by every session and never mutated."""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import streamlit as st

from engine.decoding.search import Pruning, SearchTree, search
from engine.efficiency import records
from engine.embeddings.cooccurrence import cooccurrence
from engine.embeddings.corpus import Vocab, load_corpus
from engine.embeddings.fasttext import FastTextModel
from engine.embeddings.glove import load_glove
from engine.embeddings.subwords import Collisions, LengthNgrams, check_range, collisions, length_ngrams, merged_ngrams
from engine.embeddings.train import load_shipped_word2vec
from engine.embeddings.train_fasttext import load_shipped_fasttext
from engine.embeddings.train_glove import load_shipped_glove
from engine.embeddings.vectors import WordVectors
from engine.embeddings.word2vec import Word2VecModel
from engine.errors import InputError
from engine.seq2seq.dates import Example, distracted_examples
from engine.seq2seq.decode import Translation, translate
from engine.seq2seq.model import Seq2Seq, load_shipped_seq2seq
from engine.seq2seq.pointer_network import PointerNetwork, load_shipped_pointer_network
from engine.seq2seq.sentinel import PointerSentinelLM, load_shipped_sentinel
from engine.transformer import sampler, train
from engine.transformer.model import TransformerLM
from engine.transformer.objectives import SequenceClassifier
from engine.transformer.text import CharVocab
from engine.transformer.train import load_lm
from ui import llm

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"  # what the benchmarks recorded


@st.cache_resource(show_spinner="Loading the character TransformerLM…")
def char_model(objective: str) -> tuple[TransformerLM, CharVocab, dict]:
    """The shipped checkpoint char_<objective>.pt ("causal", "mlm" or "finetuned"), in eval mode."""
    return load_lm(objective)


@st.cache_resource(show_spinner=False)
def char_sampler_weights() -> sampler.Weights:
    """The causal character model's weights for the compiled sampler (engine/transformer/sampler.py), read only."""
    return sampler.weights_of(char_model("causal")[0])


@st.cache_data(show_spinner=False)
def unigram_baseline() -> float:
    """Held-out nats per character from character frequencies alone, the LMs' floor."""
    return train.unigram_loss(char_model("causal")[1])


def prompt_ids(page, text: str, vocab: CharVocab, limit: int):
    """Encode a typed prompt, saying on the page what was dropped or replaced."""
    if not text:
        raise InputError("the prompt is empty: type a few words")
    if len(text) > limit:
        page.notice(f"The prompt has {len(text)} characters; only its last {limit} are used.")
        text = text[-limit:]
    if unknown := vocab.unknown(text):
        page.notice(f"Characters the model never saw are read as unknown: {' '.join(map(repr, unknown[:10]))}")
    return vocab.encode(text), text


@st.cache_resource(show_spinner="Loading the fine-tuned classifier…")
def finetuned_classifier() -> tuple[SequenceClassifier, CharVocab, dict]:
    """The LM fine-tuned with GPT's L3 on the shipped task, with its head W_y (003 eq. 68)."""
    return train.load_classifier()


@st.cache_resource(show_spinner="Loading a word2vec checkpoint…")
def word2vec_checkpoint(name: str) -> tuple[Word2VecModel, dict]:
    """A shipped word2vec model (engine/embeddings/checkpoints/<name>.pt) and its stored metrics."""
    return load_shipped_word2vec(name)


@st.cache_resource(show_spinner="Counting the corpus' words…")
def corpus_vocab(name: str, min_count: int) -> Vocab:
    """The vocabulary of a shipped corpus, counted once per server rather than on every rerun."""
    return Vocab.build(corpus(name), min_count)


@st.cache_resource(show_spinner=False)
def checkpoint_vectors(name: str) -> WordVectors:
    """A shipped model's input vectors with its vocabulary: neighbours, analogies, spelling suggestions."""
    model, _ = word2vec_checkpoint(name)
    return WordVectors(model.vocab.words, model.input_vectors.numpy())


@st.cache_resource(max_entries=2, show_spinner=False)
def encoded_corpus(name: str, min_count: int) -> tuple[np.ndarray, np.ndarray]:
    """The corpus as ids of corpus_vocab(name, min_count) and their sentences, (N,) each, read only: the same for
    every window, and 60 ms of the interpreter on the Wikipedia sample (a quarter of a new window's count, the
    rest compiled and free of the GIL)."""
    return corpus_vocab(name, min_count).encode(corpus(name))


@st.cache_resource(max_entries=4, show_spinner="Counting co-occurrences X_ij (once per server for each setting)…")
def cooccurrence_counts(name: str, window: int, harmonic: bool, min_count: int = 5):
    """GloVe's X (V, V) scipy csr over corpus_vocab(name, min_count): 1 s on the Wikipedia sample, 30 MB."""
    return cooccurrence(*encoded_corpus(name, min_count), len(corpus_vocab(name, min_count)), window, harmonic)


@st.cache_resource(show_spinner="Loading a GloVe checkpoint…")
def glove_checkpoint(name: str) -> tuple[WordVectors, dict]:
    """A shipped GloVe model's word vectors u + v (engine/embeddings/checkpoints/<name>.pt) and its metrics."""
    return load_shipped_glove(name)


@st.cache_resource(show_spinner="Loading our FastText checkpoint and building its 9,002 word vectors…")
def fasttext_checkpoint() -> tuple[FastTextModel, WordVectors, dict]:
    """The shipped FastText model, every vocabulary word's vector (fastText's mean of its word and n-gram rows)
    and what the checkpoint stores (metrics, losses, training time)."""
    model, extra = load_shipped_fasttext()
    return model, model.word_vectors(), extra


@st.cache_resource(show_spinner="Hashing the vocabulary's n-grams…")
def vocabulary_ngrams(n: int) -> LengthNgrams:
    """The FastText vocabulary's distinct n-grams of n characters and their FNV-1a hashes, once per length (the
    eight lengths the page offers, 0.2 s in all): every range of lengths is merged from them. Read only, so shared
    without a copy."""
    return length_ngrams(fasttext_checkpoint()[0].vocab.words, n)


@st.cache_resource(max_entries=8, show_spinner=False)
def ngram_hashes(min_n: int, max_n: int) -> tuple[list[str], np.ndarray]:
    """The FastText vocabulary's distinct n-grams and their FNV-1a hashes, (G,): the same for every bucket count.
    Read only, so shared without a copy."""
    check_range(min_n, max_n)
    return merged_ngrams([vocabulary_ngrams(n) for n in range(min_n, max_n + 1)])


@st.cache_resource(max_entries=8, show_spinner="Hashing the vocabulary's n-grams into buckets…")
def ngram_collisions(min_n: int, max_n: int, n_buckets: int) -> tuple[int, Collisions]:
    """How many distinct n-grams the FastText vocabulary's words have, and the buckets several of them share.
    Read only, so shared without a copy: st.cache_data unpickled up to 60,000 n-grams at every run."""
    grams, hashes = ngram_hashes(min_n, max_n)
    return len(grams), collisions(grams, n_buckets, hashes)


@st.cache_resource(show_spinner="Reading the corpus: the Wikipedia sample is extracted from its dump, about 3 s…")
def corpus(name: str) -> tuple[tuple[str, ...], ...]:
    return load_corpus(name)


@st.cache_resource(show_spinner="Loading 400,000 GloVe vectors (once per server)…")
def glove() -> WordVectors:
    return load_glove()


@st.cache_resource(show_spinner="Loading a seq2seq checkpoint…")
def seq2seq_checkpoint(name: str) -> tuple[Seq2Seq, dict]:
    """A shipped encoder-decoder (engine/seq2seq/checkpoints/<name>.pt) in eval mode, with its metrics."""
    return load_shipped_seq2seq(name)


@st.cache_resource(max_entries=256, show_spinner=False)
def timed_translation(name: str, text: str) -> tuple[Translation, float]:
    """The date model `name`'s greedy decoding of text and the milliseconds it took, once per server for each
    pair: the page's other controls (the step shown, the coverage mean) rerun without decoding it again. Read only,
    so shared without a copy: st.cache_data unpickled its tensors at every run, an eighth of a cached run of the
    coverage page."""
    start = time.perf_counter()
    result = translate(seq2seq_checkpoint(name)[0], text)
    return result, 1000 * (time.perf_counter() - start)


def translated(name: str, text: str) -> Translation:
    return timed_translation(name, text)[0]


@st.cache_resource(show_spinner=False)
def distracted_dates(n: int, seed: int) -> tuple[Example, ...]:
    """engine.seq2seq.dates.distracted_examples, drawn once per server rather than on every rerun, and shared as a
    tuple of frozen examples: st.cache_data unpickled the coverage page's 1,000 at every run (1.7% of the server's
    GIL time under a class of 100)."""
    return tuple(distracted_examples(n, seed))


@st.cache_resource(show_spinner="Loading the pointer network…")
def pointer_network() -> tuple[PointerNetwork, dict]:
    return load_shipped_pointer_network()


@st.cache_resource(show_spinner="Loading the pointer sentinel LM…")
def sentinel_model(name: str) -> tuple[PointerSentinelLM, dict]:
    """"sentinel" (the pointer sentinel LM) or "sentinel_lstm" (the same LSTM without a pointer), with the
    vocabulary and held-out perplexity stored beside the weights."""
    return load_shipped_sentinel(name)


def searched_width(method: str, width: int) -> int:
    """The width a search's tree depends on: exhaustive search keeps every prefix whatever the width asked."""
    return 1 if method == "exhaustive" else width


def decoding_search(name: str, text: str, model, method: str, width: int, max_len: int, pruned_shown: int | None,
                    pruning: Pruning | None) -> SearchTree:
    """A search's tree, kept by its settings and shared, not copied (its attention rows would cost more to copy
    than the small models take to search): the page's other controls rerun without searching again. SmolLM2's
    searches go through the server's line (a search takes seconds). Exhaustive search keeps every prefix whatever
    the width, so every width finds the one tree (at four steps of a date model 44,000 nodes, 0.17 s)."""
    return _searched(name, text, model, method, searched_width(method, width), max_len, pruned_shown, pruning)


@st.cache_resource(max_entries=64, show_spinner=False)
def _searched(name: str, text: str, _model, method: str, width: int, max_len: int, pruned_shown: int | None,
              pruning: Pruning | None) -> SearchTree:
    if name == "smollm":
        return llm.search_tree(text, method, width, max_len, pruned_shown, pruning, _model)
    return search(_model, method, width, max_len, pruned_shown, pruning)


@st.cache_data(show_spinner=False)
def word_vector_benchmark() -> dict | None:
    """benchmarks/results/word2vec.json as `python -m benchmarks.word2vec` wrote it; None when it is missing or
    holds no FastText rows (the page then says how to measure)."""
    try:
        data = json.loads((RESULTS / "word2vec.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("fasttext"), list) else None


@st.cache_data(show_spinner=False)
def flash_results(machine: str) -> dict | None:
    """benchmarks/results/flash_<machine>.json ("cpu" or "gpu") as `python -m benchmarks.flash` wrote it, or
    None when nothing is recorded; a broken file raises ModelFileError with the reason."""
    return records.load_results(RESULTS / f"flash_{machine}.json")


@st.cache_data(show_spinner=False)
def probe_results(probe: str) -> dict | None:
    """benchmarks/results/flash_<probe>.json ("fp8", "tma" or "dip") as `python -m benchmarks.flash_<probe>` wrote
    it, or None; a broken file raises ModelFileError with the reason."""
    return records.load_probe(RESULTS / f"flash_{probe}.json", probe)


@st.cache_resource(show_spinner=False)
def compile_record() -> dict | None:
    """benchmarks/results/flash_compile.json as `python -m benchmarks.flash_compile` wrote it, or None; a broken
    file raises ModelFileError with the reason. Shared, not copied for each run (its hundreds of rows): read it
    only."""
    return records.load_compiled(RESULTS / "flash_compile.json")
