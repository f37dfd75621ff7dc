"""The console's entry point (``agent_memory.workers``: ``console``) and its CLI, importing
nothing heavy: the app, uvicorn and Ray load at the first call (``shared.client.workers.lazy``).

``memory up`` starts the console beside the default workers (``--no-console`` leaves it out):
it is not default-on as a worker, so a cluster bootstrapped without a person at it
(``deploy.bootstrap`` on KubeRay) never serves pages. ``memory down`` stops it with the rest.
"""

from __future__ import annotations

import argparse
from typing import Any

from shared.client.workers import UpSetting, WorkerSpec, lazy

# here, not in ``settings`` (pydantic): ``memory --help`` loads this spec and nothing heavy
ENV_PREFIX = "MEMORY_CONSOLE_"
DEFAULT_PORT = 8766

ACTOR_NAME = "memory-console"
HELP = "Serve the web console: see and curate memory in a browser (loopback only)."


def _port(value: str) -> int:
    port = int(value)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is out of range")
    return port


def add_cli(subparsers: argparse._SubParsersAction[Any]) -> None:
    """``memory console [--data-dir D] [--port N]``, and ``memory up``'s console flags."""
    p = subparsers.add_parser(
        "console",
        help=HELP,
        description=HELP + " Against the running store, or with --data-dir over an embedded "
        "store without Ray. Prints the URL to open (it holds the sign-in token). "
        "`memory up` starts the same console as the memory-console Ray actor.",
    )
    p.add_argument(
        "--data-dir",
        default=argparse.SUPPRESS,
        help="embedded mode: serve a store on this data dir in-process, without Ray",
    )
    p.add_argument("--host", default=None, help="loopback address to listen on (127.0.0.1)")
    p.add_argument("--port", type=_port, default=None, help=f"port (default {DEFAULT_PORT})")
    p.set_defaults(func=lazy("web_console.cli:serve_from_args"))
    up = subparsers.choices.get("up")
    if up is not None:
        up.set_defaults(also_start=["console"])
        up.add_argument(
            "--no-console",
            dest="also_start",
            action="store_const",
            const=[],
            help="do not start the web console (memory-console)",
        )
        up.add_argument(
            "--console-port",
            metavar="PORT",
            type=_port,
            action=UpSetting,
            env=ENV_PREFIX + "PORT",
            help=f"the web console's port (default {DEFAULT_PORT}, or a free one if taken)",
        )


WORKER = WorkerSpec(
    name="console",
    actor_name=ACTOR_NAME,
    start=lazy("web_console.actor:start"),
    default_on=False,  # `memory up` asks for it (add_cli); a bootstrap without a person does not
    order=40,
    add_cli=add_cli,
)
