"""Seq2seq with attention: the date task, attention, coverage, pointers and the shipped checkpoints."""
import datetime as dt
import random

import pytest
import torch

from engine.errors import InputError
from engine.seq2seq.cross import as_cross_attention
from engine.seq2seq.dates import FORMATS, MAX_SOURCE, TARGET, Example, batch, date_example, examples, target_ids
from engine.seq2seq.decode import held_out_metrics, mean_coverage, translate
from engine.seq2seq.model import Seq2Seq, Seq2SeqConfig, load_seq2seq
from engine.seq2seq.pointer_network import PointerNetwork, load_pointer_network, sorting_accuracy
from engine.seq2seq.train import CHECKPOINTS, RUNS, held_out


@pytest.fixture(scope="module")
def shipped():
    return {name: load_seq2seq(CHECKPOINTS / f"{name}.pt") for name in RUNS}


def test_every_format_writes_the_same_day():
    day = dt.date(2021, 3, 3)
    written = [f(day) for f in FORMATS]
    assert written[0] == "the 3rd of march 2021" and written[4] == "wednesday, march 3rd 2021"
    assert "03/03/2021" in written and "3/3/21" in written
    rng = random.Random(0)
    for _ in range(200):
        example = date_example(rng)
        assert dt.date.fromisoformat(example.target)  # a valid ISO date
    assert examples("dates", 50, 7) == examples("dates", 50, 7)  # seeded


def test_names_are_copied_through_the_extended_vocabulary():
    ids = target_ids("ximena 2021-03-03")
    assert all(i >= len(TARGET) for i in ids[:6]) and all(i < len(TARGET) for i in ids[6:])


@pytest.mark.parametrize("name", list(RUNS))
def test_attention_rows_sum_to_one_and_coverage_is_their_running_sum(shipped, name):
    model, _ = shipped[name]
    result = translate(model, "tuesday, the 3rd of march 2021")
    assert torch.allclose(result.attention.sum(1), torch.ones(len(result.attention)), atol=1e-6)
    running = torch.cat([torch.zeros(1, result.attention.shape[1]), result.attention.cumsum(0)[:-1]])
    assert torch.allclose(result.coverage, running, atol=1e-6)  # eq. 48
    by_hand = torch.tensor([sum(min(a, c) for a, c in zip(a_row.tolist(), c_row.tolist()))
                            for a_row, c_row in zip(result.attention, result.coverage)])
    assert torch.allclose(result.covloss, by_hand, atol=1e-6)  # eq. 49
    steps = torch.arange(len(running)).clamp(min=1)[:, None]
    assert torch.allclose(mean_coverage(result.coverage), running / steps, atol=1e-6)  # eq. 50


def test_scores_follow_eq_42_46_47_by_hand():
    torch.manual_seed(0)
    x, _ = batch([Example("3 march 2021", "")])
    for score in ("dot", "general", "additive"):
        model = Seq2Seq(Seq2SeqConfig(score)).eval()
        memory, s = model.encode(x)
        z = memory.z[0]
        if score == "dot":
            expected = z @ s[0]
        elif score == "general":
            expected = (z @ model.W_key.weight.T) @ s[0]  # sᵀ W z
        else:
            expected = torch.tanh(model.W_query(s)[0] + z @ model.W_key.weight.T) @ model.v.weight[0]
        assert torch.allclose(model.scores(s, memory, torch.zeros(x.shape))[0], expected, atol=1e-5)


def test_pointer_mixture_is_eq_53_and_sums_to_one(shipped):
    model, _ = shipped["pointer"]
    result = translate(model, "call ximena on 3 march 2021")
    assert result.output == "ximena 2021-03-03"
    mixture = result.gate * result.p_vocab + (1 - result.gate) * result.p_ptr
    assert torch.allclose(mixture, result.p_final, atol=1e-5)
    x, y = batch([Example("call ximena on 3 march 2021", "ximena 2021-03-03")])
    with torch.no_grad():
        memory, s = model.encode(x)
        step = model.step(y[:, 0], s, torch.zeros(x.shape), memory)
    assert abs(float(step.log_p.exp().sum()) - 1) < 1e-5
    assert abs(float(step.p_ptr.sum()) - 1) < 1e-5 and abs(float(step.p_vocab.sum()) - 1) < 1e-5


@pytest.mark.parametrize("name", ["dot", "general"])
def test_cross_attention_at_once_equals_the_decoder_step_by_step(shipped, name):
    model, _ = shipped[name]
    result = translate(model, "march 3, 2021")
    cross = as_cross_attention(model, result)
    assert torch.allclose(cross.at_once.weights, result.attention, atol=1e-5)
    assert torch.allclose(cross.at_once.output, result.context, atol=1e-5)
    reference = torch.nn.functional.scaled_dot_product_attention(cross.Q[None], cross.K[None], cross.V[None])[0]
    assert torch.allclose(cross.scaled.output, reference, atol=1e-5)


@pytest.mark.parametrize("name", list(RUNS))
def test_checkpoints_load_weights_only_and_reproduce_their_metrics(shipped, name):
    raw = torch.load(CHECKPOINTS / f"{name}.pt", weights_only=True)
    assert all(v.dtype == torch.float16 for v in raw["state_dict"].values())
    model, extra = shipped[name]
    assert held_out_metrics(model, held_out(extra["task"])) == extra["metrics"]
    if extra["task"] == "dates":
        assert extra["metrics"]["exact_match"] >= 0.95  # the goal


def test_pointer_network_sorts_and_reproduces_its_metrics():
    raw = torch.load(CHECKPOINTS / "pointer_network.pt", weights_only=True)
    assert "state_dict" in raw
    model, extra = load_pointer_network(CHECKPOINTS / "pointer_network.pt")
    for n, stored in extra["metrics"].items():
        assert sorting_accuracy(model, int(n)) == pytest.approx(stored, abs=1e-9)
    numbers = torch.tensor([[0.42, 0.17, 0.93, 0.05, 0.61]])
    log_probs, picks = model(numbers)
    assert picks[0].tolist() == [3, 1, 0, 4, 2]
    assert torch.allclose(log_probs.exp().sum(2), torch.ones(1, 5), atol=1e-5)


def test_untrained_pointer_network_still_outputs_a_permutation():
    torch.manual_seed(0)
    _, picks = PointerNetwork()(torch.rand(4, 7))
    assert all(sorted(row) == list(range(7)) for row in picks.tolist())


def test_bad_input_is_refused_or_clipped(shipped):
    model, _ = shipped["additive"]
    with pytest.raises(InputError, match="empty"):
        translate(model, "   ")
    long = translate(model, "the 3rd of march 2021 " * 10)
    assert len(long.source) == MAX_SOURCE
    odd = translate(model, "3 märz 2021 ☃")  # unknown characters are read as unknown, no crash
    assert len(odd.output) > 0


def test_the_pointer_model_copies_an_unknown_character_as_unknown(shipped):
    model, _ = shipped["pointer"]
    assert translate(model, "call xiména on 3 march 2021").output == "xim�na 2021-03-03"
