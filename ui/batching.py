"""SmolLM2's generations for the whole class: every session's Generate joins the server's one continuous batch
(engine/llm/serving.py), whose loop runs as a job of the server's line (ui/jobs.py) and steps aside when other
heavy work waits. A session streams its own tokens, shows its place while it waits and how many generations
the server decodes together; leaving the page (a rerun, closing the tab) frees its slot at the next step.

And the figure that says why: tokens per second and time between tokens against the batch size, measured on
this server on demand, or, until someone does, the committed benchmark's measurement, labelled.
"""
from __future__ import annotations

import itertools
import json
from collections.abc import Callable

import streamlit as st

from engine.llm import batching
from engine.llm.batching import BatchTiming, Request, time_batch_sizes
from engine.llm.generation import MAX_NEW_TOKENS, Generated
from engine.llm.serving import BatchServer, Ticket
from engine.llm.smollm import SmolLM
from engine.waiting_line import State
from ui import figures, loaders, queued, settings
from ui.jobs import JobQueue, ordinal, place_text
from ui.measured import shared_timing

SIZES = (1, 2, 4, 8, 16, 32)
TIMED_STEPS = 5
DRAIN_S = MAX_NEW_TOKENS * 0.25  # a full batch's step is about 0.2 s on one core


class _InTheLine:
    """Starts the batch's loop as a job of the server's line and keeps the latest, for its place in that line."""

    def __init__(self, queue: JobQueue):
        self.queue, self.job, self._loops = queue, None, itertools.count()

    def __call__(self, loop: Callable[..., None]) -> None:
        owner = f"decode-batch-{next(self._loops)}"  # a job of its own each time: nobody else leaves it
        # a loop lasts as long as students keep generating, so no duration of one predicts the next; what the line
        # estimates for jobs behind it is the longest a batch takes to drain once it stops letting people in
        self.job = self.queue.submit(owner, "generate-batch", owner, lambda report: loop(self.queue.has_waiting),
                                     estimate=DRAIN_S, averaged=False)

    def waiting_place(self) -> str | None:
        """ "2nd in line…" while the loop's job waits for the line, else None."""
        job = self.job
        return place_text(*self.queue.place(job)) if job is not None and job.state is State.WAITING else None


@st.cache_resource(show_spinner=False)
def _line() -> _InTheLine:
    return _InTheLine(queued.server_queue())


@st.cache_resource(show_spinner=False)
def batch_server(_lm: SmolLM) -> BatchServer:
    """The server's one batch of SmolLM2 generations (one model, so `_lm` is left out of the key), its caps from the
    server's settings."""
    return BatchServer(_lm, max_tokens=settings.current().batch_tokens, max_waiting=settings.current().queue,
                       start=_line())


def request_of(ids: list[int], temperature: float, top_k: int, top_p: float, new_tokens: int, seed: int) -> Request:
    """The SmolLM2 page's controls as the request the batch takes: a top-k of 0 and a top-p of 1 turn them off."""
    return Request(tuple(ids), new_tokens, temperature, top_k or None, None if top_p >= 1 else top_p, seed)


def together_text(server: BatchServer) -> str:
    waiting = f", {server.waiting} waiting" if server.waiting else ""
    return f"{server.decoding} decoding together{waiting}"


def _status(server: BatchServer, ticket: Ticket) -> tuple[float, str]:
    """The bar's fraction and text for a ticket at this moment."""
    if place := server.place(ticket):
        if (line := _line().waiting_place()) is not None:
            return 0.0, f"The batch waits for the server's line of heavy work: {line}. Changing a control leaves it."
        batch = server.batch
        cap = (f"at its cap of {batch.max_sequences} generations and {batch.max_tokens:,} tokens of KV cache; "
               if not batch.fits([ticket.request]) else "")
        return 0.0, (f"{ordinal(place)} in line for the batch ({cap}{batch.tokens_held:,} tokens held by "
                     f"{server.decoding} generations). Changing a control leaves the line.")
    n, most = len(ticket.steps), ticket.request.max_new_tokens
    others = server.decoding - ticket.decoding  # while its prompt is read, it is not counted yet
    company = f"in one batch with {others} other generation{'s' * (others != 1)}" if others > 0 else "alone"
    return n / most, f"Generating {company}: token {n} of at most {most}"


def generate(lm: SmolLM, request: Request, show: Callable[[list[Generated]], None],
             count: Callable[[str], None]) -> list[Generated]:
    """The page's request generated in the server's batch: show(tokens so far) as they come, count(how many the
    batch decodes) at every redraw; the tokens once done. Refused settings raise InputError for page.guard."""
    server, session = batch_server(lm), queued.this_session()
    bar, shown, first = st.empty(), -1, True  # before submitting: drawing it is where a left session's run ends
    ticket = server.submit(request, session)
    try:
        while not ticket.done.wait(0 if first else queued.TICK):
            first = False
            fraction, text = _status(server, ticket)
            bar.progress(min(fraction, 1.0), text=text)  # where Streamlit ends a run its session has left
            count(together_text(server))
            if len(ticket.steps) != shown:
                shown = len(ticket.steps)
                show(list(ticket.steps))
    finally:
        server.cancel(ticket, session)
    bar.empty()
    if ticket.state is State.FAILED:  # e.g. the server's line was full when the batch had to start again
        queued.raise_failure(ticket.error, "Generating")
    return list(ticket.steps)


@st.cache_data(show_spinner=False)
def _committed() -> tuple[list[BatchTiming], str] | None:
    """The batch sizes benchmarks/llm.py timed, with where and when, or None without that file or section: read
    once per server, not at every rerun of the Generate view."""
    try:
        result = json.loads((loaders.RESULTS / "llm.json").read_text())
        timings = [BatchTiming(row["batch"], row["step_seconds"]) for row in result["batching"]["sizes"]]
        return timings, (f"measured {result['date'][:16].replace('T', ' ')} UTC by benchmarks/llm.py on "
                         f"{result['device']}")
    except (OSError, KeyError, TypeError, ValueError):
        return None


def class_figure(lm: SmolLM) -> None:
    """Tokens per second and milliseconds between tokens against the batch size, with the sentence that says why."""
    st.markdown("**Why the class's generations share one batch**")
    measured = shared_timing(
        ("batch sizes", SIZES), lambda progress: time_batch_sizes(lm, SIZES, steps=TIMED_STEPS, progress=progress),
        where="CPU, 1 thread", runs=f"median of {TIMED_STEPS} decode steps after one untimed", automatic=False)
    found = (measured.value, measured.label) if measured is not None else _committed()
    if found is None:
        st.info("Not measured on this server yet: press the button (about 5 seconds).", icon=":material/timer:")
        return
    timings, label = found
    sizes = [t.batch for t in timings]
    alone = timings[0].tokens_per_second if sizes[0] == 1 else None
    left, right = st.columns(2)
    with left:
        series = {"measured": [t.tokens_per_second for t in timings]}
        if alone is not None:
            series["each step as cheap as one request's"] = [alone * b for b in sizes]
        gain = f"{timings[-1].tokens_per_second / alone:.1f}× one request's" if alone else "measured"
        figures.show(figures.lines(sizes, series, dashed=list(series)[1:], x_title="generations in the batch",
                                   y_title="tokens per second, all together", height=320,
                                   title=f"Tokens per second at a batch of {sizes[-1]}: {gain}"))
    with right:
        figures.show(figures.lines(sizes, {"measured": [1e3 * t.median_step for t in timings]},
                                   x_title="generations in the batch", y_title="ms between a request's tokens",
                                   height=320, title="Each request waits a little longer per token"))
    per_token, batch = batching.cache_bytes_per_token(lm), batch_server(lm).batch
    st.caption(
        f"Timings {label}. A decode step reads all of SmolLM2's weights (540 MB in float32) to do one row of "
        "arithmetic per matrix: one request alone is bound by that read. Batched, the weights are read once per "
        "step for every request in it, so a step of many costs a few of one and yields a token for each. What the "
        f"batch cannot share is the KV cache: each request keeps its own, {per_token / 1024:.0f} KiB a token, growing "
        "with its length, and the batch's caches with the batch too (002 §2.5); this server caps them at "
        f"{batch.max_tokens:,} tokens ({batch.max_tokens * per_token / 2**20:.0f} MiB) and "
        f"{batch.max_sequences} generations, and a request past the cap waits for a place.")
