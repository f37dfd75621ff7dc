"""One port, one server: a port a server is asked to listen on that another process holds is
refused at start, typed (``PortHeldError``), never shared (no ``SO_REUSEPORT``: the kernel
would split new connections between the two servers, and so their stores).

Standard library only (and the contract's errors): the CLI checks before anything starts.
"""

from __future__ import annotations

import errno
import socket

from shared.contract.errors import SourceUnavailableError


class PortHeldError(SourceUnavailableError):
    """The port a server was asked to listen on is held by another one: refused at start.
    ``holder`` names it when known; ``flag`` is the option that chose the port."""

    def __init__(
        self, host: str, port: int, holder: str | None = None, *, flag: str = "--port"
    ) -> None:
        self.host, self.port, self.holder = host, port, holder
        super().__init__(
            f"cannot listen on {host}:{port}: the port is taken by {holder or 'another process'};"
            f" stop it or pick another port ({flag})",
            retryable=False,
        )


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether ``host:port`` can be bound now (a plain bind: no SO_REUSEPORT)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        try:
            sock.bind((host.strip("[]"), port))
        except OSError:
            return False
    return True


LOOPBACKS = ("127.0.0.1", "::1")


def loopback_held(port: int, host: str) -> str | None:
    """For a loopback ``host`` (``localhost``, ``127.0.0.1``, ``[::1]``): the loopback address
    of the other family on which another server holds ``port``, if one does. Two servers on
    127.0.0.1:P and [::1]:P would share ``localhost:P``, whose clients reach whichever the
    resolver tries first. A family this machine lacks holds nothing."""
    bare = host.strip("[]")
    if not port or bare not in ("localhost", *LOOPBACKS):
        return None
    for address in LOOPBACKS:
        with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as sock:
            # as the server binds: a listener refuses it, a closed connection's TIME_WAIT not
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind((address, port))
            except OSError as e:
                if e.errno == errno.EADDRINUSE:
                    return address
    return None
