"""The live lecture in the app: the lecturer's bar (join code, who follows, a question to ask, reveal, end), a
follower's page moving with the lecturer's, the bar of a student exploring on their own, and the question card.

The lecture's state is serve/lectures.py's; this module keeps only this process's sessions in each lecture and wakes
them when it changes. A change is pushed, not polled: the lecturer's run announces it (pub/sub over Redis between
replicas), and every process reruns its own sessions that watch the lecture, as Streamlit reruns a session when its
script is saved (AppSession.request_rerun with the session's last client state). A follower's run then moves to the
lecturer's page and settings (st.switch_page, as a tour's stop does).

Off (nothing drawn, nothing started) unless the operator sets a lecturer key: in the environment (ui/settings.py), or
as `lecture_key` in .streamlit/secrets.toml.
"""
from __future__ import annotations

import hmac
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Hashable, Mapping
from urllib.parse import urlencode

import streamlit as st
from streamlit import runtime
from streamlit.logger import get_logger
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.app_session import AppSession, AppSessionState
from streamlit.runtime.scriptrunner import RerunData, get_script_run_ctx

from serve.lectures import CODE_ALPHABET, CODE_LENGTH, LectureError, Lectures, LocalRedis, Question, Snapshot, View
from ui import settings
from ui.catalog import BY_SLUG
from ui.page import DRAWN_PARAMS, JOIN
from ui.questions import QUESTIONS
from ui.replay import Groups
from ui.replay import app_session as _app_session

LOG = get_logger("how_lms.lecture")
TOKEN = "_lecture_token"  # session state: (code, token) of the lecture this session leads; never sent to a browser
FOLLOW = "_lecture_follow"  # session state: {"code", "applied": the view version last moved to, "following"}
TRIES = "_lecture_key_tries"  # session state: times of this session's wrong lecturer keys
KEY_TRIES, KEY_WINDOW_S = 5, 60  # wrong keys a session may enter a minute
TICK_S = 2.0  # how often this process says it is alive and lets go of its closed sessions
COUNT_EVERY_S = 1.0  # the lecturer's counts are redrawn at most this often while answers arrive
NOT_SHOWN = {"lecture", JOIN}  # URL parameters that are each screen's own: lecture mode, the lecture's code


def lecturer_key() -> str | None:
    """The key from the settings, else from secrets.toml (held to the settings' length bounds), else None."""
    if key := settings.current().lecture_key:
        return key
    try:
        key = st.secrets.get("lecture_key")
    except FileNotFoundError:  # no secrets.toml: the usual case
        return None
    low, high = settings.BOUNDS["lecture_key"]
    if key is not None and not low <= len(str(key)) <= high:
        raise ValueError(f"lecture_key in secrets.toml is not {low} to {high} characters long")
    return key and str(key)


class _Sessions:
    """This process's sessions in each lecture and their roles ("lead", "follow", "away"); wakes them on a change."""

    def __init__(self, lectures: Lectures):
        self.lectures = lectures
        self._lock = threading.Lock()
        self._roles: dict[str, dict[str, str]] = {}  # code -> session id -> role
        self._counted: dict[str, float] = {}  # session id -> when the lecturer was last rerun for the counts
        self._pending: set[str] = set()  # lecturers with a count rerun set
        self._groups = Groups(_rerun, _following, self._adopt)
        lectures.listen(self.heard)
        threading.Thread(target=self._tick, name="lecture-presence", daemon=True).start()

    def enter(self, code: str, session: str, role: str) -> None:
        with self._lock:
            for sessions in self._roles.values():
                sessions.pop(session, None)
            self._roles.setdefault(code, {})[session] = role

    def leave(self, code: str, session: str) -> None:
        with self._lock:
            self._roles.get(code, {}).pop(session, None)
        self.lectures.leave(code, session)

    def heard(self, code: str, what: str) -> None:
        """A lecture changed (on any replica): rerun the sessions here that show what changed. The followers' runs
        are shared: one per group of followers whose screens would show the same (ui/replay.py)."""
        wakes = {"view": {"follow"}, "question": {"follow", "away"}, "end": {"follow", "away"},
                 "count": {"lead"}}[what]
        with self._lock:
            lectures = self._roles.values() if code == "*" else [self._roles.get(code, {})]
            sessions = [(s, role) for roles in lectures for s, role in roles.items() if role in wakes]
        followers = []
        for session, role in sessions:
            if what == "count":
                self._count(session)
            elif role == "follow" and code != "*":
                followers.append(session)
            else:
                _rerun(session)
        if followers:
            self._groups.run(followers, self._screen(code))

    def _screen(self, code: str) -> Callable[[AppSession], Hashable | None]:
        """What a follower's run draws besides the lecture's view: the page and URL it starts from (lecture mode is
        in the URL), its lecture state, and its own line on the open question's card: its answer, or once revealed
        only whether it was right (so that a class's reveal is two or three runs, not one per answer given)."""
        lecture = self.lectures.snapshot(code)
        asked = lecture.question if lecture else None
        given = self.lectures.answers(code, asked.number) if asked else {}

        def own(mine: str | None) -> Hashable:
            return mine if mine is None or not asked.revealed else asked.right(mine)

        def screen(session: AppSession) -> Hashable | None:
            if (state := _follow_state(session)) is None:
                return None
            client, mine = session._client_state, own(given.get(session.id))
            return client.page_script_hash, client.query_string, tuple(sorted(state.items())), mine
        return screen

    def _adopt(self, session: AppSession, first: AppSession) -> None:
        """A follower shown `first`'s run takes the lecture state that run left, and is present where first is."""
        theirs = _follow_state(first)
        _follow_state(session).update(theirs)
        self.lectures.present(theirs["code"], session.id, theirs["following"], theirs["page"])

    def join(self, lecture: Snapshot) -> str | None:
        """For a session's first run in a lecture (a student opening its link, or reconnecting after their replica
        was killed): "copy" when another session's first run of the same view, for the same screen, is under way
        here and this one is to wait for a copy of it; else "record": this one's next run, moved to the view, is
        recorded for the sessions joining meanwhile (100 followers reconnecting at once were 100 runs of the page).
        None with no server to share runs in (an AppTest)."""
        try:
            session = _app_session(_session_id())
        except AttributeError:  # AppTest's runtime: a mock with no sessions
            return None
        if session is None:
            return None
        asked = lecture.question
        mine = self.lectures.answers(lecture.code, asked.number).get(session.id) if asked else None
        key = (lecture.code, lecture.version, tuple(sorted(_own_params().items())), mine)
        return "copy" if self._groups.join(session, key) else "record"

    def _count(self, session: str) -> None:
        """Rerun the lecturer for new counts, at most once a COUNT_EVERY_S (100 answers are a few reruns, not 100),
        and never over a run of the lecturer's own: a rerun then would cut short their change."""
        now = time.monotonic()
        with self._lock:
            due = self._counted.get(session, 0.0) + COUNT_EVERY_S
            if now < due and session in self._pending:
                return  # one rerun is already set for when the window ends
            self._counted[session] = max(now, due)
            self._pending.add(session)
        threading.Timer(max(0.0, due - now), self._count_now, (session,)).start()

    def _count_now(self, session: str) -> None:
        with self._lock:
            self._pending.discard(session)
        if (app_session := _app_session(session)) is not None and app_session._state == AppSessionState.APP_IS_RUNNING:
            self._count(session)  # again when this run has had its window
        else:
            _rerun(session)

    def _tick(self) -> None:
        while True:
            try:
                self.lectures.alive()
                with self._lock:
                    gone = [(code, s) for code, sessions in self._roles.items() for s in sessions if not _active(s)]
                for code, session in gone:
                    self.leave(code, session)
            except Exception:  # Redis restarting: the next tick tries again, the thread goes on
                LOG.exception("The lectures' presence tick failed")
            time.sleep(TICK_S)


def _follow_state(session: AppSession) -> dict | None:
    """A session's FOLLOW state read from outside its runs (by the lecture's listener, or on the event loop)."""
    return session.session_state[FOLLOW] if FOLLOW in session.session_state else None


def _following(session: AppSession) -> bool:
    return (state := _follow_state(session)) is not None and state["following"]


def _active(session: str) -> bool:
    return not runtime.exists() or _app_session(session) is not None


def _rerun(session: str) -> None:
    """Run a session's script again with the client state of its last run, on the session's event loop, as
    Streamlit's own run-on-save does: a full run, which reads the lecture afresh."""
    if (app_session := _app_session(session)) is None:
        return

    def again() -> None:
        state = ClientState()
        state.CopyFrom(app_session._client_state)
        state.fragment_id, state.is_auto_rerun, state.is_history_navigation = "", False, False
        # no widget values: the session keeps its own, including a change the student made a moment ago whose
        # run this one replaces (the last run's values would undo it)
        state.ClearField("widget_states")
        app_session.request_rerun(state)

    app_session._event_loop.call_soon_threadsafe(again)


@st.cache_resource(show_spinner=False)
def _sessions() -> _Sessions | None:
    """This process's lectures, or None when no lecturer key is set (the feature is off)."""
    if lecturer_key() is None:
        return None
    if url := settings.current().redis:
        import redis

        client = redis.Redis.from_url(url, decode_responses=True)
    else:
        client = LocalRedis()
    return _Sessions(Lectures(client, replica=uuid.uuid4().hex[:12]))


def _session_id() -> str:
    return get_script_run_ctx().session_id


def shown_view(slug: str) -> View:
    """This session's page and settings as the URL holds them once its controls have run."""
    return View(slug, tuple(sorted((k, v) for k, v in st.query_params.items() if k not in NOT_SHOWN)))


def _lead() -> tuple[str, str] | None:
    """(code, token) when this session leads a lecture still going, checked against the stored token's hash."""
    if not isinstance(held := st.session_state.get(TOKEN), tuple):
        return None
    sessions = _sessions()
    lecture = sessions.lectures.snapshot(held[0])
    if lecture is None or lecture.ended or not sessions.lectures.is_lecturer(*held):
        del st.session_state[TOKEN]
        return None
    return held


def _code(raw: str | None) -> str | None:
    """A join code as typed or linked (any case, spaces around), or None if it cannot be one."""
    code = (raw or "").strip().upper()
    return code if len(code) == CODE_LENGTH and set(code) <= set(CODE_ALPHABET) else None


# --- before the page: the sidebar's control, and a follower's move ----------------------------------------------
def control(pages: Mapping[str, st.Page], current: st.Page) -> None:
    """The sidebar's "Live lecture" control, then, for a follower, the move to the lecturer's view."""
    if (sessions := _sessions()) is None:
        if JOIN in st.query_params:  # a lecture's link opened on a server without lectures
            st.toast(f"Ignored URL parameter `{JOIN}`: this server runs no live lectures.", icon=":material/link_off:")
            del st.query_params[JOIN]
        return
    with st.sidebar.expander("Live lecture", icon=":material/co_present:", expanded=JOIN in st.query_params):
        if (lead := _lead()) is not None:
            st.markdown(f"You lead lecture **{lead[0]}**.")
            if st.button("End the lecture", key="_lecture_end"):
                sessions.lectures.end(*lead)
                sessions.leave(lead[0], _session_id())
                del st.session_state[TOKEN]
                st.toast("Lecture ended: the class keeps its pages.", icon=":material/stop_circle:")
            return
        if JOIN in st.query_params:
            if st.button("Leave the lecture", key="_lecture_leave"):
                _leave(sessions)
        else:
            with st.form("_lecture_join", border=False):
                code = st.text_input("Join code", max_chars=CODE_LENGTH + 4, key="_lecture_code")
                if st.form_submit_button("Join"):
                    _join(code)
        _lecturer_form(sessions)
    _follow(sessions, pages, current)


def _lecturer_form(sessions: _Sessions) -> None:
    with st.form("_lecture_key", border=False, clear_on_submit=True):  # the key leaves the field once sent
        key = st.text_input("Lecturer key", type="password", key="_lecture_key_text")
        resume = st.text_input("Code of a lecture to take over (optional)", max_chars=CODE_LENGTH + 4,
                               key="_lecture_resume")
        if not st.form_submit_button("Start the lecture"):
            return
    now = time.time()
    tries = [t for t in st.session_state.get(TRIES, []) if now - t < KEY_WINDOW_S]
    if len(tries) >= KEY_TRIES:
        st.error(f"Too many wrong keys: wait {KEY_WINDOW_S - int(now - tries[0])} s.", icon=":material/timer:")
        return
    if not hmac.compare_digest(key.encode(), lecturer_key().encode()):
        st.session_state[TRIES] = [*tries, now]
        st.error("That is not the lecturer key.", icon=":material/key_off:")
        return
    st.session_state[TRIES] = []
    if resume.strip():
        if (code := _code(resume)) is None or (token := sessions.lectures.resume(code)) is None:
            _no_lecture(resume)
            return
    else:
        code, token = sessions.lectures.start()
    st.session_state[TOKEN] = (code, token)
    st.query_params.pop(JOIN, None)
    st.rerun()


def _join(raw: str) -> None:
    code = _code(raw)
    lecture = code and _sessions().lectures.snapshot(code)
    if not lecture or lecture.ended:
        _no_lecture(raw)
        return
    st.query_params[JOIN] = code
    st.rerun()


def _no_lecture(typed: str) -> None:
    st.error(f"No lecture is going with the code {typed.strip()[:12]!r}.", icon=":material/search_off:")


def _leave(sessions: _Sessions) -> None:
    sessions.leave(st.query_params[JOIN], _session_id())
    del st.query_params[JOIN]
    st.session_state.pop(FOLLOW, None)
    st.rerun()


def _follow(sessions: _Sessions, pages: Mapping[str, st.Page], current: st.Page) -> None:
    """A student in a lecture: registered here, and moved to the lecturer's view when it is newer than theirs."""
    if JOIN not in st.query_params or st.session_state.get(TOKEN):
        return
    code = _code(st.query_params[JOIN])
    lecture = code and sessions.lectures.snapshot(code)
    if not lecture or lecture.ended:
        st.toast(f"Lecture {str(st.query_params[JOIN])[:12]!r} (URL parameter `{JOIN}`) has ended or does not exist: "
                 "you are on your own.",
                 icon=":material/info:")
        del st.query_params[JOIN]
        st.session_state.pop(FOLLOW, None)
        return
    state = st.session_state.get(FOLLOW)
    joining = state is None or state["code"] != code
    if joining:
        state = st.session_state[FOLLOW] = {"code": code, "applied": -1, "following": True, "moved": False}
    if state["moved"]:  # the run _move asked for: the browser's address bar still shows the old view
        state["moved"] = False
        st.query_params[JOIN] = code  # setting a parameter sends the whole query string to the browser
    if state["following"] and lecture.view is not None and lecture.version > state["applied"]:
        state["applied"] = lecture.version
        moves = lecture.view != shown_view(current.url_path)
        if lecture.view.page in pages and (joining or moves):
            sessions.enter(code, _session_id(), "follow")
            shared = sessions.join(lecture) if joining else None
            if shared == "copy":  # the same first run is under way: a copy of it comes here
                # not applied yet: if no copy comes (it failed, or a newer change reruns this one alone), this
                # session's next run moves it as its own, where it would otherwise judge itself stepped away
                state["applied"] = -1
                st.stop()
            if moves or shared == "record":  # a run of its own from the start, recorded for those joining meanwhile
                if shared == "record":  # whole messages for them, none by reference to what this browser holds
                    get_script_run_ctx().cached_message_hashes = frozenset()
                state["moved"] = True
                _move(pages[lecture.view.page], dict(lecture.view.params) | _own_params())
    sessions.enter(code, _session_id(), "follow" if state["following"] else "away")


def _own_params() -> dict[str, str]:
    return {k: v for k, v in st.query_params.items() if k in NOT_SHOWN}


def _move(page: st.Page, params: Mapping[str, str]) -> None:
    """Run `page` at `params` instead, as Back and Forward do: Streamlit's history navigation, where the URL's
    values win over the controls' own (st.switch_page refuses to set a parameter a control is bound to)."""
    ctx = get_script_run_ctx()
    ctx.script_requests.request_rerun(RerunData(
        query_string=urlencode(params), page_script_hash=page._script_hash, is_history_navigation=True,
        cached_message_hashes=ctx.cached_message_hashes, context_info=ctx.context_info))
    st.empty()  # the runner takes the rerun at the next element, before sending it (as st.switch_page does)


# --- the bars above the page ------------------------------------------------------------------------------------
def bar(current: st.Page) -> None:
    """The lecturer's bar, or a student's (following or not) with the open question's card, in a slot every run
    draws: a bar that appeared above the page's controls mid-session moved them down one place, and the browser
    then lost a control's next change (its URL parameter unwritten, one time in three)."""
    if (sessions := _sessions()) is None:
        return
    with st.container(key="lecture_slot"):
        if (lead := _lead()) is not None:
            _lecturer_bar(sessions, *lead, current)
        elif (state := st.session_state.get(FOLLOW)) is not None and JOIN in st.query_params:
            lecture = sessions.lectures.snapshot(state["code"])
            if lecture is not None and not lecture.ended:
                _student_bar(sessions, lecture, state)


def _lecturer_bar(sessions: _Sessions, code: str, token: str, current: st.Page) -> None:
    sessions.enter(code, _session_id(), "lead")
    following, away = sessions.lectures.presence(code)
    exploring = ", ".join(f"{BY_SLUG[slug].title if slug in BY_SLUG else slug} {n}" for slug, n in away.most_common())
    with st.container(border=True, key="lecture_bar"):
        left, right = st.columns([3, 2], vertical_alignment="center")
        left.markdown(f"### Join code: `{code}`")
        link = f"{(st.context.url or '').split('?')[0]}?{JOIN}={code}"  # the page's address (None in an AppTest)
        left.markdown(f"{link} · **{following}** following · "
                      f"**{sum(away.values())}** exploring on their own" + (f" ({exploring})" if exploring else ""))
        asked = sessions.lectures.snapshot(code).question
        with right:
            if asked is not None and not asked.revealed:
                given = sessions.lectures.answers(code, asked.number)
                st.markdown(f"**Q{asked.number}.** {asked.text}  \n**{len(given)}** answered")
                if st.button("Reveal the answers", key="_lecture_reveal", type="primary"):
                    sessions.lectures.reveal(code, token)
                    st.rerun()
            elif questions := QUESTIONS.get(current.url_path):
                texts = [q.text for q in questions]
                chosen = st.selectbox("Ask the class", texts, key="_lecture_question")
                if st.button("Ask", key="_lecture_ask", type="primary"):
                    _ask(sessions, code, token, current.url_path, questions[texts.index(chosen)])
            st.download_button("Questions and answers (CSV)", sessions.lectures.questions_csv(code),
                               file_name=f"lecture-{code}.csv", mime="text/csv", key="_lecture_csv", on_click="ignore")
        if asked is not None and asked.revealed:
            _distribution(asked, sessions.lectures.answers(code, asked.number), None)


def _ask(sessions: _Sessions, code: str, token: str, slug: str, question) -> None:
    """Open `question` at the lecturer's settings: its options and right answer computed by the engine now."""
    settings_now = {name: st.session_state[name] for name in st.session_state.get(DRAWN_PARAMS, ())
                    if name in st.session_state}
    try:
        options, answer = question.compute(settings_now)
    except Exception as error:  # the page's own message for settings the question cannot use (an unknown word)
        st.warning(f"This question cannot be asked at these settings: {error}", icon=":material/warning:")
        return
    sessions.lectures.ask(code, token, Question(0, slug, question.text, question.kind, tuple(options), str(answer),
                                                question.tolerance))
    st.rerun()


def _student_bar(sessions: _Sessions, lecture: Snapshot, state: dict) -> None:
    with st.container(border=True, key="lecture_student"):
        if state["following"]:
            st.markdown(f"Following lecture **{lecture.code}**: this page moves with the lecturer's.")
        else:
            st.warning("You are exploring on your own.", icon=":material/explore:")
            if st.button("Back to the lecture", key="_lecture_back", type="primary"):
                state.update(following=True, applied=-1)
                st.rerun()
        if (asked := lecture.question) is not None:
            _question_card(sessions, lecture.code, asked)


@st.fragment  # an answer reruns the card alone: a class answering at once is 100 small runs, not 100 of the page
def _question_card(sessions: _Sessions, code: str, asked: Question) -> None:
    session = _session_id()
    mine = sessions.lectures.answers(code, asked.number).get(session)
    st.markdown(f"**Question {asked.number}.** {asked.text}")
    if asked.revealed:
        _distribution(asked, sessions.lectures.answers(code, asked.number), mine)
        return
    with st.form(f"_lecture_answer_{asked.number}", border=False):
        if asked.kind == "choice":
            raw = st.radio("Your answer", asked.options, index=None, key=f"_lecture_choice_{asked.number}")
        else:
            raw = st.text_input("Your answer (a number)", max_chars=24, key=f"_lecture_number_{asked.number}")
        if st.form_submit_button("Answer"):
            try:
                sessions.lectures.answer(code, asked.number, session, "" if raw is None else str(raw))
            except LectureError as error:
                st.error(str(error), icon=":material/block:")
            else:
                mine = sessions.lectures.answers(code, asked.number).get(session)
    if mine is not None:
        st.caption(f"Your answer: {asked.shown(mine)}. You can change it until the lecturer reveals the answers.")


def _distribution(asked: Question, given: Mapping[str, str], mine: str | None) -> None:
    counts = Counter(map(asked.shown, given.values()))
    right = sum(asked.right(value) for value in given.values())
    # whether this student was right, not their answer: the line is then one of three, and a reveal's run is shared
    told = "" if mine is None else " · you were right" if asked.right(mine) else " · you were not right"
    st.markdown(f"**Answer: {asked.shown(asked.answer)}** · {right} of {len(given)} right{told}")
    st.bar_chart({"answers": dict(counts.most_common())}, horizontal=True, height=40 + 30 * len(counts))


# --- after the page -------------------------------------------------------------------------------------------------
def settle(slug: str) -> None:
    """After a run (a fragment's too): the lecturer's view goes to the class; a follower whose view is no longer
    the lecturer's has touched a control, and explores on their own from now."""
    if (sessions := _sessions()) is None:
        return
    if (held := st.session_state.get(TOKEN)) is not None:
        lecture = sessions.lectures.snapshot(held[0])
        if lecture is not None and not lecture.ended and lecture.view != (view := shown_view(slug)):
            try:
                sessions.lectures.show(*held, view)
            except LectureError:  # taken over by the lecturer's other screen: this one leads no more
                del st.session_state[TOKEN]
        return
    state = st.session_state.get(FOLLOW)
    if state is None or JOIN not in st.query_params:
        return
    lecture = sessions.lectures.snapshot(state["code"])
    if lecture is None or lecture.ended:
        return
    # judged only against the view this session moved to: a newer one is on its way here, and moves it
    touched = lecture.version == state["applied"] and lecture.view not in (None, shown_view(slug))
    state["page"] = slug
    if touched and state["following"]:
        state["following"] = False
        sessions.enter(state["code"], _session_id(), "away")
        sessions.lectures.present(state["code"], _session_id(), False, slug)
        st.rerun()  # once, so the bar above the page (drawn before the change was known) says so
    sessions.lectures.present(state["code"], _session_id(), state["following"], slug)
