"""Every thread of the server runs an operator on one thread (ui/server.py), Streamlit's script threads included:
each run is a new thread, and a matrix product there must not start OpenMP workers of its own."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# in a new thread, as Streamlit runs a script: the OS threads a product large enough for MKL to split it started
# (on a machine of one core OpenMP starts none either way; CI's has two)
NEW_THREAD = """
import os, threading
import ui.server  # noqa: F401
import torch

def products(started):
    before = len(os.listdir("/proc/self/task"))
    for _ in range(5):
        torch.randn(5000, 100) @ torch.randn(100)
    started.append(len(os.listdir("/proc/self/task")) - before)

started = []
thread = threading.Thread(target=products, args=(started,))
thread.start()
thread.join()
print(started[0])
"""


def test_a_script_threads_matrix_product_starts_no_worker_threads():
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env["HOW_LMS_WARM"] = "0"  # the default views' background thread would start threads of its own
    done = subprocess.run([sys.executable, "-c", NEW_THREAD], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-1] == "0"
