"""SmolLM2 on the pages that explain one of its parts (decoding lab, RoPE, KV cache, MHA/MQA/GQA/MLA): a
typed prompt read into its ids, token labels, and every result cached by the prompt's ids, so a rerun costs
nothing. The model itself comes from ui.smollm.smollm(); callers pass it in as `_lm` (left out of the keys:
there is one model)."""
from __future__ import annotations

import streamlit as st

from engine.decoding.search import Pruning, SearchTree, search
from engine.llm import generation, heads, inspection
from engine.llm.batching import Request
from engine.llm.smollm import SmolLM
from engine.llm.tokenizer import visible
from engine.positions.rope import PAIRINGS
from engine.transformer.kv_cache import CacheGrowth, cache_growth
from ui import queued
from ui.jobs import Report

SHORT_PROMPT = "The cat sat on the mat because it was tired."  # 11 tokens: every head's map is readable
SHORT_TOKENS = 32  # a short prompt's tokens at most: its maps stay readable and its forward pass quick
QUESTION = "What is the capital of France?"  # the SmolLM2 page's default prompt, in the chat template
INSIDE = 48  # tokens the attention maps, the logit lens and the neuron view read: the prompt's last ones
LENS = 16  # positions of the logit lens: 30 layers x 16 positions of a 49,152-word unembedding
SEARCH_PROMPT_TOKENS = 128  # the decoding lab's prompt in the chat template: 200 typed characters of English fit
SEARCH_WIDEST = 8  # beams: a step reads 8 prefixes in about 0.15 s on one CPU thread, 16 in 0.2 s, twice a search


def prompt_ids(page, lm: SmolLM, text: str, limit: int, chat: bool) -> list[int]:
    """SmolLM2's ids for a typed prompt (inside the chat template when chat), saying on the page what was cut."""
    ids, cut = generation.prompt_ids(lm, text, chat, limit)
    say_cut(page, ids, cut, limit, chat)
    return ids


def say_cut(page, ids: list[int], cut: int, limit: int, chat: bool) -> None:
    """The notice of prompt_ids, for a page that records generation.prompt_ids itself (its Code view)."""
    if cut:
        page.notice(f"The prompt is {len(ids) + cut} tokens{' in the chat template' if chat else ''}; SmolLM2 "
                    f"reads only its last {limit} here.")


def short_prompt(page, where=None) -> str:
    """The text box of a section that looks inside SmolLM2 at a few tokens; prompt_ids(..., SHORT_TOKENS,
    chat=False) reads it, after the section's other controls are drawn (an empty box must not hide them)."""
    return page.text("SmolLM2 reads", "prompt", SHORT_PROMPT, max_chars=200, where=where)


def token_labels(lm: SmolLM, ids: list[int]) -> list[str]:
    """One unique label per token (a heatmap axis merges equal labels): its position and its text."""
    return [f"{i} {visible(token.text)}" for i, token in enumerate(lm.tokenizer.tokens(ids))]


@st.cache_resource(show_spinner=False)
def searches() -> queued.Kept:
    """The decoding lab's SmolLM2 searches by prompt and settings, shared by the server: the 32 latest."""
    return queued.Kept(32)


SEARCH_STEP_S = 0.15  # a step of up to SEARCH_WIDEST prefixes on one core


def search_tree(text: str, method: str, width: int, max_len: int, pruned_shown: int | None, pruning: Pruning | None,
                model) -> SearchTree:
    """The decoding lab's search with SmolLM2's stepper `model` for the prompt `text` (the key: the stepper reads
    it). Seconds of the 135M model, so a job of the server's line (ui/queued.py), which students asking for the
    same search share; kept for everyone afterwards."""
    return searches().run("search", (text, method, width, max_len, pruned_shown, pruning),
                          lambda report: search(model, method, width, max_len, pruned_shown, pruning),
                          "SmolLM2 is searching, one forward pass of the live prefixes a step",
                          estimate=SEARCH_STEP_S * max_len)


@st.cache_data(max_entries=32, show_spinner="Running SmolLM2 on the prompt…")
def rotation(ids: list[int], layer: int, head: int, query: int, _lm: SmolLM) -> heads.RealRotation:
    return heads.rope_on_head(_lm, ids, layer, head, query)


@st.cache_data(max_entries=32, show_spinner="Running SmolLM2 on the prompt…")
def group(ids: list[int], layer: int, kv_head: int, _lm: SmolLM) -> heads.GroupAttention:
    return heads.group_attention(_lm, ids, layer, kv_head)


@st.cache_data(max_entries=16, show_spinner="Generating with SmolLM2 and measuring its cache at every step…")
def growth(ids: list[int], n_new: int, _lm: SmolLM) -> CacheGrowth:
    return cache_growth(_lm.model, ids, n_new)


@st.cache_data(max_entries=16, show_spinner="Running SmolLM2 over the prompt: 30 layers, every head kept…")
def inside_view(ids: tuple[int, ...], _lm: SmolLM) -> dict:
    """What the Next token, Attention and Logit lens views draw for one prompt, computed once per server for
    each prompt (the default by ui/defaults.py as the server starts)."""
    return inspection.overview(_lm, list(ids), LENS)


@st.cache_resource(show_spinner=False)
def perplexities() -> queued.Kept:
    """The SmolLM2 page's texts scored four ways (two pairings, two bases), shared by the server: the 16 latest."""
    return queued.Kept(16)


def score(lm: SmolLM, text: str, report: Report) -> dict[tuple[str, float], generation.Perplexity]:
    """The job that fills perplexities() (ui/queued.py): four forward passes over the text, reported one by one."""
    ways = [(pairing, base) for pairing in PAIRINGS for base in (lm.config.rope_base, 10000.0)]
    scored = {}
    for done, (pairing, base) in enumerate(ways):
        report(done / len(ways), f"Scoring the text with {pairing} pairs, base {base:,.0f}")
        scored[(pairing, base)] = generation.perplexity(lm, text, base, pairing)
    return scored


@st.cache_resource(show_spinner=False)
def generations() -> dict[Request, list[generation.Generated]]:
    """The SmolLM2 page's finished generations by request (prompt and settings), shared by the server: a class pressing
    Generate on the same settings reads the first one's answer instead of recomputing it."""
    return {}

