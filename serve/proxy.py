"""HAProxy in front of the replicas: the configuration rendered from haproxy.cfg.template, `haproxy -db` in the
foreground in its own process group, and HAProxy's runtime API on a unix socket."""
from __future__ import annotations

import socket
import string
import tempfile
from pathlib import Path

from serve.process import Process, wait_started

HAPROXY = "/usr/sbin/haproxy"  # Debian's haproxy package (2.6 on Debian 12)
TEMPLATE = Path(__file__).with_name("haproxy.cfg.template")
BACKEND = "replicas"  # the template's backend, as the runtime API names it
DEBIAN_ADMIN_SOCKET = "/run/haproxy/admin.sock"  # where Debian's own haproxy.cfg puts it
START_S = 30


def replica_name(i: int) -> str:
    """The i-th replica's name (from 0): its `server` line's and its stickiness cookie's value."""
    return f"r{i + 1}"


def render(bind: str, addresses: list[str], admin_socket: str = DEBIAN_ADMIN_SOCKET) -> str:
    """HAProxy's configuration: listen on `bind` ("host:port") in front of the replicas at `addresses`
    ("host:port" each), named r1, r2, ... in order."""
    servers = "\n".join(f"    server {replica_name(i)} {address} cookie {replica_name(i)}"
                        for i, address in enumerate(addresses))
    return string.Template(TEMPLATE.read_text()).substitute(bind=bind, servers=servers, admin_socket=admin_socket)


class Proxy(Process):
    """HAProxy listening on host:port in front of `addresses`; its configuration, admin socket and output in a
    temporary folder. Ready once a request through it reaches a healthy replica."""

    def __init__(self, host: str, port: int, addresses: list[str]):
        self.folder = tempfile.TemporaryDirectory(prefix="how-lms-haproxy-")
        folder = Path(self.folder.name)
        self.admin_socket = folder / "admin.sock"
        self.config = folder / "haproxy.cfg"
        self.config.write_text(render(f"{host}:{port}", addresses, str(self.admin_socket)))
        super().__init__([HAPROXY, "-f", str(self.config), "-db"], (folder / "haproxy.log").open("w+b"))
        self.url = f"http://{host}:{port}"
        wait_started(self, self.url, START_S)

    def command(self, line: str) -> str:
        """One command of HAProxy's runtime API, e.g. `set server replicas/r1 addr 127.0.0.1 port 8600`."""
        with socket.socket(socket.AF_UNIX) as admin:
            admin.connect(str(self.admin_socket))
            admin.sendall(line.encode() + b"\n")
            return b"".join(iter(lambda: admin.recv(65536), b"")).decode()

    def stop(self) -> None:
        super().stop()
        self.folder.cleanup()
