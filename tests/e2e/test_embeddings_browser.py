"""The Embeddings pages' buttons in chromium: train word2vec, stop it and GloVe, evaluate analogies; readable links;
a second student's Train waiting in the server's line of heavy jobs.

Starts the real app with `streamlit run` (see conftest.py); screenshots land in tests/e2e/screenshots/.
"""
from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e.conftest import (
    HAVE_CHROMIUM,
    NO_CHROMIUM,
    assert_clean,
    assert_no_exception,
    new_tab,
    open_url,
    screenshot,
    settle,
)

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(not HAVE_CHROMIUM, reason=NO_CHROMIUM)]

TRAIN_S = 180  # a small run on the Lee corpus takes seconds; a busy 2-core machine can make it a minute
# a run that holds the one worker while a test stops it or queues behind it: each epoch about 5 s on one core
# (70,000 words/s), 20 of them. The same corpus at d = 100, m = 5, k = 5 trains at 800,000 words/s here, its
# epochs half a second apart: "epoch 1 of 20" could be gone before the browser looked, and the run over before Stop
LONG_RUN = "/word2vec_training?corpus=wikipedia&epochs=20&dim=200&window=10&k=20"


@pytest.fixture(scope="module", autouse=True)
def one_worker():
    """The server's line runs one heavy job at a time, as on a 2-core machine, whatever this one has."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOW_LMS_JOBS", "1")
        yield


@pytest.fixture(scope="module")
def app_url(own_app_url):
    """This module trains: a server of its own, started with its one worker (one_worker is set first, as autouse)."""
    return own_app_url


def query(tab) -> dict[str, list[str]]:
    return parse_qs(urlparse(tab.url).query)


def click_button(tab, label: str) -> None:
    # inside the page: while a script runs, Streamlit's own header shows a "Stop" button too
    tab.locator("[data-testid='stMain']").get_by_role("button", name=label, exact=True).click()


def metric_value(tab, label: str | re.Pattern) -> str:
    box = tab.locator("[data-testid='stMetric']").filter(has_text=label)
    return box.locator("[data-testid='stMetricValue']").first.inner_text().strip()


def test_word2vec_trains_on_lee_and_shows_its_model(page):
    open_url(page, "/word2vec_training?dim=10&epochs=1")
    assert_no_exception(page)
    click_button(page, "Train")
    heading = page.get_by_role("heading", name=re.compile(r"^Your model \(finished\)"))
    heading.wait_for(timeout=TRAIN_S * 1000)
    settle(page)
    assert_no_exception(page)
    assert "d = 10" in heading.inner_text() and "1,776 words" in heading.inner_text()
    for word in ("minister", "fire", "police"):  # the words the page looks up by default
        assert page.get_by_text(f"nearest to “{word}”").count() == 1
    assert page.locator("[data-testid='stDataFrame']").count() >= 5
    screenshot(page, "word2vec_training_trained")


def test_word2vec_stop_keeps_the_model_so_far(page):
    # LONG_RUN takes minutes, so the run cannot finish before Stop lands
    open_url(page, LONG_RUN)
    click_button(page, "Train")
    page.locator("[data-testid='stProgress']").filter(has_text="epoch 1 of 20").first.wait_for(timeout=60_000)
    click_button(page, "Stop")
    heading = page.get_by_role("heading", name=re.compile(r"^Your model \(stopped at \d+%\)"))
    heading.wait_for(timeout=60_000)
    settle(page)
    assert_clean(page)
    assert int(re.search(r"stopped at (\d+)%", heading.inner_text()).group(1)) < 20  # within the first epochs
    screenshot(page, "word2vec_training_stopped")


def test_a_second_student_waits_in_line_and_trains_when_the_first_stops(page, browser, app_url):
    open_url(page, LONG_RUN)  # minutes: holds the one worker
    click_button(page, "Train")
    page.locator("[data-testid='stProgress']").filter(has_text="epoch 1 of 20").first.wait_for(timeout=60_000)
    other = new_tab(browser, app_url)
    try:
        open_url(other, "/word2vec_training?dim=10&epochs=1")
        click_button(other, "Train")
        place = other.locator("[data-testid='stProgress']").filter(has_text=re.compile(r"Training: 1st in line"))
        place.first.wait_for(timeout=30_000)
        screenshot(other, "word2vec_training_in_line")
        click_button(page, "Stop")  # the first run stops at its next report and the second starts
        page.get_by_role("heading", name=re.compile(r"^Your model \(stopped at \d+%\)")).wait_for(timeout=60_000)
        heading = other.get_by_role("heading", name=re.compile(r"^Your model \(finished\)"))
        heading.wait_for(timeout=TRAIN_S * 1000)
        settle(other)
        assert_clean(other)
        assert "d = 10" in heading.inner_text() and "1,776 words" in heading.inner_text()
    finally:
        other.context.close()


def test_a_student_who_leaves_the_line_gives_up_their_place(page, browser, app_url):
    open_url(page, LONG_RUN)  # minutes: holds the one worker
    click_button(page, "Train")
    page.locator("[data-testid='stProgress']").filter(has_text="epoch 1 of 20").first.wait_for(timeout=60_000)
    leaving, staying = new_tab(browser, app_url), new_tab(browser, app_url)
    try:
        open_url(leaving, "/word2vec_training?dim=10&epochs=1")
        click_button(leaving, "Train")
        leaving.locator("[data-testid='stProgress']").filter(has_text="1st in line").first.wait_for(timeout=30_000)
        leaving.context.close()  # the tab is closed: its queued job leaves the line with it
        open_url(staying, "/word2vec_training?dim=20&epochs=1")
        click_button(staying, "Train")
        # 2nd while the closed tab's job still stood in front; 1st within a tick or two of the server noticing
        staying.locator("[data-testid='stProgress']").filter(has_text="1st in line").first.wait_for(timeout=30_000)
        click_button(page, "Stop")
        staying.get_by_role("heading", name=re.compile(r"^Your model \(finished\)")).wait_for(timeout=TRAIN_S * 1000)
        settle(staying)
        assert_clean(staying)
    finally:
        staying.context.close()


def test_choosing_a_corpus_writes_a_short_link_that_reopens_it(page):
    open_url(page, "/word2vec_training")
    page.locator(".st-key-corpus [data-testid='stSelectbox']").click()
    page.get_by_role("option", name="wikipedia", exact=True).click()
    page.wait_for_url(re.compile(r"[?&]corpus="), timeout=15_000)
    settle(page)
    assert_no_exception(page)
    assert query(page).get("corpus") == ["wikipedia"], f"the link names the corpus by its label: {page.url}"
    open_url(page, "/word2vec_training?corpus=wikipedia")
    assert_no_exception(page)
    assert page.get_by_role("combobox", name="Corpus").input_value() == "wikipedia"
    assert page.locator("[data-testid='stAlert']").filter(has_text="corpus=").count() == 0


def test_analogies_evaluate_matches_gensim_in_the_browser(page):
    open_url(page, "/analogies?restrict=10000")
    # the answer's table is drawn on a canvas by a component that loads after the run; its cells live in a
    # hidden accessibility grid, so wait for the canvas to show and its "queen" cell to exist, not to be visible
    page.locator("[data-testid='stDataFrame']").first.wait_for(timeout=30_000)
    cell = page.get_by_role("gridcell", name="queen", exact=True, include_hidden=True).first
    cell.wait_for(state="attached", timeout=30_000)
    click_button(page, "Evaluate")
    settle(page)
    screenshot(page, "analogies_evaluated")  # before the checks: a failure leaves its picture
    assert_no_exception(page)
    assert metric_value(page, "Analogy accuracy") == "58.5%"  # gensim's evaluate_word_analogies: 0.5853
    wordsim = re.compile(r"wordsim-?353 spearman", re.IGNORECASE)
    assert metric_value(page, wordsim) == "0.527"  # gensim's evaluate_word_pairs at restrict_vocab=10,000


def test_glove_stop_keeps_the_model_so_far(page):
    # 50 epochs at d = 100 over the Wikipedia sample's 2.4M counts cannot finish before Stop lands
    open_url(page, "/glove_training?corpus=wikipedia&epochs=50&dim=100")
    click_button(page, "Train")
    page.locator("[data-testid='stProgress']").filter(has_text=re.compile(r"epoch \d+ of 50")).first.wait_for(
        timeout=60_000)
    click_button(page, "Stop")
    heading = page.get_by_role("heading", name=re.compile(r"^Your model \(stopped at \d+%\)"))
    heading.wait_for(timeout=60_000)
    settle(page)
    assert_clean(page)
    assert int(re.search(r"stopped at (\d+)%", heading.inner_text()).group(1)) < 50
    assert "wikipedia, window 10, d = 100, biases" in heading.inner_text()
    page.get_by_text("Your model on its own words: analogies").wait_for(timeout=60_000)  # scored, stopped or not
    screenshot(page, "glove_training_stopped")
