"""The lifecycle of a cluster ``memory up`` starts: a failed ``up`` leaves nothing behind and
says why; ``down`` stops a half-dead cluster ``up`` started, every process of it and
only those (a client that connected and disconnected survives); ``status`` checks what it
prints. The real-process tests run a private head (``own_cluster``: own TMPDIR, HOME, ports)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shared.client import lifecycle
from tests.shared.conftest import OwnCluster

# -- without Ray -------------------------------------------------------------------------------

RAY_START_FAILED = """\
\x1b[37mUsage stats collection is disabled.\x1b[39m
2026-12-01 05:10:00,123\tINFO scripts.py:1200 -- \x1b[37mLocal node IP\x1b[39m: 127.0.0.1
2026-12-01 05:10:00,456\tINFO worker.py:12 -- Connecting to existing Ray cluster
Traceback (most recent call last):
  File "ray/scripts/scripts.py", line 900, in start
ConnectionError: GCS port 6379 is already in use by another process
2026-12-01 05:10:01,000\tINFO scripts.py:1300 -- \x1b[1mRay runtime stopped\x1b[22m
"""


def test_error_line_is_the_cause_without_colour_codes_or_info_lines() -> None:
    assert (
        lifecycle.error_line(RAY_START_FAILED)
        == "ConnectionError: GCS port 6379 is already in use by another process"
    )
    only_info = "\n".join(line for line in RAY_START_FAILED.splitlines() if "INFO" in line)
    assert lifecycle.error_line(only_info) is None  # the caller names the log file instead


def test_a_marker_without_a_session_id_is_not_ours(tmp_path: Path) -> None:
    assert lifecycle.Marker.read(tmp_path) is None
    (tmp_path / lifecycle.MARKER).write_text('{"started_by": "memory up"}', "utf-8")
    assert lifecycle.Marker.read(tmp_path) is None
    (tmp_path / lifecycle.MARKER).write_text(json.dumps({"session_id": 42, "address": "a:1"}))
    assert lifecycle.Marker.read(tmp_path) == lifecycle.Marker(42, tmp_path, "a:1")


SLEEPER = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"  # noqa: E501


def test_stop_marked_stops_the_session_and_its_children_and_nothing_else(tmp_path: Path) -> None:
    """What `down` relies on, with plain processes: a launch's session id covers the leader's
    children; a process outside that session (a client) is never signalled."""
    launch = lifecycle.Launch(tmp_path)
    cluster = subprocess.Popen([sys.executable, "-c", SLEEPER], start_new_session=True)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        launch.session_id = cluster.pid
        deadline = time.monotonic() + 20
        while len(lifecycle.session_pids(cluster.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the child is forked
        members = lifecycle.session_pids(cluster.pid)
        assert cluster.pid in members and len(members) == 2 and bystander.pid not in members
        assert launch.abort(grace_s=5) == 2
        assert cluster.wait(timeout=10) == -signal.SIGTERM
        assert lifecycle.session_pids(cluster.pid) == []
        assert bystander.poll() is None  # alive
    finally:
        for proc in (cluster, bystander):
            proc.kill()
            proc.wait()


def test_launch_start_failure_names_the_cause_and_the_log(tmp_path: Path) -> None:
    script = f"import sys; sys.stdout.write({RAY_START_FAILED!r}); sys.exit(1)"
    launch = lifecycle.Launch(tmp_path / "ray")
    with pytest.raises(lifecycle.SourceUnavailableError) as failed:
        launch.start([sys.executable, "-c", script], dict(os.environ))
    message = failed.value.message
    assert message.startswith("could not start a Ray head: ConnectionError: GCS port 6379")
    assert "INFO" not in message and "\x1b" not in message
    assert f"(output: {launch.log})" in message and launch.log is not None
    assert "Ray runtime stopped" in launch.log.read_text("utf-8")  # the whole output, to read


def test_dashboard_answers_is_an_http_check(tmp_path: Path) -> None:
    assert lifecycle.dashboard_answers("") is False
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        port = server.stdout.readline().split(" port ")[1].split()[0]
        assert lifecycle.wait_dashboard(f"http://127.0.0.1:{port}", 20) is True
    finally:
        server.kill()
        server.wait()
    assert lifecycle.dashboard_answers(f"http://127.0.0.1:{port}", timeout=1) is False


def test_down_asks_ray_for_workers_only_when_a_dashboard_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a cluster whose dashboard never started (its port was taken): Ray's state API
    # would look for it in the GCS for ~40 s before giving up
    import types

    asked: list[str] = []
    fake = types.ModuleType("ray")
    fake.get_runtime_context = lambda: asked.append("context")  # type: ignore[attr-defined]
    state = types.ModuleType("ray.util.state")
    state.list_workers = lambda **kw: asked.append("list_workers") or []  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setitem(sys.modules, "ray.util.state", state)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        nobody = f"http://127.0.0.1:{closed.getsockname()[1]}"
    # When `down` asks for Ray's own list of the workers
    # Then it gets none, and Ray's state API was not asked
    assert lifecycle.ray_worker_pids("") == []
    assert lifecycle.ray_worker_pids(nobody) == []
    assert asked == []


def test_a_dashboard_that_did_not_start_is_explained_from_its_logs(tmp_path: Path) -> None:
    # ray start's output first, then the dashboard's own log, else where to look
    up_log, session = tmp_path / "memory-up.log", tmp_path / "session"
    (session / "logs").mkdir(parents=True)
    up_log.write_text("2026-01-01 10:00:00,000\tINFO scripts.py:1 -- Local node IP\n")
    (session / "logs" / "dashboard.log").write_text(
        "2026-01-01 10:00:01,000\tERROR head.py:9 -- "
        "ModuleNotFoundError: No module named 'aiohttp'\n"
    )
    got = lifecycle.dashboard_failure(up_log, session)
    assert got == "ModuleNotFoundError: No module named 'aiohttp'"
    (session / "logs" / "dashboard.log").unlink()
    assert lifecycle.dashboard_failure(up_log, session) == (
        f"Ray gave no reason (see {up_log} or {session / 'logs' / 'dashboard.log'})"
    )


# -- real clusters -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_up_failing_midway_leaves_no_process_behind(own_cluster: OwnCluster) -> None:
    # the head starts, then the store cannot open its data dir (a file is in the way)
    blocker = own_cluster.tmp / "not-a-dir"
    blocker.write_text("in the way", "utf-8")
    up = own_cluster.memory("up", "store", "--data-dir", str(blocker), *own_cluster.up_args())
    assert up.returncode == 2, up.stdout + up.stderr
    assert "ray cluster: started" in up.stdout  # it did fail midway
    assert "`up` failed: stopped the Ray cluster it started" in up.stdout
    error = up.stderr.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("error: source_unavailable:"), up.stderr
    assert str(blocker) in error[0]
    assert "INFO" not in up.stderr and "\x1b" not in up.stderr
    assert own_cluster.wait_gone(set(own_cluster.pids()), timeout=10) == set()
    # and what is left is a clean slate: nothing to stop, nothing pretends to run
    down = own_cluster.memory("down")
    assert "nothing to stop" in down.stdout


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_after_the_gcs_died_status_and_up_say_so_and_down_stops_it_sparing_a_client(
    own_cluster: OwnCluster,
) -> None:
    up = own_cluster.memory("up", "store", *own_cluster.up_args())
    assert up.returncode == 0, up.stderr
    with own_cluster.client() as client:
        cluster = set(own_cluster.pids()) - {client.pid}

        # status checks what it prints: a dead dashboard is reported as such
        os.kill(own_cluster.pid_of("dashboard/dashboard.py"), signal.SIGKILL)
        status = own_cluster.memory("status")
        assert status.returncode == 0, status.stderr
        assert "(not answering)" in status.stdout.splitlines()[0]
        assert "store         up" in status.stdout

        # half-dead: the GCS is gone, so nothing answers at the cluster's address
        os.kill(own_cluster.pid_of("gcs_server"), signal.SIGKILL)
        # status and a store verb say so (they said "no memory store is running; start it
        # with `memory up`", and that `up` started a second head whose store was refused
        # the data dir the first store still held)
        for verb in (["status"], ["list"], ["up", *own_cluster.up_args()]):
            said = own_cluster.memory(*verb)
            assert said.returncode == 2, said.stdout
            assert "no longer answers" in said.stderr and "`memory down`" in said.stderr
            assert "starting a local Ray cluster" not in said.stdout
        down = own_cluster.memory("down")
        assert down.returncode == 0, down.stderr
        assert "ray cluster stopped" in down.stdout and "no longer answered" in down.stdout
        assert own_cluster.wait_gone(cluster) == set()
        assert client.poll() is None  # the client process was never signalled
        assert "nothing to stop" in own_cluster.memory("down").stdout
