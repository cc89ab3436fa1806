"""N replicas of the app, each `streamlit run app.py` on its own loopback port (serve.process.Server: its own
process group, its output in a file), behind one HAProxy."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Self

from serve.process import BOOT_S, Server, wait_started
from serve.proxy import BACKEND, Proxy, replica_name

ROOT = Path(__file__).resolve().parents[1]


def start_replica() -> Server:
    """One replica, returned once its health check answers."""
    server = Server(ROOT / "app.py", ROOT)
    wait_started(server, server.url, BOOT_S)
    return server


class Replicas:
    """`n` replicas started side by side, and HAProxy on host:port in front of them (r1 is servers[0], ...).
    A context manager: leaving it stops everything."""

    def __init__(self, n: int, port: int, host: str = "127.0.0.1"):
        self.servers: list[Server] = []
        self.proxy: Proxy | None = None
        try:
            pool = ThreadPoolExecutor(n)
            starts = [pool.submit(start_replica) for _ in range(n)]
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
            self.servers[i] = start_replica()
            name = replica_name(i)
            self.proxy.command(f"set server {BACKEND}/{name} addr 127.0.0.1 port {self.servers[i].port}")
            restarted.append(name)
        return restarted

    def stop(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
        for server in self.servers:
            server.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()
