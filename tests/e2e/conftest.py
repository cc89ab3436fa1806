"""The real app, served by `streamlit run` on a free local port, driven by Debian's chromium."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = ROOT / "tests" / "e2e" / "screenshots"
# as the probe of this workplace starts it: no sandbox as root, no background traffic to a closed network
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server_url():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.address",
         "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited: {proc.stdout.read().decode()[-2000:]}")
            time.sleep(0.5)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        raise RuntimeError("streamlit did not open its port within 60 s")
    yield f"http://127.0.0.1:{port}"
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=20)


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: apt-get install -y chromium (.ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, server_url):
    # 1400 px wide: narrower windows collapse the sidebar and its links become inert
    context = browser.new_context(viewport={"width": 1400, "height": 900}, base_url=server_url)
    tab = context.new_page()
    yield tab
    context.close()


def settle(tab) -> None:
    """Wait as Streamlit's own e2e tests do, then a beat: the state can flip back briefly after a rerun."""
    tab.wait_for_selector(IDLE, timeout=60_000)
    tab.wait_for_timeout(400)
    tab.wait_for_selector(IDLE, timeout=60_000)


def assert_no_exception(tab) -> None:
    assert tab.locator("[data-testid='stException']").count() == 0, tab.locator(
        "[data-testid='stException']").first.inner_text()
    assert "Traceback" not in tab.inner_text("body")


def screenshot(tab, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)
