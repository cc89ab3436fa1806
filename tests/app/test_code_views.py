"""Every page's Code view and notebook compute what the page showed: at its defaults and at one other state from
the URL, the notebook runs in a fresh Jupyter kernel (nbclient) and every value it names equals the page's own
(numbers within 1e-6; words, tokens and ranks exactly). Its first code cell is the snippet, word for word, so that
run checks the snippet's code too; on a few pages the snippet also runs as a script in a fresh Python process.

The page's values are those its recorded engine calls returned (ui/code.py keeps the finished run's recipe when
KEPT is a dict). The snippet and the notebook see the project as `pip install .` leaves it: the engine alone on
their path, the working directory elsewhere, and neither `streamlit` nor `ui` importable by accident
(tests/app/snippets.py runs them).
"""
from __future__ import annotations

import nbformat
import numpy as np
import pytest

from tests.app.conftest import assert_clean, open_page
from tests.app.snippets import plain, run_notebook, start_snippet
from ui import code, snippet
from ui.catalog import PAGES

# One other valid state per page, as its URL writes it; "_press" names a button pressed after the page opens.
# Long pages are kept at small settings here (their snippets say how long the page's own settings take).
OTHER_STATES: dict[str, dict[str, str]] = {
    "one_hot": {"text": "the dog sat on the rug"},
    "skipgram_pairs": {"text": "the quick brown fox jumps over the lazy dog", "window": "5", "steps": "50"},
    "softmax_gradient": {"c": "police", "o": "officers", "top": "10"},
    "word2vec_training": {"dim": "10", "epochs": "2", "window": "3", "probe": "minister, zzqqx", "_press": "train"},
    "hierarchical_softmax": {"c": "united", "word": "states"},
    "analogies": {"vectors": "ours", "restrict": "10000", "_press": "evaluate"},
    "projector": {"vectors": "word2vec", "method": "PCA", "dims": "3-D", "n": "500", "word": "city"},
    "fasttext": {"word": "where", "max_n": "4", "buckets": "1,000"},
    "glove_counts": {"corpus": "lee", "window": "3", "harmonic": "False", "alpha": "0.5"},
    "glove_training": {"dim": "10", "epochs": "2", "window": "5", "biases": "False", "_press": "train"},
    "decoding_lab": {"model": "lm", "text": "The minister said", "W": "3", "T": "8", "prune": "GNMT score"},
    "seq2seq_attention": {"score": "dot", "text": "march 3, 2021", "step": "2"},
    "coverage": {"text": "3", "mean": "True", "step": "5"},
    "pointer_network": {"n": "12", "seed": "3"},
    "pointer_sentinel": {"text": "yesterday the minister zorbat said that zorbat would visit the city and zorbat "
                                 "would stay", "L": "8", "word": "12"},
    "pointer_generator": {"text": "meet kamiro on the 12th of may 1987"},
    "cross_attention": {"model": "general", "text": "3rd of april 1999"},
    "kernel_regression": {"kernel": "Epanechnikov", "h": "0.15", "n": "20", "noise": "1.0", "seed": "7"},
    "scoring_functions": {"inputs": "Random", "score": "Additive", "pad": "1", "n": "4", "m": "7", "dq": "3", "dk": "5",
                          "dv": "2", "seed": "9", "hidden": "8", "pseed": "6"},
    "scaling": {"m": "8", "draws": "200", "maxlog2": "6", "seed": "3", "sample": "32"},
    "multi_head": {"B": "2", "T": "5", "C": "24", "H": "3", "causal": "False", "seed": "5", "head": "2"},
    "permutation": {"text": "the cat sat on the mat", "order": "Shuffled", "seed": "4", "C": "16",
                    "pos": "RoPE, rotating q and k (002 §2.3.3)"},
    "transformer_lm": {"prompt": "The minister said", "temp": "1.2", "topk": "5", "new": "40", "seed": "3",
                       "layer": "2", "head": "3"},
    "kv_cache": {"prompt": "The prime minister", "new": "8"},
    "attention_variants": {"C": "128", "h": "4", "g": "4", "dc": "32", "prompt": "Paris is the capital of France",
                           "layer": "5", "kv": "2"},
    "cache_sizes": {"ctx": "32768", "batch": "8", "dtype": "fp8", "L": "24", "H": "16", "kv": "4", "hd": "64"},
    "smollm": {"view": "Generate", "new": "8", "_press": "generate"},
    "objectives": {"text": "The government said it would act.", "rate": "0.3", "seed": "7", "lam": "1.5",
                   "version": "Words shuffled"},
    "sinusoidal": {"d": "32", "n": "40", "k": "7"},
    "rope": {"d": "32", "pairing": "Half-split (i, i+d/2)", "base": "50000", "seed": "7"},
    "decoupled_rope": {"T": "9", "kr": "h (DeepSeek-V2)", "dc": "24"},
    "online_softmax": {"source": "Random", "n": "10", "seed": "3", "printed": "True", "step": "6"},
    "flash_attention": {"N": "16", "Br": "4", "Bc": "8", "causal": "False", "seed": "5", "d": "128", "measure": "True"},
    "attention_timing": {"causal": "True", "upto": "256", "block": "64", "repeats": "1"},
    "notes_errata": {"show": "errors"},
}
# The snippet also runs as `python snippet.py`, not only as the notebook's first cell, at the defaults of a few pages:
# the GloVe data package (one_hot), a closed form (sinusoidal), shipped checkpoints in numpy and in torch
RUN_AS_SCRIPT = {"one_hot", "sinusoidal", "transformer_lm", "hierarchical_softmax"}


def assert_same(page, theirs, where: str) -> None:
    if isinstance(page, np.ndarray) or isinstance(theirs, np.ndarray):
        np.testing.assert_allclose(np.asarray(theirs, dtype=float), np.asarray(page, dtype=float), rtol=1e-6,
                                   atol=1e-6, err_msg=where)
    elif isinstance(page, float) or isinstance(theirs, float):
        assert theirs == pytest.approx(page, rel=1e-6, abs=1e-6, nan_ok=True), where
    elif isinstance(page, list):
        assert isinstance(theirs, list) and len(theirs) == len(page), (where, page, theirs)
        for i, (a, b) in enumerate(zip(page, theirs)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(page, dict):
        assert isinstance(theirs, dict) and theirs.keys() == page.keys(), (where, page, theirs)
        for key in page:
            assert_same(page[key], theirs[key], f"{where}[{key!r}]")
    else:
        assert theirs == page, (where, page, theirs)


def compare(made: code.Recipe, theirs: dict, who: str) -> None:
    for name, value in made.values.items():
        assert_same(plain(value), theirs[name], f"{who}: {name}")


def page_recipe(slug: str, state: dict[str, str]) -> code.Recipe:
    params = {k: v for k, v in state.items() if not k.startswith("_")}
    code.KEPT = {}
    try:
        at = open_page(slug, **params)
        if "_press" in state:
            at.button(key=state["_press"]).click().run()
        assert_clean(at)
        return code.KEPT[slug]
    finally:
        code.KEPT = None


@pytest.mark.parametrize("slug, state", [pytest.param(p.slug, {}, id=f"{p.slug}-defaults") for p in PAGES]
                         + [pytest.param(slug, state, id=f"{slug}-other") for slug, state in OTHER_STATES.items()])
def test_the_snippet_and_the_notebook_compute_what_the_page_showed(slug, state, tmp_path):
    made = page_recipe(slug, state)
    assert made.refusal is None and made.unwritable is None, (made.refusal, made.unwritable)
    written = snippet.Snippet(made)
    script = written.script()
    assert "streamlit" not in script and "from ui" not in script and "import ui" not in script
    notebook = written.notebook()
    # the notebook's code is the snippet word for word, then the figure: running it runs the snippet's code too
    assert [cell.source for cell in nbformat.reads(notebook, as_version=4).cells
            if cell.cell_type == "code"][0] == script.rstrip("\n")
    names = list(made.values)
    snippet_values = start_snippet(script, names, tmp_path) if state == {} and slug in RUN_AS_SCRIPT else None
    compare(made, run_notebook(notebook, names, tmp_path), "notebook")
    if snippet_values is not None:
        compare(made, snippet_values(), "snippet")


def test_every_page_has_another_state():
    assert set(OTHER_STATES) == {p.slug for p in PAGES}
