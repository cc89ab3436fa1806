"""Open pages the way a person does: through app.py's navigation, with URL parameters."""
from __future__ import annotations

import base64
import contextlib
import json
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest, app_test, local_script_runner

import ui.page
from ui.boundary import NOTICE

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")

# A server compiles each script once, into its one ScriptCache, and keeps it; AppTest makes a new ScriptCache at
# every run and compiled app.py and the page each time. Here every AppTest shares one, as a server's sessions do,
# so a warm run compiles nothing (test_concurrency.py checks that a page's run parses and compiles nothing).
SCRIPTS = ScriptCache()
app_test.ScriptCache = local_script_runner.ScriptCache = lambda: SCRIPTS

# AppTest cannot click a tab: here a page drawn in tabs runs every tab, as st.tabs does by default, so that one run
# shows all of them (test_tabs.py checks that a server runs the open tab alone)
ui.page.EVERY_TAB = True

# CPython 3.11 keeps ast.parse's recursion depth in one counter per process: two threads parsing at once corrupt it
# ("SystemError: AST constructor recursion depth mismatch", python/cpython#106905), which under a class of 300 showed
# a student the error page (ui/code.py says what changed). So a page's warm run must parse and compile nothing.
_compiled_now: list[str] | None = None  # while `compiles` watches: where each compile (ast.parse is one) came from


def _record_compile(event: str, args: tuple) -> None:
    if event != "compile" or _compiled_now is None:
        return
    ours = [f"{Path(f.filename).relative_to(ROOT)}:{f.lineno}" for f in traceback.extract_stack()[:-1]
            if f.filename.startswith(str(ROOT)) and not f.filename.startswith(str(ROOT / "tests"))]
    if ours:  # on a page's run path (app.py, a view, ui, the engine), not a test's or a library's own thread
        _compiled_now.append(f"{str(args[0])[:60]!r} from {' < '.join(reversed(ours[-3:]))}")


sys.addaudithook(_record_compile)  # an audit hook cannot be removed: this one does nothing unless `compiles` watches


@contextlib.contextmanager
def compiles() -> Iterator[list[str]]:
    """Every compile and parse the app's code makes meanwhile, in any thread (say, a page's run in AppTest's)."""
    global _compiled_now
    _compiled_now = []
    try:
        yield _compiled_now
    finally:
        _compiled_now = None


def open_page(slug: str | None = None, **params: str) -> AppTest:
    """Run the home page, then switch to `slug` with `params` in the URL (AppTest needs one run first).

    `lecture` belongs to the frame every page shares, so it goes into the URL of that first run.
    """
    at = AppTest.from_file(APP, default_timeout=60)
    if "lecture" in params:
        at.query_params["lecture"] = params.pop("lecture")
    at.run()
    for name, value in params.items():
        at.query_params[name] = value
    if slug is not None:
        at.switch_page(f"views/{slug}.py").run()
    return at


def count_calls(monkeypatch, owner, name: str) -> list[tuple]:
    """The arguments of every call of owner.name from now on (each still runs): what a page computed."""
    calls, real = [], getattr(owner, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)
    monkeypatch.setattr(owner, name, counted)
    return calls


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    # an exception the page's boundary caught (ui/boundary.py) shows as this notice, its traceback in the log
    assert not [e for e in at.error if e.value == NOTICE], "the page's boundary caught an exception: see the log"


def option_values(at, key: str) -> list:
    """The values behind a selectbox's options. AppTest lists the labels format_func wrote, but set_value wants
    the values; where they differ, read the values from the widget's serializer (Streamlit internals, 1.67)."""
    box = at.selectbox(key=key)
    if box.value is None or box.value in box.options:
        return list(box.options)
    state = at.session_state._state._state
    return list(state._new_widget_state.widget_metadata[box.id].deserializer.__self__.options)


@pytest.fixture
def page():
    return open_page


# reading pages back ----------------------------------------------------------------------------------------------

def metric(at, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def button(at, label: str):
    return next(b for b in at.button if b.label == label)


def texts(at) -> list[str]:
    """Markdown and captions in page order."""
    found = []

    def walk(node):
        if type(node).__name__ in ("Markdown", "Caption"):
            found.append(node.value)
        for child in getattr(node, "children", {}).values():
            walk(child)

    walk(at.main)
    return found


def _array(value):
    """Plotly writes numeric arrays as {"dtype", "bdata" (base64), "shape"}; lists stay lists."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        shape = [int(n) for n in str(value.get("shape", len(flat))).split(",")]
        return flat.reshape(shape)
    return np.asarray(value)


def figures(at) -> dict[str, dict]:
    """Every plotly chart on the page as {title: figure JSON}."""
    specs = [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]
    return {spec["layout"].get("title", {}).get("text", ""): spec for spec in specs}


def trace(spec: dict, i: int = 0) -> dict:
    return {key: _array(value) if key in ("x", "y", "z") else value for key, value in spec["data"][i].items()}
