"""Where the running web console listens: ``<data_dir>/.state/console.json``.

The console (``web_console``, started by ``memory up`` as the ``memory-console`` actor) writes
its sign-in URL here when it starts serving a data dir, mode 0600 because the URL holds its
token, and ``memory up`` prints it from here; ``memory down`` removes it once the console's
process is gone. As for ``gateway.json`` (``shared.client.gateway_file``), a record whose
process has ended is stale and ignored. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import NamedTuple

from shared.client.gateway_file import STATE_DIR, _alive, _write_private

NAME = "console.json"


class ConsoleInfo(NamedTuple):
    """A console serving a data dir: its base ``url``, its sign-in ``token``, its ``pid``."""

    url: str
    token: str
    pid: int

    @property
    def login_url(self) -> str:
        """The URL that signs a browser in (the token leaves the address bar at once)."""
        return f"{self.url}/login?token={self.token}"


def path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / STATE_DIR / NAME


def write(data_dir: str | os.PathLike[str], url: str, token: str) -> Path:
    target = path(data_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    _write_private(target, {"url": url, "token": token, "pid": os.getpid()})
    return target


def read(data_dir: str | os.PathLike[str]) -> ConsoleInfo | None:
    """The data dir's live console, or ``None`` (no file, unreadable, or its process gone)."""
    try:
        raw = json.loads(path(data_dir).read_text("utf-8"))
        info = ConsoleInfo(str(raw["url"]), str(raw["token"]), int(raw["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return info if _alive(info.pid) else None


def remove(data_dir: str | os.PathLike[str], *, pid: int | None = None) -> None:
    """Forget the data dir's console (only if it is ``pid``'s record, when given)."""
    target = path(data_dir)
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if pid is not None and int(json.loads(target.read_text("utf-8"))["pid"]) != pid:
            return
        target.unlink()


def forget(data_dir: str | os.PathLike[str], *, wait_s: float = 10.0) -> bool:
    """Remove the record once its process has ended (``memory down`` stopped the console with
    ``ray.kill``, which never runs the actor's own clean-up). False if it still runs."""
    try:
        pid = int(json.loads(path(data_dir).read_text("utf-8"))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return True
    deadline = time.monotonic() + wait_s
    while _alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    remove(data_dir, pid=pid)
    return True
