"""Tiled FlashAttention in torch against naive attention, torch SDPA and autograd; the traffic model by hand;
the peak-memory counter and the interleaved timer."""
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from engine.efficiency import traffic
from engine.efficiency.compiled import SHARED_MEMORY
from engine.efficiency.flash import TileStep, flash_attention, flash_backward, flash_forward, naive_attention, tile_kind
from engine.efficiency.measure import peak_memory, time_interleaved
from engine.errors import InputError

# Random shapes, with lengths that are not multiples of the blocks: (batch, heads, N, d, B_r, B_c)
SHAPES = [(1, 1, 1, 4, 4, 4), (2, 3, 37, 16, 8, 5), (1, 2, 64, 32, 16, 16), (3, 1, 50, 8, 64, 7), (1, 1, 129, 64, 32, 64)]


def qkv(shape, dtype=torch.float32, seed=0, grad=False):
    B, H, N, d = shape[:4]
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(B, H, N, d, generator=g, dtype=dtype).requires_grad_(grad) for _ in range(3)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_tiled_forward_equals_naive_and_sdpa(shape, causal):
    Q, K, V = qkv(shape)
    O, L = flash_forward(Q, K, V, causal, B_r=shape[4], B_c=shape[5])
    # float32: each output is a convex mix of values, summed in a different order; 1e-5 is the bound
    torch.testing.assert_close(O, naive_attention(Q, K, V, causal), atol=1e-5, rtol=0)
    torch.testing.assert_close(O, F.scaled_dot_product_attention(Q, K, V, is_causal=causal), atol=1e-5, rtol=0)
    S = Q @ K.transpose(-2, -1) / math.sqrt(shape[3])
    if causal:
        S = S.masked_fill(~torch.ones(S.shape[-2:], dtype=torch.bool).tril(), -math.inf)
    torch.testing.assert_close(L, torch.logsumexp(S, dim=-1), atol=1e-5, rtol=0)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", SHAPES[1:])
def test_tiled_backward_equals_autograd_through_naive(shape, causal):
    Q, K, V = qkv(shape, torch.float64, seed=1, grad=True)
    dO = torch.randn(*shape[:3], shape[3], dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    ours = torch.autograd.grad(flash_attention(Q, K, V, causal, shape[4], shape[5]), (Q, K, V), dO)
    reference = torch.autograd.grad(naive_attention(Q, K, V, causal), (Q, K, V), dO)
    for a, b in zip(ours, reference):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=0)  # float64 throughout


def test_backward_uses_only_the_saved_log_sum_exp():
    Q, K, V = qkv((1, 1, 20, 8), torch.float64)
    O, L = flash_forward(Q, K, V, B_r=6, B_c=4)
    dO = torch.ones_like(O)
    wrong_L = L + 0.1  # P = e^{S - L} is recomputed from L: a wrong L must change every gradient
    good, bad = flash_backward(Q, K, V, O, dO, L, B_r=6, B_c=4), flash_backward(Q, K, V, O, dO, wrong_L, B_r=6, B_c=4)
    assert all((g - b).abs().max() > 1e-3 for g, b in zip(good, bad))


def test_causal_tiles_are_classified_and_skipped():
    # N = 8, B_r = 4, B_c = 2: block row 0 holds queries 0-3; key blocks 0-1 (keys 0-3) cross or precede it
    kinds = [[tile_kind(i, j, 4, 2, 8, True) for j in range(4)] for i in range(2)]
    assert kinds == [["diagonal", "diagonal", "skipped", "skipped"], ["full", "full", "diagonal", "diagonal"]]
    assert all(tile_kind(i, j, 4, 2, 8, False) == "full" for i in range(2) for j in range(4))
    record: list[TileStep] = []
    Q, K, V = qkv((1, 1, 8, 4))
    flash_forward(Q, K, V, causal=True, B_r=4, B_c=2, record=record)
    assert [(s.i, s.j) for s in record] == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (1, 3)]
    # after the last tile of a block row, m and l are that row's softmax statistics
    S = (Q @ K.transpose(-2, -1))[0, 0] / 2
    S = S.masked_fill(~torch.ones(8, 8, dtype=torch.bool).tril(), -math.inf)
    torch.testing.assert_close(record[-1].m, S[4:].amax(-1))
    torch.testing.assert_close(record[-1].l, torch.exp(S[4:] - S[4:].amax(-1, keepdim=True)).sum(-1))


def test_bad_shapes_and_blocks_are_refused():
    Q, K, V = qkv((1, 1, 8, 4))
    with pytest.raises(InputError, match="block sizes"):
        flash_forward(Q, K, V, B_r=0)
    with pytest.raises(InputError, match="as many queries"):
        flash_forward(Q[..., :5, :], K, V, causal=True)
    with pytest.raises(ValueError, match="do not fit"):
        naive_attention(Q, K[..., :3], V)


def test_traffic_model_by_hand():
    # N = 4, d = 2, blocks of 2, one byte per element. Naive: read Q, K (16), S (16), P and V (16 + 8);
    # write S (16), P (16), O (8).
    naive = traffic.naive_traffic(4, 2, element_bytes=1)
    assert (naive.read, naive.written) == (16 + 16 + 24, 16 + 16 + 8)
    # Tiled, not causal: Q once (8); 2 query blocks × 2 key blocks, each tile reads K_j and V_j (2 × 2 × 2 = 8)
    # -> 8 + 4 × 8 = 40; writes O (8) and L (4 float32 numbers = 16 bytes).
    tiled = traffic.tiled_traffic(4, 2, 2, 2, element_bytes=1)
    assert (tiled.read, tiled.written) == (40, 8 + 16)
    # causal skips tile (0, 1): 8 + 3 × 8 = 32
    assert traffic.tiled_traffic(4, 2, 2, 2, causal=True, element_bytes=1).read == 32
    # last key block shorter: N = 5, B_c = 2 -> keys 2, 2, 1 per block, for each of 3 query blocks
    assert traffic.tiled_traffic(5, 2, 2, 2, element_bytes=1).read == 10 + 3 * (2 * 2 * (2 + 2 + 1))


def test_traffic_grows_as_the_notes_say():
    for N in (1024, 4096):
        naive, tiled = traffic.naive_traffic(N, 64), traffic.tiled_traffic(N, 64, 128, 64)
        assert naive.total > 4 * N * N * 2  # Θ(N²): S and P written and read
        # K and V re-read once per query block: 2 N² d / B_r elements dominate
        assert tiled.read == pytest.approx((N * 64 + 2 * N * N * 64 / 128) * 2)
    assert traffic.sram_bytes(64, 64, 64) == (64 * 64 * 3) * 2 + (64 * 64 + 64 * 64 + 128) * 4
    with pytest.raises(InputError, match="KiB of SRAM"):
        traffic.check_fits(256, 256, 128, sram=228 * 1024)


def test_the_traffic_model_is_held_to_the_shared_memory_one_block_may_have():
    """Issue 44: 228, 164 and 100 KiB are each SM's largest shared-memory carve-out, not its SRAM (the A100 has
    192 KB); a block may have 1 KiB less, and the FlashAttention page's model is held to that."""
    kib = {name: (shared.per_sm // 1024, shared.per_block // 1024) for name, shared in SHARED_MEMORY.items()}
    assert kib == {"H100": (228, 227), "A100": (164, 163), "RTX 4090": (100, 99)}
    with pytest.raises(InputError, match="more than the 99 KiB of shared memory a block may have"):
        traffic.check_fits(256, 256, 128, SHARED_MEMORY["RTX 4090"].per_block)


@pytest.mark.parametrize("N,B_r,B_c", [(37, 8, 5), (64, 16, 16), (50, 64, 7), (9, 2, 4)])
def test_keys_loaded_counts_the_tiles_the_forward_computes(N, B_r, B_c):
    for causal in (False, True):
        record: list[TileStep] = []
        Q, K, V = qkv((1, 1, N, 2))
        flash_forward(Q, K, V, causal, B_r, B_c, record=record)
        assert traffic.keys_loaded(N, B_r, B_c, causal) == sum(min(B_c, N - s.j * B_c) for s in record)


def test_peak_memory_does_not_import_torch_dynamo():
    """A cold server imports what the pages use before the first page (ui/server.py); torch._dynamo, 2.5 s of it,
    is not among them since our dispatch mode opts out of torch.compile's guard."""
    probe = ("import sys, torch; from engine.efficiency.measure import peak_memory; "
             "assert peak_memory(lambda: torch.ones(10) * 2) == 80; print('torch._dynamo' in sys.modules)")
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[2])
    assert ran.stdout.strip() == "False"


def test_peak_memory_counts_live_tensors():
    assert peak_memory(lambda: torch.ones(1000)) == 4000
    assert peak_memory(lambda: [torch.ones(10).view(2, 5) for _ in range(1)]) == 40  # a view adds nothing

    def two_then_one():
        a = torch.ones(1000)
        b = a * 2  # both alive: 8000
        del a
        return b + 1  # a is gone before c is made: 8000 still

    assert peak_memory(two_then_one) == 8000
    N, d, block = 1024, 64, 64
    Q, K, V = qkv((1, 1, N, d))
    naive = peak_memory(lambda: naive_attention(Q, K, V))
    tiled = peak_memory(lambda: flash_forward(Q, K, V, B_r=block, B_c=block))
    assert naive >= 2 * N * N * 4  # S and P, float32
    # O and L, plus a handful of tile-sized temporaries (S, P, the accumulator...), nothing of size N²
    assert tiled <= N * d * 4 + N * 4 + 8 * block * block * 4


def test_timer_warms_up_repeats_and_interleaves():
    calls = []
    ticks = iter(range(1000))
    result = time_interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeats=3,
                              warmup=2, clock=lambda: float(next(ticks)))
    assert calls == ["a", "b"] * 5  # two untimed rounds, then three timed rounds in turn
    assert [len(t.seconds) for t in result.values()] == [3, 3]
    assert result["a"].median == 1.0 and result["a"].spread == (1.0, 1.0)
    with pytest.raises(InputError):
        time_interleaved({"a": lambda: None}, repeats=0)
