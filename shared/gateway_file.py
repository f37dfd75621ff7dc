"""Where the running gateway listens: ``<data_dir>/.state/gateway.json`` (issue 13).

The gateway (``grpc_gateway.actor``, started by ``memory up``) writes this file when it starts
serving a data dir, mode 0600 because it holds the bearer token when one is set; the ``memory``
CLI reads it to reach that data dir's store over gRPC, without Ray. The data dir is the
store's identity (the same ``MEMORY_DATA_DIR`` / ``./data/memory`` resolution as ``up``), so a
CLI pointed at the same data dir finds the same gateway. The file names the serving process:
once that process is gone the file is stale and ignored (``down``, a crash, a reboot).

Standard library only: the CLI reads this before it imports anything else.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import NamedTuple

NAME = "gateway.json"
DEFAULT_DATA_DIR = "./data/memory"  # shared.config.DEFAULT_DATA_DIR (a test keeps them equal)
STATE_DIR = ".state"
_ANY_HOST = ("", "0.0.0.0", "::", "[::]")


class GatewayInfo(NamedTuple):  # not a dataclass: its import costs a CLI call ~5 ms
    """A gateway serving a data dir: ``address`` to dial (``host:port``), its token, its pid."""

    address: str
    token: str | None
    pid: int


def default_data_dir() -> Path:
    """The data dir ``memory up`` serves when not told otherwise (``MEMORY_DATA_DIR``)."""
    return Path(os.environ.get("MEMORY_DATA_DIR") or DEFAULT_DATA_DIR).expanduser().resolve()


def path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / STATE_DIR / NAME


def dial_address(host: str, port: int) -> str:
    """Where a local client dials a server bound to ``host`` (any-interface → loopback)."""
    if host in _ANY_HOST:
        host = "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"{host}:{port}"


def write(data_dir: str | os.PathLike[str], address: str, token: str | None) -> Path:
    """Record this process as the data dir's gateway (0600 from creation: the token)."""
    target = path(data_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    body = json.dumps({"address": address, "token": token, "pid": os.getpid()})
    tmp = target.with_name(f".{NAME}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(body)
    os.replace(tmp, target)
    return target


def read(data_dir: str | os.PathLike[str]) -> GatewayInfo | None:
    """The data dir's live gateway, or ``None`` (no file, unreadable, or its process gone)."""
    try:
        raw = json.loads(path(data_dir).read_text("utf-8"))
        info = GatewayInfo(str(raw["address"]), raw.get("token") or None, int(raw["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return info if _alive(info.pid) else None


def remove(data_dir: str | os.PathLike[str], *, pid: int | None = None) -> None:
    """Forget the data dir's gateway (only if it is ``pid``'s record, when given)."""
    target = path(data_dir)
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if pid is not None and int(json.loads(target.read_text("utf-8"))["pid"]) != pid:
            return
        target.unlink()


def forget(data_dir: str | os.PathLike[str], info: GatewayInfo, *, wait_s: float = 10.0) -> bool:
    """Remove the record of the gateway ``info`` once its process has ended (``memory down``
    stopped it with ``ray.kill``, which is asynchronous and never runs the actor's own clean-up):
    a stale record left the token on disk and could name a reused pid. False if it still runs
    after ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while _alive(info.pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)  # a process ending: nothing to wait on but its pid
    remove(data_dir, pid=info.pid)
    return True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True
