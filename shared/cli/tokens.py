"""``memory token create|list|revoke``: scoped tokens for agents and tools (README "Trust
model"; ``shared.contract.principal``).

A token is made by the store (an admin operation, so it works through the gateway with the
admin token and on an embedded ``--data-dir`` store alike), printed once, and kept only as its
hash. A client uses one through ``MEMORY_TOKEN`` (or ``--token-file`` where a verb takes it).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.cli import Ctx


VERBS_ATTR = "token_verbs"
"""The ``memory token`` group's subcommands action, kept on its parser: the gateway's admin-token
verbs (``show``, ``path``, ``rotate``: ``grpc_gateway.token_cli``) join the same group."""


def token_group(sub: Any) -> Any:
    """The ``memory token`` group's subcommands (made on first use, shared after)."""
    group = sub.choices.get("token")
    if group is None:
        group = sub.add_parser(
            "token",
            help="The admin token, and scoped tokens for agents and tools.",
            description="The admin token (show, path, rotate) and scoped tokens (create, list, "
            "revoke): each scoped token names a principal limited to some banks and projects, "
            "read-only or read-write. Give one to an agent with MEMORY_TOKEN.",
        )
        setattr(
            group,
            VERBS_ATTR,
            group.add_subparsers(
                dest="token_verb", title="token commands", metavar="COMMAND", required=True
            ),
        )
    return getattr(group, VERBS_ATTR)


def add_token_verbs(sub: Any, common: argparse.ArgumentParser) -> None:
    from shared.cli.store import add_verb

    inner = token_group(sub)
    p = add_verb(
        inner,
        "create",
        "Create a scoped token and print it once (it is kept only as its hash).",
        common,
        _create,
        _created,
    )
    p.add_argument("--name", help="the principal's name (default: agent-<n>)")
    p.add_argument(
        "--bank", action="append", dest="banks", help="a bank it may use (repeatable; default all)"
    )
    p.add_argument(
        "--project",
        action="append",
        dest="projects",
        help="an absolute project folder it may use, with every folder under it (repeatable; "
        "default: all; a relative one is taken in the current folder)",
    )
    p.add_argument("--read-only", action="store_true", help="it may read, never write")
    add_verb(inner, "list", "List the scoped tokens' principals.", common, _list, _listed)
    p = add_verb(inner, "revoke", "Revoke a token by name.", common, _revoke, _revoked)
    p.add_argument("name", help="the token's name")


def _create(ctx: Ctx) -> Any:
    a = ctx.args
    name = a.name or f"agent-{len(ctx.store.token_list()) + 1}"
    projects = None if a.projects is None else [os.path.abspath(p) for p in a.projects]
    return ctx.store.token_create(name, banks=a.banks, projects=projects, read_only=a.read_only)


def _created(r: Any) -> str:
    from shared.contract.principal import Principal

    who = Principal.from_dict(r["principal"])
    return (
        f"{r['token']}\n"
        f"token for {who.describe()}: shown once, keep it (MEMORY_TOKEN=... for the agent)"
    )


def _list(ctx: Ctx) -> Any:
    return ctx.store.token_list()


def _listed(rows: Any) -> str:
    if not rows:
        return "(no scoped tokens)"
    from shared.contract.principal import Principal

    lines = []
    for row in rows:
        line = Principal.from_dict(row).describe()
        lines.append(line + ("  revoked" if row.get("revoked") else ""))
    return "\n".join(lines)


def _revoke(ctx: Ctx) -> Any:
    return ctx.store.token_revoke(ctx.args.name)


def _revoked(r: Any) -> str:
    return f"revoked {r['name']}"
