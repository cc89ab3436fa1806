"""The pointer sentinel LM (000 §7.2.4 eq. 53) against its definition written out by hand, and its checkpoints
against the perplexities stored in them."""
import pytest
import torch

from engine.errors import InputError
from engine.seq2seq.sentinel import mixture, next_word_distribution, read_passage
from engine.seq2seq.train import CHECKPOINTS
from engine.seq2seq.train_sentinel import perplexity, split_corpus

PASSAGE = ("the chair of the federal reserve janet yellen said that rates would stay low and yellen said that "
           "the economy was growing").split()


@pytest.fixture(scope="module")
def sentinel():
    from engine.seq2seq.sentinel import load_sentinel

    return load_sentinel(CHECKPOINTS / "sentinel.pt")


def by_hand(model, ids: torch.Tensor, t: int, window: int) -> tuple[torch.Tensor, float]:
    """Merity et al.'s pointer for the query at position t, from the LSTM states: the window's softmax share of
    each position (zero outside) and g, the sentinel's share of one softmax over [z; q·s]."""
    with torch.no_grad():
        h = model.states(ids[None])[0]  # (T, D)
        q = torch.tanh(model.W_query.weight @ h[t] + model.W_query.bias)
        first = max(0, t - window + 1)
        z = h[first:t + 1] @ q  # q·h_i over the window
        a = torch.softmax(torch.cat([z, (q @ model.sentinel)[None]]), 0)
    share = torch.zeros(len(ids))
    share[first:t + 1] = a[:-1]
    return share, float(a[-1])


@pytest.mark.parametrize("window", [3, 10, 100])
def test_gate_is_the_sentinels_share_and_p_ptr_sums_the_attention_on_each_occurrence(sentinel, window):
    model, extra = sentinel
    passage = read_passage(model, extra["vocab"], PASSAGE, window)
    index = {w: i for i, w in enumerate(extra["vocab"])}
    ids = torch.tensor([index.get(w, 0) for w in PASSAGE])
    for t in range(len(PASSAGE) - 1):
        share, g = by_hand(model, ids[:-1], t, window)
        assert float(passage.mixture.gate[t]) == pytest.approx(g, abs=1e-5)
        nxt = PASSAGE[t + 1]
        on_occurrences = sum(float(share[i]) for i in range(t + 1) if PASSAGE[i] == nxt)
        assert float(passage.mixture.p_ptr[t]) == pytest.approx(on_occurrences / (1 - g), abs=1e-5)
        p_vocab = float(passage.mixture.p_vocab[t])
        assert float(passage.mixture.p[t]) == pytest.approx(g * p_vocab + on_occurrences, abs=1e-5)  # eq. 53


def test_mixture_sums_to_one_over_the_extended_vocabulary_and_holds_the_next_words_probability(sentinel):
    model, extra = sentinel
    V = len(extra["vocab"])
    passage = read_passage(model, extra["vocab"], PASSAGE, 100)
    index = {w: i for i, w in enumerate(extra["vocab"])}
    unknown = {w: V + k for k, w in enumerate(dict.fromkeys(w for w in PASSAGE if w not in index))}
    ids = torch.tensor([index.get(w, 0) for w in PASSAGE])
    copy_ids = torch.tensor([index.get(w, unknown.get(w)) for w in PASSAGE])
    for t in (3, 8, 14, len(PASSAGE) - 2):
        p = next_word_distribution(model, ids[:t + 1], copy_ids[:t + 1], 100)
        assert float(p.sum()) == pytest.approx(1.0, abs=1e-5)
        assert float(p[copy_ids[t + 1]]) == pytest.approx(float(passage.mixture.p[t]), abs=1e-6)


def test_a_word_the_vocabulary_lacks_comes_only_from_the_pointer(sentinel):
    model, extra = sentinel
    assert "yellen" not in extra["vocab"]
    second = PASSAGE.index("yellen", PASSAGE.index("yellen") + 1) - 1  # the position predicting its second mention
    wide = read_passage(model, extra["vocab"], PASSAGE, 100).mixture
    assert float(wide.p_vocab[second]) == 0 and float(wide.p_ptr[second]) > 0.01
    first = PASSAGE.index("yellen") - 1
    assert float(wide.p[first]) == 0  # not yet in the window: nothing can predict it
    narrow = read_passage(model, extra["vocab"], PASSAGE, 3).mixture  # the first mention is outside 3 words
    assert float(narrow.p[second]) == 0


def test_training_loss_and_the_pages_mixture_agree(sentinel):
    model, extra = sentinel
    index = {w: i for i, w in enumerate(extra["vocab"])}
    ids = torch.tensor([index.get(w, 0) for w in PASSAGE])
    with torch.no_grad():
        log_p = model.log_prob(ids[None, :-1], ids[None, :-1], ids[None, 1:], 10)[0]
    terms = mixture(model, ids[:-1], ids[:-1], ids[1:], 10)
    torch.testing.assert_close(log_p.exp(), terms.p, atol=1e-5, rtol=1e-4)


def test_bad_passages_are_refused(sentinel):
    model, extra = sentinel
    with pytest.raises(InputError, match="at least two words"):
        read_passage(model, extra["vocab"], ["alone"], 10)
    with pytest.raises(InputError, match="window"):
        read_passage(model, extra["vocab"], PASSAGE, 0)
    long = read_passage(model, extra["vocab"], PASSAGE * 40, 10)
    assert long.cut and len(long.words) == 400


@pytest.mark.parametrize("name", ["sentinel", "sentinel_lstm"])
def test_checkpoints_reproduce_their_held_out_perplexity(name):
    from engine.seq2seq.sentinel import load_sentinel

    model, extra = load_sentinel(CHECKPOINTS / f"{name}.pt")
    vocab, _, held_out = split_corpus()
    assert vocab == extra["vocab"]
    index = {w: i for i, w in enumerate(vocab)}
    assert perplexity(model, held_out, index) == pytest.approx(extra["held_out_perplexity"], rel=1e-4)
