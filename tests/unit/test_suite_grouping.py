"""The suite's own layout holds on the installed pytest and pytest-xdist: `--dist loadgroup` (pyproject's addopts)
runs every test of an xdist group on one worker. A browser-test module starts its servers once for its tests
(tests/e2e/conftest.py groups each), and the SmolLM2 tests load the model in one worker; pytest 9.2 silently
undid the grouping (pytest-xdist#1386), which doubled the browser tests' servers and failed the replicas' test."""
from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict

GROUPED = '''
import pytest
pytestmark = pytest.mark.xdist_group("{group}")

@pytest.mark.parametrize("i", range(4))
def test_{group}(i):
    pass
'''


def test_each_xdist_group_runs_on_one_worker(tmp_path):
    for group in ("first", "second"):
        (tmp_path / f"test_{group}.py").write_text(GROUPED.format(group=group))
    run = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v", "-p",
                          "no:cacheprovider", "-c", "/dev/null", "--rootdir", str(tmp_path), str(tmp_path)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    workers = defaultdict(set)
    for worker, group in re.findall(r"\[(gw\d)\].*PASSED .*::test_(\w+)\[", run.stdout):
        workers[group].add(worker)
    assert {group: len(on) for group, on in workers.items()} == {"first": 1, "second": 1}, run.stdout[-2000:]
