"""A simulated class on one server (or a proxy in front of several): Locust users that speak Streamlit's
websocket protocol (benchmarks/protocol.py), so hundreds of students fit on this machine without a browser each.

Each student arrives within the arrival window, opens a page from a realistic mix (every tour stop with its
controls, and every page's default view), then every think time (exponential, mean 10 s) changes one control of
that page to another valid value, as the browser sends it, and waits for the run to finish. Recorded per class
size: time to the first complete run (p50/p95/p99), interaction latency (p50/p95/p99), errors (an exception on
the page, a dropped connection, a run that never finishes) and the server's CPU and resident memory over time.

Targets (issue 28): on a warm server the class opens its first pages with p95 <= 3 s; one server holds 100
students with p95 <= 1 s and 0 errors. Only loopback addresses are used; every phase is bounded in time.
Issue 44's stress (--stress): five classes of 300 on one process, then 160 over two replicas with one killed mid-class
and started again; no student meets an exception and no server logs one (class_size_stress.json).
Issue 46's class in a live lecture (--followers N): a lecturer on the FlashAttention page moves the view, asks a
question and reveals its answers in turn; N of the class follow (a tenth of them step away once by touching a control
and come back), answer each question after a few seconds' thought, and the rest explore as above. Recorded: the lag
from each lecturer's act to each follower's pushed run, the reveal's, the answers sent against those the lecturer's
bar counts, the explorers' changes meanwhile (class_size_lecture.json).
Issue 47's server CPU per control change (--before REV): the same seeded classes on REV's server and on this checkout's,
in turn; after over before, goal <= 0.6 (class_size_cpu.json).
Usage: python -m benchmarks.class_size [--sizes 25,50,100,150,200] [--steady 60] [--url http://127.0.0.1:8501
       --warmers 2] [--cold] [--trainers 30 --sizes 60] [--flooders 1 --sizes 50] [--replicas 2 [--kill-at 90]]
       [--stress] [--followers 80 --sizes 100] [--before 556f48d --sizes 100]
"""
from __future__ import annotations

import argparse
import itertools
import os
import platform
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

import gevent
from locust import User, task  # first: gevent patches sockets before anything opens one
from locust.env import Environment

from benchmarks import finish, installed_as_then, smollm_present
from benchmarks.lecture import answered, following, join, submit
from benchmarks.protocol import Run, RunFailed, Session
from serve.process import CLK_TCK, Server, free_port
from serve.replicas import Replicas
from ui.catalog import PAGES
from ui.tours import TOURS, stop_params

ROOT = Path(__file__).resolve().parents[1]

THINK_MEAN_S = 10.0
ARRIVAL_S = 60  # the class opens the link within a minute
RUN_S = 120  # a run that takes longer never finished
LEAVE_S = 15  # after a class leaves, how long before the server's memory is read again
SKIPPED_KEYS = {"lecture"}  # the frame's own switch: not a page's control
TARGETS = {"open_p95_s": 3.0, "change_p95_s": 1.0, "errors": 0}
COLD_OPEN_P95_S = 5.0
PAGE_TRAINED = "word2vec_training"
PAGE_EXCEPTION = "exception on the page"  # how an error element or the boundary's notice is recorded
METHOD = ("each class arrives over {arrival:.0f} s, opening a tour stop or a page's default view, then for "
          "{steady:.0f} s every student sets one slider, select box or toggle to another random valid value after an "
          f"exponential think time of mean {THINK_MEAN_S:.0f} s")
# issue 44: the sizes at which a class met the parser's SystemError, several times over, and a replica killed
STRESS_STUDENTS, STRESS_RUNS, STRESS_REPLICA_STUDENTS, KILL_AT_S = 300, 5, 160, 90.0
# issue 46: the lecture a class follows, and its goals (the lag and the reveal as benchmarks.lecture's)
LECTURE_KEY = "a-lecturer-key-for-the-class"
# issue 47: the server's CPU per control change against an earlier commit's, with the same classes
BEFORE_AFTER_ROUNDS, CPU_PER_CHANGE_TARGET = 2, 0.6
LECTURE_PAGE, LECTURE_CONTROL = "flash_attention", "seed"  # a page with questions; the lecturer steps its seed
LECTURE_ACTS = ("view", "ask", "reveal")  # the lecturer's acts, in turn
PUSHED = {"view": "follow", "ask": "question", "reveal": "reveal"}  # what each act pushes to a follower, as recorded
LECTURE_EVERY_S = 10.0  # between two acts: answers have this long before the reveal
ANSWER_THINK_S = (2.0, 6.0)  # a follower reads a question this long before answering
AWAY_SHARE = 0.1  # the followers who step away once (touch a control) and come back a think time later
FOLLOW_WAIT_S = 30.0  # a follower's wait for a pushed run, read again after it
LECTURE_TARGETS = {"follow_p95_s": 2.0, "reveal_p95_s": 2.0, "change_p95_s": 1.0, "errors": 0}
# a server log's lines that mean a student met an error (the boundary logs what it caught, ui/boundary.py)
LOG_MARKERS = {"tracebacks": "Traceback (most recent call last)", "uncaught": "Uncaught app execution",
               "caught_by_the_boundary": "Unexpected error on page", "system_errors": "SystemError"}


def entry_points() -> list[tuple[str, dict[str, str]]]:
    """Where students arrive: every tour stop with its controls, and every page's default view."""
    stops = [(stop.slug, stop_params(tour, i, lecture=False)) for tour in TOURS for i, stop in enumerate(tour.stops)]
    return stops + [(info.slug, {}) for info in PAGES]


def another_value(widget, current: str | None, rng: random.Random):
    """A random valid value of a slider, select box or toggle, other than the one it shows (`current`, its URL
    value, else its default), as a student moving it sends; None for other controls."""
    proto = widget.proto
    if widget.kind == "slider" and not proto.options and len(proto.default) == 1:
        steps = round((proto.max - proto.min) / proto.step) if proto.step else 0
        shown = float(current) if current is not None else proto.default[0]
        values = [proto.min + i * proto.step for i in range(steps + 1)]
        values = [v for v in values if abs(v - shown) > proto.step / 2]
    elif widget.kind == "selectbox" and len(proto.options) > 1:
        shown = current if current is not None else \
            (proto.options[proto.default] if proto.HasField("default") else None)
        values = [option for option in proto.options if option != shown]
    elif widget.kind == "checkbox":
        shown = current == "true" if current is not None else proto.default
        values = [not shown]
    else:
        values = []
    return rng.choice(values) if values else None


class Tab(User):
    """A browser tab of the class: its session, closed when it leaves, and each run it waits for recorded."""
    abstract = True

    def on_stop(self) -> None:
        self.session.close()

    def _record(self, kind: str, page: str, action) -> None:
        start = time.perf_counter()
        arrived_s = time.monotonic() - self.class_start
        error, length = None, 0
        try:
            run = action()
            length = run.received_bytes
            if run.exceptions:
                error = RuntimeError(f"{PAGE_EXCEPTION}: {run.exceptions[0][:200]}")
        except RunFailed as failure:  # the session closed its connection; the next task opens the page again
            error = failure
        if kind == "open":
            self.opens.append({"arrived_s": round(arrived_s, 1), "page": page,
                               "seconds": round(time.perf_counter() - start, 2), "error": error is not None})
        elif kind == "change":
            self.changes.append({"at_s": round(arrived_s, 1), "page": page,
                                 "seconds": round(time.perf_counter() - start, 2)})
        self.environment.events.request.fire(request_type=kind, name=page, response_length=length, exception=error,
                                             response_time=1000 * (time.perf_counter() - start), context={})


class Student(Tab):
    """One student: opens a page, then moves its controls."""
    abstract = True

    def wait_time(self) -> float:
        """The think time, spent as a tab spends it: answering the server's pings (without, a student thinking
        past the server's ping timeout, about a minute, found the connection closed: a BrokenPipe that a
        browser never sees). Locust then waits no further."""
        self.session.idle(self.rng.expovariate(1 / THINK_MEAN_S))
        return 0.0

    def on_start(self) -> None:
        # the n-th student of every class makes the same choices and thinks as long, so runs compare
        self.rng = random.Random(next(self.numbers))
        self.session = Session(self.host, timeout_s=RUN_S)
        self.page, query = self.rng.choice(entry_points())
        self._record("open", self.page, lambda: self.session.open(self.page, query))

    @task
    def move_a_control(self) -> None:
        if not self.session.connected:  # as the browser does after a dropped connection: its URL again
            self._record("reopen", self.page, lambda: self.session.open(self.page, self.session.query))
            return
        choices = [(key, w) for key, w in self.session.widgets.items() if key not in SKIPPED_KEYS]
        self.rng.shuffle(choices)
        for key, widget in choices:
            value = another_value(widget, self.session.query.get(key), self.rng)
            if value is not None:
                self._record("change", self.page, lambda: self.session.change(key, value))
                return


class Trainer(Tab):
    """A student on the word2vec page who sets a dimension and presses Train at the same moment as every other
    trainer (after the class has arrived), then watches: identical settings share one job of the server's line,
    and every trainer must end with a model of the settings asked for."""
    abstract = True
    dims = (30, 50, 80)  # three trainings the line runs one after another, each shared by a third of the class

    def wait_time(self) -> float:
        self.session.idle(THINK_MEAN_S)
        return 0.0

    def on_start(self) -> None:
        self.rng, self.pressed = random.Random(-1 - next(self.numbers)), False
        self.session = Session(self.host, timeout_s=RUN_S)
        self.dim = self.rng.choice(self.dims)
        self._record("open", PAGE_TRAINED, lambda: self.session.open(PAGE_TRAINED, {"dim": str(self.dim)}))

    @task
    def press_train_once(self) -> None:
        if self.pressed or not self.session.connected:
            return
        self.session.idle(max(0.0, self.press_at - time.monotonic()))
        self.pressed = True
        self._record("train", PAGE_TRAINED, self._train)

    def _train(self):
        run = self.session.press("train")
        heading = next((text for text in run.texts if text.startswith("Your model")), "")
        self.models.append((self.dim, heading))
        if not run.exceptions and f"d = {self.dim}," not in heading:
            run.exceptions.append(f"no model of d = {self.dim} after training: {heading or 'none shown'}")
        return run


class Flooder(Student):
    """A session that reruns as fast as it can (a held-down arrow key, a script): it changes a control of the
    RoPE page again the moment its last run ends, with no think time."""
    abstract = True

    def wait_time(self) -> float:
        return 0.0

    def on_start(self) -> None:
        self.rng = random.Random(-1000 - next(self.numbers))
        self.session = Session(self.host, timeout_s=RUN_S)
        self.page = "rope"
        self._record("open", self.page, lambda: self.session.open(self.page))

    def _record(self, kind: str, page: str, action) -> None:
        super()._record("flood" if kind == "change" else kind, page, action)


class Lecturer(Tab):
    """The lecturer: starts a lecture on LECTURE_PAGE, and once the class has arrived, every LECTURE_EVERY_S moves
    the view (its seed), asks the page's first question, or notes the count of answers its bar shows and reveals
    them, in turn."""
    abstract = True

    def wait_time(self) -> float:
        self.session.idle(LECTURE_EVERY_S)  # the bar's counts, pushed as answers arrive, are read and dropped
        return 0.0

    def on_start(self) -> None:
        self.session, self.acts = Session(self.host, timeout_s=RUN_S), itertools.count()
        self._record("open", LECTURE_PAGE, self._start)

    def _start(self) -> Run:
        self.session.open(LECTURE_PAGE)
        run = submit(self.session, "_lecture_key_text", LECTURE_KEY, "Start the lecture")
        self.lecture["code"] = re.search(r"`([A-Z0-9]{5})`", " ".join(run.texts)).group(1)
        return run

    @task
    def act(self) -> None:
        if not self.session.connected or "code" not in self.lecture:
            return
        self.session.idle(max(0.0, self.act_from - time.monotonic()))
        n = next(self.acts)
        kind = LECTURE_ACTS[n % len(LECTURE_ACTS)]
        if kind == "reveal":
            self.lecture["counted"].append(answered(self.session))
        self.lecture["acts"].append((kind, time.perf_counter()))
        press = {"ask": "_lecture_ask", "reveal": "_lecture_reveal"}.get(kind)
        self._record(f"lecturer {kind}", LECTURE_PAGE, lambda: self.session.press(press) if press else
                     self.session.change(LECTURE_CONTROL, 1 + n // len(LECTURE_ACTS)))


class Follower(Tab):
    """A student who opens the lecture's link and follows: each run the server pushes is timed from the lecturer's
    last act, an open question is answered after a moment's thought, and AWAY_SHARE of the followers step away
    once (touch a control) and press "Back to the lecture" a think time later."""
    abstract = True

    def wait_time(self) -> float:
        return 0.0  # the follower's task waits for the server's next push

    def on_start(self) -> None:
        self.rng = random.Random(-2000 - next(self.numbers))
        self.session = Session(self.host, timeout_s=RUN_S)
        self.answered: set[str] = set()
        self.away_once = self.rng.random() < AWAY_SHARE
        deadline = time.monotonic() + RUN_S
        while "code" not in self.lecture and time.monotonic() < deadline:
            gevent.sleep(0.5)
        self.code = self.lecture.get("code", "")
        self._record("open", LECTURE_PAGE, self._join)

    def _join(self) -> Run:
        run = join(self.session, self.code, LECTURE_PAGE)
        if run is None:
            raise RunFailed("not following after opening the lecture's link")
        self._answer(run)
        return run

    @task
    def follow(self) -> None:
        if not self.session.connected:
            self._record("reopen", LECTURE_PAGE, self._join)
            return
        try:
            run = self.session.pushed(FOLLOW_WAIT_S)
        except RunFailed as failure:
            self.environment.events.request.fire(request_type="follow", name=LECTURE_PAGE, response_length=0,
                                                 exception=failure, response_time=0, context={})
            return
        if run is None:
            return
        act, at = self.lecture["acts"][-1] if self.lecture["acts"] else ("view", time.perf_counter() - run.seconds)
        kind = PUSHED[act]
        error = RuntimeError(f"{PAGE_EXCEPTION}: {run.exceptions[0][:200]}") if run.exceptions else None
        lag_s = time.perf_counter() - at
        self.environment.events.request.fire(request_type=kind, name=LECTURE_PAGE, response_length=run.received_bytes,
                                             exception=error, response_time=1000 * lag_s, context={})
        if self.away_once and kind == "follow" and "N" in self.session.widgets:
            self.away_once = False
            self._record("step away", LECTURE_PAGE, lambda: self.session.change("N", 32))
            self.session.idle(self.rng.expovariate(1 / THINK_MEAN_S))
            self._record("back", LECTURE_PAGE, self._back)
        else:
            self._answer(run)

    def _back(self) -> Run:
        run = self.session.press("_lecture_back")
        if not following(run):
            run.exceptions.append(f"not following after Back to the lecture: {run.texts[:3]}")
        self._answer(run)
        return run

    def _answer(self, run: Run) -> None:
        """Answer the open question the run shows, once (its numeric field, named by the question's number)."""
        field = next((key for key in run.widgets if key.startswith("_lecture_number_")), None)
        if field is None or field in self.answered:
            return
        self.answered.add(field)
        self.session.idle(self.rng.uniform(*ANSWER_THINK_S))
        self._record("answer", LECTURE_PAGE, lambda: self._send_answer(field))

    def _send_answer(self, field: str) -> Run:
        run = submit(self.session, field, str(self.rng.randint(0, 12)), "Answer")
        if any(text.startswith("Your answer:") for text in run.texts):  # taken: the lecturer's bar counts it
            self.lecture["sent"][field.rsplit("_", 1)[1]] += 1
        return run


def trained_models(models: list[tuple[int, str]]) -> dict:
    """Each dimension's trainers and the distinct models they were shown: one each, if they shared a job."""
    by_dim: dict[int, set[str]] = {}
    for dim, heading in models:
        by_dim.setdefault(dim, set()).add(heading)
    return {str(dim): {"trainers": sum(d == dim for d, _ in models), "models_shown": sorted(headings)}
            for dim, headings in sorted(by_dim.items())}


def warm_every_entry_point(url: str, warmers: int) -> None:
    """A class finds a server that has been up: every default view cached. Behind a proxy each of `warmers`
    sessions, all connected at once, lands on its own replica (the proxy sends a new connection to the replica
    with the fewest) and opens every entry point there."""
    sessions = [Session(url, timeout_s=600) for _ in range(warmers)]
    for session in sessions:
        session.connect()
    try:
        gevent.joinall([gevent.spawn(lambda s=session: [s.open(slug, query) for slug, query in entry_points()])
                        for session in sessions], raise_error=True)
    finally:
        for session in sessions:
            session.close()


def machine_cpu_s() -> tuple[float, float]:
    """The whole machine's busy and stolen CPU since boot, in seconds (/proc/stat): stolen is time the
    hypervisor gave this virtual machine's cores to another guest, which no process here sees as its own."""
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq) / CLK_TCK, steal / CLK_TCK


class ServerSampler:
    """Every second while the class runs: the server process's CPU (in cores) and RSS, and beside it the load
    generator's own CPU (this process: its students share the machine with the server) and the machine's busy
    and stolen cores, so that a stall in the latencies can be told apart from a machine that had no core free."""

    def __init__(self, server: Server | None):
        self.server, self.samples, self._greenlet = server, [], None

    def __enter__(self):
        if self.server is not None:
            self._greenlet = gevent.spawn(self._run)
        return self

    def _run(self) -> None:
        last = self.server.cpu_s(), sum(os.times()[:2]), *machine_cpu_s(), time.monotonic()
        while True:
            gevent.sleep(1.0)
            now = self.server.cpu_s(), sum(os.times()[:2]), *machine_cpu_s(), time.monotonic()
            per_s = [round((b - a) / (now[-1] - last[-1]), 2) for a, b in zip(last[:-1], now[:-1])]
            self.samples.append({"t": round(now[-1], 1), "cores": per_s[0], "rss_mb": round(self.server.rss_mb(), 1),
                                 "client_cores": per_s[1], "machine_busy_cores": per_s[2], "stolen_cores": per_s[3]})
            last = now

    def __exit__(self, *exc) -> None:
        if self._greenlet is not None:
            self._greenlet.kill()


def percentiles(entry) -> dict:
    if entry is None or entry.num_requests == 0:
        return {"count": 0}
    return {"count": entry.num_requests, "errors": entry.num_failures,
            **{f"p{p}_s": round(entry.get_response_time_percentile(p / 100) / 1000, 3) for p in (50, 95, 99)}}


def one_class(url: str, size: int, steady_s: float, server: Server | None, arrival_s: float = ARRIVAL_S,
              trainers: int = 0, flooders: int = 0, followers: int = 0) -> dict:
    """size students arriving over arrival_s, then steady_s of control changes; latencies and server load.
    trainers of them press Train together as the changes begin, flooders rerun without pause, followers follow a
    lecturer (one more session) who acts once the class has arrived (the others move controls)."""
    opens: list[dict] = []  # every student's first page: when they arrived, which page, how long it took
    changes: list[dict] = []  # every control change: when, on which page, how long
    shared = {"host": url, "abstract": False, "opens": opens, "changes": changes, "class_start": time.monotonic()}
    student = type("Student", (Student,), {**shared, "numbers": itertools.count()})
    classes = [student]
    models: list[tuple[int, str]] = []
    lecture = {"acts": [], "counted": [], "sent": Counter()}  # the acts' clocks, the bar's counts, answers taken
    if trainers or flooders or followers:
        student.fixed_count = size - trainers - flooders - followers
    if followers:
        classes += [type("Lecturer", (Lecturer,), {**shared, "fixed_count": 1, "lecture": lecture,
                                                   "act_from": time.monotonic() + arrival_s + 5}),
                    type("Follower", (Follower,), {**shared, "fixed_count": followers, "lecture": lecture,
                                                   "numbers": itertools.count()})]
    if flooders:
        classes.append(type("Flooder", (Flooder,), {**shared, "fixed_count": flooders, "numbers": itertools.count()}))
    if trainers:
        classes.append(type("Trainer", (Trainer,), {
            **shared, "fixed_count": trainers, "numbers": itertools.count(),
            "press_at": time.monotonic() + arrival_s + 5, "models": models}))
    env = Environment(user_classes=classes)
    runner = env.create_local_runner()
    before_mb = server.rss_mb() if server is not None else None
    with ServerSampler(server) as sampler:
        sessions = size + (1 if followers else 0)  # the lecturer comes first
        runner.start(sessions, spawn_rate=sessions / arrival_s)
        gevent.sleep(arrival_s + 5)
        deadline = time.monotonic() + RUN_S
        while len(opens) < sessions and time.monotonic() < deadline:  # the slowest first pages count too
            gevent.sleep(0.5)
        arrived = percentiles(_merged(env, "open"))
        env.stats.reset_all()
        steady_from, cpu_from = len(changes), server.cpu_s() if server is not None else None
        gevent.sleep(steady_s)
        # the server's CPU per change: over the steady phase, whatever else it did meanwhile counted in (pings,
        # reopens), as a class costs it
        steady_changes = len(changes) - steady_from
        cpu_s = server.cpu_s() - cpu_from if server is not None else None
        deadline = time.monotonic() + RUN_S
        while len(models) < trainers and time.monotonic() < deadline:  # the last in line may still be training
            gevent.sleep(1.0)
        changed = _merged(env, "change")
        by_page = sorted(((name, percentiles(entry)) for (name, method), entry in env.stats.entries.items()
                          if method == "change"), key=lambda item: -item[1].get("p95_s", 0))
        errors, errors_by_kind = Counter(), Counter()  # Locust keeps one entry per page and error: summed
        for entry in env.stats.errors.values():
            errors[str(entry.error)[:160]] += entry.occurrences
            errors_by_kind[entry.method] += entry.occurrences
        with_class_mb = server.rss_mb() if server is not None else None
        in_class = len(sampler.samples)
        runner.quit()
        gevent.sleep(LEAVE_S)  # the server drops a session when its websocket closes
    after_mb = server.rss_mb() if server is not None else None
    memory = {} if server is None else {
        "rss_mb_before": round(before_mb, 1), "rss_mb_with_class": round(with_class_mb, 1),
        "rss_mb_after_leaving": round(after_mb, 1),
        # what the sessions and the views they asked for added, per student: an upper bound on a session's own
        "mb_per_student": round((with_class_mb - before_mb) / size, 2)}
    cores = [s["cores"] for s in sampler.samples[:in_class]]
    machine = {f"{name}_mean": round(statistics.mean(s[name] for s in sampler.samples[:in_class]), 2)
               for name in ("client_cores", "machine_busy_cores", "stolen_cores")} if cores else {}
    slowest = sorted(opens, key=lambda o: -o["seconds"])[:max(3, size // 10)]
    steady = changes[steady_from:]
    # the slow changes by when they began: spread out, they are the server's share of work; bunched into a few
    # seconds, a stall (compare the samples' machine_busy_cores and stolen_cores at that time)
    slow_by_second = Counter(int(c["at_s"]) for c in steady if c["seconds"] > TARGETS["change_p95_s"])
    result = {"students": size, "open": arrived, "slowest_opens": slowest, "change": percentiles(changed),
              "change_by_page": dict(by_page),  # where the slowest changes are, slowest p95 first
              "slowest_changes": sorted(steady, key=lambda c: -c["seconds"])[:max(5, size // 5)],
              "changes_over_1s_by_second": dict(sorted(slow_by_second.items())),
              "errors": dict(errors), "errors_by_kind": dict(errors_by_kind),  # open, change, reopen, ...
              **({"flooders": flooders, "flood": percentiles(_merged(env, "flood"))} if flooders else {}),
              **({"trainers": trainers, "train": percentiles(_merged(env, "train")),
                  "trained": trained_models(models)} if trainers else {}),
              **({"followers": followers, "follow": percentiles(_merged(env, "follow")),
                  "question": percentiles(_merged(env, "question")), "reveal": percentiles(_merged(env, "reveal")),
                  "answer": percentiles(_merged(env, "answer")),
                  "stepped_away": percentiles(_merged(env, "step away")), "back": percentiles(_merged(env, "back")),
                  "answers": [{"question": n, "taken": lecture["sent"][str(n)], "counted_on_the_bar": counted}
                              for n, counted in enumerate(lecture["counted"], start=1)]} if followers else {}),
              "server": {"cpu_s_steady": None if cpu_s is None else round(cpu_s, 2),
                         "cpu_ms_per_change": round(1000 * cpu_s / steady_changes, 1) if cpu_s and steady_changes
                         else None,
                         "cores_mean": round(statistics.mean(cores), 2) if cores else None,
                         "cores_max": max(cores, default=None),
                         "rss_mb_max": max((s["rss_mb"] for s in sampler.samples), default=None),
                         **memory, "samples": sampler.samples},
              "machine": machine}
    print(f"{size:>4} students: open p95 {arrived.get('p95_s')} s; change p50 {result['change'].get('p50_s')} "
          f"p95 {result['change'].get('p95_s')} p99 {result['change'].get('p99_s')} s over "
          f"{result['change'].get('count', 0)} changes; errors {sum(errors.values())}; server "
          f"{result['server']['cpu_ms_per_change']} ms of CPU per change, {result['server']['cores_mean']} cores mean, "
          f"{result['server']['rss_mb_max']} MiB max, "
          f"{memory.get('rss_mb_after_leaving')} MiB {LEAVE_S} s after the class left; the load generator "
          f"{machine.get('client_cores_mean')} cores, the machine {machine.get('machine_busy_cores_mean')} busy and "
          f"{machine.get('stolen_cores_mean')} stolen")
    if followers:
        print(f"      {followers} following: lag p95 {result['follow'].get('p95_s')} s, reveal p95 "
              f"{result['reveal'].get('p95_s')} s, answers taken and counted {result['answers']}")
    return result


def within_targets(c: dict) -> bool:
    """Whether a class's control changes (the movers', beside any trainers or flooders) met p95 <= 1 s with no
    errors."""
    return c["change"].get("p95_s", 99) <= TARGETS["change_p95_s"] and not c["errors"]


def _merged(env: Environment, kind: str):
    """All pages' entries of one request type as one (Locust keeps one entry per name)."""
    from locust.stats import StatsEntry
    total = StatsEntry(env.stats, kind, kind)
    for (name, method), entry in env.stats.entries.items():
        if method == kind:
            total.extend(entry)
    return total


class Served:
    """Where the classes connect: a given URL, one `streamlit run app.py`, or `replicas` of it behind HAProxy (serve/).
    The log of every process it started is read at the end, a killed replica's too."""

    def __init__(self, url: str = "", replicas: int = 0, root: Path = ROOT, env: dict[str, str] | None = None):
        self.replicas = Replicas(replicas, free_port()) if replicas else None
        self.server = Server(root / "app.py", root, env=env) if not url and not replicas else None
        self.url = url or (self.replicas.url if self.replicas else self.server.url)
        self.ended_logs: list[str] = []  # what the replicas killed mid-class printed

    def processes(self) -> list[Server]:
        return self.replicas.servers if self.replicas else [self.server] if self.server else []

    def kill_and_restart(self, name: str) -> float:
        """SIGKILL replica `name` (a crash, or the machine taking its memory), then start it again as `python -m
        serve` does; the seconds until the new one answers its health check and the proxy points at it."""
        victim = self.replicas.names()[name]
        start = time.monotonic()
        os.killpg(victim.proc.pid, signal.SIGKILL)
        while victim.proc.poll() is None:  # reaped: its log is complete
            gevent.sleep(0.1)
        self.ended_logs.append(victim.output())
        self.replicas.restart_exited()
        return time.monotonic() - start

    def log_lines(self) -> dict:
        """The lines of every server's log that mean a student met an error: Python tracebacks, Streamlit's
        uncaught script errors, those the pages' boundary caught (ui/boundary.py), SystemError (the parser's)."""
        logs = self.ended_logs + [server.output() for server in self.processes()]
        lines = [line for log in logs for line in log.splitlines()]
        counted = {"processes": len(logs), "lines": len(lines),
                   **{name: sum(marker in line for line in lines) for name, marker in LOG_MARKERS.items()}}
        if self.replicas is not None:  # HAProxy's own: each time its health checks took a replica out or back
            proxy = self.replicas.proxy.output().splitlines()
            counted["proxy"] = {"marked_down": [line for line in proxy if " is DOWN" in line],
                                "marked_up": sum(" is UP" in line for line in proxy)}
        return counted

    def stop(self) -> None:
        if self.replicas is not None:
            self.replicas.stop()
        elif self.server is not None:
            self.server.stop()


def kill_during(served: Served, at_s: float, log: list[dict]) -> gevent.Greenlet:
    """In the background: at_s seconds from now, kill replica r1 and start it again."""
    def kill() -> None:
        gevent.sleep(at_s)
        back_s = served.kill_and_restart("r1")
        log.append({"replica": "r1", "killed_at_s": at_s, "restarted_after_s": round(back_s, 1)})
        print(f"killed r1 {at_s:.0f} s into the class; a new r1 answered its health check {back_s:.0f} s later")
    return gevent.spawn(kill)


def run_classes(served: Served, sizes: list[int], args: argparse.Namespace, warmers: int) -> dict:
    """Warm (unless --cold), then one class of each size; with --kill-at, r1 is killed that far into each class."""
    if not args.cold:
        start = time.perf_counter()
        warm_every_entry_point(served.url, warmers)
        for server in served.processes():
            server.wait_idle()
        print(f"warmed every entry point in {time.perf_counter() - start:.0f} s")
    classes, kills = [], []
    for size in sizes:
        killer = kill_during(served, args.kill_at, kills) if args.kill_at else None
        classes.append(one_class(served.url, size, args.steady, served.server, args.arrival, args.trainers,
                                 args.flooders, args.followers))
        if killer is not None:
            killer.join()
    return {"classes": classes, "kills": kills, "server_log": served.log_lines()}


def serve_and_run(args: argparse.Namespace, sizes: list[int], replicas: int, root: Path = ROOT,
                  env: dict[str, str] | None = None) -> dict:
    served = Served(args.url, replicas, root, env)
    try:
        return run_classes(served, sizes, args, max(args.warmers, replicas))
    finally:
        served.stop()


def before_and_after(args: argparse.Namespace, sizes: list[int]) -> tuple[dict, list[str]]:
    """Issue 47's second goal: the same seeded classes on a server of commit `args.before` (a git worktree, the notes
    beside it as beside this checkout, installed as its requirements.txt installs it) and on this checkout's, in turn,
    BEFORE_AFTER_ROUNDS times on this machine; the server's CPU per control change, after over before."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", args.before], check=True, capture_output=True,
                            text=True).stdout.strip()
    rounds = []
    with tempfile.TemporaryDirectory() as folder:
        checkout = Path(folder) / ROOT.name
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(checkout), commit],
                       check=True)
        if (ROOT.parent / "shared").is_dir():
            (Path(folder) / "shared").symlink_to(ROOT.parent / "shared")
        env, hidden = installed_as_then(checkout, Path(folder))
        try:
            for _ in range(BEFORE_AFTER_ROUNDS):
                before = serve_and_run(args, sizes, 0, checkout, env)
                rounds.append({"before": before, "after": serve_and_run(args, sizes, 0)})
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(checkout)], check=True)

    def per_change(side: str, i: int) -> float:
        """The server's CPU ms per change in the i-th class size, over every round."""
        classes = [r[side]["classes"][i] for r in rounds]
        return 1000 * sum(c["server"]["cpu_s_steady"] for c in classes) / sum(c["change"]["count"] for c in classes)
    ratios = {}
    for i, size in enumerate(sizes):
        after, before = per_change("after", i), per_change("before", i)
        ratios[size] = round(after / before, 2)
        print(f"{size} students: the server's CPU per change {after:.1f} ms against {before:.1f} ms at {commit[:7]}, "
              f"{ratios[size]}x")
    failures = [f"{size} students: CPU per change {ratio}x of {commit[:7]}'s" for size, ratio in ratios.items()
                if ratio > CPU_PER_CHANGE_TARGET]
    return {"before_commit": commit, "hidden_from_before": hidden, "rounds": rounds,
            "cpu_per_change_after_over_before": ratios}, failures


def page_exceptions(c: dict) -> int:
    """A class's exceptions on the page (Streamlit's error element, or the boundary's notice), apart from dropped
    connections and runs that never finished."""
    return sum(n for error, n in c["errors"].items() if error.startswith(PAGE_EXCEPTION))


def stress(args: argparse.Namespace) -> tuple[dict, list[str]]:
    """Issue 44: five classes of 300 on one process, then 160 over two replicas with r1 killed mid-class; no
    student may meet an exception, and no server may log one."""
    args.kill_at = 0
    one = serve_and_run(args, [STRESS_STUDENTS] * STRESS_RUNS, 0)
    args.kill_at = KILL_AT_S
    two = serve_and_run(args, [STRESS_REPLICA_STUDENTS], 2)
    runs = {"one_process": one, "two_replicas_one_killed": two}
    failures = []
    for name, run in runs.items():
        exceptions = [page_exceptions(c) for c in run["classes"]]
        logged = {k: v for k, v in run["server_log"].items() if k in LOG_MARKERS and v}
        if any(exceptions) or logged:
            failures.append(f"{name}: exceptions on the page per class {exceptions}, server log {logged}")
    return runs, failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="25,50,100,150,200", help="class sizes, one run each")
    parser.add_argument("--steady", type=float, default=60.0, help="seconds of control changes per class")
    parser.add_argument("--arrival", type=float, default=ARRIVAL_S, help="seconds over which a class arrives")
    parser.add_argument("--url", default="", help="an already running server or proxy (default: start one)")
    parser.add_argument("--name", default="class_size", help="results file name")
    parser.add_argument("--cold", action="store_true",
                        help="the first class meets the server as soon as its port opens, nothing warmed")
    parser.add_argument("--trainers", type=int, default=0,
                        help="students of each class who press Train at once while the others move controls")
    parser.add_argument("--flooders", type=int, default=0,
                        help="students of each class who rerun as fast as they can, with no think time")
    parser.add_argument("--warmers", type=int, default=1,
                        help="sessions that warm the server at once: the number of replicas behind --url")
    parser.add_argument("--replicas", type=int, default=0,
                        help="serve the classes from this many replicas behind HAProxy (python -m serve's)")
    parser.add_argument("--kill-at", type=float, default=0,
                        help="with --replicas: seconds into each class when replica r1 is killed and started again")
    parser.add_argument("--followers", type=int, default=0,
                        help="students of each class who follow a live lecture (a lecturer joins the class), "
                             "written as class_size_lecture")
    parser.add_argument("--stress", action="store_true",
                        help=f"{STRESS_RUNS} classes of {STRESS_STUDENTS} on one process, then "
                             f"{STRESS_REPLICA_STUDENTS} over two replicas with one killed {KILL_AT_S:.0f} s in: "
                             f"no exception (written as class_size_stress)")
    parser.add_argument("--before", default="",
                        help="a commit: run the classes on its server and this checkout's in turn and compare the "
                             "server's CPU per change (issue 47)")
    args = parser.parse_args()
    if args.before and (args.url or args.replicas):
        parser.error("--before starts its own two servers")
    if args.kill_at and not args.replicas:
        parser.error("--kill-at needs --replicas")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.followers:  # the servers this process starts read the key: the lecture is on
        os.environ["HOW_LMS_LECTURE_KEY"] = LECTURE_KEY
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count()},
        "versions": {"python": platform.python_version(), "streamlit": version("streamlit"),
                     "locust": version("locust")},
        "smollm_present": smollm_present(),
    }
    if args.stress:
        runs, failures = stress(args)
        result |= {"method": f"{STRESS_RUNS} classes of {STRESS_STUDENTS} back to back on one warmed `streamlit run "
                             f"app.py`, then {STRESS_REPLICA_STUDENTS} over two warmed replicas behind HAProxy with "
                             f"r1 killed (SIGKILL) {KILL_AT_S:.0f} s into the class and started again as `python -m "
                             f"serve` does; {METHOD.format(arrival=args.arrival, steady=args.steady)}. Errors are "
                             f"split into exceptions on the page and dropped or unfinished runs (a killed replica's "
                             f"students lose their connection and open their page again through the proxy); the "
                             f"servers' logs are counted line by line",
                   "targets": {"page_exceptions": 0, **{f"log_{name}": 0 for name in LOG_MARKERS}},
                   **runs}
        for name, run in runs.items():
            print(f"{name}: exceptions on the page per class {[page_exceptions(c) for c in run['classes']]}; "
                  f"server log {run['server_log']}")
        return finish("class_size_stress", result, failures)
    if args.before:
        runs, failures = before_and_after(args, sizes)
        result |= {"method": f"the same seeded classes (the n-th student of each makes the same choices) on one warmed "
                             f"`streamlit run app.py` of commit {runs['before_commit'][:7]} and then of this "
                             f"checkout, {BEFORE_AFTER_ROUNDS} rounds in turn, each installed as its own "
                             f"requirements.txt asks "
                             f"(hidden from {runs['before_commit'][:7]}'s server: "
                             f"{', '.join(runs['hidden_from_before']) or 'nothing'}); "
                             + METHOD.format(arrival=args.arrival, steady=args.steady)
                             + "; CPU per change is the server process's user and system CPU over the steady phase "
                               "over the changes finished in it, summed over the rounds",
                   "targets": {"cpu_per_change_after_over_before": CPU_PER_CHANGE_TARGET}, **runs}
        return finish("class_size_cpu" if args.name == "class_size" else args.name, result, failures)
    run = serve_and_run(args, sizes, args.replicas)
    classes = run["classes"]
    knee = max((c["students"] for c in classes if within_targets(c)), default=0)
    served = (f"{args.replicas} replicas behind HAProxy" if args.replicas else
              "the given URL" if args.url else "one `streamlit run app.py` on loopback")
    result |= {
        "method": f"Locust users speaking Streamlit's websocket protocol (benchmarks/protocol.py) against {served}, "
                  f"{'met cold, as soon as its port opened' if args.cold else 'warmed first'}; "
                  + METHOD.format(arrival=args.arrival, steady=args.steady)
                  + (f"; {args.followers} of each class instead open a live lecture's link and follow it: the lecturer "
                     f"(one more session, on {LECTURE_PAGE}) acts every {LECTURE_EVERY_S:.0f} s once the class has "
                     f"arrived, in turn moving the view (its {LECTURE_CONTROL}), asking a question and revealing its "
                     f"answers; a follower answers {ANSWER_THINK_S[0]:.0f}-{ANSWER_THINK_S[1]:.0f} s after a question "
                     f"reaches it, and {AWAY_SHARE:.0%} of them step away once and come back; lag and reveal are "
                     f"timed from the lecturer's act to each follower's pushed run" if args.followers else ""),
        "targets": LECTURE_TARGETS if args.followers else TARGETS, **run, "largest_class_within_1s_p95": knee,
    }
    print(f"largest class with change p95 <= {TARGETS['change_p95_s']} s and no errors: {knee}")
    if args.trainers:  # issue 28: 30 press Train while 30 move controls; movers p95 <= 1 s, every training right
        failures = [f"{c['students']} students with {c['trainers']} training: movers' p95 "
                    f"{c['change'].get('p95_s')} s, {sum(c['errors'].values())} errors, models shown per "
                    f"dimension {[len(t['models_shown']) for t in c['trained'].values()]}" for c in classes
                    if not within_targets(c) or sum(t["trainers"] for t in c["trained"].values()) < c["trainers"]
                    or any(len(t["models_shown"]) != 1 for t in c["trained"].values())]
    elif args.flooders:  # issue 28: a session rerunning flat out; no other student notices
        failures = [f"{c['students']} students with {c['flooders']} rerunning flat out: the others' p95 "
                    f"{c['change'].get('p95_s')} s, {sum(c['errors'].values())} errors" for c in classes
                    if not within_targets(c)]
    elif args.followers:  # issue 46: the class follows within 2 s, every answer counted once, the explorers as ever
        failures = [f"{c['students']} students, {c['followers']} following: lag p95 {c['follow'].get('p95_s')} s, "
                    f"reveal p95 {c['reveal'].get('p95_s')} s, explorers' p95 {c['change'].get('p95_s')} s, "
                    f"{sum(c['errors'].values())} errors, answers {c['answers']}" for c in classes
                    if c["follow"].get("p95_s", 99) > LECTURE_TARGETS["follow_p95_s"]
                    or c["reveal"].get("p95_s", 99) > LECTURE_TARGETS["reveal_p95_s"] or not within_targets(c)
                    or not c["answers"] or any(a["taken"] != a["counted_on_the_bar"] for a in c["answers"])]
    elif args.cold:  # a cold server is judged on its first pages (issue 28: 60 students, p95 <= 5 s)
        failures = [f"{c['students']} students on a cold server: first page p95 {c['open'].get('p95_s')} s, "
                    f"{sum(c['errors'].values())} errors" for c in classes
                    if c["open"].get("p95_s", 99) > COLD_OPEN_P95_S or c["errors"]]
    else:
        failures = [] if knee >= 100 else [f"largest class within targets {knee} < 100"]
    return finish("class_size_lecture" if args.followers and args.name == "class_size" else args.name, result,
                  failures)


if __name__ == "__main__":
    sys.exit(main())
