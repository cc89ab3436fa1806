"""Honest measurements: peak tensor memory of a call, and timings warmed up, repeated and interleaved.

On CUDA the peak comes from the caching allocator (torch.cuda.max_memory_allocated). A CPU build has no
such counter, so every tensor an operator returns is counted at torch's dispatcher while it is alive,
one count per storage. That is the memory a call holds in tensors (S and P for naive attention), not the
process's RSS, and it leaves out scratch space an operator frees before returning.
"""
from __future__ import annotations

import gc
import statistics
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from engine.errors import InputError


class _LiveTensorBytes(TorchDispatchMode):
    """Counts the bytes of storages created inside the mode while they are alive, and the highest sum."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """torch wraps a mode's __torch_dispatch__ to keep torch.compile out of it, which imports torch._dynamo at
        the first call (2.5 s of a cold server's start, ui/server.py); nothing measured here is ever compiled."""
        return False

    def __init__(self):
        super().__init__()
        self.live = self.peak = 0
        self._owners: dict[int, int] = {}  # storage address -> tensors alive on it

    def _release(self, address: int, nbytes: int) -> None:
        self._owners[address] -= 1
        if self._owners[address] == 0:
            del self._owners[address]
            self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs = {t.untyped_storage().data_ptr() for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
        for tensor in out if isinstance(out, tuple | list) else (out,):
            if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cpu":
                continue
            storage = tensor.untyped_storage()
            address, nbytes = storage.data_ptr(), storage.nbytes()
            if nbytes == 0 or (address in inputs and address not in self._owners):
                continue  # a view or an in-place result on a tensor made before the call allocates nothing
            if address not in self._owners:  # a new storage; views of it keep it alive but count once
                self._owners[address] = 0
                self.live += nbytes
                self.peak = max(self.peak, self.live)
            self._owners[address] += 1
            weakref.finalize(tensor, self._release, address, nbytes)
        return out


def peak_memory(fn: Callable[[], object], device: str = "cpu") -> int:
    """Bytes held in tensors created during fn() at its peak (inputs made before the call not counted)."""
    if device.startswith("cuda"):
        gc.collect()  # tensors waiting in cycles would still count in memory_allocated()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        fn()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before
    with _LiveTensorBytes() as mode:  # in the caller's grad mode: a backward pass is measured with its saved tensors
        fn()
    return mode.peak


@dataclass(frozen=True)
class Timing:
    seconds: list[float]  # every repeat, in the order run

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def spread(self) -> tuple[float, float]:
        """The fastest and slowest repeat."""
        return min(self.seconds), max(self.seconds)


# A spin queued on the GPU ahead of each timed call, about 1 ms at Hopper's 1.98 GHz: while the GPU spins, the host
# queues the call behind it, so the start event fires with the call's first kernel already waiting
LAUNCH_COVER_CYCLES = 2_000_000
_THREAD_COUNT = threading.Lock()  # torch_threads' blocks, one at a time per process


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run torch's CPU operators on n threads inside the block, then go back to the count before.

    On a shared machine with two cores, an operator split over two threads waits for both to be scheduled, and
    another process holding one core stretches a 1 ms step to 100 ms: one thread times the work, not the
    scheduler. torch's count is process-wide, so other sessions' work in the meantime runs on n threads too, and
    two blocks at once (two sessions' threads) take turns: interleaved, one could restore the other's count."""
    with _THREAD_COUNT:
        before = torch.get_num_threads()
        torch.set_num_threads(n)
        try:
            yield
        finally:
            torch.set_num_threads(before)


def own_thread_count() -> None:
    """Give the calling thread torch's thread count. The count is process-wide, but the matrix library (MKL, over
    OpenMP) reads each thread's own OpenMP setting, which a thread started later has at its default, every core:
    on two cores a (32, 4096) x (4096, 4096) product took 43 ms in a new thread against 21 ms in the main one,
    after torch.set_num_threads(1), and 23 ms in the new thread once it had called this."""
    torch.set_num_threads(torch.get_num_threads())


def time_interleaved(candidates: dict[str, Callable[[], object]], repeats: int = 5, warmup: int = 1,
                     device: str = "cpu", clock: Callable[[], float] = time.perf_counter,
                     cover_launch: bool = True) -> dict[str, Timing]:
    """Time every candidate `repeats` times in round robin after `warmup` untimed rounds, so a burst of load
    on a shared machine falls on all of them rather than on one. On CUDA, events time each call on the GPU
    (see _cuda_events for what that includes, and what cover_launch=False leaves in)."""
    if repeats < 1:
        raise InputError("repeats must be at least 1")

    order: Sequence[str] = list(candidates)
    for _ in range(warmup):
        for name in order:
            candidates[name]()
    if device.startswith("cuda"):
        return _cuda_events(candidates, order, repeats, cover_launch)
    seconds: dict[str, list[float]] = {name: [] for name in order}
    for _ in range(repeats):
        for name in order:
            start = clock()
            candidates[name]()
            seconds[name].append(clock() - start)
    return {name: Timing(s) for name, s in seconds.items()}


def _cuda_events(candidates: dict[str, Callable[[], object]], order: Sequence[str], repeats: int,
                 cover_launch: bool = True) -> dict[str, Timing]:
    """The GPU's clock between two events recorded around each call. Nothing synchronises between calls, so the
    host launches ahead and the GPU runs the calls back to back: no gap between calls is counted. Inside one
    call the span includes every idle gap between its own kernels while the GPU waits for the host's next
    launch: kernel time for one fused kernel, kernel time plus launch gaps for a launch-bound loop of small
    kernels (the torch tiled method), which is what that method costs.

    A call that follows a host-bound one (that tiled loop) finds the GPU idle, and its start event would fire
    before the host has even queued its first kernel, counting the host's own launch path: about 0.24 ms of
    Python for our Triton kernel on an H200, which put it at 0.80-1.06x SDPA flash at N = 2048 instead of
    1.36-1.48x (issue 48's "dip", benchmarks/results/flash_dip.json).
    So a spin of LAUNCH_COVER_CYCLES is queued before each start event (cover_launch): the host queues the call
    while the GPU spins, and the span starts with the call's first kernel waiting."""
    events = {name: [] for name in order}
    torch.cuda.synchronize()
    for _ in range(repeats):
        for name in order:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            if cover_launch:
                torch.cuda._sleep(LAUNCH_COVER_CYCLES)
            start.record()
            candidates[name]()
            end.record()
            events[name].append((start, end))
    torch.cuda.synchronize()
    return {name: Timing([start.elapsed_time(end) / 1e3 for start, end in pairs]) for name, pairs in events.items()}
