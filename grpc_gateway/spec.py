"""The gateway's entry point (``agent_memory.workers``: ``grpc``) and its CLI flags, importing
nothing heavy: ``start`` and ``memory grpc``'s server are imported at their first call
(``shared.client.workers.lazy``), so ``memory --help`` loads no grpcio."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from shared.client.workers import UpSetting, WorkerSpec, lazy

ACTOR_NAME = "memory-grpc"
ENV_PREFIX = "MEMORY_GRPC_"
DEFAULT_PORT = 50051


def add_cli(subparsers: argparse._SubParsersAction[Any]) -> None:
    """``memory grpc`` (serve in the foreground) and ``memory up --grpc [--grpc-port N]``."""
    parser = subparsers.add_parser(
        "grpc",
        help="Serve the memory.v1 gRPC API in the foreground.",
        description=(
            "Serve the memory.v1 MemoryService (and the memory.remember/forget/search tools) "
            "over gRPC, forwarding to the running store — or, with --data-dir, to an embedded "
            "store without Ray. `memory up --grpc` starts the same gateway as a Ray actor."
        ),
    )
    _grpc_flags(parser, on_up=False)
    parser.add_argument(
        "--data-dir",
        default=argparse.SUPPRESS,
        help="embedded mode: serve a MemoryStore on this data dir in-process, without Ray",
    )
    parser.set_defaults(func=lazy("grpc_gateway.actor:serve_from_args"))
    from grpc_gateway import token_cli  # `memory token`: the admin token it serves with

    token_cli.add_cli(subparsers)
    up = subparsers.choices.get("up")
    if up is not None:
        up.add_argument(
            "--grpc",
            dest="also_start",
            action="append_const",
            const="grpc",
            help="start the gRPC gateway (memory-grpc, 127.0.0.1:50051); on by default, kept "
            "for compatibility",
        )
        _grpc_flags(up, on_up=True)


def _grpc_flags(parser: argparse.ArgumentParser, *, on_up: bool) -> None:
    """``--grpc-host/--grpc-port/--grpc-token-file/--grpc-bank`` and ``--no-token``; on ``up``
    they become ``MEMORY_GRPC_*`` settings for the actor and imply ``--grpc``.

    The token is read from ``MEMORY_GRPC_TOKEN`` or a file, never from a flag's value: a
    command line shows in ``ps`` to every user of the machine. With neither, the gateway uses
    this user's admin token (``shared.client.admin_token``, made at the first start)."""
    flags = (
        ("host", "HOST", str, "interface to listen on (default 127.0.0.1)"),
        ("port", "PORT", int, f"port to listen on (default {DEFAULT_PORT})"),
        (
            "token-file",
            "TOKEN_FILE",
            token_file_path,
            "require the bearer token in this file on every call (or set MEMORY_GRPC_TOKEN; "
            "default: your admin token, kept in $XDG_STATE_HOME/agent-memory/token)",
        ),
        ("bank", "BANK", str, "bank to serve (default: the store's default bank)"),
    )
    for field, env, kind, text in flags:
        dest = f"grpc_{env.lower()}"
        metavar = "PATH" if field == "token-file" else env
        if not on_up:
            parser.add_argument(
                f"--grpc-{field}", dest=dest, metavar=metavar, type=kind, default=None, help=text
            )
        else:
            parser.add_argument(
                f"--grpc-{field}",
                dest=dest,
                metavar=metavar,
                type=kind,
                action=UpSetting,
                env=ENV_PREFIX + env,
                implies="grpc",
                help=text + "; implies --grpc",
            )
    no_token = (
        "serve with NO bearer token (announced at every start): any process that reaches the "
        "port can read and change every memory; beyond loopback MEMORY_ALLOW_NO_TOKEN=1 is "
        "needed too"
    )
    if not on_up:
        parser.add_argument("--no-token", dest="grpc_no_token", action="store_true", help=no_token)
    else:
        parser.add_argument(
            "--no-token",
            dest="grpc_no_token",
            nargs=0,
            action=UpSetting,
            env=ENV_PREFIX + "NO_TOKEN",
            check=lambda _: "1",
            help="the gateway: " + no_token,
        )
    parser.add_argument("--grpc-token", nargs="?", action=_RemovedTokenFlag, help=argparse.SUPPRESS)


def read_token_file(path: str) -> str:
    """The bearer token in ``path`` (one line; surrounding whitespace dropped)."""
    from shared.client import admin_token
    from shared.contract.errors import InvalidArgumentError

    try:
        return admin_token.load(Path(path))
    except InvalidArgumentError as e:
        raise argparse.ArgumentTypeError(e.message) from e


def token_file_path(path: str) -> str:
    """``path`` made absolute, once it is known to hold a token (``read_token_file``): the
    gateway reads the token there, and its record names the file, never the token."""
    read_token_file(path)
    return str(Path(path).expanduser().resolve())


class _RemovedTokenFlag(argparse.Action):
    """``--grpc-token T`` is refused with what to use instead (exit 2, argparse's usage)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any, **__: Any) -> None:
        parser.error(
            "--grpc-token was removed: a token on the command line shows in `ps` to every "
            f"user; set {ENV_PREFIX}TOKEN or pass --grpc-token-file PATH"
        )


WORKER = WorkerSpec(
    name="grpc",
    actor_name=ACTOR_NAME,
    start=lazy("grpc_gateway.actor:start"),
    default_on=True,  # the CLI reaches the store through it without loading Ray
    order=30,
    add_cli=add_cli,
    before_up=lazy("grpc_gateway.actor:before_up"),  # a taken --grpc-port, the token
)
