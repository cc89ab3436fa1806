"""The docs' tables of measurements, generated from benchmarks/results/*.json so that no figure in prose goes stale.

A table sits in a page of docs/ between `<!-- table: NAME -->` and `<!-- end table -->`; this script rewrites every
such block from the results files (every benchmark does too, after writing its results), and `--check` (run by
tests/unit/test_docs.py) fails where one differs.
Usage: python -m benchmarks.tables [--check]
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from engine.efficiency import records

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DOCS = ROOT / "docs"
BLOCK = re.compile(r"(<!-- table: (\w+) -->\n)(.*?)(<!-- end table -->)", re.DOTALL)


def results(name: str) -> dict:
    return json.loads((RESULTS / f"{name}.json").read_text())


def day(record: dict) -> str:
    return record["date"][:10]


def rows(header: list[str], body: list[list[str]], *sources: str) -> str:
    """A markdown table, numbers right-aligned, with the files it came from under it."""
    align = ["---" if i == 0 else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(cells) + " |" for cells in [header, align, *body]]
    files = " and ".join(f"`benchmarks/results/{source}.json`" for source in sources)
    return "\n".join(lines) + f"\n\n*From {files}.*\n"


def seconds(x: float) -> str:
    return f"{x:.2g} s" if x < 10 else f"{x:.0f} s"


def measured(value: float | None, form: str) -> str:
    """A server's figure, or a dash where the run could not sample it (a class sent to a URL it did not start)."""
    return "—" if value is None else format(value, form)


def classes(name: str) -> str:
    """One row per class of a `benchmarks.class_size` run."""
    record = results(name)
    body = [[str(c["students"]), seconds(c["open"]["p95_s"]), seconds(c["change"]["p50_s"]),
             seconds(c["change"]["p95_s"]), seconds(c["change"]["p99_s"]),
             str(c["open"]["errors"] + c["change"]["errors"]), measured(c["server"]["cores_mean"], ".2f"),
             measured(c["server"]["rss_mb_max"], ",.0f")]
            for c in record["classes"]]
    header = ["students", "first page p95", "change p50", "change p95", "change p99", "errors", "server cores",
              "resident memory, most (MiB)"]
    return f"{day(record)}, {record['machine']['cpus']} cores:\n\n" + rows(header, body, name)


def stress(name: str = "class_size_stress") -> str:
    """Issue 44's stress: every class of both runs, with exceptions on the page and error lines in the logs."""
    record = results(name)
    body = []
    for run, label in [("one_process", "one process"), ("two_replicas_one_killed", "two replicas, r1 killed")]:
        markers = [target.removeprefix("log_") for target in record["targets"] if target.startswith("log_")]
        logged = sum(record[run]["server_log"].get(marker, 0) for marker in markers)
        for c in record[run]["classes"]:
            page = sum(n for error, n in c["errors"].items() if error.startswith("exception on the page"))
            dropped = sum(c["errors"].values()) - page
            body.append([label, str(c["students"]), str(page), str(dropped), seconds(c["open"]["p95_s"]),
                         seconds(c["change"]["p50_s"]), seconds(c["change"]["p95_s"]),
                         measured(c["server"]["rss_mb_max"], ",.0f"), str(logged)])
    header = ["run", "students", "exceptions on a page", "dropped or unfinished runs", "first page p95",
              "change p50", "change p95", "resident memory, most (MiB)", "error lines in the servers' logs (run)"]
    return f"{day(record)}, {record['machine']['cpus']} cores:\n\n" + rows(header, body, name)


def cpu_per_change(name: str = "class_size_cpu") -> str:
    """Issue 47's server CPU per control change: each round's class on the earlier commit's server and on this
    checkout's, and after over before."""
    record = results(name)
    before = record["before_commit"][:7]
    body = [[str(i), before if side == "before" else "this checkout", str(c["students"]), f"{c['change']['count']:,}",
             measured(c["server"]["cpu_ms_per_change"], ".1f"),
             *(seconds(c["change"][f"p{q}_s"]) for q in (50, 95, 99)), measured(c["server"]["rss_mb_max"], ",.0f")]
            for i, run in enumerate(record["rounds"], start=1) for side in ("before", "after")
            for c in run[side]["classes"]]
    ratios = "; ".join(f"{size} students, {ratio}x" for size, ratio in
                       record["cpu_per_change_after_over_before"].items())
    header = ["round", "server", "students", "changes", "CPU per change, ms", "change p50", "change p95",
              "change p99", "resident memory, most (MiB)"]
    hidden = record.get("hidden_from_before")
    installed = (f"; {before}'s server without {' and '.join(hidden)}, which its requirements.txt does not name"
                 if hidden else "")
    return (f"{day(record)}, {record['machine']['cpus']} cores{installed}; CPU per change, after over before: "
            f"{ratios}:\n\n" + rows(header, body, name))


def per_change(name: str = "per_change") -> str:
    """What one control change costs the server, first time asked, one visitor: the changes heaviest in CPU and in
    bytes, and the medians."""
    record = results(name)
    summary = record["summary"]
    heaviest = {(c["page"], c["control"], c["value"]): c for c in summary["most_cpu"][:6] + summary["most_bytes"][:4]}
    body = [[f"{c['page']}: `{c['control']}` to {c['value']}", f"{c['cpu_ms']:.0f}", f"{c['bytes']:,}",
             "yes" if c["fragment"] else "no"] for c in heaviest.values()]
    return (f"{day(record)}, {record['machine']['cpus']} cores; {summary['changes']} changes over every page: CPU "
            f"median {summary['median_cpu_ms']:.0f} ms, mean {summary['mean_cpu_ms']:.0f} ms (clock ticks of 10 ms); "
            f"sent median {summary['median_bytes']:,.0f} bytes, mean {summary['mean_bytes']:,}. The heaviest:\n\n"
            + rows(["change", "server CPU, ms", "bytes sent", "a fragment's rerun"], body, name))


def memory() -> str:
    """A hosted server's memory: 10 sessions at once (benchmarks.load), and the class sizes' peaks."""
    load, sizes = results("load"), results("class_size")
    body = [[f"{load['arrival']['sessions']} sessions opening the heaviest pages at once", day(load),
             f"{load['arrival']['peak_rss_mb']:,.0f} MiB"],
            ["after every page was visited once", day(load), f"{load['summary']['rss_mb_after']:,.0f} MiB"]]
    body += [[f"a simulated class of {c['students']}", day(sizes), f"{c['server']['rss_mb_max']:,.0f} MiB"]
             for c in sizes["classes"]]
    return rows(["the server, with SmolLM2 loaded", "measured", "resident set, most"], body, "load", "class_size")


def span(values: list[float]) -> str:
    return f"{min(values):.2f}x to {max(values):.2f}x" if values else "—"


def flash_gpu(name: str = "flash_gpu") -> str:
    """Our Triton kernels against SDPA's flash and cuDNN backends on the recorded GPU, by mode and length."""
    record = results(name)
    body = []
    for mode in ("forward", "forward+backward"):
        for lo, hi in [(2048, 2048), (4096, 1 << 30)]:
            picked = [s for s in record["summary"] if s["mode"] == mode and lo <= s["N"] <= hi]
            if not picked:
                continue
            cudnn = [s["ours_over_sdpa_cudnn"] for s in picked if s.get("ours_over_sdpa_cudnn")]
            flash = [s["ours_over_sdpa_flash"] for s in picked]
            body.append([mode, f"N = {lo}" if lo == hi else f"N ≥ {lo}", span(flash), span(cudnn),
                         f"{max(s['ours_fraction_of_peak'] for s in picked):.0%}"])
    versions = ", ".join(f"{k} {v}" for k, v in record["versions"].items())
    head = f"{record['device']}, {day(record)} ({versions}); each row over d = 64 and 128, causal or not, bf16, fp16:"
    return head + "\n\n" + rows(["mode", "length", "ours over SDPA flash (TFLOP/s)", "ours over SDPA cuDNN",
                                 "best share of dense bf16 peak"], body, name)


def flash_fp8(name: str = "flash_fp8") -> str:
    """Our FP8 forward against our bf16 forward and SDPA's cuDNN, at each setting's longest and shortest N."""
    record = results(name)
    body = [[f"{r['d']}", "yes" if r["causal"] else "no", f"{r['N']:,}",
             *(f"{r['tflops'][m]:.0f}" for m in ("ours bf16", "ours fp8 (inputs in e4m3)", "SDPA cuDNN bf16")),
             f"{r['fp8_over_ours_bf16']:.2f}x", f"{r['error_against_ours_bf16']['ours fp8 (inputs in e4m3)']:.1e}"]
            for r in record["rows"] if r["N"] in (4096, 16384)]
    head = (f"{record['device']}, {day(record)}, TFLOP/s, FP8 on inputs already in e4m3 (as FlashAttention-3 reports "
            f"it); error ‖O_fp8 − O_bf16‖ / ‖O_bf16‖, bound {record['bound']:.0e}:")
    return head + "\n\n" + rows(["d", "causal", "N", "ours bf16", "ours fp8", "cuDNN bf16", "fp8 over bf16", "error"],
                                body, name)


def flash_tma(name: str = "flash_tma") -> str:
    """Our forward with TMA descriptors, its best launch per setting, against our pointer loads and cuDNN; records
    before the probe timed fp16 hold bf16 rows only."""
    record = results(name)
    body = [[f"{r['d']}", "yes" if r["causal"] else "no", r.get("dtype", "bf16"), f"{r['N']:,}",
             f"{r['tflops']['ours, pointer loads']:.0f}", f"{r['tflops'][r['best_tma']]:.0f}",
             r["best_tma"].removeprefix("ours, TMA "), f"{r['tflops']['SDPA cuDNN']:.0f}",
             f"{r['best_tma_over_pointer']:.2f}x", f"{r['best_tma_over_cudnn']:.2f}x"]
            for r in record["rows"]]
    return (f"{record['device']}, {day(record)}, forward, TFLOP/s:\n\n"
            + rows(["d", "causal", "dtype", "N", "pointer loads", "TMA, best", "its launch", "cuDNN",
                    "TMA over pointer", "TMA over cuDNN"], body, name))


def flash_dip(name: str = "flash_dip") -> str:
    """Our forward over SDPA flash at N = 2048 with and without a host-bound call before it in the round, and with and
    without the spin that covers the host's launch."""
    record = results(name)
    body = []
    for tiled, cover in ((True, False), (True, True), (False, False)):
        body.append(["yes" if tiled else "no", "yes" if cover else "no",
                     span(records.dip_ratios(record, tiled, cover))])
    return (f"{record['device']}, {day(record)}, N = {record['N']}, each row over d = 64 and 128, causal or not, bf16 "
            "and fp16, each timed first:\n\n"
            + rows(["torch tiled loop in the round", "spin before each timed call", "ours over SDPA flash"], body,
                   name))


def accessibility() -> str:
    record = results("accessibility")
    body = [[state, str(s["pages"]), str(sum(s["nodes_by_rule"].values())), str(s["blocking_nodes"])]
            for state, s in record["states"].items()]
    return (f"{day(record)}, axe-core {record['axe_core']}:\n\n"
            + rows(["state", "pages", "nodes violating a rule", "serious or critical nodes"], body, "accessibility"))


def feel(name: str = "feel") -> str:
    """Issue 47: per page, its slowest control from the key press or click to the paint, and where the time went."""
    record = results(name)
    body = []
    for page in record["pages"]:
        control, slowest = max(page["controls"].items(), key=lambda c: c[1]["input_to_paint_ms"])
        work = slowest["main_thread_ms"]
        body.append([page["page"], control.replace(":", " "), f"{slowest['input_to_paint_ms']:.0f}",
                     measured(slowest["server_run_ms"], ".0f"), f"{slowest['finished_to_painted_ms']:.0f}",
                     f"{sum(v for k, v in work.items() if k != 'plotly'):.0f}", f"{work.get('plotly', 0):.0f}"])
    summary = record["summary"]
    floor = results("feel_bare")
    bare = floor["pages"][0]["controls"]
    steps = summary.get("figure_step_ms", {})
    return (f"{day(record)}: median over every control {summary['median_ms']:.0f} ms (target "
            f"{record['targets']['median_ms']}), slowest {summary['slowest_page']} at {summary['slowest_ms']:.0f} ms "
            f"(target {record['targets']['every_page_ms']} for every page); "
            f"{len(record['not_timed'])} controls the script could not drive. A bare Streamlit page with one control "
            f"of each kind and one chart (`--bare`, {day(floor)}) takes "
            f"{min(c['input_to_paint_ms'] for c in bare.values()):.0f}-"
            f"{max(c['input_to_paint_ms'] for c in bare.values()):.0f} ms, Streamlit's own floor."
            + (" A step of a figure's own slider, in the browser alone: "
               + ", ".join(f"{page} {ms:.0f} ms" for page, ms in steps.items())
               + f" (target {record['targets']['figure_step_ms']})." if steps else "") + "\n\n"
            + rows(["page", "slowest control", "to paint, ms", "server's run, ms", "drawing after it, ms",
                    "main thread (traced), ms", "of it in Plotly, ms"], body, name))


def index() -> str:
    """Every results file with its date and the machine it was measured on."""
    body = []
    for path in sorted(RESULTS.glob("*.json")):
        record = json.loads(path.read_text())
        machine = record.get("device") or record.get("machine") or "—"
        if isinstance(machine, dict):
            machine = f"{machine['cpus']} cores, {machine['platform']}"
        body.append([f"`{path.name}`", record.get("date", "")[:10], str(machine)])
    lines = ["| file | measured | on |", "| --- | --- | --- |"] + ["| " + " | ".join(b) + " |" for b in body]
    return "\n".join(lines) + "\n"


TABLES = {
    "class_size": lambda: classes("class_size"),
    "class_size_replicas": lambda: classes("class_size_replicas"),
    "class_size_cold": lambda: classes("class_size_cold"),
    "class_size_stress": stress,
    "class_size_cpu": cpu_per_change,
    "class_size_uvloop": lambda: cpu_per_change("class_size_uvloop"),
    "per_change": per_change,
    "memory": memory,
    "flash_gpu": flash_gpu,
    "flash_fp8": flash_fp8,
    "flash_dip": flash_dip,
    "flash_tma": flash_tma,
    "accessibility": accessibility,
    "feel": feel,
    "results": index,
}


def render(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + TABLES[m.group(2)]() + m.group(4), text)


def stale() -> list[str]:
    """The docs pages whose tables differ from what the results files give now."""
    return [str(p.relative_to(ROOT)) for p in sorted(DOCS.glob("*.md")) if render(p.read_text()) != p.read_text()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 where a table is stale")
    args = parser.parse_args()
    if args.check:
        pages = stale()
        print("\n".join(f"{p}: stale, run python -m benchmarks.tables" for p in pages) or "every table is current")
        return 1 if pages else 0
    write()
    return 0


def write() -> list[Path]:
    """Every docs page's tables generated again; the pages that changed."""
    changed = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text()
        if (rendered := render(text)) != text:
            page.write_text(rendered)
            changed.append(page)
    return changed


if __name__ == "__main__":
    sys.exit(main())
