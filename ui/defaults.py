"""Results that every visitor of a page's default view sees and that take seconds to compute: computed once
per server (st.cache_data), and begun in a background thread as the server starts (ui/server.py), so a class
arriving later finds them ready. A visitor who comes first waits on the same computation (Streamlit's
cache holds a lock per key), never starts a second one."""
from __future__ import annotations

import logging
import threading

import streamlit as st

from engine.decoding.study import ErrorStudy, search_error_study
from engine.efficiency.measure import torch_threads
from engine.gensim_data import MODULES as LATE_IMPORTS
from engine.gensim_data import gensim_module
from engine.llm import generation
from engine.seq2seq.dates import distracted_examples
from engine.seq2seq.decode import held_out_metrics
from engine.transformer.model import generate
from ui import llm
from ui.glove import glove_6b_on
from ui.loaders import char_model, cooccurrence_counts, fasttext_checkpoint, ngram_collisions, seq2seq_checkpoint
from ui.projector import default_view
from ui.smollm import preload as preload_smollm

STUDY_WIDTHS, STUDY_SEED = [1, 2, 4, 8], 30_000
STUDY_MODEL = "dot"  # the fastest date model: exhaustive search over 15³ prefixes for 30 inputs in about 2 s
DISTRACTED_SEED = 20_000
COVERAGE_MODELS = ("additive", "additive_coverage")
THREAD = "default-results"
# The KV cache page: the first story of the corpus, a long prefix that makes the uncached steps' cost visible
# from the first one; every length its slider offers is a prefix of the longest, generated once per server.
KV_PROMPT = ("Hundreds of people have been forced to vacate their homes in the Southern Highlands of New South "
             "Wales as strong winds today pushed a huge bushfire towards the town of Hill Top. A new blaze near "
             "Goulburn, south-west of Sydney, has forced the closure of the Hume Highway. ")
KV_LONGEST = 128  # characters generated at most; after a long prompt the uncached steps are already slow
KV_TEMPERATURE = 0.8
KV_SMOLLM_STEPS = 24  # SmolLM2's greedy tokens after the story: about a second on one CPU
KV_SMOLLM_TOKENS = 256  # the story is 60 tokens; a 2,000-character prompt would take seconds to read
GLOVE_COUNTS = ("wikipedia", 10, True, 5)  # the GloVe counts page's default X: corpus, window, 1/d, min_count
FASTTEXT_GRAMS = (3, 6, 2_000_000)  # the FastText page's default n-gram range and buckets


@st.cache_data(show_spinner="Exhaustive search and four beams on 30 inputs, about 2 seconds…")
def error_study(name: str) -> ErrorStudy:
    """000 §6.1 on the date model `name`: beams of each width against exhaustive search, first 3 characters."""
    return search_error_study(seq2seq_checkpoint(name)[0], distracted_examples(30, STUDY_SEED), STUDY_WIDTHS, length=3)


@st.cache_data(show_spinner="Decoding 1,000 distracted dates with both models…")
def distracted_metrics() -> dict[str, dict]:
    """Held-out metrics of the coverage page's two models on 1,000 dates followed by a distraction."""
    held_out = distracted_examples(1000, DISTRACTED_SEED)
    return {name: held_out_metrics(seq2seq_checkpoint(name)[0], held_out) for name in COVERAGE_MODELS}


@st.cache_data(max_entries=16, show_spinner="Generating with and without the cache…")
def generated_both_ways(prompt: str, n_new: int) -> tuple[list[int], list[int]]:
    """The ids the character LM appends to `prompt`, with the KV cache and without it (one seed: the same
    random numbers, one draw per step, so n tokens are a prefix of n + 1)."""
    model, vocab, _ = char_model("causal")
    ids = vocab.encode(prompt)[None]  # (1, T0)
    with torch_threads(1):  # on a busy two-core server, two threads per operator wait on each other
        cached, plain = (generate(model, ids, n_new, KV_TEMPERATURE, use_cache=use)[0, ids.shape[1]:].tolist()
                         for use in (True, False))
    return cached, plain


def smollm_views() -> None:
    """SmolLM2, and the two views of it that take most of a second: the SmolLM2 page's question read with every
    head kept, and the KV cache page's greedy tokens after the story. A missing file raises ModelFileError."""
    lm = preload_smollm()
    question, _ = generation.prompt_ids(lm, llm.QUESTION, True)
    llm.inside_view(tuple(question[-llm.INSIDE:]), _lm=lm)
    story, _ = generation.prompt_ids(lm, KV_PROMPT, False, KV_SMOLLM_TOKENS)
    llm.growth(story, KV_SMOLLM_STEPS, _lm=lm)


def _compute_all() -> None:
    # At the process's own priority, not niced: this thread holds the interpreter most of its time, and a niced
    # thread the kernel leaves waiting while it holds it stalls every session (on 2 oversubscribed cores, a
    # 10 ms task of another thread took 330 ms at p50 beside a niced one, 70 ms beside one that is not).
    for name in LATE_IMPORTS:  # left out of the start-up (ui/server.py)
        gensim_module(name)
    for compute, args in ((preload_smollm, ()), (error_study, (STUDY_MODEL,)), (distracted_metrics, ()),
                          (generated_both_ways, (KV_PROMPT, KV_LONGEST)), (default_view, ()),
                          (cooccurrence_counts, GLOVE_COUNTS), (glove_6b_on, ("glove_wikipedia",)),
                          (fasttext_checkpoint, ()), (ngram_collisions, FASTTEXT_GRAMS), (smollm_views, ())):
        try:
            compute(*args)
        except Exception:  # noqa: BLE001  (a missing or damaged checkpoint: the page that needs it says so)
            continue


class _OutsideAnyPage(logging.Filter):
    """Streamlit warns of a missing ScriptRunContext when a cached function is called outside a page's run,
    as this thread calls them by design."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.threadName != THREAD


def begin() -> None:
    """Start computing every default result in a background thread of this process."""
    logging.getLogger("streamlit.runtime.scriptrunner_utils.script_run_context").addFilter(_OutsideAnyPage())
    threading.Thread(target=_compute_all, name=THREAD, daemon=True).start()
