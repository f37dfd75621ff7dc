"""``memory token show|rotate|path``: this user's admin token (``shared.client.admin_token``),
the one ``memory up``, ``memory grpc`` and ``memory mcp --transport http`` serve with when
given none. Clients that find the gateway through its record read it themselves; ``show``
is for a client configured by hand (an MCP client over HTTP, a kernel elsewhere).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from shared.contract.errors import NotFoundError


def add_cli(sub: argparse._SubParsersAction[Any]) -> None:
    # one `memory token` group: the CLI's scoped-token verbs (shared.cli.tokens) made it first
    # and keep its subcommands on it
    p = sub.choices.get("token")
    verbs = getattr(p, "token_verbs", None)
    if verbs is None:
        what = "This user's admin token: where it is kept, print it, or make a new one."
        p = sub.add_parser("token", help=what, description=what)
        verbs = p.add_subparsers(dest="token_verb", metavar="{show,path,rotate}", required=True)
    show = verbs.add_parser(
        "show", help="Print the admin token (refused if other users may read its file)."
    )
    show.set_defaults(handler=_show)
    where = verbs.add_parser("path", help="Print where the admin token is kept.")
    where.set_defaults(handler=_path)
    rotate = verbs.add_parser(
        "rotate",
        help="Make a new admin token; restart the servers (`memory down`, `memory up`) to use it.",
    )
    rotate.set_defaults(handler=_rotate)


def _show(args: argparse.Namespace) -> int:
    from shared.client import admin_token

    target = admin_token.path()
    if not target.exists():
        raise NotFoundError(f"no admin token yet at {target}: `memory up` makes one")
    admin_token.check_private(target)
    sys.stdout.write(admin_token.load(target) + "\n")
    return 0


def _path(args: argparse.Namespace) -> int:
    from shared.client import admin_token

    sys.stdout.write(f"{admin_token.path()}\n")
    return 0


def _rotate(args: argparse.Namespace) -> int:
    from shared.client import admin_token

    target = admin_token.rotate()
    sys.stdout.write(
        f"a new admin token is in {target}. A server running now keeps the old one until it is "
        "restarted (`memory down` then `memory up`; `memory mcp --transport http`); until "
        "then, clients that read this file are refused\n"
    )
    return 0
