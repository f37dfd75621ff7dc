"""``connect(target)``: the one way any process reaches a store.

::

    connect("file:/srv/memory")        # in this process (embedded; takes the data dir's lock)
    connect("grpc://127.0.0.1:50051")  # the gateway's memory.store.v1, no Ray in this process
    connect("ray://")                  # the store actors of the local cluster (or RAY_ADDRESS)
    connect()                          # the running store: its gateway's record, else Ray

Each answers a ``StoreAPI`` (a transport: ``docs/ARCHITECTURE.md``); close it when done
(``with connect(...) as store:``): an embedded store lets go of its files and lock, a gRPC
client of its channel. Importing this module costs a command nothing: each transport is
imported when it is asked for.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from shared.contract.errors import DataDirLockedError, InvalidArgumentError

if TYPE_CHECKING:
    from shared.contract.api import StoreAPI

DEFAULT_TIMEOUT_S = 120.0
SCHEMES = ("file:", "grpc://", "ray://")


def connect(
    target: str | None = None,
    *,
    timeout: float | None = DEFAULT_TIMEOUT_S,
    validate: bool = True,
    follow: bool = False,
    one_shot: bool = False,
    token: str | None = None,
) -> StoreAPI:
    """The store at ``target`` (see the module docstring).

    ``validate=False``: a gRPC client answers ``store_wire.View``s instead of models (a caller
    that only reads fields skips loading pydantic). ``follow``: over Ray, a long-lived caller
    (a sibling, a gateway) follows store shards being added and removed. ``one_shot``: an
    embedded store for one command in one thread may boot lazily. ``token``: the gateway's
    bearer token (default: a scoped ``MEMORY_TOKEN``, else ``MEMORY_GRPC_TOKEN``; ``connect()``
    reads the one in the file its record names, else the variable)."""
    if target is None:
        return _running(timeout, validate=validate, follow=follow)
    if target.startswith("file:"):
        return open_store(target.removeprefix("file:"), one_shot=one_shot)
    if target.startswith("grpc://"):
        from shared.client.bearer import client_token
        from shared.client.grpc import GrpcStoreClient

        recorded = os.environ.get("MEMORY_GRPC_TOKEN") or None
        token = token if token is not None else client_token(os.environ, recorded)
        address = target.removeprefix("grpc://").rstrip("/")
        return GrpcStoreClient(address, token=token, timeout=timeout, validate=validate)
    if target.startswith("ray://"):
        return _over_ray(target.removeprefix("ray://") or None, timeout, follow=follow)
    raise InvalidArgumentError(
        f"cannot reach a store at {target!r}: say file:DIR, grpc://HOST:PORT or ray://"
    )


def _running(timeout: float | None, *, validate: bool, follow: bool) -> StoreAPI:
    """Through the gateway ``memory up`` recorded (no Ray in this process; found from any
    folder by ``shared.client.gateway_file.discover``), else over Ray."""
    from shared.client import gateway_file

    found = gateway_file.discover()  # MEMORY_DATA_DIR, ./data/memory, the user's pointer
    if found is not None:
        gateway = found[1]
        from shared.client.bearer import client_token
        from shared.client.grpc import GrpcStoreClient

        token = client_token(os.environ, gateway.token)  # MEMORY_TOKEN: a scoped principal
        return GrpcStoreClient(gateway.address, token=token, timeout=timeout, validate=validate)
    return _over_ray(None, timeout, follow=follow)


def _over_ray(address: str | None, timeout: float | None, *, follow: bool) -> StoreAPI:
    from shared.client.ray import join_cluster
    from shared.client.sharded import ShardedStoreClient

    join_cluster(address)
    return ShardedStoreClient.connect(timeout=timeout, follow=follow)  # one shard: StoreClient


def open_store(data_dir: str, *, one_shot: bool = False) -> StoreAPI:
    """The store on ``data_dir`` in this process (the embedded mode, no Ray), with the other
    ``MEMORY_*`` settings from the environment; opened through the store worker's entry point
    (``shared.client.workers.open_embedded_store``), so ``shared`` imports no worker. ``one_shot``:
    this single-threaded process runs one command (the CLI), so the store may boot lazily."""
    from shared.client.shards import shard_count
    from shared.client.workers import open_embedded_store
    from shared.contract.config import StoreSettings

    n = shard_count(os.environ.get("MEMORY_STORE_SHARDS") or 1)  # one store per shard dir
    settings = StoreSettings.from_env(dict(os.environ), data_dir=data_dir)
    try:
        if n == 1:  # the plain embedded store: no sharding client to import (~13 ms)
            return open_embedded_store(settings, one_shot=one_shot)
        from shared.client.sharded import open_embedded_shards

        return open_embedded_shards(settings, n, one_shot=one_shot)
    except DataDirLockedError as e:
        # the running store (or another --data-dir command) owns these files: writing beside
        # it would be lost to its RAM, so say what to do instead
        raise DataDirLockedError(
            f"{e.message}. Drop --data-dir (and MEMORY_EMBEDDED) to talk to the running store, "
            "or stop it first (`memory down`, or end that process)",
            e.retryable,
        ) from e
