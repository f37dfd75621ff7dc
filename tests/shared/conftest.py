"""A private cluster for the CLI's real-process tests (``memory up`` / ``down`` / ``status``).

``own_cluster`` gives an environment whose ``memory up`` starts its own head: its own TMPDIR (so
Ray's address file and session folders are private), its own HOME (own auth token) and free
ports, so it coexists with the session's test cluster and with a developer's cluster. Every
process started under it carries that TMPDIR in its environment, which is how the tests (and the
cleanup, even after a failure half-way) find them, independently of how ``down`` does.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MEMORY = str(Path(sys.executable).with_name("memory"))


def cpu_seconds(fn: Callable[[str], object], text: str, *, within: float, tries: int = 3) -> float:
    """The least CPU time ``fn(text)`` took in up to ``tries`` runs, stopping at the first
    under ``within``. For the "no quadratic slip" checks: a slip costs seconds of CPU, while
    a shared 2-core machine stretches wall time (waiting for a core) and not CPU time."""
    best = float("inf")
    for _ in range(tries):
        start = time.process_time()
        fn(text)
        best = min(best, time.process_time() - start)
        if best < within:
            break
    return best


def isolated_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "MEMORY_"))}
    env.pop("XDG_STATE_HOME", None)  # the gateway pointer `up` writes: in this HOME
    env.update(HOME=str(tmp / "home"), TMPDIR=str(tmp), LITELLM_LOCAL_MODEL_COST_MAP="True")
    (tmp / "home").mkdir(exist_ok=True)
    return env


def free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


CLIENT = textwrap.dedent(
    """
    import time, ray
    from shared.client.ray import StoreClient, join_cluster
    join_cluster()
    StoreClient(timeout=60).tags()
    ray.shutdown()
    print("disconnected", flush=True)
    time.sleep(600)
    """
)


class OwnCluster:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.env = isolated_env(tmp)
        self.env["MEMORY_DATA_DIR"] = str(tmp / "data")

    def memory(self, *argv: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [MEMORY, *argv], env=self.env, capture_output=True, text=True, timeout=timeout,
            check=False,
        )  # fmt: skip

    def up_args(self) -> list[str]:
        port, dash, client, agent = free_ports(4)
        return [
            "--num-cpus", "1", "--port", str(port), "--dashboard-port", str(dash),
            "--client-port", str(client), "--agent-port", str(agent),
        ]  # fmt: skip

    def pids(self) -> dict[int, str]:
        """Live processes started under this environment: pid → command line."""
        tag = f"TMPDIR={self.tmp}\0".encode()
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if tag not in (entry / "environ").read_bytes() + b"\0":
                    continue
                state = (entry / "stat").read_text().rsplit(")", 1)[-1].split()[0]
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if state != "Z":
                found[int(entry.name)] = cmd
        return found

    def pid_of(self, needle: str) -> int:
        found = [pid for pid, cmd in self.pids().items() if needle in cmd]
        assert len(found) == 1, (needle, self.pids())
        return found[0]

    def wait_gone(self, pids: set[int], timeout: float = 15) -> set[int]:
        """Which of ``pids`` are still alive after up to ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            left = pids & set(self.pids())
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.2)

    @contextmanager
    def client(self) -> Iterator[subprocess.Popen[str]]:
        """A user's process that connected to the cluster, called the store, disconnected
        (``ray.shutdown()``) and lives on; Ray keeps its log files open in the session folder."""
        proc = subprocess.Popen(
            [sys.executable, "-c", CLIENT], env={**self.env, "PYTHONPATH": os.getcwd()},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert proc.stdout is not None and proc.stderr is not None
            if proc.stdout.readline().strip() != "disconnected":
                proc.kill()
                raise AssertionError(f"the client failed: {proc.stderr.read()}")
            yield proc
        finally:
            proc.kill()
            proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()

    def kill_all(self) -> None:
        for pid in self.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.fixture
def own_cluster() -> Iterator[OwnCluster]:
    tmp = Path(tempfile.mkdtemp(prefix="mem-up-", dir="/tmp"))  # short: Ray socket paths
    cluster = OwnCluster(tmp)
    try:
        yield cluster
    finally:
        cluster.memory("down", timeout=120)
        cluster.kill_all()  # whatever a failed test left: only processes of this environment
        shutil.rmtree(tmp, ignore_errors=True)
