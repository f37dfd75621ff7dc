"""The ``memory`` verbs that call the store: memories, banks, rules and operations.

``shared.cli`` builds the parser and runs a verb: each ``add_*_verbs(sub, common)`` here adds
verbs whose ``fn(ctx)`` calls ``ctx.store`` (a ``StoreAPI``: the actor's client, or the
embedded store) and returns the response model, which ``shared.cli`` prints (``render``, or
JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from shared import format as fmt
from shared.cli import output as show
from shared.cli.repeated import gathered
from shared.cli.rules import add_rule_verbs
from shared.cli.transfer import add_transfer_verbs
from shared.contract.errors import InvalidArgumentError

if TYPE_CHECKING:
    from shared.cli import Ctx
    from shared.contract.models import RecallResponse, SaveResponse

STORE_VERBS = frozenset(
    {
        "bank",
        "capabilities",
        "configure",
        "delete",
        "describe",
        "doctor",
        "export",
        "get",
        "history",
        "import",
        "list",
        "pin",
        "preview",
        "purge",
        "recall",
        "redact",
        "reload",
        "rule",
        "save",
        "supersede",
        "tags",
        "unpin",
        "update",
        "watch",
    }
)
"""The top-level verbs ``add_store_verbs`` adds (``tests/shared/test_cli.py`` keeps it so):
``shared.cli`` runs them without loading any worker package."""

Verb = Callable[["Ctx"], Any]
Render = Callable[[Any], str]


def add_verb(
    sub: Any,
    name: str,
    help: str,
    common: argparse.ArgumentParser,
    fn: Verb,
    render: Render | None = None,
) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, help=help, description=help, parents=[common])
    p.set_defaults(verb=fn, render=render)
    return p


def bank_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bank", help="bank to use (default: the configured default bank, main)")


def add_store_verbs(sub: Any, common: argparse.ArgumentParser) -> None:
    """Every store verb, in the order ``memory --help`` lists them."""
    add_memory_verbs(sub, common)
    add_transfer_verbs(sub, common)
    add_secret_verbs(sub, common)
    add_bank_verbs(sub, common)
    add_rule_verbs(sub, common, add_verb, bank_opt)
    add_ops_verbs(sub, common)


# -- memory verbs ------------------------------------------------------------------------------


def add_memory_verbs(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_verb(
        sub,
        "save",
        "Save a memory (the same text again reinforces it).",
        common,
        _save,
        show.saved,
    )
    p.add_argument("text", help='the memory text ("-" reads stdin)')
    p.add_argument("--title", help="short title")
    p.add_argument("--id", help="suggested id (slug); a collision gets a numeric suffix")
    p.add_argument("--type", default="user", help="user | feedback | project | reference")
    p.add_argument("--scope", default="global", help="global | project | session")
    p.add_argument("--project", help="project folder for --scope project (default: cwd)")
    p.add_argument("--session-id", help="session id for --scope session")
    p.add_argument("--tag", action="append", dest="tags", help="a tag (repeatable)")
    p.add_argument("--entity", action="append", dest="entities", help="an entity (repeatable)")
    p.add_argument("--pin", action="store_true", help="pin it: never touched automatically")
    p.add_argument("--confidence", default="stated", help="stated | extracted | inferred")
    p.add_argument("--occurred-at", help="when it happened: ISO date or date-time (UTC if no zone)")
    bank_opt(p)
    gathered(p, "--tag", "--entity")  # 10,000 of them: argparse alone took seconds

    p = add_verb(
        sub,
        "recall",
        "Recall the memories that best match a query.",
        common,
        _recall,
        show.recall,
    )
    p.add_argument("query", help="what to look for")
    p.add_argument("--limit", type=int, help="how many memories (default 10)")
    p.add_argument("--mode", default="hybrid", help="hybrid | lexical | semantic")
    p.add_argument("--tag", help="only memories with this tag")
    p.add_argument("--budget", type=int, help="token budget of the answer")
    p.add_argument("--type", action="append", dest="types", help="only this type (repeatable)")
    p.add_argument("--scope", action="append", dest="scopes", help="only this scope (repeatable)")
    p.add_argument(
        "--project",
        help="the project folder whose project-scoped memories are visible (default: cwd, "
        "as `save --scope project` and the hooks use)",
    )
    p.add_argument("--session-id", help="the session whose session memories are visible")
    p.add_argument("--include-superseded", action="store_true", help="history view: retired too")
    p.add_argument(
        "--min-relevance",
        type=float,
        help="only memories whose calibrated relevance (0-1) is at least this",
    )
    p.add_argument(
        "--explain", action="store_true", help="say what matched: terms, entities, recency, pin"
    )
    bank_opt(p)

    p = add_verb(
        sub,
        "preview",
        "Show what a turn on this message would be given: rules section, recalled block (each "
        "memory's relevance and what matched) and the tokens it spends.",
        common,
        _preview,
        show.preview,
    )
    p.add_argument("query", help="the hypothetical chat message")
    bank_opt(p)

    p = add_verb(sub, "get", "Show one memory by id.", common, _get, show.memory)
    p.add_argument("id", help="memory id")
    bank_opt(p)

    p = add_verb(
        sub,
        "history",
        "Show every stored revision of a memory, oldest first, and what it superseded or "
        "was superseded by.",
        common,
        lambda ctx: ctx.store.history(ctx.args.id, bank=ctx.args.bank),
        show.history,
    )
    p.add_argument("id", help="memory id")
    bank_opt(p)

    p = add_verb(
        sub, "list", "List memories, newest first, in pages.", common, _list, show.memories
    )
    p.add_argument("--tag", help="only this tag")
    p.add_argument("--type", help="only this type")
    p.add_argument("--scope", help="only this scope")
    p.add_argument("--status", help="canonical | pending")
    p.add_argument("--include-superseded", action="store_true", help="include retired memories")
    p.add_argument("--page-size", type=int, help="memories per page (1-500, default 50)")
    p.add_argument("--page-token", help="continue from a previous page")
    p.add_argument("--all", action="store_true", help="follow every page")
    bank_opt(p)

    p = add_verb(
        sub,
        "update",
        "Revise a memory in place (same id, next revision).",
        common,
        _update,
        show.memory,
    )
    p.add_argument("id", help="memory id")
    p.add_argument("--text", help="new text")
    p.add_argument("--title", help="new title")
    p.add_argument("--tag", action="append", dest="tags", help="replace the tags (repeatable)")
    p.add_argument("--entity", action="append", dest="entities", help="replace the entities")
    p.add_argument("--occurred-at", help="when it happened: ISO date or date-time (UTC if no zone)")
    p.add_argument(
        "--revision", type=int, help="only while it is at this revision (else: conflict, no write)"
    )
    pin = p.add_mutually_exclusive_group()
    pin.add_argument("--pin", action="store_true", default=None, dest="pinned", help="pin it")
    pin.add_argument("--unpin", action="store_false", dest="pinned", help="unpin it")
    bank_opt(p)
    gathered(p, "--tag", "--entity")

    p = add_verb(
        sub,
        "delete",
        "Delete a memory (a tombstone; it stays in history).",
        common,
        _delete,
        show.memory,
    )
    p.add_argument("id", help="memory id")
    p.add_argument("--reason", help="why (kept in the event)")
    bank_opt(p)

    for name, pinned in (("pin", True), ("unpin", False)):
        what = "Pin a memory: never touched by automatic paths." if pinned else "Unpin a memory."
        p = add_verb(sub, name, what, common, _pin, show.memory)
        p.add_argument("id", help="memory id")
        p.set_defaults(pinned=pinned)
        bank_opt(p)

    p = add_verb(
        sub,
        "supersede",
        "Retire a memory in favour of a live one.",
        common,
        _supersede,
        show.supersede,
    )
    p.add_argument("id", help="the memory to retire")
    p.add_argument("--by", required=True, dest="survivor", help="the live memory that replaces it")
    p.add_argument("--reason", help="why")
    p.add_argument("--reinforce", action="store_true", help="merge observations into the survivor")
    bank_opt(p)

    p = add_verb(sub, "tags", "List a bank's tags with counts.", common, _tags, show.tags)
    bank_opt(p)

    p = add_verb(
        sub, "watch", "Follow the store's events (item-changed, bank-changed).", common, _watch
    )
    p.add_argument("--bank", help="only this bank's events")
    p.add_argument("--from", type=int, default=0, dest="cursor", help="start after this cursor")
    p.add_argument("--once", action="store_true", help="print what is there and exit")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between polls")


def _save(ctx: Ctx) -> SaveResponse:
    a = ctx.args
    text = sys.stdin.read() if a.text == "-" else a.text
    project = fmt.folder(a.project) or (os.getcwd() if a.scope == "project" else None)
    return ctx.store.save(
        text,
        bank=a.bank,
        title=a.title,
        id=a.id,
        type=a.type,
        scope=a.scope,
        project=project,
        session_id=a.session_id,
        tags=a.tags,
        entities=a.entities,
        pinned=a.pin,
        confidence=a.confidence,
        recorded_by="cli",
        occurred_at=_instant(a.occurred_at),
    )


def _instant(value: str | None) -> int | None:
    if value is None:
        return None
    from shared.text import iso_ms  # only a verb given a date pays for the text module

    return iso_ms(value)


def _recall(ctx: Ctx) -> RecallResponse:
    a = ctx.args
    found = ctx.store.recall(
        a.query,
        bank=a.bank,
        limit=a.limit,
        tag=a.tag,
        mode=a.mode,
        include_superseded=a.include_superseded,
        token_budget=a.budget,
        session_id=a.session_id,
        # what a session in this folder sees: `save --scope project` files a memory under the
        # cwd, and a hook's turn recalls with its cwd (store_worker/harness/inject.py `_project`)
        project=fmt.folder(a.project) or os.getcwd(),
        type_filter=a.types,
        scope_filter=a.scopes,
        min_relevance=a.min_relevance,
    )
    if a.explain:
        a.render = show.recall_explained
    return found


def _preview(ctx: Ctx) -> Any:
    return ctx.store.preview(ctx.args.query, bank=ctx.args.bank)


def _get(ctx: Ctx) -> Any:
    return ctx.store.get(ctx.args.id, bank=ctx.args.bank)


def _list(ctx: Ctx) -> Any:
    a = ctx.args
    kwargs = dict(
        bank=a.bank,
        tag=a.tag,
        type=a.type,
        scope=a.scope,
        status=a.status,
        include_superseded=a.include_superseded,
        page_size=a.page_size,
    )
    page = ctx.store.list(page_token=a.page_token, **kwargs)
    if not a.all:
        return page
    rows = list(page.memories)
    while page.next_page_token:
        page = ctx.store.list(page_token=page.next_page_token, **kwargs)
        rows += page.memories
    return show.with_fields(page, memories=tuple(rows), next_page_token=None)


def _update(ctx: Ctx) -> Any:
    a = ctx.args
    return ctx.store.update(
        a.id,
        bank=a.bank,
        text=a.text,
        title=a.title,
        tags=a.tags,
        entities=a.entities,
        pinned=a.pinned,
        occurred_at=_instant(a.occurred_at),
        revision=a.revision,
    )


def _delete(ctx: Ctx) -> Any:
    return ctx.store.delete(ctx.args.id, bank=ctx.args.bank, reason=ctx.args.reason)


def _pin(ctx: Ctx) -> Any:
    return ctx.store.pin(ctx.args.id, ctx.args.pinned, bank=ctx.args.bank)


def _supersede(ctx: Ctx) -> Any:
    a = ctx.args
    return ctx.store.supersede(
        a.id, a.survivor, bank=a.bank, reason=a.reason, reinforce=a.reinforce
    )


def _tags(ctx: Ctx) -> Any:
    return ctx.store.tags(bank=ctx.args.bank)


def _watch(ctx: Ctx) -> int:
    a = ctx.args
    cursor = a.cursor
    while True:
        found = ctx.store.events_since(cursor, bank=a.bank)
        for event in found.events:
            line = (
                json.dumps(fmt.jsonable(event)) if a.json else fmt.terminal_safe(show.event(event))
            )
            ctx.out.write(line + "\n")
        ctx.out.flush()
        cursor = found.cursor
        if a.once:
            if not a.json and not found.events:
                ctx.out.write(f"no events after cursor {a.cursor} (cursor {cursor})\n")
            return 0
        time.sleep(a.interval)  # a polling follower, like `tail -f`


# -- secrets already stored (today's catalogue on what is on disk) -----------------------------


def add_secret_verbs(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_verb(
        sub,
        "redact",
        "Apply today's secret catalogue to what is already stored (--rescan); with --purge, "
        "also rewrite the log so no old line keeps the secret.",
        common,
        _redact,
        show.rescan,
    )
    p.add_argument(
        "--rescan",
        action="store_true",
        required=True,
        help="scan stored memories, rules and descriptions (the only mode there is)",
    )
    p.add_argument("--bank", help="only this bank (default: every bank)")
    p.add_argument(
        "--purge",
        action="store_true",
        help="compact the log without the secret instead of appending redacted revisions "
        "(rewrites history; an audit event says what kind went and when)",
    )
    p = add_verb(
        sub,
        "purge",
        "Erase a memory and every revision of it for good (a right-to-erasure request).",
        common,
        _purge,
        show.purged,
    )
    p.add_argument("id", help="memory id")
    bank_opt(p)


def _redact(ctx: Ctx) -> Any:
    return ctx.store.redact_rescan(bank=ctx.args.bank, purge=ctx.args.purge)


def _purge(ctx: Ctx) -> Any:
    return ctx.store.purge(ctx.args.id, bank=ctx.args.bank)


# -- bank and operations verbs (rules: shared.cli.rules) -------------------------------------------


def add_bank_verbs(sub: Any, common: argparse.ArgumentParser) -> None:
    group = sub.add_parser("bank", help="Create, list and delete banks.", description="Banks.")
    inner = group.add_subparsers(title="bank commands", metavar="COMMAND", required=True)
    p = add_verb(
        inner, "create", "Create a bank (idempotent).", common, _bank_create, show.bank_created
    )
    p.add_argument("name", help="bank name: [a-z0-9][a-z0-9_-]{0,63}")
    p.add_argument("--description", help="what the bank is for")
    add_verb(
        inner,
        "list",
        "List banks with memory, rule and pinned counts.",
        common,
        _bank_list,
        show.banks,
    )
    p = add_verb(
        inner,
        "delete",
        "Delete a bank (moved to .trash, recoverable by hand).",
        common,
        _bank_delete,
    )
    p.add_argument("name", help="bank name")


def _bank_create(ctx: Ctx) -> Any:
    return ctx.store.bank_create(ctx.args.name, ctx.args.description)


def _bank_list(ctx: Ctx) -> Any:
    return ctx.store.bank_list()


def _bank_delete(ctx: Ctx) -> Any:
    ctx.args.render = lambda r: f"trashed to {r.trashed_to}"
    return ctx.store.bank_delete(ctx.args.name)


def add_ops_verbs(sub: Any, common: argparse.ArgumentParser) -> None:
    add_verb(
        sub,
        "doctor",
        "Check the store's health (exit 1 when a required check fails).",
        common,
        _doctor,
        show.doctor,
    )
    add_verb(
        sub, "reload", "Re-read every bank from the files (after hand edits).", common, _reload
    )
    add_verb(
        sub,
        "describe",
        "Show the service's name, version, digest and data dir.",
        common,
        _describe,
        show.describe,
    )
    add_verb(
        sub,
        "capabilities",
        "Show what the store supports.",
        common,
        _capabilities,
        show.capabilities,
    )
    p = add_verb(sub, "configure", "Change settings at run time: KEY=VALUE ...", common, _configure)
    p.add_argument("pairs", nargs="+", metavar="KEY=VALUE", help="setting and value")


def _doctor(ctx: Ctx) -> Any:
    return ctx.store.doctor()


def _reload(ctx: Ctx) -> Any:
    ctx.args.render = lambda r: (
        f"reloaded {fmt.counted(len(r.banks), 'bank')} "
        f"({fmt.counted(r.corrupt_lines, 'corrupt line')})"
    )
    return ctx.store.reload()


def _describe(ctx: Ctx) -> Any:
    return ctx.store.describe()


def _capabilities(ctx: Ctx) -> Any:
    return ctx.store.capabilities()


def _configure(ctx: Ctx) -> Any:
    changes: dict[str, Any] = {}
    for pair in ctx.args.pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidArgumentError(f"expected KEY=VALUE, got {pair!r}")
        changes[key.strip()] = value  # pydantic coerces "3" / "true" to the field's type
    return ctx.store.configure(changes)
