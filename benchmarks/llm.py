"""SmolLM2-135M in our Llama against transformers' LlamaForCausalLM, as ratios measured in one run.

Both sides hold the same weights (the Q4_1 GGUF file dequantised to float32) and run on the CPU.
1. Cached greedy decoding: tokens per second over the decode phase alone (the chat prompt is read once
   beforehand and its cache reused), --new-tokens argmax steps without stopping at <|im_end|>, each side a
   plain loop over its model's forward with its KV cache. Goal: ours at least 1.0x transformers, judged on
   the first --threads count (more threads are reported: on a shared two-core machine they time the scheduler).
2. Ours with the cache against ours without it, one decode step when the sequence already holds 512 (and
   1024) tokens: one token against the cache, or a forward over all 513 tokens. Goal: at least 10x at 512.
3. Time to first token of a 128-token prompt: prefill with the last position's logits only, then argmax.
   Goal: ours at most 1 s; transformers' beside it.
4. Resident memory of a fresh process that loads our model and generates (reported; the app-wide 2 GB
   budget is checked elsewhere). And whether both sides' greedy answers to a chat prompt are identical.
5. Continuous batching (engine/llm/serving.py, its loop on a thread as in the app): CLASS requests of
   --new-tokens each (32 chat questions, greedy and sampled settings mixed, past <|im_end|>), submitted together,
   against one of them alone through the same server, in turn round after round, each from submission to its
   last token (prompts read included). Goal: aggregate tokens/s at least 8x one request alone. Then the same
   requests arriving one every ARRIVAL_GAP s: goal p95 time to first token at most 2 s, both at the app's cache
   cap (the first end before the last arrive) and with LONG_TOKENS each under twice the cap, so that all 32 are
   decoding at once when the last arrives (goal: 32 in flight). The decode row above also
   times the batch with one sequence (step: draw and forward), goal at least 1.0x transformers, and the batch's
   KV cache is counted against its cap. The batch sizes 1 to 32 are timed as the SmolLM2 page draws them.
Timed as benchmarks.transformer does: warm-up, then the candidates in turn round after round on --threads
threads (decode: step by step), medians with [lowest, highest] beside them, ratios taken round by round.
Usage: python -m benchmarks.llm [--new-tokens 64] [--repeats 5] [--threads 1 [2]]
   (writes benchmarks/results/llm.json; exit status 1 if a goal is missed)
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import io
import math
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import torch

from benchmarks import finish
from benchmarks.transformer import shown, summary
from engine.efficiency.measure import time_interleaved, torch_threads
from engine.llm.batching import MAX_SEQUENCES, MAX_TOKENS, DecodeBatch, Request, cache_bytes_per_token, time_batch_sizes
from engine.llm.generation import prompt_ids, stream
from engine.llm.serving import BatchServer
from engine.llm.smollm import load

ROOT = Path(__file__).resolve().parents[1]

PROMPT = "What is the capital of France?"
AGREEMENT_TOKENS = 32
CONTEXTS = (512, 1024)
CACHED_STEPS = 8  # a cached step is ~50 ms, an uncached one seconds: several per round keep the clock's share small
PREFILL_TOKENS = 128
TARGETS = {"decode_vs_transformers": 1.0, "cached_vs_uncached_at_512": 10.0, "first_token_s": 1.0,
           "batched_alone_vs_transformers": 1.0, "together_vs_alone": 8.0, "arrivals_p95_first_token_s": 2.0}
CLASS = 32
ARRIVAL_GAP = 0.5
LONG_TOKENS = 160  # new tokens that keep the first arrivals decoding until the last: 32 in flight at once
TOPICS = ["the Moon", "volcanoes", "honey bees", "the Roman Empire", "black holes", "photosynthesis", "jazz",
          "the Great Wall of China", "penguins", "electric cars", "the Eiffel Tower", "chess", "rainbows",
          "the human heart", "coffee", "the Amazon rainforest", "Mount Everest", "dolphins", "the printing press",
          "tea", "the Sahara", "octopuses", "the Internet", "glaciers", "Mozart", "tornadoes", "the Olympic Games",
          "bicycles", "coral reefs", "the Milky Way", "bread", "lighthouses"]
SETTINGS = [(0.0, None, None), (0.8, 40, None), (1.0, None, 0.9), (0.7, 20, 0.95)]  # temperature, top-k, top-p
# A fresh process, so that transformers' copy of the weights is not counted. VmHWM, not ru_maxrss: the child's
# ru_maxrss starts at its parent's, which holds both models here, while VmHWM belongs to the exec'd image alone.
MEMORY_CODE = """import re, torch
from engine.llm.smollm import load
from engine.llm.generation import prompt_ids, stream
def mib(field): return int(re.search(field + r':\\s+(\\d+) kB', open('/proc/self/status').read())[1]) / 1024
torch.set_num_threads(1)
lm = load()
held = mib('VmRSS')
list(stream(lm, prompt_ids(lm, 'Tell me about Paris. ' * 25)[0], 32))
print(held, mib('VmHWM'))"""


def load_transformers(path: Path):
    """transformers' Llama from the same GGUF file, dequantised to float32 as ours is."""
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging

    logging.set_verbosity_error()
    with contextlib.redirect_stderr(io.StringIO()):  # its GGUF reader and weight loader draw bars of their own
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    return model.eval()


def random_ids(n: int, vocab_size: int) -> torch.Tensor:
    """(1, n) token ids: a step's cost does not depend on which tokens they are."""
    return torch.randint(vocab_size, (1, n), generator=torch.Generator().manual_seed(0))


def decode_row(lm, hf, threads: int, new_tokens: int, repeats: int) -> dict:
    """Greedy decoding after PROMPT on both sides, each token timed alone. The sides take turns step by step, not
    run by run: a burst of load from another process (seconds long on a shared machine) falls on both alike."""
    prompt = torch.tensor([prompt_ids(lm, PROMPT)[0]])
    ours_first = lm.model(prompt, last_only=True)
    theirs_first = hf(prompt, use_cache=True, logits_to_keep=1)
    ours_s, theirs_s, batched_s = ([0.0] * (repeats + 1) for _ in range(3))  # round 0 warms up and is left out
    with torch_threads(threads):
        for r in range(repeats + 1):
            ours, theirs = ours_first, theirs_first
            cache = copy.deepcopy(theirs_first.cache)  # transformers' cache grows in place: each round copies it
            batch = DecodeBatch(lm)  # the server's batch with one sequence: its step draws (softmax) and runs
            # one token more than timed: its last token would end it in draw(), before a forward pass
            alone = batch.join(Request(tuple(prompt[0].tolist()), new_tokens + 1, ignore_eos=True))
            ours_tokens, theirs_tokens = [], []
            for _ in range(new_tokens):
                start = time.perf_counter()
                token = ours.logits[:, -1].argmax(-1, keepdim=True)  # (1, 1)
                ours = lm.model(token, cache=ours.cache, last_only=True)
                middle = time.perf_counter()
                their_token = theirs.logits[:, -1].argmax(-1, keepdim=True)
                theirs = hf(their_token, cache=cache, use_cache=True, logits_to_keep=1)
                last = time.perf_counter()
                batch.step()
                ours_s[r], theirs_s[r] = ours_s[r] + middle - start, theirs_s[r] + last - middle
                batched_s[r] += time.perf_counter() - last
                ours_tokens.append(int(token)), theirs_tokens.append(int(their_token))
    row = {"threads": threads, "prompt_tokens": prompt.shape[1], "new_tokens": new_tokens}
    for name, seconds in (("ours", ours_s[1:]), ("transformers", theirs_s[1:]), ("batched_alone", batched_s[1:])):
        row[f"{name}_tokens_per_s"], row[f"{name}_tokens_per_s_spread"] = summary([new_tokens / s for s in seconds], 1)
    row["ratio"], row["ratio_spread"] = summary([t / o for o, t in zip(ours_s[1:], theirs_s[1:])], 3)
    row["batched_alone_ratio"], row["batched_alone_ratio_spread"] = summary(
        [t / b for b, t in zip(batched_s[1:], theirs_s[1:])], 3)
    row["same_tokens"] = ours_tokens == theirs_tokens == [g.token for g in alone.steps[:new_tokens]]
    return row


def cache_row(model, context: int, threads: int, repeats: int) -> dict:
    """One decode step with the sequence already `context` tokens long: against the cache or from scratch."""
    ids = random_ids(context + 1, model.config.vocab_size)
    cache = model(ids[:, :-1], last_only=True).cache

    def cached():
        for _ in range(CACHED_STEPS):  # each from the same cache: ours returns a new one and leaves it alone
            model(ids[:, -1:], cache=cache, last_only=True)
    with torch_threads(threads):
        timings = time_interleaved({"cached": cached, "uncached": lambda: model(ids, last_only=True)},
                                   repeats=repeats, warmup=1)
    cached_s = [s / CACHED_STEPS for s in timings["cached"].seconds]
    row = {"context": context, "threads": threads}
    row["cached_ms"], row["cached_ms_spread"] = summary([1e3 * s for s in cached_s], 2)
    row["uncached_ms"], row["uncached_ms_spread"] = summary([1e3 * s for s in timings["uncached"].seconds], 1)
    row["ratio"], row["ratio_spread"] = summary([u / c for c, u in zip(cached_s, timings["uncached"].seconds)], 1)
    return row


def first_token_row(lm, hf, threads: int, repeats: int) -> dict:
    ids = random_ids(PREFILL_TOKENS, lm.config.vocab_size)
    candidates = {"ours": lambda: lm.model(ids, last_only=True).logits[:, -1].argmax(-1),
                  "transformers": lambda: hf(ids, logits_to_keep=1).logits[:, -1].argmax(-1)}
    with torch_threads(threads):
        timings = time_interleaved(candidates, repeats=repeats, warmup=1)
    row = {"prompt_tokens": PREFILL_TOKENS, "threads": threads}
    for name in candidates:
        row[f"{name}_s"], row[f"{name}_s_spread"] = summary(timings[name].seconds, 3)
    return row


def greedy_answers(lm, hf) -> tuple[list[int], list[int]]:
    """Each side's greedy answer to PROMPT as its users would get it: our stream, transformers' generate."""
    ids = prompt_ids(lm, PROMPT)[0]
    ours = [g.token for g in stream(lm, ids, AGREEMENT_TOKENS)]
    theirs = hf.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                         do_sample=False, max_new_tokens=AGREEMENT_TOKENS)[0, len(ids):].tolist()
    return ours, theirs


def class_requests(lm, new_tokens: int) -> list[Request]:
    """CLASS chat questions with the settings of SETTINGS in turn and seeds of their own, each running to
    new_tokens (past <|im_end|>) so that every request does the same work."""
    return [Request(tuple(prompt_ids(lm, f"Tell me about {topic}.")[0]), new_tokens, *SETTINGS[i % len(SETTINGS)],
                    seed=i, ignore_eos=True) for i, topic in enumerate(TOPICS[:CLASS])]


def served(lm, requests: list[Request], gap: float = 0.0, max_tokens: int = MAX_TOKENS) -> tuple[float, list, int]:
    """The requests through a fresh BatchServer, request i submitted at i * gap seconds: the seconds from the
    first submission to the last token, the tickets, and the most cache tokens the batch held."""
    server = BatchServer(lm, max_tokens=max_tokens)
    held, watching = [0], threading.Event()

    def watch():  # the batch's cache, read between steps
        while not watching.wait(0.02):
            held[0] = max(held[0], server.batch.tokens_held)
    threading.Thread(target=watch, daemon=True).start()
    start = time.perf_counter()
    tickets = []
    for i, request in enumerate(requests):
        time.sleep(max(0.0, start + i * gap - time.perf_counter()))
        tickets.append(server.submit(request, i))
    for ticket in tickets:
        ticket.done.wait()
    seconds = time.perf_counter() - start
    watching.set()
    assert all(t.state == "done" and len(t.steps) == t.request.max_new_tokens for t in tickets)
    return seconds, tickets, held[0]


def arrival_row(tickets: list, seconds: float, new_tokens: int, cap: int) -> dict:
    """Times to first token of requests arriving every ARRIVAL_GAP s, and how many decoded at once at most: at
    each first token, the requests that had begun and not yet ended."""
    first = sorted(t.first_token - t.submitted for t in tickets)
    in_flight = max(sum(u.first_token <= t.first_token < u.ended for u in tickets) for t in tickets)
    return {"gap_s": ARRIVAL_GAP, "new_tokens": new_tokens, "cache_cap_tokens": cap, "seconds": round(seconds, 1),
            "p50_first_token_s": round(statistics.median(first), 3),
            "p95_first_token_s": round(first[math.ceil(0.95 * len(first)) - 1], 3),
            "max_first_token_s": round(first[-1], 3), "most_decoding_at_once": in_flight}


def batching_rows(lm, new_tokens: int, rounds: int) -> dict:
    """Goal 5: the class together against one request alone, in turn; arrivals every ARRIVAL_GAP s; the batch
    sizes the SmolLM2 page draws."""
    requests = class_requests(lm, new_tokens)
    alone_s, together_s, held = [], [], 0
    with torch_threads(1):
        for r in range(rounds + 1):  # round 0 warms up and is left out
            one, _, _ = served(lm, requests[:1])
            everyone, tickets, most = served(lm, requests)
            if r:
                alone_s.append(one), together_s.append(everyone)
                held = max(held, most)
            print(f"  round {r}: one alone {one:.1f} s, {CLASS} together {everyone:.1f} s")
        same = [g.token for g in tickets[5].steps] == [g.token for g in served(lm, requests[5:6])[1][0].steps]
        arrivals_s, arriving, _ = served(lm, requests, gap=ARRIVAL_GAP)
        # long enough that the first are still decoding when the last arrives, past the app's cache cap
        long = [dataclasses.replace(r, max_new_tokens=LONG_TOKENS) for r in requests]
        long_s, staying, long_held = served(lm, long, gap=ARRIVAL_GAP, max_tokens=2 * MAX_TOKENS)
        sizes = time_batch_sizes(lm)
    row = {"requests": CLASS, "new_tokens": new_tokens, "settings": SETTINGS, "threads": 1,
           "prompt_tokens": [len(r.ids) for r in requests]}
    row["arrivals"] = arrival_row(arriving, arrivals_s, new_tokens, MAX_TOKENS)
    row["arrivals_32_in_flight"] = arrival_row(staying, long_s, LONG_TOKENS, 2 * MAX_TOKENS) | {
        "most_tokens_held": long_held}
    row["alone_tokens_per_s"], row["alone_tokens_per_s_spread"] = summary([new_tokens / s for s in alone_s], 1)
    row["together_tokens_per_s"], row["together_tokens_per_s_spread"] = summary(
        [CLASS * new_tokens / s for s in together_s], 1)
    row["ratio"], row["ratio_spread"] = summary([a * CLASS / t for a, t in zip(alone_s, together_s)], 2)
    row["sixth_request_same_tokens_as_alone"] = same
    bytes_per_token = cache_bytes_per_token(lm)
    row["cache"] = {"most_tokens_held": held, "mib": round(held * bytes_per_token / 2**20, 1),
                    "cap_tokens": MAX_TOKENS, "cap_mib": round(MAX_TOKENS * bytes_per_token / 2**20),
                    "cap_sequences": MAX_SEQUENCES, "bytes_per_token": bytes_per_token}
    row["sizes"] = [{"batch": t.batch, "step_seconds": [round(x, 5) for x in t.step_seconds],
                     "tokens_per_s": round(t.tokens_per_second, 1), "step_ms": round(1e3 * t.median_step, 1)}
                    for t in sizes]
    return row


def memory_mib() -> dict:
    out = subprocess.run([sys.executable, "-c", MEMORY_CODE], cwd=ROOT, capture_output=True, text=True, check=True)
    held, peak = (float(v) for v in out.stdout.split()[-2:])
    return {"rss_after_load_mib": round(held), "peak_rss_after_generating_mib": round(peak)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds of the class against one alone")
    # one thread by default, as torch_threads explains: here 2 were no faster (the decode step reads 0.5 GB of
    # weights, bound by memory bandwidth) and, with other work on the two cores, fell to a few tokens per second
    parser.add_argument("--threads", type=int, nargs="+", default=[1],
                        help="decode is timed on each; the rest on the first")
    args = parser.parse_args()
    lm = load()
    start = time.perf_counter()
    hf = load_transformers(lm.path)
    print(f"transformers loaded the same file in {time.perf_counter() - start:.1f} s")
    threads = args.threads[0]
    print(f"median (lowest-highest) of {args.repeats} interleaved rounds after 1 warm-up")
    with torch.no_grad():
        decode = [decode_row(lm, hf, n, args.new_tokens, args.repeats) for n in args.threads]
        for row in decode:
            print(f"decode, {row['threads']} thread(s), {row['new_tokens']} tokens after a {row['prompt_tokens']}-"
                  f"token prompt: ours {shown(row, 'ours_tokens_per_s', 1)} tok/s, transformers "
                  f"{shown(row, 'transformers_tokens_per_s', 1)} tok/s, ours/theirs {shown(row, 'ratio', 3)} "
                  f"(goal 1.0); same tokens: {row['same_tokens']}")
        cache = [cache_row(lm.model, context, threads, max(3, args.repeats - 2)) for context in CONTEXTS]
        for row in cache:
            print(f"one step at {row['context']} tokens, {threads} thread(s): cached {shown(row, 'cached_ms', 2)} "
                  f"ms, uncached {shown(row, 'uncached_ms', 1)} ms, {shown(row, 'ratio', 1)}x (goal 10x at 512)")
        first = first_token_row(lm, hf, threads, args.repeats)
        print(f"first token of a {PREFILL_TOKENS}-token prompt, {threads} thread(s): ours "
              f"{shown(first, 'ours_s', 3)} s, transformers {shown(first, 'transformers_s', 3)} s (goal 1 s)")
        ours_answer, their_answer = greedy_answers(lm, hf)
    memory = memory_mib()
    print(f"greedy answers to {PROMPT!r} identical: {ours_answer == their_answer} "
          f"({lm.tokenizer.decode(ours_answer)!r})")
    print(f"our model in a fresh process: {memory['rss_after_load_mib']} MiB resident after loading, peak "
          f"{memory['peak_rss_after_generating_mib']} MiB after a 32-token answer to a ~150-token prompt")
    print(f"continuous batching, 1 thread, {CLASS} requests of {args.new_tokens} tokens:")
    batched = batching_rows(lm, args.new_tokens, args.rounds)
    print(f"one alone through the batch {shown(decode[0], 'batched_alone_tokens_per_s', 1)} tok/s in the decode "
          f"row, {shown(decode[0], 'batched_alone_ratio', 3)}x transformers (goal 1.0)")
    print(f"{CLASS} together: {shown(batched, 'together_tokens_per_s', 1)} tok/s against one alone "
          f"{shown(batched, 'alone_tokens_per_s', 1)} tok/s, prompts read included: {shown(batched, 'ratio', 2)}x "
          f"(goal 8x); a sampled request's tokens as alone: {batched['sixth_request_same_tokens_as_alone']}")
    held = batched["cache"]
    for key in ("arrivals", "arrivals_32_in_flight"):
        arrivals = batched[key]
        print(f"arriving every {ARRIVAL_GAP} s, {arrivals['new_tokens']} tokens each, cache cap "
              f"{arrivals['cache_cap_tokens']:,}: time to first token p50 {arrivals['p50_first_token_s']} s, p95 "
              f"{arrivals['p95_first_token_s']} s (goal 2 s), worst {arrivals['max_first_token_s']} s; at most "
              f"{arrivals['most_decoding_at_once']} decoding at once")
    print(f"the batch's KV cache at most {held['most_tokens_held']:,} tokens ({held['mib']} MiB) of its cap "
          f"{held['cap_tokens']:,} ({held['cap_mib']} MiB)")
    print("batch sizes: " + ", ".join(f"{r['batch']}: {r['tokens_per_s']} tok/s ({r['step_ms']} ms a step)"
                                      for r in batched["sizes"]))
    met = {"decode_vs_transformers": decode[0]["ratio"] >= TARGETS["decode_vs_transformers"],
           "batched_alone_vs_transformers": decode[0]["batched_alone_ratio"]
           >= TARGETS["batched_alone_vs_transformers"],
           "together_vs_alone": batched["ratio"] >= TARGETS["together_vs_alone"],
           "arrivals_p95_first_token_s": all(batched[key]["p95_first_token_s"] <= TARGETS["arrivals_p95_first_token_s"]
                                             for key in ("arrivals", "arrivals_32_in_flight")),
           "arrivals_32_in_flight": batched["arrivals_32_in_flight"]["most_decoding_at_once"] == CLASS,
           "batch_cache_within_cap": held["most_tokens_held"] <= held["cap_tokens"],
           "batched_equals_alone": batched["sixth_request_same_tokens_as_alone"],
           "cached_vs_uncached_at_512": cache[0]["ratio"] >= TARGETS["cached_vs_uncached_at_512"],
           "first_token_s": first["ours_s"] <= TARGETS["first_token_s"],
           "greedy_agreement": ours_answer == their_answer}
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": f"CPU ({platform.machine()}), {os.cpu_count()} cores, timed on {args.threads} thread(s)",
        "versions": {"python": platform.python_version(), "torch": version("torch"),
                     "transformers": version("transformers"), "gguf": version("gguf")},
        "weights": f"{lm.path.name} dequantised to float32 on both sides",
        "timing": "median over interleaved rounds after one warm-up; *_spread is [lowest, highest] round; ratios "
                  "are taken round by round; decode times the decode phase only (prompt read beforehand), the two "
                  "sides alternating step by step; batching times each server run from its first submission to its "
                  "last token",
        "decode": decode, "cache": cache, "first_token": first, "memory": memory, "batching": batched,
        "greedy_agreement": {"prompt": PROMPT, "max_new_tokens": AGREEMENT_TOKENS,
                             "answer": lm.tokenizer.decode(ours_answer), "ours_ids": ours_answer,
                             "transformers_ids": their_answer, "identical": ours_answer == their_answer},
        "targets": TARGETS, "met": met,
    }
    return finish("llm", result, [name for name, ok in met.items() if not ok])


if __name__ == "__main__":
    sys.exit(main())
