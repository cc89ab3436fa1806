"""A missing or damaged checkpoint: the page that needs it names the file and how to restore it, and every
other page goes on. Each test damages a copy in a temporary directory, never the shipped file."""
from __future__ import annotations

import shutil

import pytest
import streamlit as st

from engine import checkpoint_files
from engine.checkpoint_files import ModelFileError
from engine.embeddings.train import CHECKPOINTS as EMBEDDINGS
from engine.seq2seq.train import CHECKPOINTS as SEQ2SEQ
from engine.transformer.train import CHECKPOINTS as TRANSFORMER
from tests.app.conftest import assert_clean, open_page

# (constant in ui.loaders, shipped directory, file, a page that needs it)
CASES = [("CHECKPOINTS", TRANSFORMER, "char_causal.pt", "transformer_lm"),
         ("EMBEDDING_CHECKPOINTS", EMBEDDINGS, "lee_hierarchical.pt", "hierarchical_softmax"),
         ("SEQ2SEQ_CHECKPOINTS", SEQ2SEQ, "general.pt", "seq2seq_attention")]
DAMAGES = {
    "truncated": lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]),
    "altered": lambda path: path.write_bytes(path.read_bytes()[:-64] + bytes(64)),
    "missing": lambda path: path.unlink(),
}


@pytest.fixture
def fresh_caches():
    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("constant, shipped, name, slug", CASES)
def test_a_damaged_checkpoint_is_named_on_its_page_and_other_pages_work(tmp_path, monkeypatch, fresh_caches,
                                                                         constant, shipped, name, slug, damage):
    copy = tmp_path / "checkpoints"
    shutil.copytree(shipped, copy)
    DAMAGES[damage](copy / name)
    monkeypatch.setattr(f"ui.loaders.{constant}", copy)
    at = open_page(slug)
    assert_clean(at)
    message = " ".join(e.value for e in at.error)
    assert name in message and ("missing" if damage == "missing" else "damaged") in message
    assert "git checkout" in message
    assert_clean(open_page("one_hot"))


def test_loading_checks_the_sha256_recorded_at_saving(tmp_path):
    path = tmp_path / "tiny.pt"
    checkpoint_files.save({"weights": [1.0, 2.0]}, path)
    assert checkpoint_files.load(path) == {"weights": [1.0, 2.0]}
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(ModelFileError, match="tiny.pt is damaged"):
        checkpoint_files.load(path)
    (tmp_path / checkpoint_files.MANIFEST).unlink()
    with pytest.raises(ModelFileError, match="no sha256"):
        checkpoint_files.load(path)


@pytest.mark.parametrize("shipped", [TRANSFORMER, EMBEDDINGS, SEQ2SEQ])
def test_every_shipped_checkpoint_matches_its_recorded_sha256(shipped):
    for path in sorted(shipped.glob("*.pt")):
        checkpoint_files.load(path)
