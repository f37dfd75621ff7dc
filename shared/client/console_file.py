"""Where the running web console listens: ``<data_dir>/.state/console.json``.

The console (``web_console``, started by ``memory up`` as the ``memory-console`` actor) writes
where it listens here when it starts serving a data dir, with the file its admin token is in
(never the token; mode 0600 as every record), and ``memory up`` prints the sign-in URL from
here; ``memory down`` removes it once the console's
process is gone. As for ``gateway.json`` (``shared.client.gateway_file``), a record whose
process has ended is stale and ignored. Standard library only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from shared.client.gateway_file import (
    STATE_DIR,
    _alive,
    _write_private,
    remove_record,
    wait_gone,
)

NAME = "console.json"
LOGIN_CONTEXT = b"agent-memory console sign-in v1"


def login_key(admin_token: str) -> str:
    """The console's sign-in key for ``admin_token``: an HMAC of it, so the URL ``memory up``
    prints signs in to the console as the admin without showing the admin token itself (the
    key does not open the gateway, and cannot be turned back into the token). Rotating the
    admin token changes it."""
    return hmac.new(admin_token.encode("utf-8"), LOGIN_CONTEXT, hashlib.sha256).hexdigest()


class ConsoleInfo(NamedTuple):
    """A console serving a data dir: its base ``url``, its admin ``token`` (``None``: served
    open, or a token this process was not given), its ``pid``."""

    url: str
    token: str | None
    pid: int

    @property
    def login_url(self) -> str:
        """The URL that signs a browser in as the admin: it carries the sign-in key
        (``login_key``), never the admin token, and leaves the address bar at once."""
        return f"{self.url}/login?token={login_key(self.token)}" if self.token else self.url


def path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / STATE_DIR / NAME


def write(
    data_dir: str | os.PathLike[str],
    url: str,
    token_file: str | os.PathLike[str] | None,
    *,
    no_token: bool = False,
) -> Path:
    """Record where the console listens and the file its admin token is in (never the
    token: one given in the environment is the environment's, ``MEMORY_GRPC_TOKEN``)."""
    target = path(data_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    record: dict[str, object] = {
        "url": url,
        "token_file": str(token_file) if token_file else None,
        "no_token": bool(no_token),
        "pid": os.getpid(),
    }
    _write_private(target, record)
    return target


def read(
    data_dir: str | os.PathLike[str], env: Mapping[str, str] | None = None
) -> ConsoleInfo | None:
    """The data dir's live console, or ``None`` (no file, unreadable, or its process gone).
    Its token is read from the file the record names, else taken from ``env`` (this
    process's environment: the one ``memory up`` passed the console)."""
    try:
        raw = json.loads(path(data_dir).read_text("utf-8"))
        url, pid = str(raw["url"]), int(raw["pid"])
        token_file, no_token = raw.get("token_file"), bool(raw.get("no_token"))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not _alive(pid):
        return None
    return ConsoleInfo(url, None if no_token else _token(token_file, env), pid)


def _token(token_file: object, env: Mapping[str, str] | None) -> str | None:
    from shared.client import admin_token
    from shared.contract.errors import InvalidArgumentError

    if isinstance(token_file, str) and token_file:
        try:
            admin_token.check_private(Path(token_file))
            return admin_token.load(Path(token_file))
        except InvalidArgumentError:
            return None
    env = os.environ if env is None else env
    return env.get("MEMORY_CONSOLE_TOKEN") or env.get("MEMORY_GRPC_TOKEN") or None


def remove(data_dir: str | os.PathLike[str], *, pid: int | None = None) -> None:
    """Forget the data dir's console (only if it is ``pid``'s record, when given)."""
    remove_record(path(data_dir), pid=pid)


def forget(data_dir: str | os.PathLike[str], *, wait_s: float = 10.0) -> bool:
    """Remove the record once its process has ended (``memory down`` stopped the console with
    ``ray.kill``, which never runs the actor's own clean-up). False if it still runs."""
    try:
        pid = int(json.loads(path(data_dir).read_text("utf-8"))["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return True
    if not wait_gone(pid, wait_s):
        return False
    remove(data_dir, pid=pid)
    return True
