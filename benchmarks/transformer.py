"""KV cache and attention variants, as ratios measured in one run.

1. The shipped TransformerLM: tokens per second generating with and without the KV cache when the
   context holds 64, 256 and 512 tokens (issue goal: at least 10x at 512 on CPU).
2. MHA, GQA, MQA and MLA at equal d_model: one decode step's time and the cache per token, against MHA.

Both are timed the way the pages time them: warm-up rounds, then the candidates run in turn round after round
on one thread, so a burst of load from other processes falls on every candidate of a round. Each figure is the
median over rounds with the fastest and slowest round beside it; ratios are taken round by round, then summarised.
Usage: python -m benchmarks.transformer   (writes benchmarks/results/transformer.json)
"""
from __future__ import annotations

import platform
import statistics
from datetime import datetime, timezone
from importlib.metadata import version

import torch

from benchmarks import write_result
from engine.transformer.kv_cache import time_generation_steps
from engine.transformer.model import load_checkpoint
from engine.transformer.train import CHECKPOINTS
from engine.transformer.variants import VARIANTS, build_variant, decode_step_timings

CONTEXTS = (64, 256, 512)
NEW_TOKENS = 32  # generated at the end of each context; a round's time is all of their steps
CACHE_REPEATS, CACHE_WARMUP = 9, 1
VARIANT_SHAPE = {"d_model": 1024, "n_heads": 16, "n_groups": 4, "d_latent": 256}
VARIANT_CONTEXT = 2048
VARIANT_REPEATS, VARIANT_WARMUP = 31, 3
THREADS = 1  # torch_threads says why: on a shared two-core machine two threads time the scheduler


def summary(values: list[float], digits: int) -> tuple[float, list[float]]:
    """Median and [lowest, highest] of one figure over the timed rounds."""
    return round(statistics.median(values), digits), [round(min(values), digits), round(max(values), digits)]


def shown(row: dict, key: str, digits: int) -> str:
    """A row's median with its spread in brackets, as printed."""
    low, high = row[f"{key}_spread"]
    return f"{row[key]:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def cache_row(model, context: int) -> dict:
    """Tokens per second over the NEW_TOKENS steps that bring the context to `context` tokens, both ways."""
    prompt = torch.randint(model.config.vocab_size, (context - NEW_TOKENS,), generator=torch.Generator().manual_seed(0))
    timings = time_generation_steps(model, prompt, NEW_TOKENS, CACHE_REPEATS, CACHE_WARMUP, threads=THREADS)
    row = {"context": context}
    for key, name in (("uncached", "without cache"), ("cached", "with cache")):
        rates = [NEW_TOKENS / total for total in timings.totals(name)]
        row[f"{key}_tokens_per_s"], row[f"{key}_tokens_per_s_spread"] = summary(rates, 1)
    row["ratio"], row["ratio_spread"] = summary(timings.speedups(), 2)
    return row


def variant_rows() -> list[dict]:
    """One decode step of each variant against a cache of VARIANT_CONTEXT tokens, and its cache, against MHA's."""
    modules = {name: build_variant(name, **VARIANT_SHAPE).eval() for name in VARIANTS}
    timings = decode_step_timings(modules, VARIANT_SHAPE["d_model"], [VARIANT_CONTEXT], VARIANT_REPEATS,
                                  VARIANT_WARMUP, threads=THREADS)
    mha_seconds, mha_cache = timings["MHA"][0].seconds, modules["MHA"].cache_per_token()
    rows = []
    for name, module in modules.items():
        seconds = timings[name][0].seconds
        row = {"variant": name}
        row["step_ms"], row["step_ms_spread"] = summary([s * 1e3 for s in seconds], 3)
        row["step_vs_mha"], row["step_vs_mha_spread"] = summary([s / m for s, m in zip(seconds, mha_seconds)], 3)
        row["cache_per_token"] = module.cache_per_token()
        row["cache_vs_mha"] = round(module.cache_per_token() / mha_cache, 4)
        rows.append(row)
    return rows


def main() -> None:
    torch.manual_seed(0)
    model, _ = load_checkpoint(CHECKPOINTS / "char_causal.pt")
    print(f"median (lowest-highest) of {CACHE_REPEATS} interleaved rounds after {CACHE_WARMUP} warm-up, "
          f"{THREADS} thread; a round is {NEW_TOKENS} steps")
    print(f"{'context':>8} {'uncached tok/s':>22} {'cached tok/s':>24} {'ratio':>20}")
    cache_rows = []
    for context in CONTEXTS:
        row = cache_row(model, context)
        cache_rows.append(row)
        print(f"{context:>8} {shown(row, 'uncached_tokens_per_s', 1):>22} {shown(row, 'cached_tokens_per_s', 1):>24} "
              f"{shown(row, 'ratio', 2):>20}")
    print(f"\nvariants at d_model {VARIANT_SHAPE['d_model']}, {VARIANT_SHAPE['n_heads']} heads, "
          f"{VARIANT_SHAPE['n_groups']} GQA groups, MLA latent {VARIANT_SHAPE['d_latent']}, cache of "
          f"{VARIANT_CONTEXT} tokens; median (lowest-highest) of {VARIANT_REPEATS} interleaved rounds after "
          f"{VARIANT_WARMUP} warm-up")
    rows = variant_rows()
    for row in rows:
        print(f"{row['variant']:>4}: step {shown(row, 'step_ms', 3)} ms, {shown(row, 'step_vs_mha', 2)}x MHA; cache "
              f"{row['cache_per_token']} numbers per token ({row['cache_vs_mha']:.3f}x MHA)")
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": f"CPU ({platform.machine()}), {THREADS} thread",
        "versions": {"python": platform.python_version(), "torch": version("torch")},
        "timing": "median over interleaved rounds after warm-up; *_spread is [lowest, highest] round; "
                  "ratios are taken round by round",
        "kv_cache": cache_rows,
        "kv_cache_timing": {"new_tokens": NEW_TOKENS, "repeats": CACHE_REPEATS, "warmup": CACHE_WARMUP},
        "variants": {"shape": VARIANT_SHAPE, "context": VARIANT_CONTEXT, "repeats": VARIANT_REPEATS,
                     "warmup": VARIANT_WARMUP, "rows": rows},
        "goal_10x_at_512_met": cache_rows[-1]["ratio"] >= 10,
    }
    write_result("transformer", result)


if __name__ == "__main__":
    main()
