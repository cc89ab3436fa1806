"""The shipped checkpoints load safely and reproduce the metrics stored in them."""
import pytest
import torch

from engine.transformer import train
from engine.transformer.model import load_checkpoint
from engine.transformer.text import CharVocab, load_corpus


@pytest.mark.parametrize("objective", ["causal", "mlm"])
def test_lm_checkpoints_reproduce_their_held_out_loss(objective):
    model, extra = load_checkpoint(train.CHECKPOINTS / f"char_{objective}.pt")  # weights_only=True inside
    vocab = CharVocab(extra["vocab"])
    _, test_ids = train.split(vocab.encode(load_corpus()))
    loss = train.held_out_loss(model, test_ids, objective, vocab, model.config.max_seq_len)
    assert loss == pytest.approx(extra["metrics"]["held_out_loss"], abs=1e-4)
    assert model.config.causal == (objective == "causal")


def test_finetuned_checkpoint_reproduces_its_accuracy():
    clf, vocab, extra = train.load_classifier()  # weights_only=True inside
    assert train.held_out_accuracy(clf, vocab, seed=4321) == pytest.approx(extra["metrics"]["held_out_accuracy"],
                                                                           abs=1e-9)


def test_checkpoints_are_plain_data():
    for path in train.CHECKPOINTS.glob("*.pt"):
        data = torch.load(path, weights_only=True)
        assert set(data) >= {"config", "state_dict", "vocab", "metrics"}
