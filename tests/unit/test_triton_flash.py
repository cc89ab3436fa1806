"""Our Triton kernels against an fp32 reference, under the interpreter on CPU (compiled on a GPU).

Correctness rule of FlashAttention's own tests: max |ours − fp32 reference| ≤ 2 × max |torch in the same
dtype − fp32 reference|, where "torch in the same dtype" is plain attention computed by torch ops in that
dtype (S = QK^T rounded to it, softmax in float32, P rounded before PV), as their `attention_ref` does; for
the backward, autograd through it.
"""
import inspect
import math
from dataclasses import replace

import pytest
import torch

CUDA = torch.cuda.is_available()  # without one, tests/conftest.py has set TRITON_INTERPRET=1
pytest.importorskip("triton", reason="triton is not installed (requirements-dev.txt installs it)")

from engine.efficiency import sweep, triton_flash  # noqa: E402
from engine.efficiency.flash import flash_backward, flash_forward, naive_attention  # noqa: E402
from engine.efficiency.triton_flash import (  # noqa: E402
    check_backward_blocks,
    check_settings,
    default_backward_launch,
    default_launch,
    triton_attention,
    triton_attention_backward,
    triton_flash_attention,
)
from engine.errors import InputError

DEVICE = "cuda" if CUDA else "cpu"
# (N, BLOCK_M, BLOCK_N): a length that is not a multiple of either block, and one that is
CASES = [(40, 16, 16), (64, 32, 16)] if not CUDA else [(1000, 64, 32), (1024, 128, 64)]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("N,block_m,block_n", CASES)
def test_kernel_is_within_twice_torchs_own_error(N, block_m, block_n, head_dim, dtype, causal):
    g = torch.Generator().manual_seed(N + head_dim)
    Q, K, V = (torch.randn(2, 3, N, head_dim, generator=g).to(DEVICE, dtype) for _ in range(3))
    O, L = triton_attention(Q, K, V, causal, replace(default_launch(head_dim), block_m=block_m, block_n=block_n))
    reference = naive_attention(Q.float(), K.float(), V.float(), causal)
    torch_error = (naive_attention(Q, K, V, causal).float() - reference).abs().max()
    ours_error = (O.float() - reference).abs().max()
    assert ours_error <= 2 * torch_error, f"ours {ours_error:.2e}, torch in {dtype} {torch_error:.2e}"
    S = Q.float() @ K.float().transpose(-2, -1) / math.sqrt(head_dim)
    if causal:
        S = S.masked_fill(~torch.ones(N, N, dtype=torch.bool, device=DEVICE).tril(), -math.inf)
    torch.testing.assert_close(L, torch.logsumexp(S, dim=-1), atol=1e-4, rtol=0)  # L in float32 from fp32 sums


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("N,block_m,block_n", CASES)
def test_backward_is_within_twice_torchs_own_error(N, block_m, block_n, head_dim, dtype, causal):
    g = torch.Generator().manual_seed(N + head_dim + 1)
    Q, K, V, dO = (torch.randn(2, 3, N, head_dim, generator=g).to(DEVICE, dtype) for _ in range(4))
    inputs = [t.clone().requires_grad_() for t in (Q, K, V)]
    # few queries against many keys for dK, dV; the converse for dQ (default_backward_launch's shape)
    backward = replace(default_backward_launch(head_dim), block_m1=block_n, block_n1=block_m, block_m2=block_m,
                       block_n2=block_n)
    forward = replace(default_launch(head_dim), block_m=block_m, block_n=block_n)
    O = triton_flash_attention(*inputs, causal, forward, backward)
    ours = torch.autograd.grad(O, inputs, dO)
    exact = [t.float().requires_grad_() for t in (Q, K, V)]
    reference = torch.autograd.grad(naive_attention(*exact, causal), exact, dO.float())
    same_dtype = torch.autograd.grad(naive_attention(*inputs, causal), inputs, dO)
    O32, L32 = flash_forward(*exact, causal, block_m, block_n)
    tiled = flash_backward(*(t.detach() for t in exact), O32, dO.float(), L32, causal, block_m, block_n)
    for name, a, torch_grad, want, tiled_grad in zip("QKV", ours, same_dtype, reference, tiled):
        torch_error = (torch_grad.float() - want).abs().max()
        assert (a.float() - want).abs().max() <= 2 * torch_error, f"d{name} against autograd in float32"
        assert (a.float() - tiled_grad).abs().max() <= 2 * torch_error, f"d{name} against the torch tiled backward"


def test_backward_refuses_what_the_forward_refuses_and_blocks_that_split_the_diagonal():
    Q = torch.randn(1, 1, 32, 48).to(DEVICE, torch.float16)  # head dim 48
    L = torch.zeros(1, 1, 32, device=DEVICE)
    with pytest.raises(InputError, match="head dim 48"):
        triton_attention_backward(Q, Q, Q, Q, Q, L)
    Q = torch.randn(1, 1, 32, 64, device=DEVICE)
    with pytest.raises(InputError, match="float16 or bfloat16"):
        triton_attention_backward(Q, Q, Q, Q, Q, L)
    with pytest.raises(ValueError, match="share one shape"):
        triton_attention_backward(Q, Q, Q, Q, Q[..., :16, :], L)
    with pytest.raises(InputError, match="BLOCK_N1 = 24"):
        check_backward_blocks(16, 24, 16, 16, False)
    with pytest.raises(InputError, match="BLOCK_M1 = 32 to divide BLOCK_N1 = 16"):
        check_backward_blocks(32, 16, 16, 16, True)
    check_backward_blocks(32, 16, 16, 32, False)  # without the mask, any two blocks do


@pytest.mark.parametrize("settings,message", [
    ((48, torch.float16, 16, 16, False), "head dim 48"),
    ((64, torch.float32, 16, 16, False), "float16 or bfloat16"),
    ((64, torch.float16, 24, 16, False), "powers of two"),
    ((64, torch.float16, 16, 8, False), "powers of two from 16"),
    ((64, torch.float16, 16, 32, True), "divide BLOCK_M"),
])
def test_unsupported_settings_are_refused_with_the_reason(settings, message):
    with pytest.raises(InputError, match=message):
        check_settings(*settings)


def test_the_backward_runs_seven_products_where_the_reported_tflops_count_five():
    """The module's header: the dK, dV kernel forms S, dV, dP and dK (4 products of N²·d), the dQ kernel S and dP
    again and dQ (3), where FlashAttention-2's Algorithm 2 forms 5; with the forward's 2, a forward and backward
    pass runs 4.5 times the forward's products, and sweep's TFLOP/s count 3.5 times."""
    products = {name: inspect.getsource(getattr(triton_flash, name).fn).count("_dot(")
                for name in ("_dk_dv_tile", "_dq_tile")}
    assert products == {"_dk_dv_tile": 4, "_dq_tile": 3}
    assert (2 + sum(products.values())) / 2 == 4.5
    forward = sweep.attention_flops(1, 1, 64, 16, False)
    assert sweep.attention_flops(1, 1, 64, 16, False, sweep.FORWARD_BACKWARD) == 3.5 * forward
