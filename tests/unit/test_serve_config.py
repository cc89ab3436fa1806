"""HAProxy's configuration for `python -m serve` (serve/haproxy.cfg.template): what an operator relies on is in
it, HAProxy itself accepts it, and the copy for several machines in docs/serving.md is what the command prints."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from serve.proxy import HAPROXY, render

ROOT = Path(__file__).resolve().parents[2]
ADDRESSES = ["127.0.0.1:40001", "127.0.0.1:40002"]


def lines(config: str) -> list[str]:
    """The directives, without comments or indentation."""
    return [line.split("#")[0].strip() for line in config.splitlines() if line.split("#")[0].strip()]


def test_the_configuration_is_cookie_sticky_health_checked_and_redispatches():
    config = lines(render("127.0.0.1:8501", ADDRESSES))
    assert "bind 127.0.0.1:8501" in config
    assert "cookie HOW_LMS_REPLICA insert indirect nocache httponly" in config  # by cookie, never by source
    assert not any(line.startswith("balance source") or "stick on src" in line for line in config)
    assert "option httpchk GET /_stcore/health" in config and "http-check expect status 200" in config
    assert "option redispatch" in config and "retries 2" in config
    assert "mode http" in config  # websocket upgrades seen and tunnelled
    assert "timeout tunnel 1h" in config
    assert "default-server check inter 2s fall 3 rise 2 on-marked-down shutdown-sessions" in config
    assert "timeout check 10s" in config  # a replica busy with a class is slow, not down
    assert config[-2:] == ["server r1 127.0.0.1:40001 cookie r1", "server r2 127.0.0.1:40002 cookie r2"]


@pytest.mark.skipif(not Path(HAPROXY).exists(), reason=f"{HAPROXY} is missing (apt-get install -y haproxy)")
def test_haproxy_accepts_the_configuration(tmp_path):
    config = tmp_path / "haproxy.cfg"
    config.write_text(render("127.0.0.1:8501", ADDRESSES, str(tmp_path / "admin.sock")))
    check = subprocess.run([HAPROXY, "-c", "-f", str(config)], capture_output=True, text=True, timeout=30,
                           check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "WARNING" not in check.stdout + check.stderr, check.stdout + check.stderr


def test_the_docs_show_the_configuration_the_command_prints_for_several_machines():
    page = (ROOT / "docs" / "serving.md").read_text()
    command = re.search(r"python -m serve --print-config --servers (\S+) --host (\S+) --port (\d+)", page)
    shown = re.search(r"```\n(# HAProxy 2\.6 in front.*?)```", page, re.DOTALL)
    assert command and shown, "docs/serving.md's 'Several machines' lost its command or its configuration"
    servers, host, port = command.groups()
    assert shown[1] == render(f"{host}:{port}", servers.split(","))
