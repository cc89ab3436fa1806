"""Serve a class: N replicas of the app behind HAProxy on this machine, until Ctrl-C or SIGTERM.

    python -m serve --replicas 2 --port 8501                 # http://127.0.0.1:8501
    python -m serve --replicas 2 --port 8501 --host 0.0.0.0  # reachable from the lecture hall's network
    python -m serve --print-config --servers 10.0.0.11:8501,10.0.0.12:8501 --host 0.0.0.0 --port 80

The last prints HAProxy's configuration for replicas on other machines (README). A replica that exits is
started again and the proxy pointed at it; its students have meanwhile moved to the others.
"""
from __future__ import annotations

import argparse
import signal
import sys
import time

from serve.proxy import render
from serve.replicas import Replicas


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=2,
                        help="Streamlit processes (about one per core; each takes up to 2 GB with SmolLM2 loaded)")
    parser.add_argument("--port", type=int, default=8501, help="the proxy's port, where the class connects")
    parser.add_argument("--host", default="127.0.0.1", help="the proxy's address (0.0.0.0: every interface)")
    parser.add_argument("--print-config", action="store_true", help="print HAProxy's configuration and exit")
    parser.add_argument("--servers", default="", help="with --print-config: the replicas' host:port, commas between")
    args = parser.parse_args()
    if args.print_config:
        print(render(f"{args.host}:{args.port}", [s for s in args.servers.split(",") if s]), end="")
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # leave through the `with` below, which stops all
    try:
        with Replicas(max(args.replicas, 1), args.port, args.host) as replicas:
            ports = ", ".join(f"{name} on port {server.port}" for name, server in replicas.names().items())
            store = f"; live lectures in {replicas.store.url}" if replicas.store else ""
            print(f"{replicas.url}: {len(replicas.servers)} replicas ({ports}) behind HAProxy{store}. "
                  "Ctrl-C stops all.", flush=True)
            while True:
                time.sleep(1)
                for name in replicas.restart_exited():
                    print(f"replica {name} had exited: started again on port {replicas.names()[name].port}",
                          flush=True)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
