"""Our FP8 forward against an fp32 reference and against torch computing with the same e4m3 roundings, under the
interpreter on CPU (compiled on a GPU that has FP8 tensor cores)."""
import math

import pytest
import torch

CUDA = torch.cuda.is_available()  # without one, tests/conftest.py has set TRITON_INTERPRET=1
pytest.importorskip("triton", reason="triton is not installed (requirements-dev.txt installs it)")
if CUDA and torch.cuda.get_device_capability() < (8, 9):
    pytest.skip("e4m3 products need compute capability 8.9 or more", allow_module_level=True)

from engine.efficiency.flash import naive_attention  # noqa: E402
from engine.efficiency.launches import ForwardLaunch  # noqa: E402
from engine.efficiency.triton_fp8 import (  # noqa: E402
    E4M3_MAX,
    FP8_RELATIVE_ERROR,
    P_LOG2_SCALE,
    quantize_blocks,
    quantized_blocks,
    triton_fp8_attention,
)

DEVICE = "cuda" if CUDA else "cpu"
# (N, launch): a length that is not a multiple of either block, and one that is
CASES = ([(40, ForwardLaunch(16, 16, 4, 1)), (64, ForwardLaunch(32, 16, 4, 1))] if not CUDA else
         [(1000, ForwardLaunch(128, 64, 4, 3)), (1024, ForwardLaunch(128, 128, 8, 3))])


def dequantized(X: torch.Tensor, block: int) -> torch.Tensor:
    X8, scales = quantize_blocks(X, block)
    return X8.float() * scales.repeat_interleave(block, -1)[..., :X.shape[-2], None]


def torch_with_the_same_roundings(Q, K, V, causal: bool, launch: ForwardLaunch) -> torch.Tensor:
    """Attention in float32 from Q, K, V through their block scales, with 256 · P rounded to e4m3 before PV and the
    normaliser summed before rounding, as the kernel does (with the final row maximum, not the running one)."""
    N, d = Q.shape[-2:]
    S = dequantized(Q, launch.block_m) @ dequantized(K, launch.block_n).transpose(-2, -1) / math.sqrt(d)
    if causal:
        S = S.masked_fill(~torch.ones(N, N, dtype=torch.bool, device=S.device).tril(), -math.inf)
    E = torch.exp(S - S.amax(dim=-1, keepdim=True))
    P8 = (E * 2**P_LOG2_SCALE).to(torch.float8_e4m3fn).float() / 2**P_LOG2_SCALE
    return (P8 @ dequantized(V, launch.block_n)) / E.sum(dim=-1, keepdim=True)


def test_each_block_is_scaled_to_e4m3s_largest_value_and_rounded_to_nearest():
    X = torch.randn(2, 3, 40, 16, generator=torch.Generator().manual_seed(0)) * torch.logspace(-3, 3, 40)[:, None]
    X8, scales = quantize_blocks(X, 16)
    assert X8.dtype == torch.float8_e4m3fn and scales.shape == (2, 3, 3)
    blocks = torch.nn.functional.pad(X8.float(), (0, 0, 0, 8)).view(2, 3, 3, 16, 16).abs().amax(dim=(-2, -1))
    assert torch.equal(blocks, torch.full_like(blocks, E4M3_MAX))
    error = (dequantized(X, 16) - X).abs()
    step = scales.repeat_interleave(16, -1)[..., :40, None]
    assert (error <= 2**-4 * X.abs() + 2**-10 * step).all()  # half an ulp of 3 mantissa bits; subnormals below


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("N,block,head_dim", [(40, 16, 64), (64, 32, 128)] if not CUDA else
                         [(1000, 128, 64), (1024, 64, 128)])
def test_the_quantizing_kernel_gives_torchs_e4m3_bit_for_bit(N, block, head_dim, dtype):
    """Values over ten decades in every row, so that each block holds e4m3's subnormals (below 2^-6) and ties;
    zeros of both signs in a block of its own."""
    g = torch.Generator().manual_seed(N)
    X = torch.randn(2, 3, N, head_dim, generator=g) * torch.logspace(-8, 2, head_dim)
    X[0, 0, :block] = 0.0
    X[0, 0, :block:2] = -0.0
    X = X.to(DEVICE, dtype)
    X8, scales = quantize_blocks(X, block)
    ours, our_scales = quantized_blocks(X, block)
    ours_t, _ = quantized_blocks(X, block, transposed=True)
    assert torch.equal(our_scales, scales)
    assert torch.equal(ours.view(torch.uint8), X8.view(torch.uint8))
    assert torch.equal(ours_t.view(torch.uint8), quantize_blocks(X, block, transposed=True)[0].view(torch.uint8))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("N,launch", CASES)
def test_fp8_kernel_is_within_twice_torchs_error_with_the_same_roundings(N, launch, head_dim, causal):
    g = torch.Generator().manual_seed(N + head_dim)
    Q, K, V = (torch.randn(2, 3, N, head_dim, generator=g).to(DEVICE, torch.bfloat16) for _ in range(3))
    O = triton_fp8_attention(Q, K, V, causal, launch)
    assert O.dtype == torch.bfloat16 and O.shape == Q.shape
    reference = naive_attention(Q.float(), K.float(), V.float(), causal)
    same_roundings = torch_with_the_same_roundings(Q, K, V, causal, launch)
    ours_error = (O.float() - reference).abs().max()
    torch_error = (same_roundings - reference).abs().max()
    assert ours_error <= 2 * torch_error, f"ours {ours_error:.2e}, torch with e4m3 roundings {torch_error:.2e}"
    assert (O.float() - reference).norm() / reference.norm() <= FP8_RELATIVE_ERROR
