"""A page drawn in tabs (Page.tabs) runs its open tab alone, as a server runs it; the other AppTests run every tab
(tests/app/conftest.py sets EVERY_TAB, since AppTest cannot click a tab)."""
from __future__ import annotations

import pytest

import ui.page
from tests.app.conftest import assert_clean, figures, open_page

ROTATION = "Where pairs of q travel for positions 0..m"
RELATIVE = "Score at offset 3 minus its exact value, across 256 positions"


@pytest.fixture(autouse=True)
def open_tab_alone(monkeypatch):
    monkeypatch.setattr(ui.page, "EVERY_TAB", False)


def test_the_first_tab_alone_runs_and_another_runs_once_opened():
    at = open_page("rope")
    assert_clean(at)
    assert list(figures(at)) == [ROTATION]  # not the other seven tabs' figures, nor SmolLM2's forward pass
    assert [s.key for s in at.slider] == ["d", "seed", "m"]
    at.session_state["tab"] = "Relative property"  # what clicking the tab does
    at.run()
    assert_clean(at)
    assert RELATIVE in figures(at) and ROTATION not in figures(at)  # the URL's tab: tests/e2e/test_browser.py


def test_a_link_to_a_hidden_tabs_control_opens_that_tab_and_keeps_the_others():
    at = open_page("rope", offset="7", logpos="6.0")  # the first tab of the two linked to opens
    assert_clean(at)
    assert list(figures(at)) == ["Score at offset 7 minus its exact value, across 256 positions",
                                 "q_m · k_n: constant along every diagonal"]
    assert at.query_params["logpos"] == "6.0"  # Precision's control, for when its tab opens
    at.session_state["tab"] = "Precision"
    at.run()
    assert at.slider(key="logpos").value == 6.0


def test_a_tab_the_page_does_not_have_is_named_and_the_first_shown():
    at = open_page("rope", tab="Nowhere")
    assert_clean(at)
    assert any("`tab=Nowhere` is not one of Rotation" in i.value for i in at.info)
    assert list(figures(at)) == [ROTATION]



def test_an_open_tabs_control_past_a_refused_input_is_named_as_on_a_page_without_tabs():
    at = open_page("rope", prompt="", token="3")  # SmolLM2's tab opens, and reads no prompt: no token to choose
    assert_clean(at)
    assert [t.value for t in at.toast] == ["Ignored URL parameter `token`: this page shows no such control."]
    assert "token" not in at.query_params and at.query_params["prompt"] == ""
