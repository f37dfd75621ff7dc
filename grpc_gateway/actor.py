"""``memory-grpc``: the gateway as a named detached Ray actor.

It holds no data and forwards every RPC to the ``memory-store`` actor through
``shared.client.ray.StoreClient``, so it can be stopped (``memory stop grpc``), restarted or run in
several copies on other ports without touching stored memory. ``memory up`` starts it by
default (the CLI reaches the store through it, without Ray) and it records where it
listens in ``<data_dir>/.state/gateway.json`` (``shared.client.gateway_file``; mode 0600, with the
token); ``memory grpc`` serves it in the foreground instead — against the running store, or
with ``--data-dir`` over an embedded store without Ray.

It serves memory.v1, memory.store.v1 (the rest of ``StoreAPI``), grpc.health.v1 and server
reflection (``grpc_gateway.server.build_server``). When ``up`` leaves the port at its default
and 50051 is taken on this machine, the gateway takes a free port instead (the file says which).
A port asked for (``--grpc-port``) that another server holds is refused at start, naming the
gateway that holds it when its record is found (``PortHeldError``): the gateway binds without
``SO_REUSEPORT``, so two gateways never share a port (and split its connections).

Settings come from ``MEMORY_GRPC_*`` variables (``GatewaySettings.from_env``): host (default
127.0.0.1 — loopback only unless asked), port (50051), token (the bearer token: from the
environment or ``--grpc-token-file``, never a flag's value; with neither, this user's admin
token, ``shared.client.admin_token``; none only when opted into, ``--no-token``), bank.
The record names the token's file, never the token.
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
from typing import Any, ClassVar

from pydantic import Field

from grpc_gateway.server import PortHeldError, build_server
from grpc_gateway.spec import ACTOR_NAME, DEFAULT_PORT, ENV_PREFIX
from grpc_gateway.store_service import GatewayCall
from shared.client import admin_token, gateway_file, lifecycle
from shared.client.ports import port_free
from shared.client.workers import NAMESPACE, sibling_options, start_detached
from shared.contract.api import StoreAPI
from shared.contract.config import EnvSettings

log = logging.getLogger(__name__)


class GatewaySettings(EnvSettings):
    """Where and how the gateway listens; every field can be set with ``MEMORY_GRPC_<FIELD>``."""

    env_prefix: ClassVar[str] = ENV_PREFIX
    error_label: ClassVar[str] = "gRPC setting"
    error_root: ClassVar[str] = "grpc"

    host: str = Field("127.0.0.1", description="Interface to listen on (loopback by default).")
    port: int = Field(DEFAULT_PORT, ge=0, le=65535, description="TCP port; 0 picks a free one.")
    token: str | None = Field(None, description="Bearer token every call must carry.")
    token_file: str | None = Field(None, description="File holding the bearer token.")
    no_token: bool = Field(False, description="Serve with no token at all (opted into).")
    bank: str | None = Field(None, description="Bank served; default the store's default bank.")
    max_workers: int = Field(8, ge=1, le=256, description="Concurrent calls served.")


def authenticate(
    settings: GatewaySettings, env: dict[str, str], warn: Any = None
) -> GatewaySettings:
    """``settings`` with the token the gateway serves with (``admin_token.resolve``): the one
    given, else this user's admin token; none only when opted into (announced through
    ``warn``), and beyond loopback only with ``MEMORY_ALLOW_NO_TOKEN=1``. Refused, typed,
    before anything binds."""
    auth = admin_token.resolve(
        "the gRPC gateway",
        settings.host,
        token=settings.token,
        token_file=settings.token_file,
        no_token=settings.no_token,
        env=env,
        warn=warn,
    )
    token_file = str(auth.token_file) if auth.token_file else None
    return settings.model_copy(update={"token": auth.token, "token_file": token_file})


def record(data_dir: str, address: str, settings: GatewaySettings) -> None:
    """Where the CLI finds this gateway, and the file its token is in (never the token)."""
    gateway_file.write(data_dir, address, settings.token_file, no_token=not settings.token)


def store_client() -> StoreAPI:
    """The ``memory-store`` actor as a ``StoreAPI`` (the gateway's production store)."""
    from shared.client.sharded import ShardedStoreClient

    # implements StoreAPI (the views call public store methods only); routes over the shards
    return ShardedStoreClient.connect(follow=True)  # follows shards added or removed


def cluster_calls() -> dict[str, GatewayCall]:
    """What the gateway answers of the cluster itself (it runs in it, with Ray): ``memory
    status`` and ``memory metrics`` through it never import Ray in the CLI's process."""
    return {
        lifecycle.STATUS_CALL: lambda args: lifecycle.cluster_report(
            {str(k): str(v) for k, v in dict(args.get("workers") or {}).items()}
        ),
        lifecycle.METRICS_CALL: lambda args: {"text": lifecycle.metrics_text()},
    }


def server_for(
    settings: GatewaySettings,
    store: StoreAPI,
    *,
    serialize: bool,
    gateway_calls: dict[str, GatewayCall] | None = None,
) -> tuple[Any, int]:
    """``build_server`` as ``settings`` say: a server to ``.start()``, and its bound port."""
    return build_server(
        store,
        host=settings.host,
        port=settings.port,
        token=settings.token,
        bank=settings.bank,
        serialize=serialize,
        max_workers=settings.max_workers,
        gateway_calls=gateway_calls,
    )


class GatewayActor:
    """The Ray shell: starts the gRPC server in ``__init__``; Ray restarts re-bind the port."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.settings = authenticate(
            GatewaySettings.from_env(dict(env or {})), dict(env or {}), log.warning
        )
        # serialize=False: the store actor serializes its own calls
        self.server, self.port = server_for(
            self.settings, store_client(), serialize=False, gateway_calls=cluster_calls()
        )
        self.server.start()
        self.data_dir = (env or {}).get("MEMORY_DATA_DIR")
        if self.data_dir:  # where the CLI finds it (a restart on a new port rewrites it)
            record(self.data_dir, self.address(), self.settings)
        log.info("memory-grpc serving memory.v1 and memory.store.v1 on %s", self.address())

    def ping(self) -> str:
        return "pong"

    def __repr__(self) -> str:
        """What Ray shows in the dashboard's Actors page (Repr) and log prefixes (it was
        empty: the other actors say what they serve, the gateway did not say where)."""
        if "data_dir" not in vars(self):
            return "GatewayActor(starting)"
        auth = "bearer token" if self.settings.token else "no token"
        return f"GatewayActor({self.address()}, {auth}; {self.data_dir or 'the running store'})"

    def address(self) -> str:
        """Where a local client dials it (``host:port``; any-interface as loopback)."""
        return gateway_file.dial_address(self.settings.host, self.port)

    def stop(self, grace_s: float = 1.0) -> None:
        self.server.stop(grace_s).wait()
        if self.data_dir:
            gateway_file.remove(self.data_dir, pid=os.getpid())


def start(settings_env: dict[str, str] | None = None, *, name: str = ACTOR_NAME) -> Any:
    """Start (or find) the named detached gateway and wait until it serves.

    With the port left at its default and that port taken, a free port is used instead (a
    shared machine may run another gateway); a port asked for explicitly is never moved."""
    env = dict(settings_env or {})
    running = _running(name)
    if not running:  # the token file made here, in this user's state folder, read there
        # (serving open is announced by `up` on stderr and by the actor in its log, not twice)
        env.update(token_env(authenticate(GatewaySettings.from_env(env), env, log.debug)))
    if (
        not env.get(ENV_PREFIX + "PORT")
        and not running
        and not port_free(DEFAULT_PORT, env.get(ENV_PREFIX + "HOST") or "127.0.0.1")
    ):
        env[ENV_PREFIX + "PORT"] = "0"
    elif not running:  # asked for explicitly: never moved, refused if taken
        refuse_held_port(GatewaySettings.from_env(env), env.get("MEMORY_DATA_DIR"))
    # The ping inside surfaces a failed __init__ (a port in use).
    return start_detached(
        GatewayActor,
        env,
        name=name,
        max_restarts=-1,
        # an I/O shell: never hold a CPU slot the store or siblings need
        **sibling_options(env, num_cpus=0),
    )


def token_env(settings: GatewaySettings) -> dict[str, str]:
    """The setting that hands an authenticated gateway's token file to the actor (a path,
    never the token: it is not in the actor's arguments, nor on any command line)."""
    if settings.token_file:
        return {ENV_PREFIX + "TOKEN_FILE": settings.token_file}
    return {}


def _token_said(settings: GatewaySettings) -> str:
    """Where a client finds the token (never the token)."""
    if not settings.token:
        return "NONE (opted into): anyone who reaches the port has every memory"
    if settings.token_file:
        return f"in {settings.token_file} (`memory token show` prints the admin token)"
    return "the MEMORY_GRPC_TOKEN this process was started with"


def before_up(env: dict[str, str]) -> dict[str, str]:
    """What ``memory up`` checks before it starts or joins a cluster: a ``--grpc-port`` that
    another server holds is refused (``PortHeldError``, naming the gateway holding it when
    known; this data dir's own gateway may hold it: ``up`` then keeps it); the token is
    found, or made, and an opted-into open gateway announced on stderr. Returns the
    settings to start the gateway with."""
    settings = GatewaySettings.from_env(env)
    data_dir = env.get("MEMORY_DATA_DIR")
    asked = bool(env.get(ENV_PREFIX + "PORT"))  # the default port, taken, is moved (``start``)
    if asked and settings.port and not port_free(settings.port, settings.host):
        ours = gateway_file.read(data_dir) if data_dir else None
        if ours is None or ours.address.rsplit(":", 1)[-1] != str(settings.port):
            holder = port_holder(settings.port, data_dir)
            raise PortHeldError(settings.host, settings.port, holder)
    return token_env(authenticate(settings, env))


def _running(name: str) -> bool:
    import ray

    try:
        ray.get_actor(name, namespace=NAMESPACE)
    except ValueError:
        return False
    return True


def refuse_held_port(settings: GatewaySettings, *data_dirs: str | None) -> None:
    """A port asked for that another server holds is refused before anything starts
    (``PortHeldError``), naming the gateway that holds it when a record says so."""
    if settings.port and not port_free(settings.port, settings.host):
        raise PortHeldError(settings.host, settings.port, port_holder(settings.port, *data_dirs))


def port_holder(port: int, *data_dirs: str | None) -> str | None:
    """Which gateway holds ``port``, as its record (``gateway.json``) says: the data dirs given,
    ``MEMORY_DATA_DIR`` / ``./data/memory``, and the one this user's pointer names."""
    candidates = [d for d in data_dirs if d] + [gateway_file.default_data_dir()]
    candidates += [found] if (found := gateway_file.pointed()) is not None else []
    for data_dir in candidates:
        info = gateway_file.read(data_dir)
        if info is not None and info.address.rsplit(":", 1)[-1] == str(port):
            return f"the gateway of data dir {data_dir} (pid {info.pid})"
    return None


# -- CLI -----------------------------------------------------------------------------------


def env_from_args(args: argparse.Namespace, env: dict[str, str]) -> dict[str, str]:
    """``--grpc-*`` flags and ``--no-token`` as ``MEMORY_GRPC_*`` variables (how ``memory
    up`` passes them on)."""
    out = dict(env)
    for field in ("host", "port", "token", "token_file", "bank"):
        value = getattr(args, f"grpc_{field}", None)
        if value is not None:
            out[f"{ENV_PREFIX}{field.upper()}"] = str(value)
    if getattr(args, "grpc_no_token", False):
        out[ENV_PREFIX + "NO_TOKEN"] = "1"
    return out


def serve_from_args(args: argparse.Namespace, stop: threading.Event | None = None) -> int:
    env = env_from_args(args, dict(os.environ))
    settings = authenticate(GatewaySettings.from_env(env), env)
    refuse_held_port(settings, getattr(args, "data_dir", None))
    store: StoreAPI
    if getattr(args, "data_dir", None):
        from shared.client import connect

        store = connect(f"file:{args.data_dir}")
        serialize = True
    else:
        from shared.client.ray import join_cluster

        join_cluster()
        store, serialize = store_client(), False
    server, port = server_for(settings, store, serialize=serialize)
    server.start()
    served = getattr(args, "data_dir", None)
    if served:  # the CLI on this data dir finds it, as it finds `memory up`'s gateway
        record(served, gateway_file.dial_address(settings.host, port), settings)
    print(f"memory.v1 gRPC on {settings.host}:{port} (Ctrl-C to stop)", flush=True)
    print(f"bearer token: {_token_said(settings)}", flush=True)
    try:
        if stop is not None:
            stop.wait()
        else:
            server.wait_for_termination()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop(1.0).wait()
        if served:
            gateway_file.remove(served, pid=os.getpid())
    return 0
