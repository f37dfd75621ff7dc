"""``memory up`` starts the web console (the ``memory-console`` actor) and prints its URL with
the token; ``memory down`` stops it and removes its record; ``memory console`` serves it in
the foreground (web_console/spec.py)."""

from __future__ import annotations

import http.cookiejar
import os
import stat
import urllib.error
import urllib.request
from importlib import metadata
from pathlib import Path

import pytest

from shared.client import console_file

from .conftest import OwnCluster, free_ports


def test_up_starts_the_console_unless_told_not_to() -> None:
    from shared.cli import build_parser
    from shared.client.workers import discover
    from web_console.spec import WORKER

    specs = [s for s in discover() if s.name != "console"] + [WORKER]
    parser = build_parser(specs=specs)
    assert parser.parse_args(["up"]).also_start == ["console"]
    assert parser.parse_args(["up", "--no-console"]).also_start == []
    asked = parser.parse_args(["up", "--console-port", "8800", "--grpc-port", "50060"])
    assert asked.also_start == ["console", "grpc"]
    assert asked.worker_env["MEMORY_CONSOLE_PORT"] == "8800"
    # a bootstrap that starts the default-on workers (deploy.bootstrap) never starts it
    assert not WORKER.default_on
    console = parser.parse_args(["console", "--port", "0"])
    assert console.port == 0 and callable(console.func)


def _declared_env(env: dict[str, str], site: Path) -> dict[str, str]:
    """``env`` whose Python finds the console's entry point: the installed metadata when it
    names it (CI's fresh install), else a dist-info written for this test."""
    names = {ep.name for ep in metadata.entry_points(group="agent_memory.workers")}
    if "console" in names:
        return env
    dist = site / "agent_memory_console_test-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: agent-memory-console-test\nVersion: 0.0\n"
    )
    (dist / "entry_points.txt").write_text(
        "[agent_memory.workers]\nconsole = web_console.spec:WORKER\n"
    )
    paths = [os.getcwd(), str(site), env.get("PYTHONPATH", "")]
    return {**env, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_up_prints_the_consoles_url_and_down_stops_it(own_cluster: OwnCluster) -> None:
    own_cluster.env = _declared_env(own_cluster.env, own_cluster.tmp / "site")
    data_dir = own_cluster.env["MEMORY_DATA_DIR"]
    port = free_ports(1)[0]
    args = own_cluster.up_args()
    dash = args[args.index("--dashboard-port") + 1]
    up = own_cluster.memory("up", "store", *args, "--console-port", str(port))
    assert up.returncode == 0, up.stderr
    assert "started console (memory-console)" in up.stdout, up.stdout
    (line,) = [x for x in up.stdout.splitlines() if x.startswith("console:")]
    url = line.split()[1]
    assert url.startswith(f"http://127.0.0.1:{port}/login?token=")
    # the record holds the token: this user's only
    record = console_file.path(data_dir)
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    # without the token the console refuses; the URL signs in, and the banks page answers
    # through the store actor
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30)
    assert refused.value.code == 401
    jar = urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )
    with jar.open(url, timeout=60) as page:
        body = page.read().decode()
    assert page.status == 200 and 'id="banks"' in body and ">main<" in body
    # every page links the cluster's Ray dashboard
    assert f'href="http://127.0.0.1:{dash}"' in body
    # status names the console's address, never its token
    status = own_cluster.memory("status")
    assert f"console:   http://127.0.0.1:{port}\n" in status.stdout, status.stdout
    assert "console       up" in status.stdout and "token" not in status.stdout

    down = own_cluster.memory("down")
    assert down.returncode == 0, down.stderr
    assert "stopped console" in down.stdout
    assert not record.exists()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10)


def test_memory_console_serves_an_embedded_store_in_the_foreground(tmp_path: Path) -> None:
    import argparse
    import threading

    from web_console.cli import serve_from_args

    stop = threading.Event()
    args = argparse.Namespace(data_dir=str(tmp_path / "data"), host=None, port=0)
    done: list[int] = []
    runner = threading.Thread(target=lambda: done.append(serve_from_args(args, stop)))
    runner.start()
    try:
        record = console_file.path(tmp_path / "data")
        for _ in range(600):
            if console_file.read(tmp_path / "data") is not None:
                break
            stop.wait(0.05)
        info = console_file.read(tmp_path / "data")
        assert info is not None and info.pid == os.getpid()
        jar = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        with jar.open(info.login_url, timeout=30) as page:
            assert page.status == 200 and 'id="banks"' in page.read().decode()
    finally:
        stop.set()
        runner.join(30)
    assert done == [0] and not record.exists()
