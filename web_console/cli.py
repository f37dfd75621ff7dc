"""``memory console``: serve the console in the foreground, and the start-up both it and the
``memory-console`` actor share (``open_console``)."""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Mapping

from shared.contract.api import StoreAPI
from web_console.auth import Gate, new_token
from web_console.server import Server, port_free
from web_console.settings import ENV_PREFIX, ConsoleSettings


def gate_for(settings: ConsoleSettings, env: Mapping[str, str]) -> Gate:
    """The console's tokens: its own (set, else fresh), and the gateway's bearer token."""
    return Gate(settings.token or new_token(), env.get("MEMORY_GRPC_TOKEN"))


def open_console(
    store: StoreAPI, env: Mapping[str, str], *, dashboard_url: str | None = None
) -> tuple[Server, Gate]:
    """Build and start the console over ``store`` as ``MEMORY_CONSOLE_*`` in ``env`` say. A
    port left at its default that is taken becomes a free one; one asked for is never moved."""
    from web_console.app import build_app

    settings = ConsoleSettings.from_env(env)
    port = settings.port
    if not env.get(ENV_PREFIX + "PORT") and not port_free(settings.host, port):
        port = 0
    gate = gate_for(settings, env)
    app = build_app(
        store,
        gate,
        dashboard_url=dashboard_url or settings.dashboard_url,
        page_size=settings.page_size,
    )
    return Server(app, settings.host, port).start(), gate


def env_from_args(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, str]:
    out = dict(env)
    if getattr(args, "host", None):
        out[ENV_PREFIX + "HOST"] = str(args.host)
    if getattr(args, "port", None) is not None:
        out[ENV_PREFIX + "PORT"] = str(args.port)
    return out


def serve_from_args(args: argparse.Namespace, stop: threading.Event | None = None) -> int:
    from shared.client import connect, console_file

    env = env_from_args(args, os.environ)
    data_dir = getattr(args, "data_dir", None)
    dashboard: str | None = None
    store: StoreAPI
    if data_dir:
        store = connect(f"file:{data_dir}")
    else:
        from shared.client.ray import join_cluster
        from shared.client.sharded import ShardedStoreClient

        dashboard = join_cluster()["dashboard_url"] or None
        store = ShardedStoreClient.connect(follow=True)
    try:
        server, gate = open_console(store, env, dashboard_url=dashboard)
    except BaseException:
        store.close()
        raise
    if data_dir:
        console_file.write(data_dir, server.url, gate.token)
    print(f"memory console on {server.url}/login?token={gate.token} (Ctrl-C to stop)", flush=True)
    try:
        (stop or threading.Event()).wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        if data_dir:
            console_file.remove(data_dir, pid=os.getpid())
        store.close()
    return 0
