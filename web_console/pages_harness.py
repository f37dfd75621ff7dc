"""Pages about what the harness is given and what the siblings do: rules (a diff before each
save; learned rules in their own review section), drafts waiting for ratification, the
extraction outbox and its dead letters, consolidation (dry run, then apply), redaction, and
the injection preview.

Each form action is one store operation (``rule_set``, ``rule_approve`` and ``rule_reject`` in
``pages_review``, ``approve``, ``reject``, ``outbox_requeue``, ``outbox_drop``,
``supersede_many``, ``redact_rescan``); a rule's diff and a consolidation dry run write nothing.
"""

from __future__ import annotations

import difflib
from typing import Any

from starlette.responses import Response

from shared.contract import errors
from shared.text.tokens import TokenCounter
from web_console import consolidation, pages_review
from web_console.app import Page, status_for
from web_console.pages_memory import bank_url


def _status(error: errors.MemoryServiceError | None) -> int:
    return status_for(error) if error else 200


# -- rules ------------------------------------------------------------------------------------


async def rules(page: Page, error: errors.MemoryServiceError | None = None) -> Response:
    """A bank's rules, the learned ones in their own section with the review queue
    (``pages_review``)."""
    name = page.path("bank")
    listing = page.store.rule_list(bank=name)
    written = [r for r in listing.rules if not r.learned]
    learned = [r for r in listing.rules if r.learned]
    return page.render(
        "rules.html",
        _status(error),
        bank=name,
        rules=written,
        learned=learned,
        error=error,
        **pages_review.context(page, name),
    )


async def rule_edit(page: Page, error: errors.MemoryServiceError | None = None) -> Response:
    name, rule = page.path("bank"), page.arg("name").strip()
    held = ""
    if rule:
        try:
            held = page.store.rule_get(rule, bank=name).content
        except errors.NotFoundError:
            held = ""  # a new rule
    content = page.form.get("content", held) if page.form else held
    return page.render(
        "rule_edit.html",
        _status(error),
        bank=name,
        rule=rule,
        content=content,
        expect=page.form.get("expect", held) if page.form else held,
        error=error,
    )


async def rule_diff(page: Page) -> Response:
    """What a save would change, shown before it is saved (reads only)."""
    name, rule = page.path("bank"), page.arg("name").strip()
    content, expect = page.form.get("content", ""), page.form.get("expect", "")
    lines = list(
        difflib.unified_diff(
            expect.splitlines(), content.splitlines(), "as read", "as edited", lineterm=""
        )
    )
    return page.render(
        "rule_diff.html", bank=name, rule=rule, content=content, expect=expect, diff=lines
    )


async def rule_save(page: Page) -> Response:
    name, rule = page.path("bank"), page.arg("name").strip()
    try:
        done = page.store.rule_set(
            rule, page.form.get("content", ""), bank=name, expect=page.form.get("expect", "")
        )
    except errors.MemoryServiceError as e:
        return await rule_edit(page, e)
    note = f"; redacted: {', '.join(done.redacted)}" if done.redacted else ""
    verb = "saved" if done.exists else "removed"
    return page.done(bank_url(name, "/rules"), f"{verb} rule {rule}{note}")


# -- drafts -----------------------------------------------------------------------------------


async def drafts(page: Page, error: errors.MemoryServiceError | None = None) -> Response:
    name = page.path("bank")
    waiting = page.store.drafts(bank=name)
    return page.render("drafts.html", _status(error), bank=name, drafts=waiting, error=error)


async def approve(page: Page) -> Response:
    name, id = page.path("bank"), page.path("id")
    return await page.act(
        lambda: page.store.approve(id, bank=name),
        drafts,
        bank_url(name, "/drafts"),
        f"approved {id}",
    )


async def reject(page: Page) -> Response:
    name, id = page.path("bank"), page.path("id")
    return await page.act(
        lambda: page.store.reject(id, bank=name),
        drafts,
        bank_url(name, "/drafts"),
        f"rejected {id}",
    )


# -- the outbox -------------------------------------------------------------------------------

# where the extractor keeps its last runs in the store's sibling state (its run log)
EXTRACTOR, RUNS = "extractor", "runs"


async def outbox(page: Page, error: errors.MemoryServiceError | None = None) -> Response:
    listing = page.store.outbox_list(limit=200)
    runs = page.store.state_get(EXTRACTOR, RUNS)  # the extractor's last runs, newest first
    return page.render(
        "outbox.html",
        _status(error),
        outbox=listing,
        runs=[r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else [],
        error=error,
    )


async def retry(page: Page) -> Response:
    job = page.path("job")
    return await page.act(
        lambda: page.store.outbox_requeue(job, fresh=page.arg("fresh") == "1"),
        outbox,
        "/outbox",
        f"queued {job} again",
    )


async def drop(page: Page) -> Response:
    job = page.path("job")
    return await page.act(lambda: page.store.outbox_drop(job), outbox, "/outbox", f"dropped {job}")


# -- consolidation ----------------------------------------------------------------------------


async def consolidate(
    page: Page,
    plan: consolidation.Plan | None = None,
    error: errors.MemoryServiceError | None = None,
) -> Response:
    context: dict[str, Any] = {"plan": plan, "error": error, "bank": page.arg("bank")}
    if plan is not None:
        payload = plan.payload().decode()
        context.update(payload=payload, signature=page.console.gate.sign(payload.encode()))
    return page.render("consolidate.html", _status(error), **context)


async def dry_run(page: Page) -> Response:
    bank = page.arg("bank").strip()
    try:
        plan = consolidation.dry_run(page.store, [bank] if bank else None)
    except errors.MemoryServiceError as e:
        return await consolidate(page, error=e)
    return await consolidate(page, plan)


async def apply(page: Page) -> Response:
    payload = page.form.get("plan", "")
    if not page.console.gate.signed(payload.encode(), page.form.get("signature", "")):
        return await consolidate(
            page,
            error=errors.InvalidArgumentError("not a plan this console showed; run a dry run"),
        )
    try:
        count = consolidation.apply(page.store, payload.encode())
    except errors.MemoryServiceError as e:  # a stale plan too (a ConflictError)
        return await consolidate(page, error=e)
    return page.done("/consolidate", f"applied the plan shown: {count} memories retired")


# -- redaction --------------------------------------------------------------------------------


async def redaction(page: Page, rescan: Any = None, error: Any = None) -> Response:
    """What redaction removed, by kind (never a value): recent writes' events, and a rescan."""
    events = page.store.events_since(0, limit=500).events
    seen = [e for e in events if e.redacted]
    banks = page.store.bank_list().banks
    return page.render(
        "redaction.html",
        _status(error),
        events=seen[-100:],
        rescan=rescan,
        error=error,
        banks=banks,
        bank=page.arg("bank"),
    )


async def rescan(page: Page) -> Response:
    bank = page.arg("bank").strip() or None
    try:
        done = page.store.redact_rescan(bank=bank, purge=page.arg("purge") == "1")
    except errors.MemoryServiceError as e:
        return await redaction(page, error=e)
    return await redaction(page, rescan=done)


# -- preview ----------------------------------------------------------------------------------


async def preview(page: Page) -> Response:
    name, query = page.path("bank"), page.arg("q").strip()
    shown = page.store.preview(query, bank=name) if query else None
    section = TokenCounter().count(shown.system_prompt_section) if shown else 0
    recalled = sum(m.memory.tokens for m in shown.memories) if shown else 0
    return page.render(
        "preview.html", bank=name, q=query, preview=shown, section=section, recalled=recalled
    )


ROUTES = [
    ("/b/{bank}/rules", "read", rules, ["GET"]),
    ("/b/{bank}/rules/edit", "admin", rule_edit, ["GET"]),
    ("/b/{bank}/rules/diff", "admin", rule_diff, ["POST"]),
    ("/b/{bank}/rules/save", "admin", rule_save, ["POST"]),
    ("/b/{bank}/drafts", "read", drafts, ["GET"]),
    ("/b/{bank}/drafts/{id}/approve", "write", approve, ["POST"]),
    ("/b/{bank}/drafts/{id}/reject", "write", reject, ["POST"]),
    ("/outbox", "admin", outbox, ["GET"]),
    ("/outbox/{job}/retry", "admin", retry, ["POST"]),
    ("/outbox/{job}/drop", "admin", drop, ["POST"]),
    ("/consolidate", "admin", consolidate, ["GET"]),
    ("/consolidate/dry-run", "admin", dry_run, ["POST"]),
    ("/consolidate/apply", "admin", apply, ["POST"]),
    ("/redaction", "admin", redaction, ["GET"]),
    ("/redaction/rescan", "admin", rescan, ["POST"]),
    ("/b/{bank}/preview", "read", preview, ["GET"]),
]
