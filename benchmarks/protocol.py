"""One Streamlit session spoken over Streamlit's own websocket protocol, without a browser, so that hundreds of
simulated students fit on one machine (benchmarks/class_size.py).

The client does what the browser's frontend does on the wire: it opens /_stcore/stream with the subprotocol
"streamlit", asks for a page with a BackMsg `rerun_script` (the page's name and the URL's query string), reads
ForwardMsgs until `script_finished`, and keeps the widgets the run drew. A control change is another
`rerun_script` with the new widget state and the URL the frontend would show (every control here is bound to
the URL), a button press a trigger. Messages the server marks cacheable are remembered and reported back by
hash, as the browser's message cache does, so the server sends references for what the client already holds.

Synchronous on purpose (websocket-client): Locust runs it in gevent greenlets, the tests in plain threads.
"""
from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit

import websocket
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from ui.boundary import NOTICE

CONTROLS = ("slider", "selectbox", "checkbox", "number_input", "text_input", "text_area", "radio", "button")
FINISHED = ForwardMsg.ScriptFinishedStatus.Name


class Frames:
    """The server's websocket messages, read straight off the connection's socket in large reads. websocket-client
    reads each frame's header a few bytes at a time, a dozen Python calls a frame: a lecture's change pushes about
    100 messages to each of 200 simulated tabs, and that parsing cost the load generator more CPU than the two
    servers it measured (3 core-seconds against 2 a change, on a 2-core machine). Pings are answered as they are
    read (through websocket-client, which masks what a client sends); a close, or a connection ending, raises
    websocket-client's own WebSocketConnectionClosedException, a timeout its WebSocketTimeoutException."""

    PING, PONG, CLOSE = 0x9, 0xA, 0x8

    def __init__(self, connection: websocket.WebSocket):
        self.connection, self.buffer, self.parts = connection, bytearray(), []

    def next(self, pings: bool = False) -> tuple[int, bytes]:
        """The next whole message as (opcode, payload); with pings=True a ping too, once answered."""
        while True:
            frame = self._frame()
            if frame is None:
                self._fill()
                continue
            fin, opcode, payload = frame
            if opcode == self.PING:
                self.connection.pong(payload)
                if pings:
                    return opcode, payload
            elif opcode == self.CLOSE:
                raise websocket.WebSocketConnectionClosedException("the server closed the connection")
            elif opcode != self.PONG:
                self.parts.append((opcode, payload))
                if fin:  # a message may come in fragments: the first frame's opcode, the payloads joined
                    (opcode, _), payload = self.parts[0], b"".join(part for _, part in self.parts)
                    self.parts = []
                    return opcode, payload

    def _frame(self) -> tuple[bool, int, bytes] | None:
        """The first frame in the buffer, taken out of it; None while it has not all arrived."""
        buffer = self.buffer
        if len(buffer) < 2:
            return None
        first, second = buffer[0], buffer[1]
        length, start = second & 0x7F, 2
        if length == 126:
            if len(buffer) < 4:
                return None
            length, start = struct.unpack_from("!H", buffer, 2)[0], 4
        elif length == 127:
            if len(buffer) < 10:
                return None
            length, start = struct.unpack_from("!Q", buffer, 2)[0], 10
        if second & 0x80:  # a server never masks its frames (RFC 6455, 5.1)
            raise websocket.WebSocketProtocolException("a masked frame from the server")
        if len(buffer) < start + length:
            return None
        payload = bytes(buffer[start:start + length])
        del buffer[:start + length]
        return bool(first & 0x80), first & 0x0F, payload

    def _fill(self) -> None:
        try:
            chunk = self.connection.sock.recv(1 << 16)
        except socket.timeout as error:
            raise websocket.WebSocketTimeoutException(str(error)) from error
        if not chunk:
            raise websocket.WebSocketConnectionClosedException("the connection ended")
        self.buffer += chunk


class RunFailed(Exception):
    """The run never finished: the connection dropped or the time ran out."""


@dataclass
class Widget:
    id: str
    key: str  # the URL parameter it is bound to, else its user key ("" if none)
    kind: str  # the Element field: "slider", "selectbox", "checkbox" (toggles too), "button", …
    proto: object  # the element's own message: options, bounds, defaults
    fragment_id: str = ""  # drawn by an st.fragment: a change reruns only that fragment, as in the browser


@dataclass
class Run:
    """One script run as the client saw it."""
    seconds: float  # from sending the request to `script_finished`
    status: str  # "FINISHED_SUCCESSFULLY", …
    exceptions: list[str]  # the messages of exception elements drawn
    widgets: dict[str, Widget]  # by key, the controls the run drew
    texts: list[str]  # markdown, headings, captions and alerts, in order (for tests)
    received_bytes: int
    run_id: str = ""  # the server's id of the run (new_session's): one id on two sessions is one run sent to both


@dataclass
class Session:
    """A browser tab's session: `open` a page, then `change` controls and `press` buttons."""
    base_url: str  # "http://127.0.0.1:8501"
    timeout_s: float = 120.0  # the longest one run may take before it counts as never finished
    cookie: str = ""  # sent with the upgrade (a sticky proxy's cookie)
    page_hash: str = ""
    query: dict[str, str] = field(default_factory=dict)
    widgets: dict[str, Widget] = field(default_factory=dict)
    states: dict[str, WidgetState] = field(default_factory=dict)  # by widget id: what this tab has set
    _cache: dict[str, ForwardMsg] = field(default_factory=dict)  # cacheable messages by hash, as the browser keeps
    _used: dict[str, int] = field(default_factory=dict)  # by hash: the count of runs when it was last shown
    _runs: int = 0
    _max_age: int = 2  # runs a cached message is kept unshown (the server's global.maxCachedMessageAge)
    _socket: websocket.WebSocket | None = None
    _frames: Frames | None = None

    def connect(self) -> None:
        parts = urlsplit(self.base_url)
        scheme = "wss" if parts.scheme == "https" else "ws"
        self._socket = websocket.create_connection(
            f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}/_stcore/stream", subprotocols=["streamlit"],
            timeout=self.timeout_s, cookie=self.cookie or None, enable_multithread=False)
        self._frames = Frames(self._socket)

    @property
    def connected(self) -> bool:
        return self._socket is not None

    def close(self) -> None:
        if self._socket is not None:
            # no wait for the server's reply: websocket-client would read it with its own parser, from wherever
            # Frames' last read stopped in the stream (mid-frame), until its 3 s close timeout
            self._socket.close(timeout=0)
            self._socket = None

    def idle(self, seconds: float) -> None:
        """Wait as an open tab waits between interactions: answering the server's pings, so that a student who
        thinks longer than the server's ping timeout keeps the connection, as a browser does. Frames answers a ping
        as it reads it and hands it back, so the deadline is checked after each. A message arriving meanwhile (none
        is expected) is dropped."""
        if self._socket is None:
            time.sleep(seconds)
            return
        deadline = time.monotonic() + seconds
        try:
            while (left := deadline - time.monotonic()) > 0:
                self._socket.settimeout(left)
                self._frames.next(pings=True)
        except websocket.WebSocketTimeoutException:
            pass
        except (websocket.WebSocketException, OSError):
            self.close()  # the next interaction opens the page again, as the browser reconnects
        finally:
            if self._socket is not None:
                self._socket.settimeout(self.timeout_s)

    def pushed(self, wait_s: float) -> Run | None:
        """The next run the server pushes without this tab asking (a live lecture's follower is moved, shown a
        question, the reveal), its seconds counted from this call; None if none finishes within wait_s."""
        self._socket.settimeout(wait_s)
        try:
            return self._read_run(time.perf_counter(), whole=True)
        except websocket.WebSocketTimeoutException:
            return None
        except (websocket.WebSocketException, OSError) as error:
            self.close()
            raise RunFailed(f"{type(error).__name__}: {error}") from error
        finally:
            if self._socket is not None:
                self._socket.settimeout(self.timeout_s)

    def open(self, page: str, query: dict[str, str] | None = None) -> Run:
        """The first run of `page` (its url path, "" for the home page) with `query` in the URL."""
        if self._socket is None:
            self.connect()
        self.query, self.states, self.page_hash = dict(query or {}), {}, ""
        return self._rerun(page_name=page)

    def change(self, key: str, value) -> Run:
        """Set the control bound to `key` to `value` (a number, an option's label, True/False, text)."""
        widget = self.widgets[key]
        state = WidgetState(id=widget.id)
        if widget.kind == "slider":
            state.double_array_value.data[:] = [float(value)]
        elif widget.kind == "checkbox":
            state.bool_value = bool(value)
        elif widget.kind == "number_input":
            state.double_value = float(value)
        else:  # selectbox, radio, text: the option's label or the text itself
            state.string_value = str(value)
        self.states[widget.id] = state
        if widget.key:
            self.query[widget.key] = _url_value(value)
        return self._rerun(fragment_id=widget.fragment_id)

    def press(self, key: str) -> Run:
        """Click the button with user key `key`: a trigger, true for this run only, as the browser sends it."""
        button = self.widgets[key]
        state = WidgetState(id=button.id, trigger_value=True)
        others = [s for s in self.states.values() if s.id != state.id]
        return self._rerun(extra=[*others, state], keep=False, fragment_id=button.fragment_id)

    def _rerun(self, page_name: str = "", extra: list[WidgetState] | None = None, keep: bool = True,
               fragment_id: str = "") -> Run:
        message = BackMsg()
        client = message.rerun_script
        client.query_string = urlencode(self.query)
        client.page_script_hash = self.page_hash
        client.page_name = page_name
        client.fragment_id = fragment_id
        client.widget_states.widgets.extend(extra if not keep else self.states.values())
        client.cached_message_hashes.extend(self._cache)
        start = time.perf_counter()
        try:
            self._socket.send_binary(message.SerializeToString())
            return self._read_run(start, whole=not fragment_id)
        except (websocket.WebSocketException, OSError) as error:
            self.close()
            raise RunFailed(f"{type(error).__name__}: {error}") from error

    def _read_run(self, start: float, whole: bool) -> Run:
        widgets: dict[str, Widget] = {}
        exceptions, texts, received, run_id = [], [], 0, ""
        while True:
            frame = self._frames.next()[1]
            received += len(frame)
            message = ForwardMsg()
            message.ParseFromString(frame)
            kind = message.WhichOneof("type")
            if kind == "ref_hash":
                if message.ref_hash not in self._cache:  # the browser throws, and shows the student the error
                    exceptions.append(f"Cached ForwardMsg MISS [hash={message.ref_hash}]")
                    continue
                self._used[message.ref_hash] = self._runs
                message = self._cache[message.ref_hash]
                kind = message.WhichOneof("type")
            elif message.metadata.cacheable and message.hash:
                self._cache[message.hash], self._used[message.hash] = message, self._runs
            if kind == "new_session":
                self.page_hash = message.new_session.page_script_hash or self.page_hash
                run_id = message.metadata.run.script_run_id
                self._max_age = message.new_session.config.max_cached_message_age or self._max_age
            elif kind == "navigation":
                self.page_hash = message.navigation.page_script_hash or self.page_hash
            elif kind == "page_info_changed":  # the run wrote the URL: the browser's next request carries it
                self.query = dict(parse_qsl(message.page_info_changed.query_string, keep_blank_values=True))
            elif kind == "page_not_found":
                texts.append(f"page not found: {message.page_not_found.page_name}")
            elif kind == "delta" and message.delta.WhichOneof("type") == "new_element":
                _read_element(message.delta, widgets, exceptions, texts)
            elif kind == "script_finished":
                status = FINISHED(message.script_finished)
                if status == "FINISHED_EARLY_FOR_RERUN":  # the page asked for a rerun: wait for that one
                    continue
                self._age(whole)
                # a fragment's run draws only its own controls; a run that stopped early may draw none
                self.widgets = widgets if whole and widgets else self.widgets | widgets
                return Run(time.perf_counter() - start, status, exceptions, widgets, texts, received, run_id)

    def _age(self, whole: bool) -> None:
        """A run has finished: as the browser's message cache does, forget what was not shown for more than
        max_age runs (after a fragment's run the browser forgets only that fragment's: here, nothing), so that the
        hashes a request reports are those the browser would still hold."""
        self._runs += 1
        if whole:
            for expired in [h for h, used in self._used.items() if self._runs - used > self._max_age]:
                del self._cache[expired], self._used[expired]


def _read_element(delta, widgets: dict[str, Widget], exceptions: list[str], texts: list[str]) -> None:
    element = delta.new_element
    kind = element.WhichOneof("type")
    if kind in CONTROLS:
        proto = getattr(element, kind)
        key = getattr(proto, "query_param_key", "") or proto.id.rsplit("-", 1)[-1]
        widgets[key] = Widget(proto.id, key, kind, proto, delta.fragment_id)
    elif kind == "exception":
        exceptions.append(f"{element.exception.type}: {element.exception.message}")
    elif kind in ("markdown", "heading", "alert"):
        texts.append(getattr(element, kind).body)
        if kind == "alert" and texts[-1] == NOTICE:  # an exception the page's boundary caught and logged
            exceptions.append(f"caught by the page's boundary: {NOTICE}")


def _url_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
