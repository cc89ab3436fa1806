"""A lecture's change run once for a whole group of followers: the first of them runs the page as before, and what
its run sent goes to every other follower whose screen showed the same thing, without running the page again.

A class of 100 on one process had each follower run the lecturer's new page itself: 100 runs of the same page at the
same settings, one at a time under the interpreter's lock, so the last student saw it about 12 s after the lecturer
(benchmarks.lecture). A group here is the sessions with the same page and URL (so the same lecture mode) and the
same lecture state (following, the view last moved to, the line on the open question's card: ui/lecture.py's
_screen): their runs would send the same messages. The first one's messages, from the start of its last run to its
finish, are sent to the others, and their sessions are left as that run left its own: the page and URL a rerun
starts from, the lecture state, the values of its widgets (which their browsers, shown the same widgets, send back
from then on), its fragments (a control inside one reruns it alone), the files its download buttons serve.

A session that is running, or whose screen or lecture state changed meanwhile, or a run that did not finish, or one
that sent what means something to its own browser only (a reference to a message that browser holds, a table whose
rows are served to its own session): each such session runs itself, as before.
"""
from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Hashable

from streamlit import runtime
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetStates
from streamlit.runtime.app_session import AppSession, AppSessionState

WAIT_S = 10.0  # how long the others wait for the first session's run before each runs itself


def _idle(session: AppSession) -> bool:
    return session._state == AppSessionState.APP_NOT_RUNNING and session._scriptrunner is None


class _Recording:
    """The messages of a session's next run that finishes (a run cut short to move to another page, as a follower's
    first run is, starts the recording again), handed to `done`, or None when the run failed or stopped."""

    def __init__(self, session: AppSession, done: Callable[[list[ForwardMsg] | None], None]):
        self.messages: list[ForwardMsg] = []
        self._session, self._done = session, done
        session._enqueue_forward_msg = self._record  # the instance's own, over AppSession's method

    def _record(self, message: ForwardMsg) -> None:
        AppSession._enqueue_forward_msg(self._session, message)
        kind = message.WhichOneof("type")
        if kind == "new_session":
            self.messages = []
        self.messages.append(message)
        if kind == "script_finished" and message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            del self._session._enqueue_forward_msg
            whole = message.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY and not any(map(_own, self.messages))
            self._done(self.messages if whole else None)


def _own(message: ForwardMsg) -> bool:
    """Whether the message means something to its own session's browser only: a reference to a message that browser
    holds (another may not: "Cached ForwardMsg MISS"), or a lazy table's, whose rows are served to that session."""
    element = message.delta.new_element
    return message.HasField("ref_hash") or (element.WhichOneof("type") == "dataframe"
                                            and element.dataframe.HasField("lazy_data"))


class Groups:
    """Runs a change for sessions grouped by a key: `rerun(id)` for the first of each group, a copy of its run for
    the others once `ran(first)` says the run left it in the state it was run for; `adopt(other, first)` then gives
    each other session the first one's own state."""

    def __init__(self, rerun: Callable[[str], None], ran: Callable[[AppSession], bool],
                 adopt: Callable[[AppSession, AppSession], None]):
        self._rerun, self._ran, self._adopt = rerun, ran, adopt
        self._lock = threading.Lock()
        self._waiting: dict[str, object] = {}  # session id -> the run it waits for (a newer change replaces it)
        self._joining: dict[Hashable, list[AppSession]] = {}  # key -> the sessions waiting for its first run

    def run(self, session_ids: list[str], key: Callable[[AppSession], Hashable | None]) -> None:
        """Run the change for each session: grouped by key(session), alone where that is None."""
        groups: dict[Hashable, list[AppSession]] = {}
        for session_id in session_ids:
            if (session := app_session(session_id)) is None:
                continue
            group = key(session) if _idle(session) else None
            if group is None:
                with self._lock:
                    self._waiting.pop(session_id, None)
                self._rerun(session_id)
            else:
                groups.setdefault(group, []).append(session)
        for group, (first, *others) in groups.items():
            batch = object()
            with self._lock:
                self._waiting.pop(first.id, None)
                self._waiting.update((other.id, batch) for other in others)
            if others:
                send = functools.partial(self._send, first=first, others=others, key=key, group=group, batch=batch)
                _Recording(first, send)
                threading.Timer(WAIT_S, send, (None,)).start()  # a first session closed mid-run sends no finish
            self._rerun(first.id)

    def join(self, session: AppSession, key: Hashable) -> bool:
        """A session about to make its first run of what many sessions arriving together will run (a class opening
        the link, a killed replica's followers reconnecting here): False when it is to run it, recorded from its
        next run (the caller asks for one), for those that join with the same key meanwhile; True when such a run
        is under way, and this session, its own run stopped, waits for a copy of it."""
        with self._lock:
            if (others := self._joining.get(key)) is not None:
                others.append(session)
                self._waiting[session.id] = others
                return True
            others = self._joining[key] = []

        def send(messages: list[ForwardMsg] | None) -> None:
            with self._lock:
                if self._joining.get(key) is others:
                    del self._joining[key]
            self._send(messages, first=session, others=others, key=lambda _: key, group=key, batch=others)
        _Recording(session, send)
        threading.Timer(WAIT_S, send, (None,)).start()
        return False

    def _send(self, messages: list[ForwardMsg] | None, first: AppSession, others: list[AppSession], key: Callable,
              group: Hashable, batch: object) -> None:
        """On the event loop, after the first session's run: its messages to each other session still waiting for
        this run and still as it was; a run of its own for the rest."""
        with self._lock:
            mine = [s for s in others if self._waiting.get(s.id) is batch]
            for session in mine:
                del self._waiting[session.id]
        copied = messages is not None and self._ran(first)
        values = WidgetStates(widgets=first.session_state.get_widget_states()) if copied else None
        for session in mine:
            if copied:  # one session at a time on the event loop, so that other sessions' messages go out between
                first._event_loop.call_soon(self._copy, messages, values, first, session, key, group)
            else:
                self._rerun(session.id)

    def _copy(self, messages: list[ForwardMsg], values: WidgetStates, first: AppSession, session: AppSession,
              key: Callable, group: Hashable) -> None:
        if not _idle(session) or key(session) != group:
            self._rerun(session.id)
            return
        for message in messages:
            kind = message.WhichOneof("type")
            if kind == "new_session":  # the one message that names its session: a copy of its own
                own = ForwardMsg()
                own.CopyFrom(message)
                own.new_session.initialize.session_id = session.id
                session._client_state.page_script_hash = own.new_session.page_script_hash
                message = own
            elif kind == "page_info_changed":
                session._client_state.query_string = message.page_info_changed.query_string
            session._browser_queue.enqueue(message)  # shared, unchanged: the queue and the socket only read it
        session._browser_queue.enqueue(session._create_session_status_changed_message())  # not running: never was
        # the sender wakes once for the run, not once per message (each wake-up writes to the loop's self-pipe)
        if session._message_enqueued_callback is not None:
            session._message_enqueued_callback()
        session.session_state.set_widgets_from_proto(values)
        _share_fragments(first, session)
        files = runtime.get_instance().media_file_mgr
        with files._lock:  # the download buttons' files, kept while this session shows them too
            if (served := files._files_by_session_and_coord.get(first.id)) is not None:
                files._files_by_session_and_coord[session.id] = dict(served)
        self._adopt(session, first)


def _share_fragments(first: AppSession, session: AppSession) -> None:
    """The fragments first's run registered, in session's storage instead of its own: its browser now shows them,
    and a control inside one reruns that fragment alone, looked up there (Streamlit skips one it cannot find, and
    the control then does nothing). A fragment is a closure over its call's arguments and the cursors at its
    call, the same for every session shown that run; each of its reruns reads the rerunning session's context."""
    theirs, mine = first._fragment_storage, session._fragment_storage
    with theirs._lock:  # the registry's own records, in the order first's run registered them
        registered = [(key, theirs._fragments[key], theirs._parent_by_id.get(key), theirs._target_key_by_id.get(key),
                       theirs._lifetime_by_id[key])
                      for key in sorted(theirs._fragments, key=theirs._registration_sequence_by_id.__getitem__)]
    mine.clear()
    for key, fragment, parent, target, lifetime in registered:
        mine.register(key, fragment, parent_fragment_id=parent, target_key=target, lifetime=lifetime)


def app_session(session_id: str) -> AppSession | None:
    """The AppSession of a connected session, or None (closed, or no server: an AppTest)."""
    info = runtime.get_instance()._session_mgr.get_active_session_info(session_id) if runtime.exists() else None
    return info and info.session
