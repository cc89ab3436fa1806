"""A zygote for snippets and notebook kernels (tests/app/snippets.py starts one per test process with
`python <this file> <socket>`). It imports the heavy libraries and ipykernel, nothing of the project, then for
each request on its Unix socket forks a process that runs a snippet as __main__, or an IPython kernel, from the
request's folder with only the libraries and the installed engine on its path. The reply on the connection is
the process's pid, then its exit code; a requester that hangs up takes the process with it.

A kernel is asked for by kernel_launcher.py, which a kernelspec names, so jupyter_client starts and stops it
as any kernel."""
from __future__ import annotations

import json
import os
import runpy
import select
import signal
import socket
import sys
import traceback

# loaded once here: the libraries every snippet's engine imports, the notebook's figure cell (plotly.express brings
# pandas, a second of import each time) and gensim's parts the engine reads through engine.gensim_data
import gensim.corpora.wikicorpus  # noqa: F401
import gensim.models  # noqa: F401
import ipykernel.kernelapp  # noqa: F401
import numba  # noqa: F401
import numpy  # noqa: F401
import plotly.express  # noqa: F401
import plotly.graph_objects  # noqa: F401
import scipy.sparse  # noqa: F401
import scipy.stats  # noqa: F401
import torch  # noqa: F401

LIBRARIES = [p for p in sys.path[1:] if p]  # not this file's folder


def draw_each_kind_once() -> None:
    """Plotly builds each trace type's validators, and a figure's first display its renderers, on first use: about
    a second in every kernel that draws the notebook's figure. Drawn here once, the forked kernels inherit them."""
    import numpy as np
    import plotly.express as px
    import plotly.graph_objects as go

    grid = np.arange(6.0).reshape(2, 3)
    figures = [px.imshow(grid, text_auto=".2f"), px.bar(x=["a", "b"], y=[1, 2]), px.line(x=[1, 2], y=[3, 4]),
               px.scatter(x=[1, 2], y=[1, 2]), go.Figure([go.Heatmap(z=grid), go.Scatter(x=[1], y=[2]), go.Bar(y=[1])])]
    for figure in figures:
        figure._repr_mimebundle_()


def work(request: dict) -> int:
    """In the forked process: the request's environment, folder and path, then its snippet or kernel."""
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["folder"])
    sys.path[:] = [request["site"], *LIBRARIES]
    if "errors" in request:
        errors = os.open(request["errors"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(errors, 1)
        os.dup2(errors, 2)
    try:
        if "kernel" in request:
            sys.argv = ["ipykernel", "-f", request["kernel"]]
            ipykernel.kernelapp.launch_new_instance()
        else:
            sys.argv = [request["script"]]
            runpy.run_path(request["script"], run_name="__main__")
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def watch(connection: socket.socket, request: dict) -> None:
    """In a forked watcher: fork the work, say its pid, wait for it and say its exit code; kill it if the
    requester hangs up first."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    pid = os.fork()
    if pid == 0:
        connection.close()
        code = work(request)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    connection.sendall(f"{pid}\n".encode())
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
            return
        if select.select([connection], [], [], 0.05)[0] and not connection.recv(1):  # hung up
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return


def serve(path: str) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # watchers are reaped as they end
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen()
    print("ready", flush=True)
    while True:
        connection, _ = server.accept()
        request = json.loads(connection.makefile().readline())
        if os.fork() == 0:
            server.close()
            watch(connection, request)
            os._exit(0)
        connection.close()


if __name__ == "__main__":
    draw_each_kind_once()
    serve(sys.argv[1])
