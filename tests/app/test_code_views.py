"""Every page's Code view and notebook compute what the page showed: at its defaults and at one other state from
the URL, the snippet runs in a fresh Python process and the notebook in a fresh Jupyter kernel (nbclient), and
every value they name equals the page's own (numbers within 1e-6; words, tokens and ranks exactly).

The page's values are those its recorded engine calls returned (ui/code.py keeps the finished run's recipe when
KEPT is a dict). The snippet and the notebook see the project as `pip install .` leaves it: the checkout on
PYTHONPATH, the working directory elsewhere, and neither `streamlit` nor `ui` importable by accident.
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from tests.app.conftest import open_page
from ui import code
from ui.catalog import PAGES

ROOT = Path(__file__).resolve().parents[2]
# One other valid state per page, as its URL writes it; "_press" names a button pressed after the page opens.
# Long pages are kept at small settings here (their snippets say how long the page's own settings take).
OTHER_STATES: dict[str, dict[str, str]] = {
    "one_hot": {"text": "the dog sat on the rug"},
    "skipgram_pairs": {},
    "softmax_gradient": {},
    "word2vec_training": {},
    "hierarchical_softmax": {},
    "analogies": {},
    "projector": {},
    "fasttext": {},
    "glove_counts": {},
    "glove_training": {},
    "decoding_lab": {},
    "seq2seq_attention": {},
    "coverage": {},
    "pointer_network": {},
    "pointer_sentinel": {},
    "pointer_generator": {},
    "cross_attention": {},
    "kernel_regression": {},
    "scoring_functions": {},
    "scaling": {},
    "multi_head": {},
    "permutation": {},
    "transformer_lm": {},
    "kv_cache": {},
    "attention_variants": {},
    "cache_sizes": {},
    "smollm": {},
    "objectives": {},
    "sinusoidal": {},
    "rope": {},
    "decoupled_rope": {},
    "online_softmax": {},
    "flash_attention": {},
    "attention_timing": {},
    "notes_errata": {},
}
# the child's dump: every value the recipe named, as plain data (tensors as arrays; models and other objects as
# their type's name), and the proof that neither streamlit nor ui was imported. Also run here on the page's values.
PLAIN = textwrap.dedent('''
    def _plain(value, depth=0):
        import numpy as np
        if depth > 6:
            return "<deep>"
        if hasattr(value, "detach") and hasattr(value, "numpy"):
            value = value.detach().cpu().numpy()
        if isinstance(value, np.ndarray):
            return value if value.dtype != object else [_plain(v, depth + 1) for v in value.tolist()]
        if isinstance(value, (np.integer, np.floating, np.bool_)):
            return value.item()
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, (list, tuple)):
            return [_plain(v, depth + 1) for v in value]
        if isinstance(value, dict):
            return {str(k): _plain(v, depth + 1) for k, v in value.items()}
        return "<" + type(value).__name__ + ">"
''')
DUMP = textwrap.dedent('''
    import pickle as _pickle, sys as _sys
    _bad = [m for m in _sys.modules if m.split(".")[0] in ("streamlit", "ui")]
    assert not _bad, _bad
    with open({path!r}, "wb") as _file:
        _pickle.dump({{_n: _plain(globals()[_n]) for _n in {names!r}}}, _file)
''')
namespace: dict = {}
exec(PLAIN, namespace)
plain = namespace["_plain"]


def child_env(tmp_path: Path) -> dict[str, str]:
    """The project importable as an installed package would be, and nothing else of the checkout."""
    return {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "MPLBACKEND": "agg"}


def installed(tmp_path: Path) -> None:
    """engine alone on the child's path: a folder holding a link to it, as site-packages would after the install."""
    (tmp_path / "site").mkdir(exist_ok=True)
    link = tmp_path / "site" / "engine"
    if not link.exists():
        link.symlink_to(ROOT / "engine")


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
        assert not at.exception, [e.value for e in at.exception]
        return code.KEPT[slug]
    finally:
        code.KEPT = None


def run_snippet(made: code.Recipe, tmp_path: Path) -> dict:
    out = tmp_path / "snippet.pkl"
    script = made.script() + PLAIN + DUMP.format(path=str(out), names=list(made.values))
    (tmp_path / "snippet.py").write_text(script)
    done = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, env=child_env(tmp_path), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return pickle.loads(out.read_bytes())


def run_notebook(made: code.Recipe, tmp_path: Path) -> dict:
    out = tmp_path / "notebook.pkl"
    book = nbformat.reads(made.notebook(), as_version=4)
    book.cells.append(nbformat.v4.new_code_cell(PLAIN + DUMP.format(path=str(out), names=list(made.values))))
    NotebookClient(book, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute(
        env=child_env(tmp_path))
    return pickle.loads(out.read_bytes())


@pytest.mark.parametrize("slug, state", [pytest.param(p.slug, {}, id=f"{p.slug}-defaults") for p in PAGES]
                         + [pytest.param(slug, state, id=f"{slug}-other") for slug, state in OTHER_STATES.items()])
def test_the_snippet_and_the_notebook_compute_what_the_page_showed(slug, state, tmp_path):
    made = page_recipe(slug, state)
    script = made.script()
    assert "streamlit" not in script and "from ui" not in script and "import ui" not in script
    installed(tmp_path)
    compare(made, run_snippet(made, tmp_path), "snippet")
    compare(made, run_notebook(made, tmp_path), "notebook")


def test_every_page_has_another_state():
    assert set(OTHER_STATES) == {p.slug for p in PAGES}
