"""``memory rule pending|approve|reject``: a person's review of proposed learned rules.

The extractor and the consolidator's promotion propose lines for a bank's ``learned`` rule; the
store holds the ones ``rule_review`` says a person must see (a dangerous shape, a promotion, or
every one). These verbs list them and decide: approving appends the line to ``learned``,
rejecting sets it aside for good (proposing it again drops it); ``pending --rejected`` lists
the rejected lines, and approving one of them still learns it. They are offered here and in
the store API only, never as an MCP tool.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from shared.cli import Ctx

    AddVerb = Callable[..., argparse.ArgumentParser]


def add_review_verbs(
    inner: Any,
    common: argparse.ArgumentParser,
    add_verb: AddVerb,
    bank_opt: Callable[[argparse.ArgumentParser], None],
) -> None:
    p = add_verb(
        inner,
        "pending",
        "List the proposed learned rules waiting for a person's approval.",
        common,
        _pending,
        pending,
    )
    p.add_argument(
        "--rejected",
        action="store_true",
        help="list the rejected rules instead (not proposed again; `approve ID` still learns one)",
    )
    bank_opt(p)
    for verb, help, fn in (
        (
            "approve",
            "Approve a proposed (or rejected) rule: it becomes a line of `learned`.",
            _approve,
        ),
        ("reject", "Reject a proposed rule: it is dropped and not proposed again.", _reject),
    ):
        p = add_verb(inner, verb, help, common, fn, decided)
        p.add_argument("id", help="the proposal's id, as `memory rule pending` shows it")
        bank_opt(p)


def _pending(ctx: Ctx) -> Any:
    if ctx.args.rejected:
        ctx.args.render = rejected
        return ctx.store.rule_pending(bank=ctx.args.bank, rejected=True)
    return ctx.store.rule_pending(bank=ctx.args.bank)


def _approve(ctx: Ctx) -> Any:
    return ctx.store.rule_approve(ctx.args.id, bank=ctx.args.bank)


def _reject(ctx: Ctx) -> Any:
    return ctx.store.rule_reject(ctx.args.id, bank=ctx.args.bank)


def pending(r: Any) -> str:
    if not r.proposals:
        return f"no proposed rules wait in bank {r.bank}"
    lines = []
    for p in r.proposals:
        why = ", ".join(p.shapes) if p.shapes else "review"
        if p.rejected_at:
            why += "; rejected"
        lines.append(f"{p.id}  [{p.origin}; {why}]  {p.text}")
    return "\n".join(lines)


def rejected(r: Any) -> str:
    if not r.proposals:
        return f"no rejected rules in bank {r.bank}"
    return pending(r)


def decided(r: Any) -> str:
    if r.decision == "rejected":
        return f"rejected {r.id} in bank {r.bank}"
    where = "added to learned" if r.learned else "already in the rules"
    return f"approved {r.id} in bank {r.bank}: {where}"
