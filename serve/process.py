"""A Streamlit server as a process: started on a loopback port in its own process group with its output in a file,
waited on until it answers, measured (CPU, memory) and stopped. `python -m serve`'s replicas, the benchmarks and the
tests all start their servers through this."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import IO

HEALTH = "/_stcore/health"  # Streamlit answers 200 "ok" once its runtime is up
BOOT_S = 60  # a cold start: imports, then the port opens
CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + HEALTH, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def wait_until(process: Process, ready: Callable[[], bool], seconds: float, what: str) -> None:
    """Until ready(). If the process exits or the time is up, it is stopped and a RuntimeError says `what` did not
    happen and ends with what it printed."""
    deadline = time.monotonic() + seconds
    while not ready():
        if process.proc.poll() is not None or time.monotonic() > deadline:
            output = process.output()
            process.stop()
            raise RuntimeError(f"{what} (in {seconds:.0f} s, or before the process exited); it printed:\n"
                               f"{output[-3000:]}")
        time.sleep(0.3)


def wait_started(process: Process, url: str, seconds: float) -> None:
    """Until `url` answers its health check (see wait_until)."""
    wait_until(process, lambda: healthy(url), seconds, f"{url}{HEALTH} did not answer 200")


class Process:
    """A command in its own process group, its output in the binary file `log`: what Server and serve.proxy.Proxy
    share."""

    def __init__(self, command: list[str], log: IO[bytes], cwd: Path | None = None, env: dict[str, str] | None = None):
        self.log = log
        self.proc = subprocess.Popen(command, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env=None if env is None else os.environ | env)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self, seconds: float = 15) -> None:
        """SIGTERM to the process group, SIGKILL if it is still there after `seconds`; then the log is closed."""
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:
            pass
        self.log.close()


class Server(Process):
    """`streamlit run <script>` on a loopback port in its own process group, its output in a file; returned once
    the port is open (its runtime may still be starting: `wait_started` waits for the health check). `launcher`
    is the module run as `python -m` (benchmarks.stamped_server adds the server's clock on each run); `env`, what it
    adds to this process's environment."""

    def __init__(self, script: Path, cwd: Path, launcher: str = "streamlit", env: dict[str, str] | None = None):
        self.port = free_port()
        super().__init__([sys.executable, "-m", launcher, "run", str(script), "--server.port", str(self.port),
                          "--server.address", "127.0.0.1", "--server.headless", "true",
                          "--browser.gatherUsageStats", "false"], tempfile.TemporaryFile(), cwd, env)
        wait_until(self, lambda: port_open(self.port), BOOT_S, f"streamlit did not open port {self.port}")
        self.url = f"http://127.0.0.1:{self.port}"

    def cpu_s(self) -> float:
        """User plus system CPU of the server process, all its threads, in seconds."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def wait_idle(self, cores: float = 0.05, window_s: float = 3.0, limit_s: float = 600.0) -> float:
        """Wait until the server uses under `cores` over a whole window (its start-up thread has computed the
        default views, ui/defaults.py); the seconds waited."""
        start = time.monotonic()
        while time.monotonic() - start < limit_s:
            before = self.cpu_s()
            time.sleep(window_s)
            if (self.cpu_s() - before) / window_s < cores:
                break
        return time.monotonic() - start

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0
