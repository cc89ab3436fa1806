"""KV cache and attention variants, as ratios measured in one run.

1. The shipped TransformerLM: tokens per second generating with and without the KV cache when the
   context holds 64, 256 and 512 tokens (issue goal: at least 10x at 512 on CPU).
2. MHA, GQA, MQA and MLA at equal d_model: one decode step's time and the cache per token, against MHA.
Usage: python -m benchmarks.transformer   (writes benchmarks/results/transformer.json)
"""
from __future__ import annotations

import json
import platform
import statistics
import sys
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from engine.transformer.kv_cache import timed_generation  # noqa: E402
from engine.transformer.model import load_checkpoint  # noqa: E402
from engine.transformer.train import CHECKPOINTS  # noqa: E402
from engine.transformer.variants import VARIANTS, build_variant, decode_step_seconds  # noqa: E402

CONTEXTS = (64, 256, 512)
NEW_TOKENS = 32  # generated at the end of each context; the median step is reported
VARIANT_SHAPE = {"d_model": 1024, "n_heads": 16, "n_groups": 4, "d_latent": 256}


def step_seconds(model, context: int, use_cache: bool) -> float:
    """Median time of one generation step once the context holds about `context` tokens."""
    prompt = torch.randint(model.config.vocab_size, (context - NEW_TOKENS,), generator=torch.Generator().manual_seed(0))
    return statistics.median(timed_generation(model, prompt, NEW_TOKENS, use_cache, repeats=1).seconds_per_token)


def main() -> None:
    torch.manual_seed(0)
    model, _ = load_checkpoint(CHECKPOINTS / "char_causal.pt")
    step_seconds(model, CONTEXTS[0], True)  # warm-up: first calls pay for allocation
    cache_rows = []
    print(f"{'context':>8} {'uncached tok/s':>15} {'cached tok/s':>13} {'ratio':>7}")
    for context in CONTEXTS:
        plain, cached = step_seconds(model, context, False), step_seconds(model, context, True)
        cache_rows.append({"context": context, "uncached_tokens_per_s": round(1 / plain, 1),
                           "cached_tokens_per_s": round(1 / cached, 1), "ratio": round(plain / cached, 2)})
        print(f"{context:>8} {1 / plain:>15.1f} {1 / cached:>13.1f} {plain / cached:>7.2f}")
    variant_rows = []
    print(f"\nvariants at d_model {VARIANT_SHAPE['d_model']}, {VARIANT_SHAPE['n_heads']} heads, "
          f"{VARIANT_SHAPE['n_groups']} GQA groups, MLA latent {VARIANT_SHAPE['d_latent']}, cache of 2048 tokens")
    modules = {name: build_variant(name, **VARIANT_SHAPE).eval() for name in VARIANTS}
    mha_time = decode_step_seconds(modules["MHA"], VARIANT_SHAPE["d_model"], 2048, repeats=50)
    for name, module in modules.items():
        seconds = mha_time if name == "MHA" else decode_step_seconds(module, VARIANT_SHAPE["d_model"], 2048, repeats=50)
        row = {"variant": name, "step_ms": round(seconds * 1e3, 3), "step_vs_mha": round(seconds / mha_time, 3),
               "cache_per_token": module.cache_per_token(),
               "cache_vs_mha": round(module.cache_per_token() / modules["MHA"].cache_per_token(), 4)}
        variant_rows.append(row)
        print(f"{name:>4}: step {row['step_ms']:.3f} ms ({row['step_vs_mha']:.2f}x MHA), cache "
              f"{row['cache_per_token']} numbers per token ({row['cache_vs_mha']:.3f}x MHA)")
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": f"CPU ({platform.machine()}), {torch.get_num_threads()} threads",
        "versions": {"python": platform.python_version(), "torch": version("torch")},
        "kv_cache": cache_rows, "variants": {"shape": VARIANT_SHAPE, "context": 2048, "rows": variant_rows},
        "goal_10x_at_512_met": cache_rows[-1]["ratio"] >= 10,
    }
    out = ROOT / "benchmarks" / "results" / "transformer.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
