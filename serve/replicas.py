"""N replicas of the app, each `streamlit run app.py` on its own loopback port (serve.process.Server: its own
process group, its output in a file), behind one HAProxy; and the live lectures' store they share, a redis-server
on loopback, unless HOW_LMS_REDIS already names one (on another machine: docs/serving.md)."""
from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Self

from serve.process import BOOT_S, Process, Server, free_port, port_open, wait_started, wait_until
from serve.proxy import BACKEND, Proxy, replica_name

ROOT = Path(__file__).resolve().parents[1]
REDIS_SERVER = Path("/usr/bin/redis-server")  # Debian's redis-server


class Store(Process):
    """redis-server on a free loopback port, kept in memory only: a lecture's state lives for the day."""

    def __init__(self):
        self.port = free_port()
        super().__init__([str(REDIS_SERVER), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                          "--appendonly", "no"], tempfile.TemporaryFile())
        wait_until(self, lambda: port_open(self.port), BOOT_S, f"redis-server did not open port {self.port}")
        self.url = f"redis://127.0.0.1:{self.port}/0"


def start_replica(env: dict[str, str]) -> Server:
    """One replica, returned once its health check answers."""
    server = Server(ROOT / "app.py", ROOT, env=env)
    wait_started(server, server.url, BOOT_S)
    return server


class Replicas:
    """`n` replicas started side by side, and HAProxy on host:port in front of them (r1 is servers[0], ...).
    A context manager: leaving it stops everything."""

    def __init__(self, n: int, port: int, host: str = "127.0.0.1"):
        self.servers: list[Server] = []
        self.proxy: Proxy | None = None
        self.store: Store | None = None
        self.env: dict[str, str] = {}  # what every replica's environment adds: the store's address
        try:
            if "HOW_LMS_REDIS" not in os.environ and REDIS_SERVER.exists():
                self.store = Store()
                self.env["HOW_LMS_REDIS"] = self.store.url
            pool = ThreadPoolExecutor(n)
            starts = [pool.submit(start_replica, self.env) for _ in range(n)]
            try:
                failures = [start.exception() for start in starts if start.exception() is not None]
            finally:  # on Ctrl-C too: wait for the starts under way, so that stop() reaches every replica
                pool.shutdown()
                self.servers = [start.result() for start in starts if start.exception() is None]
            if failures:
                raise failures[0]
            self.proxy = Proxy(host, port, [f"127.0.0.1:{s.port}" for s in self.servers])
        except BaseException:
            self.stop()
            raise
        self.url = self.proxy.url

    def names(self) -> dict[str, Server]:
        return {replica_name(i): server for i, server in enumerate(self.servers)}

    def restart_exited(self) -> list[str]:
        """Start a new replica in place of each that has exited, on a new port, and point the proxy's server
        line at it through HAProxy's runtime API; the proxy sends it students once its health checks pass.
        Returns the names restarted."""
        restarted = []
        for i, server in enumerate(self.servers):
            if server.proc.poll() is None:
                continue
            server.stop()
            self.servers[i] = start_replica(self.env)
            name = replica_name(i)
            self.proxy.command(f"set server {BACKEND}/{name} addr 127.0.0.1 port {self.servers[i].port}")
            restarted.append(name)
        return restarted

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
        for server in self.servers:
            server.stop()
        if self.store is not None:
            self.store.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()
