"""``memory console``: serve the console in the foreground, and the start-up both it and the
``memory-console`` actor share (``open_console``)."""

from __future__ import annotations

import argparse
import os
import threading
from collections.abc import Mapping

from shared.client import admin_token
from shared.contract.api import StoreAPI
from web_console.auth import Gate
from web_console.server import Server, port_free
from web_console.settings import ENV_PREFIX, ConsoleSettings

GRPC = "MEMORY_GRPC_"  # the gateway's settings `memory up` passes every worker


def auth_for(settings: ConsoleSettings, env: Mapping[str, str]) -> admin_token.Auth:
    """The console's admin token, as the gateway's is chosen (``admin_token.resolve``): the
    one given (``MEMORY_CONSOLE_TOKEN``, else the gateway's ``MEMORY_GRPC_TOKEN`` or
    ``MEMORY_GRPC_TOKEN_FILE``), else this user's admin token; none only when opted into
    (``--no-token``, ``MEMORY_CONSOLE_NO_TOKEN=1`` or the gateway's, ``MEMORY_ALLOW_NO_TOKEN=1``),
    announced on stderr at start."""
    return admin_token.resolve(
        "the web console",
        settings.host,
        token=settings.token or env.get(GRPC + "TOKEN"),
        token_file=env.get(GRPC + "TOKEN_FILE"),
        no_token=settings.no_token or env.get(GRPC + "NO_TOKEN") == "1",
        env=env,
    )


def open_console(
    store: StoreAPI, env: Mapping[str, str], *, dashboard_url: str | None = None
) -> tuple[Server, Gate, admin_token.Auth]:
    """Build and start the console over ``store`` as ``MEMORY_CONSOLE_*`` in ``env`` say. A
    port left at its default that is taken becomes a free one; one asked for is never moved."""
    from web_console.app import build_app

    settings = ConsoleSettings.from_env(env)
    port = settings.port
    if not env.get(ENV_PREFIX + "PORT") and not port_free(settings.host, port):
        port = 0
    auth = auth_for(settings, env)
    gate = Gate(auth.token, store=store, open=auth.token is None)
    app = build_app(
        store,
        gate,
        dashboard_url=dashboard_url or settings.dashboard_url,
        page_size=settings.page_size,
    )
    return Server(app, settings.host, port).start(), gate, auth


def env_from_args(args: argparse.Namespace, env: Mapping[str, str]) -> dict[str, str]:
    out = dict(env)
    if getattr(args, "host", None):
        out[ENV_PREFIX + "HOST"] = str(args.host)
    if getattr(args, "port", None) is not None:
        out[ENV_PREFIX + "PORT"] = str(args.port)
    if getattr(args, "no_token", False):
        out[ENV_PREFIX + "NO_TOKEN"] = "1"
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
        server, gate, auth = open_console(store, env, dashboard_url=dashboard)
    except BaseException:
        store.close()
        raise
    if data_dir:
        console_file.write(data_dir, server.url, auth.token_file, no_token=gate.open)
    # the sign-in URL carries the console's sign-in key, never the admin token
    login = console_file.ConsoleInfo(server.url, gate.admin, os.getpid()).login_url
    print(f"memory console on {login} (Ctrl-C to stop)", flush=True)
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
