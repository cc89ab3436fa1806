"""Our Triton forward kernel against an fp32 reference, under the interpreter on CPU (compiled on a GPU).

Correctness rule of FlashAttention's own tests: max |ours − fp32 reference| ≤ 2 × max |torch in the same
dtype − fp32 reference|, where "torch in the same dtype" is plain attention computed by torch ops in that
dtype (S = QK^T rounded to it, softmax in float32, P rounded before PV), as their `attention_ref` does.
"""
import math

import pytest
import torch

CUDA = torch.cuda.is_available()  # without one, tests/conftest.py has set TRITON_INTERPRET=1
pytest.importorskip("triton", reason="triton is not installed (requirements-dev.txt installs it)")

from engine.efficiency.flash import naive_attention  # noqa: E402
from engine.efficiency.triton_flash import check_settings, triton_attention  # noqa: E402
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
    O, L = triton_attention(Q, K, V, causal, block_m, block_n)
    reference = naive_attention(Q.float(), K.float(), V.float(), causal)
    torch_error = (naive_attention(Q, K, V, causal).float() - reference).abs().max()
    ours_error = (O.float() - reference).abs().max()
    assert ours_error <= 2 * torch_error, f"ours {ours_error:.2e}, torch in {dtype} {torch_error:.2e}"
    S = Q.float() @ K.float().transpose(-2, -1) / math.sqrt(head_dim)
    if causal:
        S = S.masked_fill(~torch.ones(N, N, dtype=torch.bool, device=DEVICE).tril(), -math.inf)
    torch.testing.assert_close(L, torch.logsumexp(S, dim=-1), atol=1e-4, rtol=0)  # L in float32 from fp32 sums


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
