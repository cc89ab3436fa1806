"""A server's generations decoded as one continuous batch (batching.py), for every session that asks.

Sessions submit requests from their own threads and read their tokens as they come; one loop, on a thread of
the server's choosing, does all the work: between steps it drops the sequences nobody waits for any more and
lets the waiting requests join, first come first served, as long as the batch's caps allow (MAX_SEQUENCES
sequences, MAX_TOKENS tokens of cache); then it draws every sequence's next token and runs the step. A request
past the caps waits in line, its place known; one the batch could never take, or with settings out of range, is
refused at once and alone. Identical requests share one sequence, as identical jobs share one job in ui/jobs.py.

The loop runs while there is work and ends when there is none; the next request starts it again through
`start` (a thread by default; the app hands it to its line of heavy jobs, and its `yielding` says when other
heavy work waits: the loop then lets nobody new in, finishes the batch and starts again behind that work).
"""
from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.efficiency.measure import own_thread_count
from engine.errors import InputError
from engine.llm.batching import MAX_SEQUENCES, MAX_TOKENS, DecodeBatch, Request, Sequence
from engine.llm.generation import Generated
from engine.llm.smollm import SmolLM

MAX_WAITING = 64  # requests in line at most; past it a new one is refused with a message


@dataclass(eq=False)
class Ticket:
    """A request as the server tracks it, shared by every session (watcher) that asked for it."""
    request: Request
    watchers: set = field(default_factory=set)
    state: str = "waiting"  # waiting, joining (its prompt being read), decoding, done, cancelled, failed
    sequence: Sequence | None = None  # once it has joined the batch
    error: BaseException | None = None
    submitted: float = field(default_factory=time.monotonic)
    first_token: float | None = None  # monotonic time its first token was drawn
    finished: float | None = None
    done: threading.Event = field(default_factory=threading.Event)  # set when done, cancelled or failed

    @property
    def steps(self) -> list[Generated]:
        """Its tokens so far; the loop appends to the list as it draws them."""
        return self.sequence.steps if self.sequence is not None else []


def _in_a_thread(loop: Callable[[], None]) -> None:
    threading.Thread(target=loop, name="decode-batch", daemon=True).start()


class BatchServer:
    def __init__(self, lm: SmolLM, max_sequences: int = MAX_SEQUENCES, max_tokens: int = MAX_TOKENS,
                 max_waiting: int = MAX_WAITING, start: Callable[[Callable[..., None]], None] = _in_a_thread):
        self.batch = DecodeBatch(lm, max_sequences, max_tokens)
        self.max_waiting, self._start = max_waiting, start
        self._lock = threading.Lock()
        self._waiting: deque[Ticket] = deque()
        self._decoding: dict[Sequence, Ticket] = {}
        self._shared: dict[Request, Ticket] = {}  # waiting or decoding tickets, by request
        self._cancelled: set[Ticket] = set()  # joining or decoding tickets nobody watches any more
        self._looping = False  # a loop is started or about to start

    @property
    def decoding(self) -> int:
        """Sequences in the batch now."""
        return len(self._decoding)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def submit(self, request: Request, watcher) -> Ticket:
        """The ticket for request, shared if the same request waits or decodes already. Raises InputError for
        settings the batch refuses, or when the line is full."""
        self.batch.check(request)
        with self._lock:
            ticket = self._shared.get(request)
            start = False
            if ticket is None:
                if len(self._waiting) >= self.max_waiting:
                    raise InputError(f"{len(self._waiting)} generations already wait for the server's batch, its "
                                     "limit: try again in a minute.")
                ticket = Ticket(request)
                self._waiting.append(ticket)
                self._shared[request] = ticket
                start, self._looping = not self._looping, True
            ticket.watchers.add(watcher)
        if start:
            self._start_loop()
        return ticket

    def _start_loop(self) -> None:
        """Start the loop. If it cannot be (the app's line of jobs is full), the requests waiting for it fail with
        the reason, which is raised again, and the next request tries afresh."""
        try:
            self._start(self.loop)
        except Exception as error:  # noqa: BLE001  (handed to the requests that waited for the loop)
            with self._lock:
                self._looping = False
                for ticket in self._waiting:
                    self._forget(ticket)
                    ticket.error = error
                    self._finish(ticket, "failed")
                self._waiting.clear()
            raise

    def cancel(self, ticket: Ticket, watcher) -> None:
        """The watcher no longer waits: a ticket left alone leaves the line now, or the batch at the next step."""
        with self._lock:
            ticket.watchers.discard(watcher)
            if ticket.watchers or ticket.done.is_set():
                return
            if self._shared.get(ticket.request) is ticket:
                del self._shared[ticket.request]  # the same request asked again starts afresh
            if ticket.state == "waiting":
                self._waiting.remove(ticket)
                self._finish(ticket, "cancelled")
            else:
                self._cancelled.add(ticket)

    def place(self, ticket: Ticket) -> int:
        """1 for the next ticket to join the batch; 0 once it has joined (or ended)."""
        with self._lock:
            return self._waiting.index(ticket) + 1 if ticket.state == "waiting" else 0

    def loop(self, yielding: Callable[[], bool] = lambda: False) -> None:
        """Decode until no request is left. With `yielding` true, let nobody new join once the requests waiting
        when this loop began have joined, and end once the batch is empty, starting again (behind the other work)
        if requests still wait: each turn serves at least the line it found, so steady other work cannot starve
        it."""
        own_thread_count()  # the loop's thread is new: its matrix products would otherwise spread over every core
        try:
            again = self._serve(yielding)
        except BaseException as error:  # the loop itself broke: nobody must wait for a loop that is gone
            with self._lock:
                self._looping = False
                self.batch.sequences.clear()
                for ticket in [*self._waiting, *self._decoding.values()]:
                    self._forget(ticket)
                    ticket.error = error
                    self._finish(ticket, "failed")
                self._waiting.clear(), self._decoding.clear(), self._cancelled.clear()
            raise
        if again:
            self._start_loop()

    def _serve(self, yielding: Callable[[], bool]) -> bool:
        """The loop's steps; whether requests still wait when it ends."""
        fresh = True  # this turn's first admission: whoever waits now joins, other work or not
        while True:
            with self._lock:
                for ticket in self._cancelled:
                    if not ticket.done.is_set():  # its join may have failed meanwhile
                        self.batch.drop(ticket.sequence)
                        del self._decoding[ticket.sequence]
                        self._finish(ticket, "cancelled")
                self._cancelled.clear()
                joining = []
                stepping_aside = bool(self._waiting) and not fresh and yielding()
                # first come first served: nobody overtakes the head of the line, however small
                while (self._waiting and not stepping_aside
                       and self.batch.fits([t.request for t in joining] + [self._waiting[0].request])):
                    joining.append(self._waiting.popleft())
                    joining[-1].state = "joining"
                fresh = False
                if not joining and not self._decoding:
                    self._looping = bool(self._waiting)
                    return self._looping
            if joining:
                self._join(joining)
            self._step()

    def _join(self, tickets: list[Ticket]) -> None:
        """Read the tickets' prompts (together, outside the lock); if that fails, each alone, so that a request
        that cannot be read fails by itself."""
        try:
            sequences = self.batch.join_all([t.request for t in tickets])
        except Exception as error:  # noqa: BLE001  (retried one by one below)
            if len(tickets) == 1:
                with self._lock:
                    self._forget(tickets[0])
                    tickets[0].error = error
                    self._finish(tickets[0], "failed")
                return
            for ticket in tickets:
                self._join([ticket])
            return
        with self._lock:
            for ticket, sequence in zip(tickets, sequences):
                ticket.sequence, ticket.state = sequence, "decoding"
                self._decoding[sequence] = ticket

    def _step(self) -> None:
        try:
            drawn = self.batch.draw()
            now = time.monotonic()
            with self._lock:
                for sequence, _ in drawn:
                    ticket = self._decoding[sequence]
                    ticket.first_token = ticket.first_token or now
                    if sequence.finished:
                        del self._decoding[sequence]
                        self._forget(ticket)
                        self._cancelled.discard(ticket)
                        self._finish(ticket, "done")
            self.batch.advance()
        except Exception as error:  # noqa: BLE001  (a fault in the step: its requests fail, the server goes on)
            with self._lock:
                self.batch.sequences.clear()
                for ticket in self._decoding.values():
                    self._forget(ticket)
                    ticket.error = error
                    self._finish(ticket, "failed")
                self._decoding.clear()
                self._cancelled.clear()

    def _forget(self, ticket: Ticket) -> None:
        if self._shared.get(ticket.request) is ticket:
            del self._shared[ticket.request]

    @staticmethod
    def _finish(ticket: Ticket, state: str) -> None:
        ticket.state, ticket.finished = state, time.monotonic()
        ticket.done.set()
