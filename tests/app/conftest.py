"""Open pages the way a person does: through app.py's navigation, with URL parameters."""
from __future__ import annotations

import base64
import json
import threading
from pathlib import Path

import numpy as np
import pytest
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")

# CPython 3.11's compiler is not safe in two threads at once ("SystemError: AST constructor recursion depth
# mismatch", seen once in the suite). A server compiles each script once, under its one ScriptCache's lock; AppTest
# makes a new ScriptCache at every run, so AppTests run in threads (test_heavy_jobs: students pressing Train at
# once) compiled app.py together. Here every ScriptCache compiles under one lock, as the server's one does.
_COMPILING = threading.Lock()
_compiled = ScriptCache.get_bytecode


def _one_at_a_time(cache: ScriptCache, script_path: str):
    with _COMPILING:
        return _compiled(cache, script_path)


ScriptCache.get_bytecode = _one_at_a_time


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


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


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
