"""The integrations' verbs: ``memory mcp`` and ``memory hook <event>`` / ``memory hook install
claude-code``, registered through the ``agent_memory.commands`` entry point (``COMMANDS``).

This module is imported on every ``memory`` run, so it imports neither the MCP SDK nor Ray:
each verb imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from shared.client.bearer import CLIENT_TOKEN_ENV
from shared.client.workers import CommandSpec
from shared.contract import errors

# How long `memory hook --data-dir D` waits for D's lock (another hook of the same agent).
HOOK_LOCK_WAIT_S = 5.0

TOKEN_ENVS = ("MEMORY_MCP_TOKEN", "MEMORY_GRPC_TOKEN")  # the gateway's token serves here too


def add_cli(sub: argparse._SubParsersAction[Any]) -> None:
    _add_mcp(sub)
    _add_hook(sub)


def _data_dir_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--data-dir",
        default=argparse.SUPPRESS,
        help="use this data dir in-process (takes its lock) instead of the running store",
    )


# -- memory mcp --------------------------------------------------------------------------------


def _add_mcp(sub: argparse._SubParsersAction[Any]) -> None:
    what = "Serve memory to agents over MCP (stdio, or streamable HTTP on loopback)."
    p = sub.add_parser("mcp", help=what, description=what)
    _data_dir_opt(p)
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP bind address (default loopback)")
    p.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    p.add_argument("--path", default="/mcp", help="HTTP endpoint path (default /mcp)")
    p.add_argument(
        "--token-file",
        help="HTTP: require `Authorization: Bearer <token>` with the token in this file "
        f"(or set {TOKEN_ENVS[0]} / {TOKEN_ENVS[1]}; default: your admin token, "
        "`memory token show`)",
    )
    p.add_argument(
        "--no-token",
        action="store_true",
        help="HTTP: serve with NO bearer token (announced at start): any process that reaches "
        "the port can read and change every memory; beyond loopback MEMORY_ALLOW_NO_TOKEN=1 "
        "is needed too",
    )
    p.add_argument(
        "--allow-rule-edits",
        action="store_true",
        help="offer the set_rule tool (off by default: rules are human-owned)",
    )
    _scoped_opt(p)
    p.set_defaults(handler=_mcp)


def _scoped_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--scoped-token-file",
        help=f"act as the principal of the scoped token in this file (`memory token create`; "
        f"or set {CLIENT_TOKEN_ENV}): only its banks, projects and sessions, read-only if it is",
    )


def scoped_token(args: argparse.Namespace, env: dict[str, str]) -> str | None:
    """The scoped token this process acts as: ``--scoped-token-file``, else ``MEMORY_TOKEN``.
    Over the running store the gateway applies it (``MEMORY_TOKEN`` is set for this process's
    client); on an embedded store the caller wraps the store with it."""
    path = getattr(args, "scoped_token_file", None)
    token = _token_in(path) if path else env.get(CLIENT_TOKEN_ENV) or None
    if token:
        os.environ[CLIENT_TOKEN_ENV] = token
    return token


def read_token(token_file: str | None, env: dict[str, str]) -> str | None:
    """The bearer token: from the file, else the environment; never a flag's value."""
    if token_file:
        return _token_in(token_file)
    return next((env[k] for k in TOKEN_ENVS if env.get(k)), None)


def _token_in(token_file: str) -> str:
    from shared.client import admin_token

    return admin_token.load(Path(token_file))


def _mcp(args: argparse.Namespace) -> int:
    from integrations import serve
    from integrations.store import RunningStore, close

    token = read_token(args.token_file, dict(os.environ))
    scoped = scoped_token(args, dict(os.environ))
    embedded_scope = scoped if args.data_dir else None  # else the gateway applies it
    if args.transport == "http":  # before the store is opened or a port bound
        token = _http_token(args, token)
    # the running store is looked for at the first tool call, not now: an agent often starts
    # its MCP servers before `memory up`, and a server that exits is gone for the session
    # (the client says only "Connection closed"); an embedded data dir is opened (and its
    # lock taken) now, so a held one is refused at once, naming its holder
    store = (
        _held(args.data_dir, args.timeout) if args.data_dir else RunningStore(timeout=args.timeout)
    )
    edits, project = args.allow_rule_edits, os.getcwd()  # the agent's folder, as the CLI's
    try:
        if args.transport == "stdio":
            serve.stdio(store, allow_rule_edits=edits, project=project, scoped=embedded_scope)
        else:
            serve.http(
                store,
                host=args.host,
                port=args.port,
                path=args.path,
                token=token,
                allow_rule_edits=edits,
                project=project,
                scoped=embedded_scope,
            )
    finally:
        close(store)
    return 0


def _http_token(args: argparse.Namespace, token: str | None) -> str | None:
    """The token ``memory mcp --transport http`` serves with: the one given, else this
    user's admin token (made at the first start); none only when opted into (announced on
    stderr). A port another server holds is refused here too, typed (``PortHeldError``)."""
    from shared.client import admin_token
    from shared.client.ports import PortHeldError, port_free

    auth = admin_token.resolve(
        "memory mcp",
        args.host,
        token=token,
        token_file=None,
        no_token=args.no_token,
        env=os.environ,
    )
    if args.port and not port_free(args.port, args.host):
        raise PortHeldError(args.host, args.port)
    if auth.token_file is not None:  # where, never what
        sys.stderr.write(
            f"memory mcp: requests need `Authorization: Bearer <token>`, the token in "
            f"{auth.token_file} (`memory token show` prints it)\n"
        )
    return auth.token


def _held(data_dir: str, timeout: float) -> Any:
    """The embedded store on ``data_dir``, opened (and its lock taken) now; if another process
    holds it (a second agent window) or it cannot be written (a read-only mount, a path
    through a file), a ``DataDirWhenFree`` that opens it once it can, so the server still
    starts and each call says why it cannot (the server used to exit, and the agent lost
    the memory tools for the session, the client saying only "Connection closed")."""
    from integrations.store import DataDirWhenFree, open_store_for

    try:
        return open_store_for(data_dir, timeout=timeout)
    except (errors.DataDirLockedError, errors.DataDirUnwritableError) as e:
        sys.stderr.write(
            f"memory mcp: {e.message}\nmemory mcp: serving anyway: each call answers "
            "source_unavailable until the data dir can be opened\n"
        )
        return DataDirWhenFree(data_dir, timeout=timeout)


# -- memory hook -------------------------------------------------------------------------------


def _add_hook(sub: argparse._SubParsersAction[Any]) -> None:
    what = (
        "Coding-agent hook: read the agent's hook JSON on stdin, answer in its format "
        "(SessionStart, UserPromptSubmit, Stop, SessionEnd); `install claude-code` prints "
        "the settings. Never fails the agent: errors go to the hook log, exit 0."
    )
    p = sub.add_parser("hook", help=what, description=what)
    _data_dir_opt(p)
    p.add_argument("event", help="SessionStart | UserPromptSubmit | Stop | SessionEnd | install")
    p.add_argument("target", nargs="?", help="with install: the agent (claude-code)")
    p.add_argument("--bank", help="the bank (default: MEMORY_HOOK_BANK, else the project's)")
    p.add_argument(
        "--write",
        action="store_true",
        help="install: merge the hooks into the settings file instead of printing them",
    )
    p.add_argument(
        "--settings",
        default=".claude/settings.json",
        help="install --write: the settings file (default .claude/settings.json)",
    )
    _scoped_opt(p)
    p.set_defaults(handler=_hook)
    p.error = _never_blocking(p.error)
    p.parse_known_args = _unknown_kept(p.parse_known_args)


def _unknown_kept(parse: Callable[..., Any]) -> Callable[..., Any]:
    """The hook parser's ``parse_known_args``: words it does not know are kept for ``_hook``
    to refuse (``hook_unknown``), not handed to the top-level parser, whose error exits 2."""

    def parse_known_args(args: Any = None, namespace: Any = None) -> tuple[Any, list[str]]:
        parsed, unknown = parse(args, namespace)
        parsed.hook_unknown = unknown
        return parsed, []

    return parse_known_args


def _never_blocking(usage_error: Callable[[str], NoReturn]) -> Callable[[str], NoReturn]:
    """The hook parser's ``error``: for an event (``memory hook UserPromptSubmit --bnak x``)
    the usage error is logged and the exit is 0, as for any other failure of a hook; argparse
    exited 2, which Claude Code takes as "block this prompt" (the prompt was erased, on every
    prompt, until the settings were fixed). ``install`` and a missing event stay usage
    errors."""

    def error(message: str) -> NoReturn:
        from integrations.hooks import EVENTS, log_failure

        event = next((word for word in sys.argv[1:] if word in EVENTS), None)
        if event is None:
            usage_error(message)
        sys.stderr.write(f"memory hook: {message}\n")
        log_failure(dict(os.environ), event, f"usage: {message}")
        sys.exit(0)

    return error


def _hook(args: argparse.Namespace) -> int:
    unknown = getattr(args, "hook_unknown", [])
    if unknown and args.event == "install":
        raise errors.InvalidArgumentError(f"unrecognized arguments: {' '.join(unknown)}")
    if args.event == "install":
        return _install(args)
    from integrations.hooks import HookOptions, run_hook
    from integrations.store import close, open_store_for

    scoped = scoped_token(args, dict(os.environ))  # over the running store: MEMORY_TOKEN

    def opened(data_dir: str | None, timeout: float) -> Any:
        # the hook reads the answers' fields only: views, no pydantic in a per-prompt process
        # an embedded data dir another hook holds is waited for, up to HOOK_LOCK_WAIT_S
        store = open_store_for(
            data_dir,
            timeout=timeout,
            validate=False,
            lock_wait_s=min(timeout, HOOK_LOCK_WAIT_S),
            one_shot=True,
        )
        if scoped and data_dir:  # in this process: the hook acts as the token's principal
            from shared.client.scoped import as_token

            return as_token(store, scoped)
        return store

    if unknown:  # never a usage error (exit 2 blocks the prompt): logged, as any failure
        from integrations.hooks import log_failure

        log_failure(dict(os.environ), args.event, f"unrecognized arguments: {' '.join(unknown)}")
        return 0
    opts = HookOptions(event=args.event, bank=args.bank, data_dir=args.data_dir)
    return run_hook(
        opts,
        stdin=sys.stdin,
        stdout=sys.stdout,
        env=dict(os.environ),
        open_store=opened,
        close_store=close,
    )


def _install(args: argparse.Namespace) -> int:
    from integrations.hooks import claude_code_settings, write_settings

    if args.target != "claude-code":
        raise errors.InvalidArgumentError("usage: memory hook install claude-code [--write]")
    prefix = _program() + (f" --data-dir {shlex.quote(args.data_dir)}" if args.data_dir else "")
    suffix = f" --bank {shlex.quote(args.bank)}" if args.bank else ""
    if args.scoped_token_file:  # the path, never the token, goes into the settings
        _token_in(args.scoped_token_file)  # refused now if it cannot be read
        suffix += f" --scoped-token-file {shlex.quote(os.path.abspath(args.scoped_token_file))}"
    if args.write:
        write_settings(Path(args.settings), prefix, suffix)
        sys.stdout.write(f"hooks merged into {args.settings}\n")
        return 0
    sys.stdout.write(json.dumps(claude_code_settings(prefix, suffix), indent=2) + "\n")
    return 0


def _program() -> str:
    """How the agent is to run this ``memory``: by name when its PATH finds this very program,
    else by absolute path. The README runs ``.venv/bin/memory`` without activating the venv,
    and an agent started elsewhere finds no ``memory`` on its PATH: every hook then failed with
    "command not found"."""
    me = Path(sys.argv[0])
    if me.name != "memory" or not me.is_file():  # not the console script (``python -c``)
        return "memory"
    found = shutil.which("memory")
    if found is not None and Path(found).resolve() == me.resolve():
        return "memory"
    return shlex.quote(str(me.resolve()))


COMMANDS = CommandSpec(name="integrations", add_cli=add_cli)
