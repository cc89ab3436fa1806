import pytest
import torch

from engine.transformer import cache_sizes as cs
from engine.transformer.kv_cache import EXAMPLE_W_K, EXAMPLE_W_Q, EXAMPLE_W_V, EXAMPLE_X, cached_attention_steps


def test_002_section_2_5_numbers():
    steps = cached_attention_steps(EXAMPLE_X, EXAMPLE_W_Q, EXAMPLE_W_K, EXAMPLE_W_V)
    assert [s.q.tolist() for s in steps] == [[1, 2], [3, 4], [5, 6]]
    assert [s.k.tolist() for s in steps] == [[1, 4], [3, 10], [5, 16]]
    assert [s.v.tolist() for s in steps] == [[2.5, 0.5], [5.5, 0.5], [8.5, 0.5]]
    assert [tuple(s.K.shape) for s in steps] == [(1, 2), (2, 2), (3, 2)]  # the cache grows a row a step
    for s in steps:
        torch.testing.assert_close(s.z, s.uncached_z)
        assert float(s.weights.sum()) == pytest.approx(1.0)


# hand-computed: layers x 2 x kv_heads x head_dim x bytes (bf16 = 2)
@pytest.mark.parametrize("name,bf16_bytes", [
    ("GPT-2 small", 12 * 2 * 12 * 64 * 2), ("Llama-2-7B", 32 * 2 * 32 * 128 * 2), ("Llama-2-70B", 80 * 2 * 8 * 128 * 2),
    ("Llama-3-8B", 32 * 2 * 8 * 128 * 2), ("Llama-3-70B", 80 * 2 * 8 * 128 * 2), ("Mistral-7B", 32 * 2 * 8 * 128 * 2),
    ("Falcon-7B", 32 * 2 * 1 * 64 * 2), ("SmolLM2-135M", 30 * 2 * 3 * 64 * 2),
    ("DeepSeek-V2", 60 * (512 + 64) * 2), ("DeepSeek-V3", 61 * (512 + 64) * 2),
])
def test_bytes_per_token(name, bf16_bytes):
    assert cs.BY_NAME[name].bytes_per_token("bf16") == bf16_bytes
    assert cs.BY_NAME[name].bytes_per_token("fp32") == 2 * bf16_bytes
    assert cs.BY_NAME[name].bytes_per_token("fp8") * 2 == bf16_bytes


def test_totals_and_kinds():
    llama = cs.BY_NAME["Llama-2-7B"]
    assert llama.total_bytes(4096, 1, "fp32") == 4096 * 32 * 2 * 32 * 128 * 4  # 2 GiB: 0.5 MiB a token
    assert [m.attention for m in cs.MODELS] == ["MHA", "MHA", "GQA", "GQA", "GQA", "GQA", "MQA", "GQA", "MLA", "MLA"]


def test_deepseek_v2_reduction_matches_its_paper_only_with_its_6_bit_cache():
    r = cs.deepseek_v2_reductions()
    assert r["against itself with MHA, same precision"] == pytest.approx(1 - 576 / (2 * 128 * 128))
    assert r["against DeepSeek 67B, same precision"] == pytest.approx(1 - 60 * 576 / (95 * 2 * 8 * 128))
    assert r["against DeepSeek 67B, V2's cache at 6 bits"] == pytest.approx(cs.DEEPSEEK_V2_REPORTED_REDUCTION, abs=5e-4)


def test_bad_rows():
    with pytest.raises(ValueError, match="at least 1"):
        cs.CacheConfig("custom", layers=0, heads=8, kv_heads=8, head_dim=64)
    with pytest.raises(ValueError, match="divide"):
        cs.CacheConfig("custom", layers=2, heads=8, kv_heads=3, head_dim=64)
