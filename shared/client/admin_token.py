"""The admin bearer token a server makes when none is given: authenticated by default.

``memory up``, ``memory grpc`` and ``memory mcp --transport http`` started with no token of
their own (``MEMORY_GRPC_TOKEN``, ``--grpc-token-file``, ``MEMORY_MCP_TOKEN``, ``--token-file``)
use this user's admin token: ``$XDG_STATE_HOME/agent-memory/token`` (else
``~/.local/state/agent-memory/token``), made at the first start with ``secrets.token_urlsafe``
and reused by every later one. The folder is 0700 and the file 0600 from creation, written
atomically; a file another user owns, or one other users may read, is refused (its token may
be known). Deleting the file, or ``memory token rotate``, makes a new token at the next start.

The gateway's record (``shared.client.gateway_file``) names this file, never the token: a
client that finds the gateway through its record reads the token here. The token never goes
on a command line, into a log or into an event.

Serving with no token at all takes an explicit opt-in (``--no-token``, or
``MEMORY_ALLOW_NO_TOKEN=1``), announced on stderr at every start, on loopback too; beyond
loopback ``MEMORY_ALLOW_NO_TOKEN=1`` is still required (``shared.client.bearer.refused_open``).

Standard library only: the CLI reads this before it imports anything else.
"""

from __future__ import annotations

import os
import secrets
import stat
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from shared.client.bearer import OPEN_ENV, refused_open
from shared.client.gateway_file import state_dir
from shared.contract.errors import InvalidArgumentError

NAME = "token"
NBYTES = 32  # secrets.token_urlsafe(32): 43 characters, 256 bits


def path(environ: Mapping[str, str] | None = None) -> Path:
    """Where this user's admin token is kept (``XDG_STATE_HOME``-aware)."""
    return state_dir(environ) / NAME


def ensure(environ: Mapping[str, str] | None = None) -> Path:
    """This user's admin token file, made now if there is none (two starts racing both end
    with the one that won: the file is linked into place, never overwritten)."""
    target = path(environ)
    if target.exists():
        check_private(target)
        return target
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = _write_new(target)
    try:
        os.link(tmp, target)  # fails if another start made it meanwhile: theirs is kept
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    check_private(target)
    return target


def rotate(environ: Mapping[str, str] | None = None) -> Path:
    """A new admin token in place of the old one (atomically); a running server keeps the old
    one until it is restarted."""
    target = path(environ)
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.replace(_write_new(target), target)
    return target


def _write_new(target: Path) -> Path:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(secrets.token_urlsafe(NBYTES) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return tmp


def check_private(target: Path) -> None:
    """Refuse a token file another user owns or other users may read or change: its token
    may be known, so a server must not take it for its admin token."""
    try:
        st = target.stat()
    except OSError as e:
        raise InvalidArgumentError(f"cannot read the token file {target}: {e}") from e
    if st.st_uid != os.getuid() or st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise InvalidArgumentError(
            f"the token file {target} is readable by other users (mode "
            f"{stat.S_IMODE(st.st_mode):04o}): its token may be known. Delete it to make a new "
            "one at the next start (`memory token rotate`), or chmod 600 it"
        )


def load(target: Path) -> str:
    """The token in ``target`` (one line), typed errors for an unreadable or empty file."""
    try:
        token = target.read_text("utf-8").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidArgumentError(f"cannot read the token file {target}: {e}") from e
    if not token or "\n" in token:
        raise InvalidArgumentError(f"the token file {target} must hold one non-empty line")
    return token


class Auth(NamedTuple):
    """How a server authenticates: ``token`` (``None``: open, opted into), and the file it
    came from when clients may read it there (``None``: a token of the environment)."""

    token: str | None
    token_file: Path | None


def resolve(
    what: str,
    host: str,
    *,
    token: str | None,
    token_file: str | os.PathLike[str] | None,
    no_token: bool,
    env: Mapping[str, str],
    warn: Callable[[str], None] | None = None,
) -> Auth:
    """The token a server starts with: the one given (``token``, else ``token_file``); else
    none, when opted into (``no_token`` or ``MEMORY_ALLOW_NO_TOKEN=1``: announced through
    ``warn``, stderr by default); else this user's admin token (``ensure``, made if none).
    Beyond loopback, serving open still takes ``MEMORY_ALLOW_NO_TOKEN=1``."""
    if token:
        return Auth(token, None)
    if token_file:
        return Auth(load(Path(token_file)), Path(token_file).resolve())
    if no_token or env.get(OPEN_ENV) == "1":
        why = refused_open(what, host, None, env)
        if why is not None:
            raise InvalidArgumentError(why)
        (warn or _stderr)(open_warning(what, host))
        return Auth(None, None)
    target = ensure()  # this process's own state folder (``env``: the servers' settings)
    return Auth(load(target), target)


def open_warning(what: str, host: str) -> str:
    return (
        f"WARNING: {what} on {host} serves with NO bearer token (--no-token / {OPEN_ENV}=1): "
        "every process that reaches it, any other user of this machine included, can read, "
        "change and erase every memory. Drop the opt-in to use your token "
        f"({path()})."
    )


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
