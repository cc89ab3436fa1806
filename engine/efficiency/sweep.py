"""Attention timed and measured against N: naive, tiled, torch SDPA (each backend on a GPU) and our kernel.

One function serves the live timing page and `python -m benchmarks.flash`, so both measure the same way:
interleaved, warmed-up repeats reported as median and spread (engine.efficiency.measure), peak memory of
each method measured separately, and TFLOP/s counted as 4·B·H·N²·d (QK^T and PV, two FLOPs per
multiply-add), halved for causal attention, whose upper triangle needs no work. A forward and backward pass
counts 3.5 times that, as FlashAttention's benchmarks do: the backward's five N²·d products (S recomputed,
dV, dP, dQ, dK) against the forward's two. Our Triton backward forms seven (engine.efficiency.triton_flash), so
its TFLOP/s understate the arithmetic it does.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F

from engine.efficiency.flash import flash_attention, flash_forward, naive_attention
from engine.efficiency.launches import BackwardLaunch, ForwardLaunch
from engine.efficiency.measure import peak_memory, time_interleaved
from engine.errors import InputError

NAIVE = "naive (S, P in memory)"
TILED = "tiled (torch, ours)"
SDPA = "torch SDPA"
TRITON = "Triton kernel (ours)"
LENGTHS = tuple(2**k for k in range(8, 15))  # N from 256 to 16k
# on a GPU, each of torch's SDPA backends on its own: flash is FlashAttention-2; cuDNN's fused attention is the
# faster peer on Hopper (FlashAttention-3 paper, fig. 5), so it is the bar there
SDPA_FLASH, SDPA_CUDNN = "SDPA flash", "SDPA cuDNN"
SDPA_BACKENDS = {SDPA_FLASH: "FLASH_ATTENTION", SDPA_CUDNN: "CUDNN_ATTENTION",
                 "SDPA memory-efficient": "EFFICIENT_ATTENTION", "SDPA math": "MATH"}
FORWARD, FORWARD_BACKWARD = "forward", "forward+backward"  # what one timed call runs
MODES = (FORWARD, FORWARD_BACKWARD)
BACKWARD_OVER_FORWARD_FLOPS = 2.5  # five N²·d products against two
# each method's output (and gradients) against torch SDPA's in the same dtype, ‖method − SDPA‖ / ‖SDPA‖: bf16
# rounding alone gives a few 1e-3, a wrong mask or a wrong statistic tenths
AGREEMENT = 2e-2


def attention_flops(batch: int, heads: int, N: int, d: int, causal: bool, mode: str = FORWARD) -> float:
    """4·B·H·N²·d for QK^T and PV, halved when causal; 3.5 times that for a forward and backward pass."""
    forward = 4 * batch * heads * N * N * d / (2 if causal else 1)
    return forward * (1 + BACKWARD_OVER_FORWARD_FLOPS) if mode == FORWARD_BACKWARD else forward


def naive_bytes(batch: int, heads: int, N: int, dtype: torch.dtype = torch.float32, causal: bool = False) -> int:
    """What naive_attention holds at its peak, counted from its code, statement by statement. S is (B, H, N, N)
    in the accumulator's dtype (float32, float64 for float64 inputs): two such arrays are alive while it is
    scaled, masked (causal: with the inverted (N, N) mask, one for all heads) and softmaxed into P. A narrower
    dtype adds the matmul's own S beside its cast, then P cast back for PV beside S and P: 10 bytes a score in
    bfloat16, 8 in float32."""
    scores = batch * heads * N * N
    item, accumulator = dtype.itemsize, torch.promote_types(dtype, torch.float32).itemsize
    held = [2 * accumulator * scores + (N * N if causal else 0)]
    if item < accumulator:
        held.append((2 * accumulator + item) * scores)
    return max(held)


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def check_naive_fits(batch: int, heads: int, N: int, budget: int, dtype: torch.dtype = torch.float32,
                     causal: bool = False) -> None:
    need = naive_bytes(batch, heads, N, dtype, causal)
    if need > budget:
        raise InputError(f"naive attention at N = {N:,} needs {format_bytes(need)} for S and P, more than the "
                         f"{format_bytes(budget)} allowed here; the tiled and fused runs go on")


@dataclass
class Point:
    """One method at one N: a row of the results file."""

    method: str
    N: int
    d: int
    causal: bool
    dtype: str
    batch: int
    heads: int
    ms: float | None  # median; None when the method was refused
    ms_min: float | None
    ms_max: float | None
    tflops: float | None
    peak_mib: float | None
    note: str = ""
    mode: str = FORWARD
    error: float | None = None  # ‖O − O_SDPA‖ / ‖O_SDPA‖ (the largest over O, dQ, dK, dV), checked before timing


def _sdpa(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool) -> torch.Tensor:
    return F.scaled_dot_product_attention(Q, K, V, is_causal=causal)


def sdpa_backend(name: str) -> Callable:
    """SDPA through one backend alone (a key of SDPA_BACKENDS), called as (Q, K, V, causal)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backend = getattr(SDPBackend, SDPA_BACKENDS[name])

    def run(Q, K, V, causal):
        with sdpa_kernel(backend):
            return _sdpa(Q, K, V, causal)
    return run


def methods(device: str, block: int, kernel: ForwardLaunch | None = None, dtype: torch.dtype = torch.bfloat16,
            backward_kernel: BackwardLaunch | None = None) -> dict[str, Callable]:
    """What can be timed here: on CPU naive, tiled and SDPA; on CUDA also SDPA's backends and, in float16 or
    bfloat16, our kernels (with the launches given, else their defaults). Each returns O, with autograd behind it
    where gradients are asked for."""
    found: dict[str, Callable] = {
        NAIVE: naive_attention,
        TILED: lambda Q, K, V, causal: (flash_attention(Q, K, V, causal, block, block) if torch.is_grad_enabled()
                                        else flash_forward(Q, K, V, causal, block, block)[0]),
    }
    if device.startswith("cuda"):
        from engine.efficiency import triton_flash  # imports triton (a third of a second): only where it can run

        found |= {name: sdpa_backend(name) for name in SDPA_BACKENDS}
        if triton_flash.available() and dtype in triton_flash.DTYPES:
            found[TRITON] = lambda Q, K, V, causal: triton_flash.triton_flash_attention(Q, K, V, causal, kernel,
                                                                                        backward_kernel)
    else:
        found[SDPA] = _sdpa
    return found


def relative_error(ours: Sequence[torch.Tensor], reference: Sequence[torch.Tensor]) -> float:
    """The largest ‖a − b‖ / ‖b‖ over pairs of tensors (O, and dQ, dK, dV where gradients were taken)."""
    return max(((a.float() - b.float()).norm() / b.float().norm()).item() for a, b in zip(ours, reference))


def first_line(error: BaseException, length: int = 160) -> str:
    """An error's first line, cut to length: what a refused method's note says."""
    return (str(error).splitlines() or [type(error).__name__])[0][:length]


def measure(N: int, d: int, causal: bool, chosen: Iterable[str], device: str = "cpu",
            dtype: torch.dtype = torch.float32, batch: int = 1, heads: int = 1, block: int = 256,
            naive_budget: int = 256 * 2**20, repeats: int = 5, kernel: ForwardLaunch | None = None,
            mode: str = FORWARD, backward_kernel: BackwardLaunch | None = None,
            cover_launch: bool = True) -> list[Point]:
    """Every chosen method at one N: timed in turn (interleaved), then each one's peak memory on its own.
    mode FORWARD_BACKWARD times O and then dQ, dK, dV from a random dO through autograd.

    A method that cannot run (naive past its memory budget, an error from SDPA's backend for this shape or
    dtype) comes back with ms None and the reason in its note, and the others go on. Each method is first
    checked against torch SDPA's default on the same inputs (AGREEMENT) and refused if it disagrees, so every
    time in a row is the time of a right answer.
    """
    backward = mode == FORWARD_BACKWARD
    g = torch.Generator(device=device).manual_seed(N)
    Q, K, V, dO = (torch.randn(batch, heads, N, d, generator=g, device=device, dtype=dtype) for _ in range(4))
    for t in (Q, K, V):
        t.requires_grad_(backward)
    available = methods(device, block, kernel, dtype, backward_kernel)
    # the naive methods' budget covers S and P; autograd keeps them for the backward, which adds dP and dS
    budget = naive_budget // 2 if backward else naive_budget
    runnable, refused = {}, {}
    for name in chosen:
        if name not in available:
            refused[name] = "not available on this machine"
            continue
        if name in (NAIVE, "SDPA math"):
            try:
                check_naive_fits(batch, heads, N, budget, dtype, causal)
            except ValueError as error:
                refused[name] = str(error)
                continue
        runnable[name] = available[name]

    def call(fn: Callable) -> tuple[torch.Tensor, ...]:
        O = fn(Q, K, V, causal)
        return (O, *torch.autograd.grad(O, (Q, K, V), dO)) if backward else (O,)

    points, errors = [], {}
    with torch.set_grad_enabled(backward):
        reference = call(_sdpa)
        for name, fn in list(runnable.items()):  # a backend that rejects this shape is refused, not fatal
            try:
                result = call(fn)
                errors[name] = relative_error(result, reference)
                del result
                if errors[name] > AGREEMENT:
                    raise ArithmeticError(f"disagrees with torch SDPA: relative error {errors[name]:.2e}")
            except Exception as error:  # out of memory, a backend without a kernel for this shape, a compile error
                refused[name] = f"failed: {first_line(error)}"
                del runnable[name]
        del reference
        # the probe call above was each method's warm-up
        timings = time_interleaved({name: (lambda fn=fn: call(fn)) for name, fn in runnable.items()},
                                   repeats=repeats, warmup=0, device=device, cover_launch=cover_launch)
        flops = attention_flops(batch, heads, N, d, causal, mode)
        for name, timing in timings.items():
            peak = peak_memory(lambda fn=runnable[name]: call(fn), device)
            low, high = timing.spread
            points.append(Point(name, N, d, causal, str(dtype).removeprefix("torch."), batch, heads,
                                timing.median * 1e3, low * 1e3, high * 1e3, flops / timing.median / 1e12,
                                peak / 2**20, mode=mode, error=errors[name]))
    for name, reason in refused.items():
        points.append(Point(name, N, d, causal, str(dtype).removeprefix("torch."), batch, heads,
                            None, None, None, None, None, reason, mode, errors.get(name)))
    return points


def measure_lengths(lengths: Iterable[int], d: int, causal: bool, chosen: Sequence[str], device: str = "cpu",
                    dtype: torch.dtype = torch.float32, block: int = 256, naive_budget: int = 256 * 2**20,
                    repeats: int = 5, before: Callable[[int, int], bool] | None = None) -> list[dict] | None:
    """`measure` at each N in turn, one head, as rows of the results file. before(k, N), if given, is called
    ahead of the k-th length (to report progress) and may return False to stop: then None."""
    rows = []
    for k, N in enumerate(lengths):
        if before is not None and not before(k, N):
            return None
        rows += as_rows(measure(N, d, causal, chosen, device, dtype, block=block, naive_budget=naive_budget,
                                repeats=repeats))
    return rows


def peak_memory_by_length(lengths: Iterable[int], d: int, causal: bool, B_r: int, B_c: int) -> dict[str, list[float]]:
    """MiB held in tensors at the peak of naive and tiled attention (fp32, one head) at each N, on CPU."""
    peaks: dict[str, list[float]] = {NAIVE: [], TILED: []}
    for N in lengths:
        Q, K, V = (torch.randn(1, 1, N, d, generator=torch.Generator().manual_seed(N)) for _ in range(3))
        peaks[NAIVE].append(peak_memory(lambda: naive_attention(Q, K, V, causal)) / 2**20)
        peaks[TILED].append(peak_memory(lambda: flash_forward(Q, K, V, causal, B_r, B_c)) / 2**20)
    return peaks


def as_rows(points: Iterable[Point]) -> list[dict]:
    return [asdict(p) for p in points]


def tokens_per_batch(N: int, total_tokens: int = 16384) -> int:
    """FlashAttention's benchmark shape: batch × N fixed at 16k tokens, so every N does similar work per FLOP."""
    return max(1, total_tokens // N)


def heads_for(d: int, d_model: int = 2048) -> int:
    return max(1, d_model // d)
