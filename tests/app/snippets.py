"""Run a Code view's snippet in a fresh process and its notebook in a fresh Jupyter kernel, outside the checkout,
and read back every value they named (tests/app/test_code_views.py compares them with the page's).

The snippet's process is forked from a zygote (snippet_child.py, started once per test process) that has
imported numpy, torch, numba and scipy and nothing of the project: a new process whose interpreter has run no
code of ours, so every import the snippet makes still runs, without paying torch's two seconds of import
seventy times. Its path holds the engine as an installed package would (a folder with a link to it),
never the checkout, so `streamlit` and `ui` cannot be imported by accident; the dump asserts they were not.
The notebook runs as a student's would, in a kernel of its own.
"""
from __future__ import annotations

import json
import os
import pickle
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("snippet_child.py")
TIMEOUT_S = 600
# one thread, as the app's server runs torch (ui/server.py): a float32 sum over more threads adds in another order,
# and SmolLM2's attention scores (about 60) came out 3e-5 apart from the page's
ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

# the child's dump: every value the recipe named, as plain data (tensors as arrays; models and other objects as
# their type's name), after checking that neither streamlit nor ui was imported. `plain` is also used on the
# page's values, here.
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
_namespace: dict = {}
exec(PLAIN, _namespace)  # noqa: S102
plain = _namespace["_plain"]
_zygotes: list[subprocess.Popen] = []  # this test process's zygote


def installed(folder: Path) -> Path:
    """folder/site holding only `engine`, as site-packages would after `pip install .`."""
    site = folder / "site"
    site.mkdir(exist_ok=True)
    if not (site / "engine").exists():
        (site / "engine").symlink_to(ROOT / "engine")
    return site


def _dumping(code: str, out: Path, names: list[str]) -> str:
    return code + "\n" + PLAIN + DUMP.format(path=str(out), names=names)


def _zygote() -> subprocess.Popen:
    if not _zygotes or _zygotes[0].poll() is not None:
        env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **ONE_THREAD}
        _zygotes[:] = [subprocess.Popen([sys.executable, str(CHILD)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, env=env, cwd="/")]
    return _zygotes[0]


def run_snippet(script: str, names: list[str], folder: Path) -> dict:
    """The snippet as `python snippet.py` in folder: its named values."""
    out, errors = folder / "snippet.pkl", folder / "snippet.err"
    (folder / "snippet.py").write_text(_dumping(script, out, names))
    zygote = _zygote()
    request = {"script": str(folder / "snippet.py"), "folder": str(folder), "site": str(installed(folder)),
               "errors": str(errors)}
    zygote.stdin.write(json.dumps(request) + "\n")
    zygote.stdin.flush()
    pid = int(zygote.stdout.readline())
    if not select.select([zygote.stdout], [], [], TIMEOUT_S)[0]:
        os.kill(pid, signal.SIGKILL)
        raise AssertionError(f"the snippet ran past {TIMEOUT_S} s")
    exit_code = int(zygote.stdout.readline())
    assert exit_code == 0, errors.read_text()[-3000:]
    return pickle.loads(out.read_bytes())


def run_notebook(notebook: str, names: list[str], folder: Path) -> dict:
    """The notebook, every cell, in a fresh python3 kernel started in folder: its named values."""
    out = folder / "notebook.pkl"
    book = nbformat.reads(notebook, as_version=4)
    book.cells.append(nbformat.v4.new_code_cell(_dumping("", out, names)))
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(installed(folder))}
    NotebookClient(book, timeout=TIMEOUT_S, kernel_name="python3",
                   resources={"metadata": {"path": str(folder)}}).execute(env=env)
    return pickle.loads(out.read_bytes())
