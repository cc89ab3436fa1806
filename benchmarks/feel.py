"""What a student feels: from a key press or click on a page's control to the run finished and two animation frames
painted, in chromium, on a warm and otherwise idle server with one visitor (issue 47).

Per page, the first control of each kind in the page's body (slider, select, toggle, text box) is changed between
two values, alternating, after one untimed pass that leaves both in the server's caches. Each change is timed in the
tab itself, by a script installed before the app loads (IN_PAGE):
- `input`: the keydown or pointerdown that makes the change;
- `sent`: the rerun request leaving on the websocket;
- `finished`: the run's script_finished arriving (a top-level scan of the ForwardMsg for its field 6);
- `painted`: the second animation frame after it.
The server's own clock (benchmarks.stamped_server) gives the run, from the request reaching the session to the
script_finished handed to its sender. So a change splits into the browser's input handling (input to sent), the
server's run, the transfer (sent to finished, less the run: both ways on loopback, and every delta waiting behind
the ones before it), and the browser drawing what came (finished to painted; it also draws deltas that arrive before
script_finished, inside the transfer).

One more change per control is made under a DevTools trace, which splits the tab's main thread from the input to the
paint into scripting, style and layout, paint and compositing, and other, and counts Plotly's share: the main-thread
time of the sampled stacks that pass through Plotly's code (Streamlit's PlotlyChart chunk). Tracing slows the tab,
so it is reported beside, not in the timings.

The server runs on one core, chromium and this script on the other (as benchmarks.protocol_check): drawing a page
takes chromium hundreds of ms of CPU, which would otherwise be timed as the server's.
`--bare` times benchmarks/bare_page.py instead, a bare Streamlit page with one control of each kind and one small
chart: the floor of Streamlit's own work that a page of the app adds to.
Usage: python -m benchmarks.feel [--repeats 6] [--pages rope,scaling] [--bare]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from benchmarks import finish
from benchmarks.protocol import Session
from benchmarks.stamped_server import read_stamps, serve_apart
from harness.browser import chromium, new_tab, open_url, settle
from ui.catalog import PAGES

FRAME = {"lecture"}  # the sidebar's own controls, the same on every page
# issue 47's goals, in ms
MEDIAN_MS, PAGE_MS, FIGURE_STEP_MS = 200, 350, 100

# Whether a websocket message (an ArrayBuffer) is a run's script_finished, from the ForwardMsg's top-level fields:
# script_finished is field 6, a varint, and 2 is FINISHED_EARLY_FOR_RERUN (a run replaced by the next)
FINISHED_RUN = """
(buffer) => {
  const bytes = new Uint8Array(buffer);
  let i = 0;
  const varint = () => {
    let value = 0, shift = 0, byte;
    do { byte = bytes[i++]; value += (byte & 0x7f) * 2 ** shift; shift += 7; } while (byte & 0x80);
    return value;
  };
  while (i < bytes.length) {
    const tag = varint(), field = Math.floor(tag / 8), wire = tag % 8;
    if (wire === 0) { const value = varint(); if (field === 6) return value !== 2; }
    else if (wire === 2) { const length = varint(); i += length; }  // not i += varint(): i is read first
    else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else return false;
  }
  return false;
}
"""

IN_PAGE = """
(() => {
  const feel = window.__feel = {armed: false, input: null, sent: [], finished: [], painted: []};
  const finishedRun = %s;
""" % FINISHED_RUN.strip() + """  for (const type of ["keydown", "pointerdown"]) {
    addEventListener(type, () => {
      if (feel.armed && feel.input === null) { feel.input = performance.now(); performance.mark("feel-input"); }
    }, true);
  }
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      // added before Streamlit's own handler, so it stamps the message before the app handles it
      this.addEventListener("message", (event) => {
        if (!feel.armed || !(event.data instanceof ArrayBuffer) || !finishedRun(event.data)) return;
        feel.finished.push(performance.now());
        requestAnimationFrame(() => requestAnimationFrame(() => {
          feel.painted.push(performance.now());
          performance.mark("feel-painted");
        }));
      });
    }
    send(data) {
      if (feel.armed && feel.input !== null) feel.sent.push(performance.now());
      return super.send(data);
    }
  };
})();
"""

# the first control of each kind in the page's body, by its widget key (st-key-<key> on its container)
CONTROLS = """
() => {
  const kinds = {slider: "[data-testid='stSlider']", select: "[data-testid='stSelectbox']",
                 toggle: "[data-testid='stCheckbox']", text: "[data-testid='stTextInput'], [data-testid='stTextArea']"};
  const found = {};
  const main = document.querySelector("[data-testid='stMain']");
  for (const [kind, selector] of Object.entries(kinds)) {
    for (const widget of main.querySelectorAll(selector)) {
      const holder = widget.closest("[class*='st-key-']");
      if (!holder || !widget.checkVisibility()) continue;  // not one in a closed expander or a tab not shown
      const key = [...holder.classList].find(c => c.startsWith("st-key-")).slice(7);
      const disabled = widget.querySelector("[disabled], [aria-disabled='true']");
      if (!disabled) { found[kind] = key; break; }
    }
  }
  return found;
}
"""


def arm(tab) -> None:
    tab.evaluate("() => Object.assign(window.__feel, {armed: true, input: null, sent: [], finished: [], painted: []})")


def stamps_of(tab) -> dict:
    """The change's times in the tab (ms on its clock), once the paint after the last finished run is in."""
    tab.wait_for_function("() => __feel.painted.length >= __feel.finished.length && __feel.finished.length > 0")
    feel = tab.evaluate("() => { window.__feel.armed = false; return window.__feel; }")
    return {"input": feel["input"], "sent": feel["sent"][0] if feel["sent"] else None,
            "finished": feel["finished"][-1], "painted": feel["painted"][-1]}


def change(tab, kind: str, key: str, forward: bool) -> dict:
    """One change of the control, made as a person makes it; its times in the tab."""
    control = tab.locator(f".st-key-{key}")
    if kind == "slider":
        thumb = control.locator("input[type='range']").first
        thumb.focus()
        # a slider found at its maximum steps left and back, so that each press changes the value
        flipped = tab.__dict__.setdefault("flipped", {})
        if key not in flipped:
            flipped[key] = thumb.get_attribute("value") == thumb.get_attribute("max")
        arm(tab)
        tab.keyboard.press("ArrowRight" if forward != flipped[key] else "ArrowLeft")
    elif kind == "select":
        box = control.locator("[role='combobox']").first
        box.click()
        if box.get_attribute("aria-expanded") != "true":  # a click can land as the list closes: the keyboard opens it
            box.press("ArrowDown")
        options = tab.locator("[role='option']")
        options.first.wait_for(timeout=10_000)
        # between its first two options, whichever is not chosen now (so each change is a change)
        pick = options.nth(1) if options.nth(0).get_attribute("aria-selected") == "true" else options.nth(0)
        arm(tab)
        pick.click()
    elif kind == "toggle":
        arm(tab)
        control.locator("label").first.click()
    else:
        box = control.locator("input, textarea").first
        box.wait_for(timeout=5_000)
        text = box.input_value()
        box.fill(text + " x" if forward else text.removesuffix(" x"))
        arm(tab)
        box.press("Control+Enter" if box.evaluate("e => e.tagName") == "TEXTAREA" else "Enter")
    settle(tab)
    return stamps_of(tab)


def timed(tab, kind: str, key: str, repeats: int, stamps: str) -> dict:
    """Median times of `repeats` changes, alternating, after a pass that computed both values."""
    change(tab, kind, key, True)
    change(tab, kind, key, False)
    rows, start = [], time.time()
    for i in range(repeats):
        rows.append(change(tab, kind, key, i % 2 == 0))
    runs = [1000 * (finished - request) for session in read_stamps(stamps).values()
            for request, finished in session if start <= request <= time.time()]
    run_ms = statistics.median(runs) if runs else None

    def median(span) -> float:
        return round(statistics.median(span(r) for r in rows), 1)

    row = {"input_to_paint_ms": median(lambda r: r["painted"] - r["input"]),
           "input_to_sent_ms": median(lambda r: (r["sent"] or r["input"]) - r["input"]),
           "sent_to_finished_ms": median(lambda r: r["finished"] - (r["sent"] or r["input"])),
           "finished_to_painted_ms": median(lambda r: r["painted"] - r["finished"]),
           "server_run_ms": None if run_ms is None else round(run_ms, 1)}
    if run_ms is not None:
        row["transfer_ms"] = round(row["sent_to_finished_ms"] - run_ms, 1)
    return row


MAIN_THREAD = {"scripting": ("FunctionCall", "EvaluateScript", "TimerFire", "EventDispatch", "FireAnimationFrame",
                             "RunMicrotasks", "v8.compile", "v8.compileModule", "V8.Execute", "MajorGC", "MinorGC",
                             "V8.GC_SCAVENGER", "BlinkGC.AtomicPhase", "FireIdleCallback", "ParseHTML",
                             "XHRReadyStateChange", "v8.evaluateModule", "CompileCode", "CompileScript"),
               "style and layout": ("UpdateLayoutTree", "Layout", "RecalculateStyles", "ScheduleStyleRecalculation",
                                    "InvalidateLayout", "UpdateLayout", "HitTest"),
               "paint and compositing": ("Paint", "PaintImage", "PrePaint", "UpdateLayerTree", "Layerize", "Commit",
                                         "CompositeLayers", "RasterTask", "Decode Image", "PaintSetup")}
GROUP = {name: group for group, names in MAIN_THREAD.items() for name in names}


def traced(tab, kind: str, key: str) -> dict:
    """One change under a DevTools trace: ms of the tab's main thread from the input to the paint, by kind of
    work, and Plotly's share."""
    devtools = tab.context.new_cdp_session(tab)
    events: list[dict] = []
    done = []
    devtools.on("Tracing.dataCollected", lambda message: events.extend(message["value"]))
    devtools.on("Tracing.tracingComplete", lambda message: done.append(True))
    devtools.send("Tracing.start", {"traceConfig": {"includedCategories": [
        "devtools.timeline", "disabled-by-default-devtools.timeline", "blink.user_timing", "v8.execute",
        "disabled-by-default-v8.cpu_profiler"]}, "transferMode": "ReportEvents"})
    change(tab, kind, key, True)
    devtools.send("Tracing.end")
    change(tab, kind, key, False)  # back, so that the next control is found where the page left it
    while not done:
        tab.wait_for_timeout(50)
    devtools.detach()
    return main_thread_work(events)


def main_thread_work(events: list[dict]) -> dict:
    """The renderer main thread's self time per group between the feel-input and the last feel-painted marks, and
    the sampled time whose stack passes through Plotly's chunk."""
    marks = {e["name"]: e["ts"] for e in events if e.get("name") in ("feel-input", "feel-painted")}
    if len(marks) < 2:
        return {}
    begin, end = marks["feel-input"], marks["feel-painted"]
    threads = {(e["pid"], e["tid"]) for e in events
               if e.get("name") == "thread_name" and e.get("args", {}).get("name") == "CrRendererMain"}
    main = [e for e in events if (e.get("pid"), e.get("tid")) in threads and e.get("ph") == "X"
            and begin <= e["ts"] <= end]
    main.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
    spent = dict.fromkeys((*MAIN_THREAD, "other"), 0.0)
    stack: list[list] = []  # [event's end, its group, its duration less its children's]

    def close(until: float) -> None:
        while stack and stack[-1][0] <= until:
            _, group, own = stack.pop()
            if group:
                spent[group] += own
    tasks = 0.0
    for event in main:
        close(event["ts"])
        duration = event.get("dur", 0)
        if stack:
            stack[-1][2] -= duration
        else:
            tasks += duration
        stack.append([event["ts"] + duration, GROUP.get(event["name"]), duration])
    close(float("inf"))
    spent["other"] = max(0.0, tasks - sum(spent.values()))
    work = {group: round(us / 1000, 1) for group, us in spent.items()}
    work["plotly"] = round(_plotly_us(events, begin, end) / 1000, 1)
    return work


def _plotly_us(events: list[dict], begin: float, end: float) -> float:
    """Microseconds of the V8 profiler's samples between begin and end whose stack holds Plotly's code. Each profile
    (one per sampled thread, named by its pid and id) has its own clock and node ids."""
    nodes: dict[tuple, tuple[int | None, str]] = {}  # (profile, node id): (parent id, script url)
    clocks: dict[tuple, float] = {}
    samples: dict[tuple, list[tuple[float, int]]] = {}
    for event in sorted((e for e in events if e.get("name") in ("Profile", "ProfileChunk")), key=lambda e: e["ts"]):
        profile_id = (event.get("pid"), event.get("id"))
        data = event.get("args", {}).get("data", {})
        if event["name"] == "Profile":
            clocks[profile_id] = data.get("startTime", event["ts"])
            continue
        profile = data.get("cpuProfile", {})
        for node in profile.get("nodes", []):
            nodes[profile_id, node["id"]] = (node.get("parent"), node.get("callFrame", {}).get("url", ""))
        for sample, delta in zip(profile.get("samples", []), data.get("timeDeltas", [])):
            clocks[profile_id] = clocks.get(profile_id, event["ts"]) + delta
            samples.setdefault(profile_id, []).append((clocks[profile_id], sample))

    def through_plotly(profile_id: tuple, node: int | None) -> bool:
        while node is not None and (profile_id, node) in nodes:
            parent, url = nodes[profile_id, node]
            if "PlotlyChart" in url:
                return True
            node = parent
        return False

    total = 0.0
    for profile_id, taken in samples.items():
        inside = [(ts, node) for ts, node in taken if begin <= ts <= end]
        total += sum(later[0] - ts for (ts, node), later in zip(inside, inside[1:]) if through_plotly(profile_id, node))
    return total


# A step of a figure's own slider (ui/figures.animate, made keyboard-operable by ui/client.js), which never leaves
# the browser: from the key press to the second animation frame after plotly has animated to the step and moved
# its slider (client.js's relayout)
ARM_FIGURE_STEP = """
() => {
  const plot = document.activeElement.closest(".js-plotly-plot");
  const step = window.__step = {input: null, animated: false, moved: false, painted: null};
  addEventListener("keydown", () => { step.input = performance.now(); }, {capture: true, once: true});
  const paint = () => {
    if (step.animated && step.moved) requestAnimationFrame(() => requestAnimationFrame(() => {
      step.painted = performance.now(); }));
  };
  plot.once("plotly_animated", () => { step.animated = true; paint(); });
  plot.once("plotly_relayout", () => { step.moved = true; paint(); });
}
"""


def figure_steps(tab, repeats: int) -> dict | None:
    """Median ms of `repeats` steps of the page's first figure slider, alternating, after two untimed; None if the
    page has none."""
    slider = tab.locator(".js-plotly-plot .slider-container[tabindex]")
    if not slider.count() or not slider.first.is_visible():
        return None
    slider.first.focus()
    times = []
    for i in range(repeats + 2):
        tab.evaluate(ARM_FIGURE_STEP)
        tab.keyboard.press("ArrowLeft" if i % 2 else "ArrowRight")
        tab.wait_for_function("() => window.__step.painted !== null", timeout=10_000)
        times.append(tab.evaluate("() => window.__step.painted - window.__step.input"))
    return {"input_to_paint_ms": round(statistics.median(times[2:]), 1)}


def page_controls(tab) -> dict[str, str]:
    found = tab.evaluate(CONTROLS)
    return {kind: key for kind, key in found.items() if key not in FRAME}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=6)
    parser.add_argument("--pages", default="", help="slugs, comma-separated (default: every page)")
    parser.add_argument("--name", default="", help="the result's name in benchmarks/results/ (feel, feel_bare)")
    parser.add_argument("--bare", action="store_true", help="time benchmarks/bare_page.py, Streamlit's floor")
    args = parser.parse_args()
    slugs = [""] if args.bare else [s for s in args.pages.split(",") if s] or [p.slug for p in PAGES]
    stamps = tempfile.NamedTemporaryFile(suffix=".txt", delete=False).name
    server = serve_apart(stamps, *([Path(__file__).with_name("bare_page.py")] if args.bare else []))
    pages, problems = [], []
    try:
        Session(server.url, timeout_s=600).open("")  # the first visit imports the app and starts ui/defaults.py
        print(f"the server's start-up work done after {server.wait_idle():.0f} s")
        with chromium() as browser:
            for slug in slugs:
                tab = new_tab(browser, server.url, endless_animations=True)
                tab.add_init_script(IN_PAGE)
                open_url(tab, f"/{slug}")
                controls = page_controls(tab)
                row = {"page": slug or "bare Streamlit page", "controls": {}}
                for kind, key in controls.items():
                    try:
                        measured = timed(tab, kind, key, args.repeats, stamps)
                        measured["main_thread_ms"] = traced(tab, kind, key)
                    except Exception as error:  # a control this script cannot drive: named, and the rest go on
                        problems.append(f"{slug} {kind} {key}: {type(error).__name__}: {str(error)[:200]}")
                        print("  could not time", problems[-1])
                        tab.context.close()
                        tab = new_tab(browser, server.url, endless_animations=True)
                        tab.add_init_script(IN_PAGE)
                        open_url(tab, f"/{slug}")
                        continue
                    row["controls"][f"{kind}:{key}"] = measured
                    print(f"{slug:<20} {kind:<6} {key:<10} {measured['input_to_paint_ms']:>7.1f} ms to paint "
                          f"(server {measured['server_run_ms']} ms, drawing after {measured['finished_to_painted_ms']}"
                          f" ms); main thread {measured['main_thread_ms']}", flush=True)
                try:
                    if (step := figure_steps(tab, args.repeats)) is not None:
                        row["figure_step"] = step
                        print(f"{slug:<20} figure step {step['input_to_paint_ms']:>14.1f} ms to paint", flush=True)
                except Exception as error:
                    problems.append(f"{slug} figure step: {type(error).__name__}: {str(error)[:200]}")
                    print("  could not time", problems[-1])
                tab.context.close()
                if row["controls"]:
                    row["slowest_ms"] = max(c["input_to_paint_ms"] for c in row["controls"].values())
                    pages.append(row)
    finally:
        server.stop()
        os.unlink(stamps)
    every = [c["input_to_paint_ms"] for row in pages for c in row["controls"].values()]
    summary = {"median_ms": round(statistics.median(every), 1) if every else None,
               "slowest_page": max(pages, key=lambda r: r["slowest_ms"])["page"] if pages else None,
               "slowest_ms": max((r["slowest_ms"] for r in pages), default=None),
               "figure_step_ms": {r["page"]: r["figure_step"]["input_to_paint_ms"]
                                  for r in pages if "figure_step" in r}}
    failures = [f"median input to paint {summary['median_ms']} ms > {MEDIAN_MS} ms"] \
        if summary["median_ms"] and summary["median_ms"] > MEDIAN_MS else []
    failures += [f"{r['page']}: {r['slowest_ms']} ms > {PAGE_MS} ms" for r in pages if r["slowest_ms"] > PAGE_MS]
    failures += [f"{page}'s figure step: {ms} ms > {FIGURE_STEP_MS} ms"
                 for page, ms in summary["figure_step_ms"].items() if ms > FIGURE_STEP_MS]
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "method": "one idle `streamlit run app.py` (benchmarks.stamped_server) on one core after its start-up "
                        "work, headless chromium (1400 x 900) and this script on the other; per page the first "
                        "slider, select, toggle and text box of its body, each changed between two values "
                        f"(untimed once each, then {args.repeats} times alternating, medians), timed in the tab "
                        "from the keydown or pointerdown to the second animation frame after the run's "
                        "script_finished; the server's run on its own clock; one more change under a DevTools trace "
                        "for the main thread's work by kind and Plotly's share (sampled stacks through its chunk); "
                        "where the page opens with a figure that steps in the browser, its slider's step from the "
                        "key press to the second animation frame after plotly animated and moved the slider",
              "targets": {"median_ms": MEDIAN_MS, "every_page_ms": PAGE_MS, "figure_step_ms": FIGURE_STEP_MS},
              "summary": summary, "pages": pages, "not_timed": problems}
    return finish(args.name or ("feel_bare" if args.bare else "feel"), result, failures)


if __name__ == "__main__":
    sys.exit(main())
