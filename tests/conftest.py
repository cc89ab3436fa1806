import os

import torch

# gensim's reference computations are many small BLAS calls: one thread each is faster than two
# threads fighting a busy 2-core machine (measured 10-15x slower with the default).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# torch's own operators likewise, set before torch starts its OpenMP pool: the two pytest-xdist workers share two
# cores with the browser tests' chromium and servers, and a worker's second OpenMP thread only fights them
# (SmolLM2's batching tests: 46 s alone, 266 to 335 s inside the suite with the default). The app's server already
# runs torch on one thread (ui/server.py).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
# the suite's sessions, in AppTest and in the servers it starts, rerun without pause on purpose: ui/pace.py would
# make them wait as it makes a flooding tab wait (its own tests set the share they check)
os.environ.setdefault("HOW_LMS_PACE_SHARE", "1")
# ...and compute each default view when a test first opens it, not all of them in a background thread as each server
# (and each xdist worker's first AppTest) starts: most test servers open a few pages, and the thread's half a minute
# of CPU per server only slows the rest of the suite. The class on a cold server (test_class_load) turns it back on.
os.environ.setdefault("HOW_LMS_WARM", "0")
# Without a GPU, our Triton kernel runs under Triton's interpreter. Triton reads this when a kernel is
# decorated, at the first import of engine.efficiency.triton_flash, which the app tests reach before the
# kernel's own tests: so it is set here, before any test module is imported.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# AppTest scans every installed distribution's metadata for Streamlit components on every run (half a second with
# the dev requirements installed, thousands of runs in the suite); the installed set does not change during a
# test run, so the scan is made once per process.
import functools  # noqa: E402

from streamlit.components.v2 import manifest_scanner  # noqa: E402

manifest_scanner.scan_component_manifests = functools.cache(manifest_scanner.scan_component_manifests)
