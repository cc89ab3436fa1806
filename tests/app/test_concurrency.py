"""Sessions run their scripts in threads of one process: no page may begin a library's first import, where two
sessions at once can get a half-imported module (ui/server.py says why). The browser's side of this, a class
on a cold server, is tests/e2e/test_class_load.py."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# In a fresh interpreter: import what app.py imports first, then open every page at its defaults in new
# sessions and list the modules each first imported.
PROBE = """
import json, logging, sys
logging.disable(logging.WARNING)
from streamlit.testing.v1 import AppTest
from ui.catalog import PAGES
AppTest.from_file("app.py", default_timeout=120).run()  # the home page: ui.server and the frame imported
before, imported = set(sys.modules), {}
for info in PAGES:
    at = AppTest.from_file("app.py", default_timeout=120)
    at.run()
    at.switch_page(info.path).run()
    if at.exception:
        raise SystemExit(f"{info.slug} raised: {[e.value for e in at.exception]}")
    imported[info.slug] = sorted(set(sys.modules) - before)
    before = set(sys.modules)
print(json.dumps(imported))
"""


def test_no_page_imports_a_module_of_its_own():
    run = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    imported = json.loads(run.stdout.strip().splitlines()[-1])
    assert {slug: modules for slug, modules in imported.items() if modules} == {}
