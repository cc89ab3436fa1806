"""Sessions run their scripts in threads of one process: no page may begin a library's first import, where two
sessions at once can get a half-imported module (ui/server.py says why), nor parse or compile on a warm run, where
two sessions at once can break CPython 3.11's parser (ui/code.py says why). The browser's side of this, a class
on a cold server, is tests/e2e/test_class_load.py."""
from __future__ import annotations

import ast
import gc
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.app.conftest import assert_clean, open_page

ROOT = Path(__file__).resolve().parents[2]
# In a fresh interpreter: import what app.py imports first, then open every page at its defaults in new
# sessions and list the modules each first imported, other than those imported one thread at a time through
# engine.gensim_data.gensim_module. The background thread that imports gensim after start-up is not started, so
# a page that imports anything gensim brings in (scipy's modules) outside that lock is caught.
PROBE = """
import json, logging, sys
from pathlib import Path
logging.disable(logging.WARNING)
from streamlit.testing.v1 import AppTest
from engine import gensim_data
from ui import defaults
from ui.boundary import NOTICE
from ui.catalog import PAGES
defaults.begin = lambda: None
# a server scans the installed distributions for Streamlit components once, as it starts; AppTest scans on each
# new session (over a second each here), so the probe scans once, as tests/conftest.py does for the suite
import functools
from streamlit.components.v2 import manifest_scanner
manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)
locked = set()
class Recorded:  # the lock, noting what is imported while it is held
    def __init__(self, lock):
        self.lock = lock
    def __enter__(self):
        self.lock.acquire()
        self.before = set(sys.modules)
    def __exit__(self, *exc):
        locked.update(set(sys.modules) - self.before)
        self.lock.release()
gensim_data._IMPORTING = Recorded(gensim_data._IMPORTING)
AppTest.from_file("app.py", default_timeout=120).run()  # the home page: ui.server and the frame imported
assert not any(name.split(".")[0] == "gensim" for name in sys.modules), "gensim imported at start-up"
before, imported = set(sys.modules), {}
for info in PAGES:
    at = AppTest.from_file("app.py", default_timeout=120)
    at.run()
    at.switch_page(info.path).run()
    if at.exception or [e for e in at.error if e.value == NOTICE]:
        raise SystemExit(f"{info.slug} raised: {[e.value for e in at.exception]} (else see the log)")
    imported[info.slug] = sorted(set(sys.modules) - before - locked)
    before = set(sys.modules)
# a live lecture's question asked and revealed (its answers drawn as a bar chart) in a lecturer's run
import dataclasses
from ui import lecture, settings
settings._read = [dataclasses.replace(settings.current(), lecture_key="a-lecturer-key-for-the-probe")]
lecture._sessions.clear()
lecturer = AppTest.from_file("app.py", default_timeout=120)
lecturer.run()
lecturer.switch_page("views/flash_attention.py").run()
lecturer.text_input(key="_lecture_key_text").input("a-lecturer-key-for-the-probe")
for label in ("Start the lecture", "Ask", "Reveal the answers"):
    next(b for b in lecturer.button if b.label == label).click().run()
if lecturer.exception or not [e for e in lecturer.markdown if str(e.value).startswith("**Answer:")]:
    raise SystemExit(f"the lecture's reveal did not show: {[e.value for e in lecturer.exception]}")
imported["a live lecture's reveal"] = sorted(set(sys.modules) - before - locked)
from threadpoolctl import threadpool_info
blas = {Path(lib["filepath"]).name: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}
print(json.dumps({"pages": imported, "locked": sorted(locked), "blas": blas}))
"""


def test_no_page_imports_a_module_of_its_own():
    # as a server starts: without the suite's own OpenBLAS setting (tests/conftest.py)
    env = {name: value for name, value in os.environ.items() if name != "OPENBLAS_NUM_THREADS"}
    run = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    probe = json.loads(run.stdout.strip().splitlines()[-1])
    assert {slug: modules for slug, modules in probe["pages"].items() if modules} == {}
    assert "scipy.stats" in probe["locked"]  # the pages that need gensim did import it, through the lock
    # numpy's OpenBLAS and scipy's, one thread each: a second one spins between calls
    assert len(probe["blas"]) >= 2 and set(probe["blas"].values()) == {1}, probe["blas"]


def test_gensim_is_imported_only_through_the_lock():
    """engine.gensim_data.gensim_module is the one way into gensim and scipy.stats for the app and engine."""
    found = []
    for path in [*ROOT.glob("engine/**/*.py"), *ROOT.glob("ui/*.py"), *ROOT.glob("views/*.py"), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names] \
                if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(ROOT)}:{node.lineno} {name}" for name in names
                      if name.split(".")[0] == "gensim" or name.startswith("scipy.stats")]
    assert found == []


# A page's warm run parses and compiles nothing: tests/app/test_pages.py checks every page (conftest.compiles).


def test_no_page_writes_a_bare_expression():
    """.streamlit/config.toml turns Streamlit's magic off (with it, Streamlit parsed every script): a bare
    expression in a page (not a call, not a docstring) would no longer be drawn."""
    bare = []
    for path in [ROOT / "app.py", *sorted(ROOT.glob("views/*.py"))]:
        for node in ast.walk(ast.parse(path.read_text())):
            for field in ("body", "orelse", "finalbody"):
                statements = getattr(node, field, None)
                for i, statement in enumerate(statements if isinstance(statements, list) else []):
                    if not isinstance(statement, ast.Expr) or isinstance(statement.value, ast.Call):
                        continue
                    docstring = field == "body" and i == 0 and isinstance(statement.value, ast.Constant)
                    if not docstring:
                        bare.append(f"{path.relative_to(ROOT)}:{statement.lineno}")
    assert bare == []


# a line other code in the process parses: deep enough that building its syntax tree takes many allocations
DEEP = "(" * 30 + "x" + ")" * 30 + " + " + " + ".join(f"f(a{i}, [b, c], {{d: e}})" for i in range(40))
HAMMERED = ["kv_cache", "transformer_lm", "rope", "skipgram_pairs"]  # where the class met the error page


def test_pages_rerun_while_another_thread_parses():
    """The class's fault, made to happen within seconds: another thread parses without pause while four pages
    rerun, and the collector runs every few allocations and hands the GIL to another thread each time (as a busy
    server's threads switch at random). Before the fix, the pages' own parses raised SystemError here."""
    pages = [open_page(slug) for slug in HAMMERED]  # warm
    stop, failures = threading.Event(), []

    def parse_until_stopped():
        while not stop.is_set():
            try:
                ast.parse(DEEP)
            except SystemError as error:  # only if a page's run parsed at the same time
                failures.append(str(error))

    def yield_the_gil(phase, info):
        if phase == "start":
            time.sleep(0)

    threshold = gc.get_threshold()
    gc.set_threshold(50)
    gc.callbacks.append(yield_the_gil)
    parser = threading.Thread(target=parse_until_stopped, daemon=True)
    parser.start()
    try:
        for _ in range(3):
            for at in pages:
                at.run()
                assert_clean(at)
    finally:
        stop.set()
        parser.join()
        gc.callbacks.remove(yield_the_gil)
        gc.set_threshold(*threshold)
    assert failures == []
