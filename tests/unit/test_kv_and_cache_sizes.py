import pytest
import torch

from engine.errors import InputError
from engine.transformer import cache_sizes as cs
from engine.transformer.kv_cache import (
    EXAMPLE_W_K,
    EXAMPLE_W_Q,
    EXAMPLE_W_V,
    EXAMPLE_X,
    cached_attention_steps,
    generation_work,
)
from engine.transformer.model import ModelConfig, TransformerLM, generate


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
    with pytest.raises(InputError, match="at least 1"):
        cs.CacheConfig("custom", layers=0, heads=8, kv_heads=8, head_dim=64)
    with pytest.raises(InputError, match="divide"):
        cs.CacheConfig("custom", layers=2, heads=8, kv_heads=3, head_dim=64)


def tiny_lm() -> TransformerLM:
    torch.manual_seed(0)
    return TransformerLM(ModelConfig(vocab_size=11, d_model=16, n_heads=2, n_layers=3, d_ff=32, max_seq_len=40)).eval()


def counted(model: TransformerLM, prompt: torch.Tensor, n_new: int, use_cache: bool) -> tuple[int, int, list[int]]:
    """Count what generation really computes, at every attention layer: key and value vectors projected (two
    per token fed), score entries formed (the attention map's size), and the cache each step leaves."""
    fed, scores, caches = [], [], []

    def hook(module, args, out):
        _, att, (k, v) = out
        fed.append(args[0].shape[1])
        scores.append(att.numel())
        caches.append(k.numel() + v.numel())

    handles = [block.attn.register_forward_hook(hook) for block in model.blocks]
    generate(model, prompt[None], n_new, 0.8, use_cache=use_cache)
    for handle in handles:
        handle.remove()
    L = model.config.n_layers
    steps = slice(L, None)  # the first L calls are the prompt, which both ways process once alike
    cache_after_step = [sum(caches[i:i + L]) for i in range(L, len(caches), L)]
    return 2 * sum(fed[steps]), sum(scores[steps]), cache_after_step if use_cache else [0] * n_new


@pytest.mark.parametrize("prompt_len,n_new", [(1, 1), (5, 7), (9, 12)])
@pytest.mark.parametrize("use_cache", [True, False])
def test_counted_work_matches_what_generation_computes(prompt_len, n_new, use_cache):
    model = tiny_lm()
    work = generation_work(model.config, prompt_len, n_new, use_cache)
    projected, scores, cache = counted(model, torch.arange(prompt_len) % 11, n_new, use_cache)
    assert (work.projected, work.scores, work.cache_numbers) == (projected, scores, cache)


@pytest.mark.parametrize("n", [1, 2, 3, 10, 100])
def test_counted_work_from_nothing_is_002s_sums(n):
    """002 §2.5: without a cache 1² + 2² + ... + n² = O(n³) scores, with it 1 + 2 + ... + n = O(n²)."""
    one = ModelConfig(n_layers=1, n_heads=1)
    assert generation_work(one, 0, n, use_cache=False).scores == sum(t * t for t in range(1, n + 1))
    assert generation_work(one, 0, n, use_cache=True).scores == sum(range(1, n + 1))
    assert generation_work(one, 0, n, use_cache=True).projected == 2 * n  # one k and one v per step


def test_equal_caches_share_a_line_and_near_ones_are_named():
    mine = cs.CacheConfig("Your model", layers=32, heads=32, kv_heads=8, head_dim=128)
    groups = cs.coinciding([mine, *cs.MODELS])
    names = [[m.name for m in group] for group in groups]
    assert ["Your model", "Llama-3-8B", "Mistral-7B"] in names and ["Llama-2-70B", "Llama-3-70B"] in names
    assert sorted(name for group in names for name in group) == sorted(["Your model", *cs.BY_NAME])  # every model in exactly one group
    for group in groups:
        assert len({m.bytes_per_token("bf16") for m in group}) == 1
    (small, large, gap), = cs.nearly_coinciding(groups)
    assert (small.name, large.name) == ("DeepSeek-V2", "DeepSeek-V3") and gap == pytest.approx(1 / 61)
