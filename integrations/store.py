"""Which store an integration talks to: the one function every integration calls.

- ``data_dir`` given (``--data-dir D``, or ``MEMORY_EMBEDDED=1`` with ``MEMORY_DATA_DIR``): the
  embedded store on D in this process (``shared.cli_store.open_store``). It takes the data dir's
  lock, so a second process on D gets ``DataDirLockedError`` naming the first (pid, host, since).
- otherwise: the running store, as the CLI reaches it (``shared.cli_store.running_store``):
  through the gateway ``memory up`` recorded (``GrpcStoreClient``, no Ray in this process),
  else the ``memory-store`` actor over Ray. Many ``memory mcp`` processes and every hook call
  share that one store, so no write is lost to another process's RAM (issue 15: several MCP
  servers on one memory file lose writes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from shared.api import StoreAPI

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
    ``validate=False``: a gateway's answers come as ``shared.store_wire.View``s (a caller that
    only reads fields, such as a hook, loads no pydantic). ``lock_wait_s``: an embedded store
    whose data dir another process holds is tried again for that long (two hooks of one
    agent often overlap by a fraction of a second) before ``DataDirLockedError``.
    ``one_shot``: this single-threaded process runs one command and ends (a hook), so an
    embedded store may boot lazily (``shared.cli_store.open_store``)."""
    if data_dir:
        return _embedded(data_dir, lock_wait_s, one_shot)
    return _running_store(timeout, validate)


def _embedded(data_dir: str, lock_wait_s: float, one_shot: bool) -> StoreAPI:
    import time

    from shared.cli_store import open_store
    from shared.errors import DataDirLockedError

    deadline = time.monotonic() + lock_wait_s
    while True:
        try:
            return open_store(data_dir, one_shot=one_shot)
        except DataDirLockedError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def _running_store(timeout: float, validate: bool) -> StoreAPI:
    # Imported here: the gateway's client, or Ray (~0.5 s to import, FACTS "Process start-up")
    # when no gateway is recorded; an embedded caller needs neither.
    from shared.cli_store import running_store
    from shared.errors import SourceUnavailableError

    try:
        return running_store(timeout, validate=validate)
    except SourceUnavailableError as e:
        raise SourceUnavailableError(
            f"{e.message} (or pass --data-dir DIR to use a store in this process)", e.retryable
        ) from e


def close(store: StoreAPI) -> None:
    """Close an embedded store (its log files and its lock); a client has nothing to close."""
    from shared.cli_store import close_store

    close_store(store)
