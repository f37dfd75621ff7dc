"""``memory rule ...``: a bank's rules, and the review of proposed learned rules
(``shared.cli.review``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shared.cli import output as show
from shared.cli.review import add_review_verbs
from shared.contract.errors import InvalidArgumentError

if TYPE_CHECKING:
    from shared.cli import Ctx


def add_rule_verbs(
    sub: Any, common: argparse.ArgumentParser, add_verb: Callable[..., Any], bank_opt: Any
) -> None:
    """``memory rule list|show|set|rm`` and the review queue's verbs (``add_verb`` and
    ``bank_opt`` are ``shared.cli.store``'s, handed in: that module imports this one)."""
    group = sub.add_parser(
        "rule",
        help="List, show, set and remove rules; review proposed ones.",
        description="Rules.",
    )
    inner = group.add_subparsers(title="rule commands", metavar="COMMAND", required=True)
    p = add_verb(inner, "list", "List a bank's rules.", common, _rule_list, show.rules)
    bank_opt(p)
    p = add_verb(
        inner, "show", "Print one rule's content.", common, _rule_show, lambda r: r.content
    )
    p.add_argument("name", help="rule name")
    bank_opt(p)
    p = add_verb(
        inner,
        "set",
        "Create or replace a rule (--file, --content or stdin).",
        common,
        _rule_set,
        show.rule_set,
    )
    p.add_argument("name", help="rule name: [a-z0-9][a-z0-9_-]{0,63}")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--file", help="read the content from this markdown file")
    src.add_argument("--content", help="the content itself")
    bank_opt(p)
    p = add_verb(inner, "rm", "Remove a rule.", common, _rule_rm, show.rule_set)
    p.add_argument("name", help="rule name")
    bank_opt(p)
    add_review_verbs(inner, common, add_verb, bank_opt)


def _rule_list(ctx: Ctx) -> Any:
    return ctx.store.rule_list(bank=ctx.args.bank)


def _rule_show(ctx: Ctx) -> Any:
    return ctx.store.rule_get(ctx.args.name, bank=ctx.args.bank)


def _rule_set(ctx: Ctx) -> Any:
    a = ctx.args
    if a.file:
        try:
            content = Path(a.file).read_text("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise InvalidArgumentError(f"cannot read {a.file}: {e}") from e
    elif a.content is not None:
        content = a.content
    else:
        content = sys.stdin.read()
    if not content.strip():
        raise InvalidArgumentError("empty rule content; use `memory rule rm NAME` to remove")
    return ctx.store.rule_set(a.name, content, bank=a.bank)


def _rule_rm(ctx: Ctx) -> Any:
    ctx.store.rule_get(ctx.args.name, bank=ctx.args.bank)  # a typo is not_found, not a no-op
    return ctx.store.rule_set(ctx.args.name, "", bank=ctx.args.bank)
