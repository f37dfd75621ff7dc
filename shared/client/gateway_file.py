"""Where the running gateway listens: ``<data_dir>/.state/gateway.json``
(docs/PROTOCOLS.md#memorystorev1-the-stores-own-service: finding the gateway).

The gateway (``grpc_gateway.actor``, started by ``memory up``) writes this file when it starts
serving a data dir, mode 0600; the ``memory`` CLI reads it to reach that data dir's store over
gRPC, without Ray. It never holds the token: it names the file the token is in (this user's
admin token, ``shared.client.admin_token``, or the ``--grpc-token-file`` given), which the
client reads; a token set only in the gateway's environment is the client's
``MEMORY_GRPC_TOKEN``. The data dir is the
store's identity (the same ``MEMORY_DATA_DIR`` / ``./data/memory`` resolution as ``up``), so a
CLI pointed at the same data dir finds the same gateway. The file names the serving process:
once that process is gone the file is stale and ignored (``down``, a crash, a reboot).

A command run from another folder (a coding agent's hooks and MCP server run in the user's
project) has no ``./data/memory``: ``memory up`` also leaves a per-user pointer,
``$XDG_STATE_HOME/agent-memory/gateway.json`` (else ``~/.local/state/agent-memory/``), naming
the data dir it serves. It holds that path only, never the token, and leads nowhere unless
the data dir's own record names a live gateway (a gateway restarted by Ray on a new port
rewrites that record, and the pointer still leads to it). ``discover`` is the precedence the
CLI, the hooks and the MCP server share (``--data-dir`` is the embedded mode, no gateway):

1. ``MEMORY_DATA_DIR``: that data dir's record, and nothing else;
2. ``./data/memory``'s record (the folder ``memory up`` ran in);
3. the data dir the user's pointer names;
4. none: the caller goes over Ray.

Standard library only: the CLI reads this before it imports anything else.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

NAME = "gateway.json"
DEFAULT_DATA_DIR = (
    "./data/memory"  # shared.contract.config.DEFAULT_DATA_DIR (a test keeps them equal)
)
STATE_DIR = ".state"
_ANY_HOST = ("", "0.0.0.0", "::", "[::]")


class GatewayInfo(NamedTuple):  # not a dataclass: its import costs a CLI call ~5 ms
    """A gateway serving a data dir: ``address`` to dial (``host:port``), the token to send (read
    from ``token_file``, else ``MEMORY_GRPC_TOKEN``), its pid, and whether it serves with no
    token at all (``no_token``, opted into)."""

    address: str
    token: str | None
    pid: int
    token_file: str | None = None
    no_token: bool = False


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


def write(
    data_dir: str | os.PathLike[str],
    address: str,
    token_file: str | os.PathLike[str] | None = None,
    *,
    no_token: bool = False,
) -> Path:
    """Record this process as the data dir's gateway (0600 from creation): where it listens,
    the file its token is in (never the token), or ``no_token`` when it serves with none."""
    target = path(data_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    body: dict[str, object] = {
        "address": address,
        "token_file": str(token_file) if token_file else None,
        "no_token": bool(no_token),
        "pid": os.getpid(),
    }
    _write_private(target, body)
    return target


def _write_private(target: Path, body: dict[str, object]) -> None:
    """``body`` as JSON at ``target``, atomically (temp file, rename), mode 0600 from creation:
    a reader sees the old file or the new one, never a part, and no other user ever can."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(json.dumps(body))
    os.replace(tmp, target)


def read(data_dir: str | os.PathLike[str]) -> GatewayInfo | None:
    """The data dir's live gateway, or ``None`` (no file, unreadable, or its process gone)."""
    try:
        raw = json.loads(path(data_dir).read_text("utf-8"))
        address, pid, no_token = str(raw["address"]), int(raw["pid"]), bool(raw.get("no_token"))
        token_file = str(raw["token_file"]) if raw.get("token_file") else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _alive(pid):
        return None
    token = _token_in(token_file) or os.environ.get("MEMORY_GRPC_TOKEN") or None
    return GatewayInfo(address, None if no_token else token, pid, token_file, no_token)


def _token_in(token_file: str | None) -> str | None:
    """The token in the file a record names (``None``: none named, or unreadable: the call is
    then refused, saying the token is missing)."""
    if not token_file:
        return None
    with contextlib.suppress(OSError, UnicodeDecodeError):
        return Path(token_file).read_text("utf-8").strip() or None
    return None


def remove(data_dir: str | os.PathLike[str], *, pid: int | None = None) -> None:
    """Forget the data dir's gateway (only if it is ``pid``'s record, when given)."""
    remove_record(path(data_dir), pid=pid)


def remove_record(target: Path, *, pid: int | None = None) -> None:
    """Delete a process's record (the gateway's, the console's), only if it is ``pid``'s when
    given: a newer process's record stays."""
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if pid is not None and int(json.loads(target.read_text("utf-8"))["pid"]) != pid:
            return
        target.unlink()


def wait_gone(pid: int, wait_s: float) -> bool:
    """Whether process ``pid`` ended within ``wait_s`` (one ending after ``ray.kill``, which
    is asynchronous: nothing to wait on but its pid)."""
    deadline = time.monotonic() + wait_s
    while _alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def forget(data_dir: str | os.PathLike[str], info: GatewayInfo, *, wait_s: float = 10.0) -> bool:
    """Remove the record of the gateway ``info`` once its process has ended (``memory down``
    stopped it with ``ray.kill``, which is asynchronous and never runs the actor's own clean-up):
    a stale record could name a reused pid. False if it still runs
    after ``wait_s``."""
    if not wait_gone(info.pid, wait_s):
        return False
    remove(data_dir, pid=info.pid)
    return True


def discover() -> tuple[Path, GatewayInfo] | None:
    """The gateway a command reaches and the data dir it serves, by the precedence of the
    module docstring, or ``None`` (go over Ray)."""
    candidates = [default_data_dir()]  # MEMORY_DATA_DIR, else ./data/memory
    if not os.environ.get("MEMORY_DATA_DIR"):
        candidates += [found] if (found := pointed()) is not None else []
    for data_dir in candidates:
        info = read(data_dir)
        if info is not None:
            return data_dir, info
    return None


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """This user's state folder for the memory service (XDG Base Directory:
    ``$XDG_STATE_HOME``, a relative value ignored, else ``~/.local/state``); the hooks' log
    lives there too."""
    state = (os.environ if environ is None else environ).get("XDG_STATE_HOME", "")
    if not os.path.isabs(state):
        state = os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(state) / "agent-memory"


def pointer_path() -> Path:
    return state_dir() / NAME


def point(data_dir: str | os.PathLike[str]) -> Path:
    """Make ``data_dir`` the one this user's commands find from any folder (``memory up``):
    the folder 0700 and the file 0600, written atomically; the path only, never the token."""
    target = pointer_path()
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _write_private(target, {"data_dir": str(Path(data_dir).resolve())})
    return target


def pointed() -> Path | None:
    """The data dir this user's pointer names, or ``None``: no pointer, an unreadable one, or
    one this user does not own (a shared ``XDG_STATE_HOME``: another user's data dir)."""
    target = pointer_path()
    try:
        if target.stat().st_uid != os.getuid():
            return None
        return Path(str(json.loads(target.read_text("utf-8"))["data_dir"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def unpoint(data_dir: str | os.PathLike[str]) -> None:
    """Remove this user's pointer if it names ``data_dir`` (``memory down``); a pointer to
    another data dir stays."""
    if pointed() == Path(data_dir).resolve():
        with contextlib.suppress(OSError):
            pointer_path().unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    return True
