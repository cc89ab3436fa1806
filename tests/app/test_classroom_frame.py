"""The frame around every page: tours walked with Previous and Next, the Sources and accessibility pages, the home
page."""
from __future__ import annotations

import json

import pytest

from tests.app.conftest import assert_clean, open_page, texts
from ui.catalog import BY_SLUG, SOURCES
from ui.loaders import RESULTS
from ui.tours import BY_KEY, TOURS, stop_params


def tour_note(at) -> str:
    return next(t for t in texts(at) if t.startswith("**Tour:"))


def test_a_tour_stop_shows_its_note_and_next_opens_the_following_stop():
    tour = BY_KEY["positions"]
    at = open_page("sinusoidal", **stop_params(tour, 1, lecture=False))
    assert_clean(at)
    assert tour_note(at) == f"**Tour: Positions · 2 of 4.** {tour.stops[1].note}"
    at.button(key="tour_Next").click().run()
    assert_clean(at)
    assert at.title[0].value == BY_SLUG["rope"].title
    assert at.query_params["tour"] == "positions" and at.query_params["stop"] == "3"
    assert tour_note(at).startswith("**Tour: Positions · 3 of 4.**")
    # a browser then runs the page st.switch_page opened; AppTest would run the page it last switched to
    at.switch_page("views/rope.py").run()
    at.button(key="tour_Previous").click().run()
    assert at.title[0].value == BY_SLUG["sinusoidal"].title


@pytest.mark.parametrize("opened_on", ["rope", None])  # another stop's page, the home page
def test_a_stop_opened_on_another_page_moves_to_its_own(opened_on):
    tour = BY_KEY["positions"]
    at = open_page(opened_on, **stop_params(tour, 1, lecture=False))
    if opened_on is None:
        at.run()  # open_page set the URL after the home page's first run
    assert_clean(at)
    assert at.title[0].value == BY_SLUG["sinusoidal"].title  # stop 2's page, not the page the link named
    assert tour_note(at) == f"**Tour: Positions · 2 of 4.** {tour.stops[1].note}"
    assert at.query_params["tour"] == "positions" and at.query_params["stop"] == "2"
    assert any("Stop 2 of the Positions tour is Sinusoidal encoding" in toast.value for toast in at.toast)


def test_the_ends_of_a_tour_cannot_be_passed():
    tour = BY_KEY["efficiency"]
    first = open_page(tour.stops[0].slug, **stop_params(tour, 0, lecture=False))
    assert first.button(key="tour_Previous").disabled and not first.button(key="tour_Next").disabled
    last = open_page(tour.stops[-1].slug, **stop_params(tour, len(tour.stops) - 1, lecture=False))
    assert last.button(key="tour_Next").disabled


@pytest.mark.parametrize("params", [{"tour": "nope", "stop": "1"}, {"tour": "positions", "stop": "9"},
                                    {"tour": "positions", "stop": "two"}, {"tour": "positions"}])
def test_a_bad_tour_link_is_named_and_dropped(params):
    at = open_page("rope", **params)
    assert_clean(at)
    assert any("No such tour stop" in toast.value for toast in at.toast)
    assert "tour" not in at.query_params and "stop" not in at.query_params
    assert at.title[0].value == "RoPE"


@pytest.mark.parametrize("tour, index", [(tour, i) for tour in TOURS for i, stop in enumerate(tour.stops)
                                         if stop.params])
def test_stops_that_set_controls_open_with_those_values(tour, index):
    stop = tour.stops[index]
    at = open_page(stop.slug, **stop_params(tour, index, lecture=False))
    assert_clean(at)
    assert not [t for t in texts(at) if "URL parameter" in t]  # no value refused
    for name, value in stop.params.items():
        assert str(at.session_state[name]).lower() in (value.lower(), f"{float(value)}" if value[0].isdigit() else "")


def test_sources_page_names_every_note_and_links_the_pages_citing_it():
    at = open_page()
    at.switch_page("views/sources.py").run()
    assert_clean(at)
    shown = "\n".join(texts(at))
    for source in SOURCES:
        assert f"**{source.code}: {source.title}**" in shown
    assert "[RoPE](rope)" in next(t for t in texts(at) if t.startswith("Cited by") and "[Decoupled RoPE]" in t)


def test_home_page_offers_the_start_and_every_tour():
    at = open_page()
    assert_clean(at)
    labels = [link.proto.label for link in at.get("page_link")]
    assert labels[0] == f"**Start here: {BY_SLUG['one_hot'].title}**"
    assert all(f"**{tour.title}**" in labels for tour in TOURS)
    svg = next(t for t in texts(at) if t.startswith("<svg"))
    assert svg.count("<a href=") == len(BY_SLUG)


def test_sessions_navigating_at_once_each_run_their_own_page():
    """The pages are built once per server (ui/frame.py); st.navigation marks the page it returns as callable
    and running it unmarks it, so two sessions sharing one object would see the second run refused."""
    import streamlit as st

    from ui.frame import navigation_pages

    shared, first_sections = navigation_pages()
    again, second_sections = navigation_pages()
    assert again is shared  # built once
    first, second = st.navigation(first_sections), st.navigation(second_sections)  # both before either runs
    first.run()
    second.run()


def test_accessibility_statement_says_the_standard_the_last_measurement_and_how_to_report():
    at = open_page()
    at.switch_page("views/accessibility.py").run()
    assert_clean(at)
    shown = "\n".join(texts(at))
    assert "WCAG 2.1 level AA" in shown and "Known exceptions" in [h.value for h in at.subheader]
    assert "Report a problem" in [h.value for h in at.subheader]
    run = json.loads((RESULTS / "accessibility.json").read_text())
    blocking = sum(state["blocking_nodes"] for state in run["states"].values())
    assert f"**Last measured {run['date'][:10]}**" in shown and f"**{blocking} serious or critical findings**" in shown
