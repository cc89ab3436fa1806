"""A zygote for snippets (tests/app/snippets.py starts it once per test process with `python <this file>`): it
imports the heavy libraries, then for each request on stdin forks a child that runs one snippet as __main__
from its folder, with only the libraries and the installed engine on its path. It imports nothing of the
project. Replies on stdout: the child's pid, then its exit code."""
from __future__ import annotations

import json
import os
import runpy
import sys
import traceback

import numba  # noqa: F401  the libraries every snippet's engine imports, loaded once here
import numpy  # noqa: F401
import scipy.sparse  # noqa: F401
import torch  # noqa: F401

LIBRARIES = [p for p in sys.path[1:] if p]  # not this file's folder


def child(request: dict) -> int:
    errors = os.open(request["errors"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(errors, 1)
    os.dup2(errors, 2)
    os.chdir(request["folder"])
    sys.path[:] = [request["site"], *LIBRARIES]
    sys.argv = [request["script"]]
    try:
        runpy.run_path(request["script"], run_name="__main__")
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid == 0:
        code = child(request)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    print(pid, flush=True)
    print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
