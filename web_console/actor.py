"""``memory-console``: the console as a named detached Ray actor, started by ``memory up``.

Like the gateway it holds no data: it reaches the store through ``ShardedStoreClient`` (the
actor over Ray, following shards as they come and go) and serves its pages from a uvicorn
thread. It records its sign-in URL in ``<data dir>/.state/console.json`` (mode 0600), where
``memory up`` reads it to print; a restart by Ray rewrites it. Its repr, in the dashboard's
Actors view, says where it listens (never the token).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from shared.client import console_file
from shared.client.workers import sibling_options, start_detached
from web_console.cli import open_console
from web_console.spec import ACTOR_NAME

log = logging.getLogger(__name__)


class ConsoleActor:
    def __init__(self, env: dict[str, str] | None = None) -> None:
        from shared.client.ray import join_cluster
        from shared.client.sharded import ShardedStoreClient
        from web_console.settings import ConsoleSettings

        env = dict(env or {})
        # `memory up` passes the dashboard it printed: an actor's process cannot always ask
        dashboard = ConsoleSettings.from_env(env).dashboard_url or join_cluster()["dashboard_url"]
        self.store = ShardedStoreClient.connect(follow=True)
        self.server, self.gate = open_console(self.store, env, dashboard_url=dashboard or None)
        self.data_dir = env.get("MEMORY_DATA_DIR")
        if self.data_dir:
            console_file.write(self.data_dir, self.server.url, self.gate.token)
        log.info("memory-console serving on %s", self.server.url)

    def ping(self) -> str:
        return "pong"

    def url(self) -> str:
        return self.server.url

    def __repr__(self) -> str:
        if "data_dir" not in vars(self):
            return "ConsoleActor(starting)"
        return f"ConsoleActor({self.server.url}; {self.data_dir or 'the running store'})"

    def stop(self) -> None:
        self.server.stop()
        if self.data_dir:
            console_file.remove(self.data_dir, pid=os.getpid())


def start(settings_env: dict[str, str] | None = None, *, name: str = ACTOR_NAME) -> Any:
    """Start (or find) the named detached console and wait until it serves."""
    env = dict(settings_env or {})
    return start_detached(
        ConsoleActor,
        env,
        name=name,
        max_restarts=-1,
        release_on_error=True,
        # an I/O shell: never hold a CPU slot the store or siblings need
        **sibling_options(env, num_cpus=0, max_concurrency=4),
    )
