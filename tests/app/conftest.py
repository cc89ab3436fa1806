"""Open pages the way a person does: through app.py's navigation, with URL parameters."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


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
