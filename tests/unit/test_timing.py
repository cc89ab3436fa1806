"""Timing code: warmed up, repeated, interleaved; tested with fake clocks and recording candidates, never for speed."""
import pytest
import torch

from engine.efficiency.measure import Timing, time_interleaved, torch_threads
from engine.errors import InputError
from engine.transformer.kv_cache import StepTimings, generation_work, time_generation_steps
from engine.transformer.model import ModelConfig, TransformerLM
from engine.transformer.variants import VARIANTS, build_variant, decode_step_timings


class FakeClock:
    """Time moves only when a candidate says so, and the clock records when it was read."""

    def __init__(self):
        self.now, self.reads = 0.0, []

    def __call__(self) -> float:
        self.reads.append(self.now)
        return self.now


def test_warm_up_rounds_are_run_but_not_timed():
    clock, calls = FakeClock(), []

    def candidate(name, cost):
        def run():
            calls.append(name)
            clock.now += cost
        return run

    timed = time_interleaved({"a": candidate("a", 1.0), "b": candidate("b", 3.0)}, repeats=4, warmup=2, clock=clock)
    assert calls == ["a", "b"] * 6  # two untimed rounds, then four timed rounds, a and b in turn
    assert len(clock.reads) == 2 * 4 * 2  # a start and an end for each timed call only
    assert clock.reads[0] == 2 * (1.0 + 3.0)  # the first read comes after both warm-up rounds
    assert timed["a"].seconds == [1.0] * 4 and timed["b"].seconds == [3.0] * 4


def test_a_burst_of_load_falls_on_the_round_it_hits_not_on_one_candidate():
    clock, round_of_call = FakeClock(), iter(range(100))

    def run():  # every call costs 1, except the two calls of timed round 2 (calls 4 and 5: a burst)
        clock.now += 1.0 + (10.0 if next(round_of_call) in (4, 5) else 0.0)

    timed = time_interleaved({"a": run, "b": run}, repeats=5, warmup=0, clock=clock)
    assert timed["a"].seconds == timed["b"].seconds == [1.0, 1.0, 11.0, 1.0, 1.0]
    assert timed["a"].median == 1.0 and timed["a"].spread == (1.0, 11.0)  # the median ignores the burst


def test_timing_median_and_spread():
    t = Timing([0.3, 0.1, 0.2, 0.9])
    assert t.median == pytest.approx(0.25) and t.spread == (0.1, 0.9)
    with pytest.raises(InputError, match="at least 1"):
        time_interleaved({"a": lambda: None}, repeats=0)


def test_threads_are_set_for_the_block_and_restored_after_an_error():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError), torch_threads(1):
        assert torch.get_num_threads() == 1
        raise RuntimeError
    assert torch.get_num_threads() == before


def tiny_lm() -> TransformerLM:
    torch.manual_seed(0)
    return TransformerLM(ModelConfig(vocab_size=11, d_model=16, n_heads=2, n_layers=2, d_ff=32, max_seq_len=40)).eval()


def test_generation_steps_run_both_ways_in_turn_with_a_clock_that_counts_tokens_fed():
    """The fake clock advances by the tokens each forward pass is fed: the cached step costs 1, the uncached
    T0 + s, so the totals must equal the projections generation_work counts, divided by 2 L."""
    model, clock, fed = tiny_lm(), FakeClock(), []

    def count(module, args):
        fed.append(args[0].shape[1])
        clock.now += args[0].shape[1]

    model.register_forward_pre_hook(count)
    T0, n, repeats, warmup = 5, 4, 3, 2
    timings = time_generation_steps(model, torch.arange(T0), n, repeats, warmup, clock=clock)
    # the prompt, then per step (warmup + repeats) rounds of cached and uncached in turn, then the step kept
    per_step = [[1, T0 + s] * (warmup + repeats) + [1] for s in range(1, n + 1)]
    assert fed == [T0] + [tokens for step in per_step for tokens in step]
    assert [len(t.seconds) for t in timings.steps["with cache"]] == [repeats] * n
    assert timings.steps["without cache"][-1].seconds == [T0 + n] * repeats
    for use, name in ((True, "with cache"), (False, "without cache")):
        work = generation_work(model.config, T0, n, use)
        assert timings.totals(name) == [work.projected / (2 * model.config.n_layers)] * repeats
    assert timings.speedups() == [sum(range(T0 + 1, T0 + n + 1)) / n] * repeats


def test_totals_and_speedups_pair_the_runs_of_one_round():
    timings = StepTimings({"with cache": [Timing([1, 2, 9]), Timing([1, 2, 1])],
                           "without cache": [Timing([4, 8, 20]), Timing([6, 4, 10])]})
    assert timings.totals("with cache") == [2, 4, 10]
    assert timings.speedups() == [5, 3, 3]  # round 3's burst hit both, so its ratio stays in line


def test_decode_steps_interleave_the_variants_per_context():
    torch.manual_seed(0)
    modules = {name: build_variant(name, 16, 4, 2, 8).eval() for name in VARIANTS}
    calls, clock = [], FakeClock()
    for name, module in modules.items():  # records (variant, tokens in the cache) at every call
        module.register_forward_pre_hook(
            lambda m, args, name=name: calls.append((name, next(iter(args[1].values())).shape[-2])))
    timings = decode_step_timings(modules, 16, [3, 7], repeats=4, warmup=1, clock=clock)
    assert calls == [(name, context) for context in (3, 7) for _ in range(1 + 4) for name in VARIANTS]
    assert {name: [len(t.seconds) for t in series] for name, series in timings.items()} == \
        {name: [4, 4] for name in VARIANTS}
