"""Serving the console: uvicorn on a loopback port, in a thread of this process (the Ray
actor's, or ``memory console``'s).

The console refuses to listen beyond loopback: its token is printed in a URL, and it changes
and erases memories. A port left at its default that another process holds is replaced by a
free one (the record and ``memory up`` say which); a port asked for is never moved.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from shared.client.bearer import is_loopback
from shared.contract.errors import InvalidArgumentError, SourceUnavailableError


class Server:
    """One uvicorn server for ``app`` on ``host:port``, run in a daemon thread."""

    def __init__(self, app: Any, host: str, port: int) -> None:
        import uvicorn

        if not is_loopback(host):
            raise InvalidArgumentError(
                f"the console listens on loopback only (127.0.0.1 or ::1), not {host!r}"
            )
        self.host = host
        self.sock = bind(host, port)
        self.port = int(self.sock.getsockname()[1])
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self._run, name="memory-console", daemon=True)

    def _run(self) -> None:
        self.server.run(sockets=[self.sock])

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self, wait_s: float = 10.0) -> Server:
        self.thread.start()
        deadline = time.monotonic() + wait_s
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise SourceUnavailableError(f"the console did not start on {self.url}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)
        self.sock.close()


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise InvalidArgumentError(f"the console cannot listen on {host}:{port}: {e}") from e
    sock.listen(128)
    sock.setblocking(False)
    return sock


def port_free(host: str, port: int) -> bool:
    try:
        bind(host, port).close()
    except InvalidArgumentError:
        return False
    return True
