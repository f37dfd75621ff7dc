"""Which store an integration talks to: the one function every integration calls.

- ``data_dir`` given (``--data-dir D``, or ``MEMORY_EMBEDDED=1`` with ``MEMORY_DATA_DIR``): the
  embedded store on D in this process (``shared.client``). It takes the data dir's
  lock, so a second process on D gets ``DataDirLockedError`` naming the first (pid, host, since).
- otherwise: the running store, as the CLI reaches it (``shared.client``):
  through the gateway ``memory up`` recorded (``GrpcStoreClient``, no Ray in this process),
  else the ``memory-store`` actor over Ray. Many ``memory mcp`` processes and every hook call
  share that one store, so no write is lost to another process's RAM (several MCP servers each
  holding one memory file in memory would overwrite each other's writes).

A long-lived process (the MCP server) holds the running store as a ``RunningStore``: looked
for at its first use rather than at start, and again after a call found it unreachable, so
the server starts before ``memory up`` and serves once the store is up, without a restart.
A data dir another process holds when the MCP server starts (a second agent window on the
same ``--data-dir``), or that cannot be written, is held as a ``DataDirWhenFree``: each call
tries to open it and answers the ``source_unavailable`` saying why until it can, then
serves (the server used to exit, and the agent lost its memory tools for the session even
after the first window closed).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.contract.api import StoreAPI

DEFAULT_TIMEOUT_S = 30.0


def open_store_for(
    data_dir: str | None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    validate: bool = True,
    lock_wait_s: float = 0.0,
    one_shot: bool = False,
) -> StoreAPI:
    """The store an integration uses (see the module docstring); close it with ``close``.
    ``validate=False``: a gateway's answers come as ``shared.client.wire.View``s (a caller that
    only reads fields, such as a hook, loads no pydantic). ``lock_wait_s``: an embedded store
    whose data dir another process holds is tried again for that long (two hooks of one
    agent often overlap by a fraction of a second) before ``DataDirLockedError``.
    ``one_shot``: this single-threaded process runs one command and ends (a hook), so an
    embedded store may boot lazily (``shared.client``)."""
    if data_dir:
        return _embedded(data_dir, lock_wait_s, one_shot)
    return _running_store(timeout, validate)


def _embedded(data_dir: str, lock_wait_s: float, one_shot: bool) -> StoreAPI:
    import time

    from shared.client import connect
    from shared.contract.errors import DataDirLockedError

    deadline = time.monotonic() + lock_wait_s
    while True:
        try:
            return connect(f"file:{data_dir}", one_shot=one_shot)
        except DataDirLockedError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def _running_store(timeout: float, validate: bool) -> StoreAPI:
    # Imported here: the gateway's client, or Ray (about half a second to import) when no
    # gateway is recorded; an embedded caller needs neither.
    from shared.client import connect
    from shared.contract.errors import SourceUnavailableError

    try:
        return connect(timeout=timeout, validate=validate)
    except SourceUnavailableError as e:
        raise SourceUnavailableError(
            f"{e.message} (or pass --data-dir DIR to use a store in this process)", e.retryable
        ) from e


def close(store: StoreAPI | RunningStore) -> None:
    """Close an embedded store (its log files and its lock), a gateway client (its channel)
    or a ``RunningStore`` (the store it found); a client over Ray has nothing to close."""
    if isinstance(store, RunningStore):
        store.close()
        return
    store.close()


class RunningStore:
    """The running store for a process that outlives it (``open_store_for(None)``): ``get``
    opens it on first use and raises ``SourceUnavailableError`` while none runs; ``lost``
    drops a store a call could not reach (a stopped gateway, a store actor gone), so the next
    ``get`` looks for it again (``memory up`` may have recorded a new gateway)."""

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.timeout = timeout
        self._store: StoreAPI | None = None
        self._lock = threading.Lock()  # tool calls may run on worker threads

    def get(self) -> StoreAPI:
        with self._lock:
            if self._store is None:
                self._store = self._open()
            return self._store

    def _open(self) -> StoreAPI:
        return open_store_for(None, timeout=self.timeout)

    def lost(self) -> None:
        with self._lock:
            store, self._store = self._store, None
        if store is not None:
            close(store)

    def close(self) -> None:
        """Let go of the store found (the process ends)."""
        RunningStore.lost(self)


class DataDirWhenFree(RunningStore):
    """The embedded store on ``data_dir``, which another process held (or which could not be
    written) when this long-lived one started: ``get`` tries to open it (``DataDirLockedError``
    naming the holder, or ``DataDirUnwritableError``, until it can), and once open it is
    kept until ``close``; ``lost`` keeps it, since dropping
    its lock on a call's ``source_unavailable`` (a semantic recall with no embedding model)
    would let another process take the data dir in between."""

    def __init__(self, data_dir: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        super().__init__(timeout=timeout)
        self.data_dir = data_dir

    def _open(self) -> StoreAPI:
        return open_store_for(self.data_dir, timeout=self.timeout)

    def lost(self) -> None:
        return None
