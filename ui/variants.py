"""The attention variants page's modules and its decode-step timing, which the server's start-up thread also
makes for the page's default sizes (ui/defaults.py): its first visitor would otherwise wait for it in line."""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st
import torch

from engine.efficiency.measure import Timing
from engine.transformer.variants import build_variants, decode_step_timings
from ui.measured import measure_at_start

DEFAULT_SIZES = (256, 8, 2, 64)  # d_model, query heads h, GQA groups g, MLA latent d_c
# a decode step reads the whole cache: from a few thousand tokens on, that costs more than the fixed work
CONTEXTS = (128, 512, 2048, 8192)
REPEATS, WARMUP, THREADS = 9, 2, 1
WHERE = f"CPU, {THREADS} thread"
RUNS = f"median of {REPEATS} runs interleaved with the other variants after {WARMUP} warm-ups"


@st.cache_resource(max_entries=16, show_spinner=False)
def variant_modules(d_model: int, n_heads: int, n_groups: int, d_latent: int) -> dict[str, torch.nn.Module]:
    """The four variants at these sizes, once per server: only read (their cache sizes, and timed in eval mode)."""
    return build_variants(d_model, n_heads, n_groups, d_latent)


def timing_key(d_model: int, n_heads: int, n_groups: int, d_latent: int) -> tuple:
    return ("attention_variants", d_model, n_heads, n_groups, d_latent)


def measure(d_model: int, n_heads: int, n_groups: int, d_latent: int
            ) -> Callable[[Callable[[float], None]], dict[str, list[Timing]]]:
    """The timing of one decode step of each variant against caches of CONTEXTS tokens, for shared_timing."""
    modules = variant_modules(d_model, n_heads, n_groups, d_latent)
    return lambda progress: decode_step_timings(modules, d_model, CONTEXTS, REPEATS, WARMUP, threads=THREADS)


def timing_note(d_model: int, n_heads: int, n_groups: int, d_latent: int) -> str:
    """How long decode_step_timings takes at these sizes on a laptop core: each of WARMUP + REPEATS rounds reads
    the four variants' caches at every context, about 16 ns a cached number (1.6 s at the default sizes)."""
    per_token = 2 * d_model * (n_heads + n_groups + 1) // n_heads + d_latent  # MHA, GQA, MQA and MLA together
    seconds = (WARMUP + REPEATS) * sum(CONTEXTS) * per_token * 16e-9
    return f"Timing the four variants takes about {max(1, round(seconds))} s on one core of a laptop CPU"


def time_defaults() -> None:
    measure_at_start(timing_key(*DEFAULT_SIZES), measure(*DEFAULT_SIZES), WHERE, RUNS)
