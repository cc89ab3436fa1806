"""Our TMA forward against an fp32 reference and our pointer-load forward, under the interpreter on CPU (compiled on a
GPU with TMA): FlashAttention's rule, error at most twice torch's own in the same dtype."""
import pytest
import torch

CUDA = torch.cuda.is_available()  # without one, tests/conftest.py has set TRITON_INTERPRET=1
pytest.importorskip("triton", reason="triton is not installed (requirements-dev.txt installs it)")
if CUDA and torch.cuda.get_device_capability() < (9, 0):
    pytest.skip("tensor descriptors need compute capability 9.0 or more", allow_module_level=True)

from engine.efficiency.flash import naive_attention  # noqa: E402
from engine.efficiency.launches import ForwardLaunch  # noqa: E402
from engine.efficiency.triton_flash import triton_attention  # noqa: E402
from engine.efficiency.triton_fp8 import FP8_RELATIVE_ERROR, fp8_attention, quantize  # noqa: E402
from engine.efficiency.triton_tma import INTERPRETED_SMS, fp8_tma_attention, tile_grid, tma_attention  # noqa: E402
from engine.errors import InputError  # noqa: E402

DEVICE = "cuda" if CUDA else "cpu"
CASES = [(64, ForwardLaunch(32, 16, 4, 1))] if not CUDA else [(1024, ForwardLaunch(128, 64, 8, 3))]


@pytest.mark.parametrize("persistent", [0, 1, 2])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("N,launch", CASES)
def test_tma_kernel_is_within_twice_torchs_own_error_and_gives_the_pointer_kernels_l(N, launch, head_dim, dtype,
                                                                                    causal, persistent):
    """Persistent, 12 tiles (two query blocks of six heads) under the interpreter's 5 SMs: on five programs (one per
    SM) they walk three or two, on ten two or one; a tile skipped shows in O and L."""
    g = torch.Generator().manual_seed(N + head_dim)
    Q, K, V = (torch.randn(2, 3, N, head_dim, generator=g).to(DEVICE, dtype) for _ in range(3))
    O, L = tma_attention(Q, K, V, causal, launch, persistent=persistent)
    reference = naive_attention(Q.float(), K.float(), V.float(), causal)
    torch_error = (naive_attention(Q, K, V, causal).float() - reference).abs().max()
    assert (O.float() - reference).abs().max() <= 2 * torch_error
    O_pointers, L_pointers = triton_attention(Q, K, V, causal, launch)
    torch.testing.assert_close(L, L_pointers, atol=1e-5, rtol=0)


@pytest.mark.parametrize("persistent", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("N,launch", CASES)
def test_fp8_tma_kernel_gives_the_fp8_pointer_kernels_output(N, launch, head_dim, causal, persistent):
    """The same e4m3 products in the same order, only moved differently: equal under the interpreter, and on a GPU
    within FP8's bound of float32 and close to the pointer kernel (the compilers may order a tile's sums
    differently)."""
    g = torch.Generator().manual_seed(N + head_dim)
    Q, K, V = (torch.randn(2, 3, N, head_dim, generator=g).to(DEVICE, torch.bfloat16) for _ in range(3))
    inputs = quantize(Q, K, V, launch)
    O = fp8_tma_attention(inputs, causal, persistent=persistent)
    O_pointers = fp8_attention(inputs, causal)
    if CUDA:
        reference = naive_attention(Q.float(), K.float(), V.float(), causal)
        assert (O.float() - reference).norm() / reference.norm() <= FP8_RELATIVE_ERROR
        torch.testing.assert_close(O, O_pointers, atol=2e-2, rtol=2e-2)
    else:
        assert torch.equal(O, O_pointers)


@pytest.mark.skipif(CUDA, reason="the interpreter's SMs")
def test_a_persistent_grid_holds_programs_per_sm_times_the_sms_and_never_more_than_the_tiles():
    cpu = torch.device("cpu")
    assert INTERPRETED_SMS == 5
    assert tile_grid(12, 0, cpu) == (12,) and tile_grid(12, False, cpu) == (12,)
    assert tile_grid(100, True, cpu) == (5,) and tile_grid(100, 1, cpu) == (5,) and tile_grid(100, 3, cpu) == (15,)
    assert tile_grid(12, 2, cpu) == (10,) and tile_grid(3, 2, cpu) == (3,)


def test_tma_kernel_refuses_a_length_that_is_not_a_multiple_of_its_blocks():
    Q = torch.randn(1, 1, 40, 64, device=DEVICE, dtype=torch.float16)
    with pytest.raises(InputError, match="multiple of both blocks"):
        tma_attention(Q, Q, Q, False, ForwardLaunch(32, 16, 4, 1))
