"""Heavy actions through the server's line of jobs (ui/jobs.py) on real pages: students pressing Train on the same
settings share one run, a failing request tells only its own session, a full line says so and keeps the model
trained before. The line itself, with fake jobs: tests/unit/test_jobs.py."""
from __future__ import annotations

import functools
import threading
import time

import pytest

from tests.app.conftest import assert_clean, button, open_page
from ui import queued
from ui.queued import server_queue

RESULT = "word2vec_training_result"
SMALL_RUN = {"dim": "10", "epochs": "1"}  # Lee news, one epoch at d = 10: seconds


@pytest.fixture
def held_line():
    """Every worker of the test process's line busy with a job that waits for release; released at the end."""
    queue, release = server_queue(), threading.Event()
    blockers = [queue.submit(f"blocker-{i}", "blocker", i, lambda report: release.wait(60))
                for i in range(queue.workers)]
    yield queue, release
    release.set()
    for i, job in enumerate(blockers):
        queue.leave(f"blocker-{i}", job)


def press_train_in_thread(at) -> threading.Thread:
    thread = threading.Thread(target=lambda: button(at, "Train").click().run(timeout=180))
    thread.start()
    return thread


def waiting(queue, sessions: int, deadline_s: float = 60) -> None:
    """Until `sessions` sessions wait in the line (their scripts reached the job)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        with queue._lock:
            if sum(len(job.watchers) for job in queue.line) >= sessions:
                return
        time.sleep(0.05)
    raise AssertionError(f"fewer than {sessions} sessions reached the line")


def test_same_settings_share_one_run_and_a_failure_reaches_only_its_session(held_line, monkeypatch):
    queue, release = held_line
    # AppTest gives every session one id; here each script thread (one per AppTest) stands for a student's tab
    monkeypatch.setattr(queued, "this_session", threading.get_ident)
    first, second = open_page("word2vec_training", **SMALL_RUN), open_page("word2vec_training", **SMALL_RUN)
    bad = open_page("word2vec_training", min_count="1", **SMALL_RUN)
    bad.selectbox(key="corpus").set_value("pasted").run()
    bad.text_area(key="w2v_paste").set_value("a b c").run()  # subsampling leaves no pair: InputError in the job
    threads = [press_train_in_thread(at) for at in (first, second, bad)]
    waiting(queue, 3)
    with queue._lock:
        assert sorted(len(job.watchers) for job in queue.line) == [1, 2]  # two jobs in line, one of them shared
    release.set()
    for thread in threads:
        thread.join(180)
    for at in (first, second, bad):
        assert_clean(at)
    assert first.session_state[RESULT][1] is second.session_state[RESULT][1]  # one run, one model
    heading = next(s.value for s in second.subheader if s.value.startswith("Your model"))
    assert heading.startswith("Your model (finished): skipgram, negative, d = 10, 1,776 words")
    refused = "no (centre, context) pair in any epoch"  # sgns.NO_PAIRS
    assert not any(refused in w.value for w in [*first.warning, *second.warning])
    assert any(refused in w.value for w in bad.warning), [w.value for w in bad.warning]
    assert RESULT not in bad.session_state


def test_a_full_line_says_so_and_keeps_the_model_trained_before(monkeypatch):
    at = open_page("word2vec_training", **SMALL_RUN)
    button(at, "Train").click().run(timeout=180)
    model = at.session_state[RESULT][1]
    monkeypatch.setattr(server_queue().line, "capacity", 0)  # no new job fits
    button(at, "Train").click().run()
    assert_clean(at)
    assert any("heavy jobs waiting" in w.value for w in at.warning), [w.value for w in at.warning]
    assert at.session_state[RESULT][1] is model
    assert any(s.value.startswith("Your model (finished)") for s in at.subheader)


def test_the_live_loss_curve_and_the_trained_models_are_two_charts(monkeypatch):
    """A training's last report can reach the page before the job ends: the live curve then shows the very losses
    the trained model's curve shows below it in the same run, and two charts of one figure had one element id
    (StreamlitDuplicateElementId, caught by the page's boundary: once in a browser run of the suite)."""
    from engine.embeddings import word2vec

    real = word2vec.train

    @functools.wraps(real)
    def last_report_drawn_first(sentences, config, on_progress=None, reports=25):
        if on_progress is None:  # not the page's training (ui/server.py compiles the loop with one at start-up)
            return real(sentences, config, reports=reports)
        seen = []
        model = real(sentences, config, on_progress=lambda p: seen.append(p) or True, reports=reports)
        on_progress(seen[-1])  # the model as it ends, reported again ...
        time.sleep(3 * queued.TICK)  # ... and drawn by the page before the job is done
        return model

    monkeypatch.setattr(word2vec, "train", last_report_drawn_first)
    at = open_page("word2vec_training", **SMALL_RUN)
    button(at, "Train").click().run(timeout=180)
    assert_clean(at)
    titles = [chart.proto.spec for chart in at.get("plotly_chart")]
    # the live curve gave way to the trained model's, drawn once
    assert sum('"Training loss"' in t for t in titles) == 1 and not any("Training loss so far" in t for t in titles)


def test_a_report_that_repeats_the_losses_keeps_one_live_curve():
    """A report without a new loss (a finished run's last one repeats the losses) drew the same live chart again in
    the same run, and two charts of one figure share an element id: StreamlitDuplicateElementId, seen on the
    GloVe page under a busy suite, where the page's loop saw both reports."""
    from streamlit.testing.v1 import AppTest

    def page():
        import time
        from types import SimpleNamespace

        from ui import queued, training

        model = SimpleNamespace(losses=[1.0, 0.5], fraction_done=0.5, seconds=1.0)

        def train(on_progress):
            for fraction in (0.5, 1.0):
                on_progress(SimpleNamespace(fraction=fraction, model=model))
                time.sleep(3 * queued.TICK)  # the page's loop draws each report
            return model

        training.run("repeated-losses", "model", ("settings",), train, lambda p: "training", 1.0)

    at = AppTest.from_function(page, default_timeout=30).run()
    assert not at.exception, [e.message for e in at.exception]
