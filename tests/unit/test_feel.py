"""benchmarks/feel.py's own parts: the in-page test for a run's end, held against protobuf's encoder in chromium, and
the DevTools trace's split of the main thread, held against a trace whose self times are known by construction."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from benchmarks.feel import FINISHED_RUN, main_thread_work
from harness.browser import CHROMIUM, chromium


def messages() -> list[tuple[str, bytes, bool]]:
    """(what, the bytes Streamlit's server sends, whether it ends a run) for the message shapes a change brings."""
    made = []
    for name, status in ForwardMsg.ScriptFinishedStatus.items():
        for metadata in (0, 1, 300):  # none, a 1-byte length, a 2-byte length before the field
            message = ForwardMsg(script_finished=status)
            if metadata:
                message.metadata.delta_path.extend(range(metadata))
                message.hash = "h" * 40
            made.append((f"{name} after {metadata} path entries", message.SerializeToString(),
                         status != ForwardMsg.FINISHED_EARLY_FOR_RERUN))
    delta = ForwardMsg()
    delta.delta.new_element.markdown.body = "x" * 70_000  # a length of three varint bytes
    delta.metadata.delta_path.extend([0, 6])
    made.append(("a long delta", delta.SerializeToString(), False))
    navigation = ForwardMsg()
    navigation.navigation.position = 1  # field 23: a two-byte tag
    made.append(("navigation", navigation.SerializeToString(), False))
    made.append(("a reference", ForwardMsg(ref_hash="f" * 32).SerializeToString(), False))
    made.append(("session status", ForwardMsg(session_status_changed={"script_is_running": True}).SerializeToString(),
                 False))
    return made


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is missing (apt-get install -y chromium)")
def test_the_tab_tells_a_runs_end_as_protobuf_encodes_it():
    cases = messages()
    with chromium() as browser:
        tab = browser.new_page()
        seen = tab.evaluate(f"cases => cases.map(bytes => ({FINISHED_RUN})(new Uint8Array(bytes).buffer))",
                            [list(encoded) for _, encoded, _ in cases])
    assert {what: said for (what, _, _), said in zip(cases, seen)} == {what: ends for what, _, ends in cases}


def _event(name: str, ts: float, dur: float, tid: int = 1) -> dict:
    return {"name": name, "ph": "X", "ts": ts, "dur": dur, "pid": 7, "tid": tid}


def test_the_main_thread_splits_into_self_times_between_the_marks():
    marks = [{"name": "feel-input", "ph": "R", "ts": 1_000, "pid": 7, "tid": 1},
             {"name": "feel-painted", "ph": "R", "ts": 20_000, "pid": 7, "tid": 1}]
    names = [{"name": "thread_name", "ph": "M", "pid": 7, "tid": 1, "args": {"name": "CrRendererMain"}},
             {"name": "thread_name", "ph": "M", "pid": 7, "tid": 2, "args": {"name": "Compositor"}}]
    work = [
        _event("RunTask", 2_000, 10_000),  # a task: 10 ms, of which
        _event("FunctionCall", 2_500, 6_000),  # 6 ms of script, which forces
        _event("Layout", 4_000, 2_000),  # 2 ms of layout inside it: the script's own time is 4 ms
        _event("Paint", 9_000, 1_000),  # 1 ms of paint; the task's own 3 ms are "other"
        _event("RunTask", 13_000, 4_000),
        _event("UpdateLayoutTree", 13_500, 500),
        _event("FunctionCall", 30_000, 5_000),  # after the paint: not this change's
        _event("FunctionCall", 5_000, 9_000, tid=2),  # another thread
    ]
    # the profiler: samples every 1 ms from 2 ms; those at 3, 4 and 5 ms are in a stack through Plotly's chunk
    nodes = [{"id": 1, "callFrame": {"url": ""}},
             {"id": 2, "parent": 1, "callFrame": {"url": "http://x/static/js/PlotlyChart.abc.js"}},
             {"id": 3, "parent": 2, "callFrame": {"url": "http://x/static/js/index.js"}},
             {"id": 4, "parent": 1, "callFrame": {"url": "http://x/static/js/index.js"}}]
    profile = [{"name": "Profile", "ph": "P", "id": "0x1", "ts": 0, "pid": 7, "tid": 1,
                "args": {"data": {"startTime": 1_000}}},
               {"name": "ProfileChunk", "ph": "P", "id": "0x1", "ts": 1, "pid": 7, "tid": 1, "args": {"data": {
                   "cpuProfile": {"nodes": nodes, "samples": [4, 2, 3, 3, 4, 4]},
                   "timeDeltas": [1_000, 1_000, 1_000, 1_000, 1_000, 1_000]}}},
               # another thread's profile, interleaved, on its own clock and with its own node ids: none of it is Plotly
               {"name": "Profile", "ph": "P", "id": "0x2", "ts": 2, "pid": 7, "tid": 2,
                "args": {"data": {"startTime": 500}}},
               {"name": "ProfileChunk", "ph": "P", "id": "0x2", "ts": 3, "pid": 7, "tid": 2, "args": {"data": {
                   "cpuProfile": {"nodes": [{"id": 2, "callFrame": {"url": "worker.js"}}], "samples": [2, 2, 2]},
                   "timeDeltas": [4_000, 4_000, 4_000]}}}]
    assert main_thread_work(marks + names + work + profile) == {
        "scripting": 4.0, "style and layout": 2.5, "paint and compositing": 1.0, "other": 6.5, "plotly": 3.0}


def test_a_trace_without_both_marks_gives_nothing():
    assert main_thread_work([_event("FunctionCall", 0, 10)]) == {}
