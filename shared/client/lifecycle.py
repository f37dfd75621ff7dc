"""The processes ``memory up`` starts, and how ``up`` (on failure) and ``down`` stop them.

``up`` runs ``ray start --head`` in a new session (``setsid``): every process of that cluster
(GCS, raylet, dashboard and its agents, the workers the raylet forks, the actors in them) is
born into that session and keeps its id, while a client that connects later (a harness, a
notebook, a benchmark, another ``memory`` command) lives in its own. The session id is
recorded in a marker in Ray's session folder (``memory-up.json``), and ``down`` stops the
processes of that session id, plus the workers Ray itself lists for this node (never a
driver). It never picks processes by the files they hold open: Ray keeps a client's log files
open in the session folder even after ``ray.shutdown()``, and a stop command must never kill a
user's process.

``down`` finds the marker through the connected cluster, or, when the GCS no longer answers (a
half-dead cluster), through ``session_latest`` beside Ray's address file.

A failed ``up`` stops what it started (``Launch.abort``) and says why: the error line of
``ray start``'s output (colour codes and INFO lines removed), or the file with that output.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.contract.errors import SourceUnavailableError

MARKER = "memory-up.json"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# A log record of Ray's (``2026-01-01 10:00:00,123\tINFO file.py:12 -- ...``) or a bare level.
LOG_LINE = re.compile(r"^(\S+ \S+\s+)?(INFO|DEBUG|WARNING|WARN)\b")
FAILURE = re.compile(r"(Error|Exception|error:|ERROR|[Ff]ailed|FAILED|refused|denied|in use)")


@dataclass(frozen=True)
class Marker:
    """What ``up`` recorded about a cluster it started."""

    session_id: int  # the Linux session id of every process of the cluster
    session: Path  # Ray's session folder
    address: str  # the GCS address, to forget in Ray's address file once stopped

    @staticmethod
    def read(session: Path | None) -> Marker | None:
        if session is None:
            return None
        try:
            raw = json.loads((session / MARKER).read_text("utf-8"))
            return Marker(int(raw["session_id"]), session, str(raw.get("address", "")))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # not ours, or from a `memory up` that recorded no session id


def error_line(output: str) -> str | None:
    """The line of a command's output that says why it failed: the last one that reads like an
    error, with colour codes removed and Ray's INFO/WARNING records skipped."""
    found = None
    for raw in output.splitlines():
        line = ANSI.sub("", raw).strip()
        if line and not LOG_LINE.match(line) and FAILURE.search(line):
            found = line
    return found


RECORD_PREFIX = re.compile(r"^\S+ \S+\s+(ERROR|CRITICAL|FATAL)\s+\S+ -- ")


def dashboard_failure(log: Path | None, session: Path | None = None) -> str:
    """Why the dashboard of a head ``up`` started is not running, in Ray's words: the error
    line of ``ray start``'s output (``Failed to bind to 127.0.0.1:8265 because it's already
    occupied...``), else of the dashboard's own log, else where to look."""
    sources = [log] + ([session / "logs" / "dashboard.log"] if session else [])
    for source in sources:
        if source is None:
            continue
        try:
            text = source.read_text("utf-8", errors="replace")
        except OSError:
            continue
        found = error_line(text)
        if found:
            return RECORD_PREFIX.sub("", found)
    where = " or ".join(str(s) for s in sources if s is not None) or "Ray's logs"
    return f"Ray gave no reason (see {where})"


class Launch:
    """One ``ray start --head`` by ``memory up``: ``start``, then ``mark`` once connected;
    ``abort`` stops every process it started (``up`` failed)."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.session_id: int | None = None
        self.log: Path | None = None
        self.address = ""  # known once connected (``mark``)

    def start(self, cmd: Sequence[str], env: dict[str, str]) -> None:
        """Run ``cmd`` (``ray start --head ...``) in a new session; raise its error line."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.log = self.log_dir / f"memory-up-{time.strftime('%Y%m%d-%H%M%S')}.log"
        with open(self.log, "w", encoding="utf-8") as out:
            proc = subprocess.Popen(
                list(cmd), env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
            self.session_id = proc.pid  # the session leader's pid is the session id
            code = proc.wait()
        if code != 0:
            text = self.log.read_text("utf-8", errors="replace")
            why = error_line(text) or f"`ray start` exited with code {code}"
            raise SourceUnavailableError(f"could not start a Ray head: {why} (output: {self.log})")

    def mark(self, session: Path | None, address: str) -> None:
        self.address = address
        if session is None or self.session_id is None:
            return
        info = {
            "started_by": "memory up",
            "pid": os.getpid(),
            "at": time.time(),
            "session_id": self.session_id,
            "address": address,
            "pids": session_pids(self.session_id),  # for a reader; `down` looks again
        }
        (session / MARKER).write_text(json.dumps(info), "utf-8")

    def abort(self, grace_s: float = 3.0) -> int:
        """Stop every process this launch started; how many there were."""
        if self.session_id is None:
            return 0
        return stop_pids(session_pids(self.session_id), grace_s=grace_s)


# -- finding and stopping a cluster's processes ------------------------------------------------


def latest_session(ray_temp: Path) -> Path | None:
    """The session folder Ray's ``session_latest`` link names (the last cluster started)."""
    link = ray_temp / "session_latest"
    try:
        return link.resolve(strict=True)
    except OSError:
        return None


def session_pids(session_id: int) -> list[int]:
    """Live processes of this Linux session id (never this process)."""
    if not Path("/proc").is_dir():
        raise SourceUnavailableError("cannot list processes here; stop the cluster with `ray stop`")
    me = os.getpid()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != me:
            fields = _stat(int(entry.name))
            if fields is not None and fields[0] != "Z" and int(fields[3]) == session_id:
                found.append(int(entry.name))
    return sorted(found)


def ray_worker_pids(dashboard_url: str) -> list[int]:
    """Workers Ray lists for this node, drivers excluded (needs the connected cluster and its
    dashboard; empty when either does not answer).

    Ray's state API finds the dashboard through the GCS and, when none ever registered (its
    port was taken), retries for ~40 s: with no dashboard answering at ``dashboard_url`` it
    is not asked (the session id finds the cluster's processes)."""
    if not dashboard_answers(dashboard_url, timeout=1.0):
        return []
    try:
        import ray
        from ray.util.state import list_workers

        node = ray.get_runtime_context().get_node_id()
        workers = list_workers(
            filters=[("is_alive", "=", "True")],
            limit=10_000,
            timeout=5,
            raise_on_missing_output=False,
        )
    except Exception:  # no dashboard, or a Ray without the state API: the session id suffices
        return []
    return sorted(
        int(w.pid)
        for w in workers
        if getattr(w, "worker_type", "DRIVER") != "DRIVER"
        and getattr(w, "node_id", node) == node
        and int(getattr(w, "pid", 0) or 0) > 0
    )


def stop_marked(marker: Marker, extra: Iterable[int] = (), *, grace_s: float = 3.0) -> int:
    """Stop the processes of a cluster ``up`` started: its session id's, and ``extra`` (Ray's
    own list of its workers, when it still answered)."""
    pids = sorted((set(session_pids(marker.session_id)) | set(extra)) - {os.getpid()})
    return stop_pids(pids, grace_s=grace_s)


def stop_pids(pids: Sequence[int], *, grace_s: float = 3.0) -> int:
    """SIGTERM each, SIGKILL what is left after ``grace_s``; returns how many were signalled."""
    _signal(pids, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        time.sleep(0.2)  # polling process exit; there is no portable wait for non-children
        alive = [p for p in alive if _alive(p)]
    _signal(alive, signal.SIGKILL)
    return len(pids)


def _signal(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _stat(pid: int) -> list[str] | None:
    """``/proc/<pid>/stat`` after the command name: state, ppid, pgrp, session, ..."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"  # a zombie has exited


# -- does it answer? ---------------------------------------------------------------------------


def dashboard_answers(url: str, timeout: float = 2.0) -> bool:
    """Whether an HTTP server answers at ``url`` (any status: token auth answers 401)."""
    if not url:
        return False
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, ValueError):
        return False


def wait_dashboard(url: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while True:
        if dashboard_answers(url):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.5)  # the dashboard binds its port a few seconds after `ray start`


def worker_answers(spec_actor_name: str, namespace: str, timeout: float = 5.0) -> bool:
    """Whether the named actor answers ``ping`` within ``timeout``."""
    import ray

    try:
        handle: Any = ray.get_actor(spec_actor_name, namespace=namespace)
        ray.get(handle.ping.remote(), timeout=timeout)
    except Exception:  # missing, dead, restarting or too slow: it does not answer
        return False
    return True


# -- the local cluster's files ------------------------------------------------------------


# -- what `memory status` and `memory metrics` read of a connected cluster ---------------------

# Gateway-level calls on memory.store.v1's ``Call`` (served by the gateway, which has Ray, never
# by the store): what status and metrics need, so the CLI process never imports Ray for them.
STATUS_CALL = "gateway.status"
METRICS_CALL = "gateway.metrics"
METRICS_PREFIX = "ray_memory_"


def cluster_report(workers: dict[str, str]) -> dict[str, Any]:
    """What ``memory status`` shows of the cluster this process is connected to: the dashboard
    URL, whether each worker (name → actor name) answers ``ping``, and every store shard
    (``memory-store``, ``memory-store-1``...) with its health and the banks it holds."""
    from shared.client.ray import join_cluster
    from shared.client.workers import NAMESPACE

    join_cluster()
    return {
        "dashboard_url": registered_dashboard_url(),
        "workers": {name: worker_answers(actor, NAMESPACE) for name, actor in workers.items()},
        "shards": store_shards(),
    }


def registered_dashboard_url() -> str:
    """The URL the cluster's dashboard registered in the GCS once it bound its port, or ``""``
    (none started). Not Ray's ``get_dashboard_url``: in an actor (the gateway) that is the
    port a worker was configured with (8265 whatever the head used)."""
    try:
        from ray.experimental import internal_kv

        raw = internal_kv._internal_kv_get("webui:url", namespace="dashboard")
    except Exception:  # not connected, or a Ray that keeps it elsewhere: unknown
        return ""
    if not raw:
        return ""
    url = raw.decode() if isinstance(raw, bytes) else str(raw)
    return url if url.startswith("http") else f"http://{url}"


def store_shards(timeout: float = 5.0) -> list[dict[str, Any]]:
    """Each store shard actor running, shard 0 first: ``{"shard", "actor", "up", "banks"}``
    (``up``: it answered; ``banks``: the names it holds, or its error as ``error``)."""
    import ray

    from shared.client.ray import StoreClient
    from shared.client.shards import STORE_ACTOR
    from shared.client.workers import NAMESPACE

    sibling = re.compile(rf"{re.escape(STORE_ACTOR)}(?:-(\d+))?\Z")
    found: dict[str, int] = {}
    for entry in ray.util.list_named_actors(all_namespaces=True):
        name, space = entry.get("name"), entry.get("namespace")
        if space == NAMESPACE and isinstance(name, str) and (m := sibling.match(name)):
            found[name] = int(m.group(1) or 0)
    shards = []
    for name in sorted(found, key=lambda n: found[n]):
        row: dict[str, Any] = {"shard": found[name], "actor": name, "up": False, "banks": []}
        try:
            client = StoreClient(ray.get_actor(name, namespace=NAMESPACE), timeout=timeout)
            row["banks"] = sorted(b.name for b in client.bank_list().banks)
            row["up"] = True
        except Exception as e:  # a shard that does not answer is shown down, with why
            row["error"] = f"{type(e).__name__}: {e}"
        shards.append(row)
    return shards


def metrics_text(timeout: float = 5.0) -> str:
    """The ``ray_memory_*`` lines of every live node's metrics export (connected cluster)."""
    import ray

    nodes: list[dict[str, Any]] = ray.nodes()  # type: ignore[no-untyped-call]
    lines = []
    for n in nodes:
        if not (n.get("Alive") and n.get("MetricsExportPort")):
            continue
        url = f"http://{n['NodeManagerAddress']}:{n['MetricsExportPort']}/metrics"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as answer:
                text = answer.read().decode("utf-8", errors="replace")
        except (OSError, ValueError) as e:
            raise SourceUnavailableError(f"cannot read Ray's metrics at {url}: {e}") from e
        lines += [line for line in text.splitlines() if METRICS_PREFIX in line]
    return "\n".join(lines)


def address_file() -> Path:
    """Where ``ray start`` records the latest local cluster (``<temp>/ray/ray_current_cluster``).

    Ray's rule, read here rather than through Ray's helper: importing Ray takes ~0.9 s, and
    a CLI call that finds no cluster (``memory status`` before ``up``) never needs it
    (``tests/shared/test_cluster_files.py`` holds the rule to Ray's helper)."""
    return ray_temp_dir() / "ray_current_cluster"


def ray_temp_dir() -> Path:
    """Ray's default temp folder (``ray._common.utils.get_default_ray_temp_dir``): under
    ``RAY_TMPDIR``, else ``TMPDIR`` on Linux, else ``/tmp`` on Linux and macOS."""
    if "RAY_TMPDIR" in os.environ:
        base = os.environ["RAY_TMPDIR"]
    elif sys.platform.startswith("linux") and "TMPDIR" in os.environ:
        base = os.environ["TMPDIR"]
    elif sys.platform.startswith(("linux", "darwin")):
        base = os.path.join(os.sep, "tmp")
    else:
        base = tempfile.gettempdir()
    return Path(base) / "ray"


def local_address() -> str | None:
    """The local ``ray start`` cluster's GCS address, if its file exists and the port answers.

    Never Ray's ``address="auto"``: when the file is missing, "auto" falls back to *any* GCS
    process on the machine (Ray's legacy behaviour), e.g. somebody else's test cluster.
    """
    try:
        address = address_file().read_text("utf-8").strip()
        host, _, port = address.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=2):
            return address
    except (OSError, ValueError):
        return None


def half_dead() -> str | None:
    """Why no cluster answers, when the one ``memory up`` started last is half dead: its GCS
    is gone (killed, crashed) while some of its processes still run. Ray's raylet, the store
    and the gateway live on for a while without the GCS (the store may still hold the data
    dir, the gateway may still serve), so "no store is running, start it" was wrong: a new
    ``up`` started a second head whose store was refused the data dir. ``None`` otherwise."""
    marker = Marker.read(latest_session(address_file().parent))
    if marker is None:
        return None
    try:
        alive = session_pids(marker.session_id)
    except SourceUnavailableError:  # no /proc: nothing to tell
        return None
    if not alive:
        return None
    return (
        f"the Ray cluster `memory up` started ({marker.address or 'its GCS'}) no longer "
        f"answers: its GCS is gone while {len(alive)} of its processes still run (the store "
        "among them may still hold the data dir); stop them with `memory down`, then "
        "`memory up` again"
    )


def forget_address(address: str) -> None:
    """Remove the address file if it still names the cluster just stopped."""
    path = address_file()
    with contextlib.suppress(OSError):
        if path.read_text("utf-8").strip() == address:
            path.unlink()


def session_dir() -> Path | None:
    """The connected cluster's session folder (no public API exposes it)."""
    try:
        from ray._private.worker import global_worker

        node: Any = global_worker.node
        return Path(node.get_session_dir_path())
    except Exception:
        return None
