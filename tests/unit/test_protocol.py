"""The simulated class's protocol client (benchmarks/protocol.py) against a small app served by `streamlit run`:
what it reads back must be what the app computed for the controls it set."""
from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
import websocket

from benchmarks.protocol import Frames, RunFailed, Session
from serve.process import Server

SMALL_APP = '''import streamlit as st
st.title("Small")
x = st.slider("x", 0, 10, 3, key="x", bind="query-params")
kind = st.selectbox("kind", ["dot", "additive"], key="kind", bind="query-params")
on = st.toggle("on", key="on", bind="query-params")
if st.button("Go", key="go"):
    st.markdown("pressed")
if x == 9:
    raise ValueError("nine is refused")
st.markdown(f"x={x} kind={kind} on={on} squared={x * x}")
st.session_state["full runs"] = st.session_state.get("full runs", 0) + 1


@st.fragment
def part():
    y = st.slider("y", 0, 10, 1, key="y", bind="query-params")
    st.markdown(f"y={y} full runs={st.session_state['full runs']}")


part()
'''


@pytest.fixture(scope="module")
def small_app(tmp_path_factory):
    folder = tmp_path_factory.mktemp("small_app")
    (folder / "app.py").write_text(SMALL_APP)
    server = Server(folder / "app.py", Path(folder))
    try:
        yield server.url
    finally:
        server.stop()


def test_the_client_opens_a_page_with_its_url_and_reads_the_run(small_app):
    session = Session(small_app, timeout_s=60)
    try:
        run = session.open("", {"x": "5", "kind": "additive"})
        assert run.status == "FINISHED_SUCCESSFULLY" and not run.exceptions
        assert "x=5 kind=additive on=False squared=25" in run.texts
        assert {"x", "kind", "on", "go"} <= set(run.widgets)
        assert run.widgets["x"].kind == "slider" and list(run.widgets["kind"].proto.options) == ["dot", "additive"]
    finally:
        session.close()


def test_control_changes_and_presses_rerun_with_every_value_set_so_far(small_app):
    session = Session(small_app, timeout_s=60)
    try:
        session.open("")
        assert "x=7 kind=dot on=False squared=49" in session.change("x", 7).texts
        assert "x=7 kind=additive on=False squared=49" in session.change("kind", "additive").texts
        assert "x=7 kind=additive on=True squared=49" in session.change("on", True).texts
        assert session.query == {"x": "7", "kind": "additive", "on": "true"}  # the URL the browser would show
        pressed = session.press("go")
        assert pressed.texts[-3:-1] == ["pressed", "x=7 kind=additive on=True squared=49"]
        assert "pressed" not in session.change("x", 2).texts  # a trigger lasts one run
        refused = session.change("x", 9)
        assert refused.exceptions == ["ValueError: nine is refused"]
    finally:
        session.close()


def test_a_control_inside_a_fragment_reruns_only_the_fragment_as_in_the_browser(small_app):
    session = Session(small_app, timeout_s=60)
    try:
        session.open("")
        assert session.widgets["y"].fragment_id and not session.widgets["x"].fragment_id
        run = session.change("y", 4)
        assert run.status == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY"
        assert run.texts == ["y=4 full runs=1"] and set(run.widgets) == {"y"}  # the page's script did not run
        assert {"x", "kind", "on", "go", "y"} <= set(session.widgets)  # the page's other controls are kept
        assert "x=6 kind=dot on=False squared=36" in session.change("x", 6).texts
        assert session.change("y", 2).texts == ["y=2 full runs=2"]
    finally:
        session.close()


def test_two_sessions_keep_their_own_controls(small_app):
    first, second = Session(small_app, timeout_s=60), Session(small_app, timeout_s=60)
    try:
        first.open(""), second.open("")
        first.change("x", 1)
        assert "x=8 kind=dot on=False squared=64" in second.change("x", 8).texts
        assert "x=1 kind=dot on=True squared=1" in first.change("on", True).texts
    finally:
        first.close(), second.close()


def test_a_thinking_student_answers_the_servers_pings_and_keeps_the_connection(tmp_path, monkeypatch):
    (tmp_path / "app.py").write_text(SMALL_APP)
    monkeypatch.setenv("STREAMLIT_SERVER_WEBSOCKET_PING_INTERVAL", "1")  # ping every second, close after 1 s
    server = Server(tmp_path / "app.py", tmp_path)
    idle, silent = Session(server.url, timeout_s=60), Session(server.url, timeout_s=60)
    try:
        idle.open("")
        silent.open("")
        idle.idle(5.0)
        time.sleep(0.5)  # silent has not read its socket for 5.5 s: its pings went unanswered
        assert "x=4 kind=dot on=False squared=16" in idle.change("x", 4).texts
        with pytest.raises(RunFailed):
            silent.change("x", 4)
    finally:
        idle.close()
        silent.close()
        server.stop()


def test_frames_reads_what_websocket_client_encodes_as_a_server_would_send_it():
    """benchmarks.protocol.Frames against websocket-client's own frame encoder: the three length forms, a message in
    fragments, a ping between them answered with a pong, a frame arriving a few bytes at a time, then the close."""
    ours, theirs = socket.socketpair()
    connection = websocket.WebSocket()
    connection.sock = ours
    frames = Frames(connection)

    def server_frame(opcode: int, data: bytes, fin: int = 1) -> bytes:
        return websocket.ABNF(fin=fin, opcode=opcode, mask_value=0, data=data).format()

    short, medium, long = b"s" * 100, bytes(range(256)) * 2, bytes(range(256)) * 300  # 7, 16 and 64-bit lengths
    stream = b"".join([
        server_frame(websocket.ABNF.OPCODE_BINARY, short),
        server_frame(websocket.ABNF.OPCODE_BINARY, medium),
        server_frame(websocket.ABNF.OPCODE_BINARY, long[:1000], fin=0),
        server_frame(websocket.ABNF.OPCODE_PING, b"are you there"),
        server_frame(websocket.ABNF.OPCODE_CONT, long[1000:], fin=1),
        server_frame(websocket.ABNF.OPCODE_BINARY, b"last"),
        server_frame(websocket.ABNF.OPCODE_CLOSE, b"\x03\xe8"),
    ])

    def send_in_pieces() -> None:
        for start in range(0, 12, 3):  # the first frame's header and payload split over several reads
            theirs.sendall(stream[start:start + 3])
            time.sleep(0.01)
        theirs.sendall(stream[12:])

    writer = threading.Thread(target=send_in_pieces)
    writer.start()
    try:
        assert frames.next() == (websocket.ABNF.OPCODE_BINARY, short)
        assert frames.next() == (websocket.ABNF.OPCODE_BINARY, medium)
        assert frames.next() == (websocket.ABNF.OPCODE_BINARY, long)
        assert frames.next() == (websocket.ABNF.OPCODE_BINARY, b"last")
        with pytest.raises(websocket.WebSocketConnectionClosedException):
            frames.next()
        writer.join()
        theirs.settimeout(5)
        sent = theirs.recv(1024)  # the pong, masked as a client's frames are: unmasked with its own key
        assert sent[0] == 0x80 | websocket.ABNF.OPCODE_PONG and sent[1] == 0x80 | len(b"are you there")
        assert websocket.ABNF.mask(sent[2:6], sent[6:]) == b"are you there"
        ours.settimeout(0.05)
        with pytest.raises(websocket.WebSocketTimeoutException):
            frames.next()
    finally:
        ours.close()
        theirs.close()
