"""`streamlit run`, with the server's own clock on each run a client asks for: when the rerun request reaches the
session and when the run's script_finished is handed to the session's websocket sender. One line per event,
"<session id> <request|finished> <time.time()>", appended to the file named by HOW_LMS_STAMPS.

Why: chromium stamps websocket frames (DevTools' Network.webSocketFrame*) on the tab's main thread, after it has
drawn the deltas that came before, so a browser's own clock adds its drawing to the server's latency; these
stamps time the same change at the server for the browser and for the protocol client alike
(benchmarks/protocol_check.py). The sender writes a queued message within a millisecond on an idle server
(measured), so the hand-over stands for the message leaving.
Usage: HOW_LMS_STAMPS=stamps.txt python -m benchmarks.stamped_server run app.py [streamlit options]
"""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.app_session import AppSession
from streamlit.web import cli

from serve.process import Server

ROOT = Path(__file__).resolve().parents[1]


def stamp_runs(path: str) -> None:
    """Wrap AppSession so that each rerun request and each run's end are written to path."""
    out = open(path, "a", buffering=1)
    lock = threading.Lock()  # the event loop's thread stamps requests, each session's script thread its end

    def write(session: AppSession, event: str) -> None:
        with lock:
            out.write(f"{session.id} {event} {time.time():.6f}\n")

    handle_backmsg, enqueue = AppSession.handle_backmsg, AppSession._enqueue_forward_msg

    def stamped_handle_backmsg(self, msg):
        if msg.WhichOneof("type") == "rerun_script":
            write(self, "request")
        return handle_backmsg(self, msg)

    def stamped_enqueue(self, msg):
        enqueue(self, msg)
        if msg.WhichOneof("type") == "script_finished" and \
                msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            write(self, "finished")

    AppSession.handle_backmsg = stamped_handle_backmsg
    AppSession._enqueue_forward_msg = stamped_enqueue


def read_stamps(path: str) -> dict[str, list[tuple[float, float]]]:
    """Per session id, (request, finished) times of its runs in order; a request whose run was replaced by the
    next request before it finished is dropped."""
    runs, pending = {}, {}
    with open(path) as lines:
        for line in lines:
            session, event, when = line.split()
            if event == "request":
                pending[session] = float(when)
            elif session in pending:
                runs.setdefault(session, []).append((pending.pop(session), float(when)))
    return runs


def serve_apart(stamps: str, script: Path = ROOT / "app.py") -> Server:
    """The app served with its runs stamped into the file `stamps`, on one core, and this process with the chromium
    it starts on the others: a page being drawn takes chromium hundreds of ms of CPU, which would otherwise come out
    of the server's run and be timed with it."""
    os.environ["HOW_LMS_STAMPS"] = stamps  # read by the server process started next
    server = Server(script, ROOT, launcher="benchmarks.stamped_server")
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) > 1:
        subprocess.run(["taskset", "-a", "-cp", str(cores[0]), str(server.proc.pid)], check=True,
                       stdout=subprocess.DEVNULL)
        os.sched_setaffinity(0, cores[1:])
    return server


if __name__ == "__main__":
    stamp_runs(os.environ["HOW_LMS_STAMPS"])
    sys.argv[0] = "streamlit"
    sys.exit(cli.main())
