"""Run a Code view's snippet in a fresh process and its notebook in a fresh Jupyter kernel, outside the checkout,
and read back every value they named (tests/app/test_code_views.py compares them with the page's).

The snippet's process and the notebook's kernel are forked from a zygote (snippet_child.py, started once per
test process) that has imported numpy, torch, numba, scipy, gensim, plotly, pandas and ipykernel and nothing of
the project: new processes whose interpreters have run no code of ours, so every import of the engine a snippet
or a cell makes still runs, without paying seconds of library imports 140 times. The kernel is an ordinary
IPython kernel that nbclient starts, talks to and stops through a kernelspec (kernel_launcher.py asks the zygote
for it). Their path holds the engine as an installed package would (a folder with a link to it), never the
checkout, so `streamlit` and `ui` cannot be imported by accident; the dump asserts they were not. The snippet runs while
the notebook does.
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import nbformat
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("snippet_child.py")
LAUNCHER = Path(__file__).with_name("kernel_launcher.py")
KERNEL = "python3-forked"
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
_zygotes: list[tuple[subprocess.Popen, Path]] = []  # this test process's zygote and its folder


def installed(folder: Path) -> Path:
    """folder/site holding only `engine`, as site-packages would after `pip install .`."""
    site = folder / "site"
    site.mkdir(exist_ok=True)
    if not (site / "engine").exists():
        (site / "engine").symlink_to(ROOT / "engine")
    return site


def _dumping(code: str, out: Path, names: list[str]) -> str:
    return code + "\n" + PLAIN + DUMP.format(path=str(out), names=names)


def _zygote() -> Path:
    """This test process's zygote (started at first use), and the socket it listens on."""
    if not _zygotes or _zygotes[0][0].poll() is not None:
        folder = Path(tempfile.mkdtemp(prefix="zygote-"))
        env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **ONE_THREAD}
        # a session of its own, ended with everything it forked when this process exits; its stderr in a file, so
        # no pipe of this process's stays open behind it
        process = subprocess.Popen([sys.executable, str(CHILD), str(folder / "socket")], stdout=subprocess.PIPE,
                                   stderr=(folder / "zygote.log").open("w"), text=True, env=env, cwd="/",
                                   start_new_session=True)
        atexit.register(_end, process)
        assert process.stdout.readline().strip() == "ready", (folder / "zygote.log").read_text()
        spec = folder / "kernels" / KERNEL
        spec.mkdir(parents=True)
        (spec / "kernel.json").write_text(json.dumps({"argv": [sys.executable, str(LAUNCHER), "{connection_file}"],
                                                      "display_name": "Python 3 (forked)", "language": "python"}))
        _zygotes[:] = [(process, folder)]
    return _zygotes[0][1]


def _end(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _ask(request: dict) -> tuple[socket.socket, TextIO]:
    """Send the zygote a request; the open connection and its replies, past the forked process's pid."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.connect(str(_zygote() / "socket"))
    connection.sendall((json.dumps(request) + "\n").encode())
    replies = connection.makefile()
    replies.readline()
    return connection, replies


def start_snippet(script: str, names: list[str], folder: Path) -> Callable[[], dict]:
    """Start the snippet as `python snippet.py` in folder; the function that waits for it and returns its named
    values (the notebook can run meanwhile)."""
    out, errors = folder / "snippet.pkl", folder / "snippet.err"
    (folder / "snippet.py").write_text(_dumping(script, out, names))
    connection, replies = _ask({"script": str(folder / "snippet.py"), "folder": str(folder),
                                "site": str(installed(folder)), "errors": str(errors),
                                "env": {**os.environ, **ONE_THREAD}})

    def finish() -> dict:
        with connection:
            connection.settimeout(TIMEOUT_S)
            exit_code = int(replies.readline())  # a timeout hangs up: the zygote kills it
        assert exit_code == 0, errors.read_text()[-3000:]
        return pickle.loads(out.read_bytes())
    return finish


def run_notebook(notebook: str, names: list[str], folder: Path) -> dict:
    """The notebook, every cell, in a fresh python3 kernel started in folder: its named values."""
    out = folder / "notebook.pkl"
    book = nbformat.reads(notebook, as_version=4)
    book.cells.append(nbformat.v4.new_code_cell(_dumping("", out, names)))
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(installed(folder)), "ZYGOTE_SOCKET": str(_zygote() / "socket")}
    # over Unix sockets in the zygote's folder, not TCP: jupyter_client picks free TCP ports and closes them, and the
    # kernel binds them a moment later, by when another process of the suite (the other worker's kernel, a server)
    # can hold one ("Address already in use", then nbclient's "Kernel died before replying to kernel_info"). The
    # path is absolute: the kernel runs in folder, the client here.
    manager = KernelManager(kernel_name=KERNEL, transport="ipc", ip=str(_zygote() / "kernel"),
                            kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(_zygote() / "kernels")]))
    try:
        NotebookClient(book, km=manager, timeout=TIMEOUT_S, resources={"metadata": {"path": str(folder)}}).execute(
            env=env)
    finally:  # nbclient stops only a kernel manager it made itself
        if manager.has_kernel:
            manager.shutdown_kernel()
    return pickle.loads(out.read_bytes())
