"""The learned-rules review queue on a bank's rules page: the lines the extractor or the
consolidator's promotion proposed that wait for a person (``rule_review``), and Approve and
Reject for each; below, the lines a person rejected (the store drops them when they are
proposed again), each with Approve for a person who changed their mind.

Approving is a person's act, so the queue and both actions are the ``admin``'s
(``web_console.auth``), and each is one store operation (``rule_approve``, ``rule_reject``)
through the console's CSRF-checked form path. A decision someone else already took (the
proposal is gone) is the store's typed error on the page, and writes nothing. The page also
lists the bank's review events as the store recorded them (``rule-proposed``,
``rule-approved``, ``rule-rejected``, ``rule-dropped``): the store keeps its recent events in
a bounded buffer, and this reads it by pages filtered to the bank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from starlette.responses import Response

from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.contract.models import Event, RuleDecisionResponse, RuleProposal
from web_console.app import Page
from web_console.pages_memory import bank_url

EVENT_PAGE = 500
EVENT_PAGES = 20  # the store keeps its last 10 000 events: 20 pages reach past the oldest
SHOWN_EVENTS = 20


@dataclass(frozen=True)
class Waiting:
    """One proposed line as the page shows it: the proposal and why it waits."""

    proposal: RuleProposal
    why: str


def why(proposal: RuleProposal) -> str:
    """Why a line waits: the shapes flagged, else a promotion or a quotation, else
    ``rule_review=all``."""
    if proposal.shapes:
        return "flagged: " + ", ".join(proposal.shapes)
    if proposal.origin == "promotion":
        return "a promotion (repetition alone never makes a rule)"
    if proposal.origin == "quoted":
        return "quoted: the user only relayed it (a quotation, a pasted page)"
    return "rule_review=all (every proposed line waits)"


def review_events(store: StoreAPI, bank: str) -> list[Event]:
    """The bank's latest review events, newest first."""
    found: list[Event] = []
    cursor = 0
    for _ in range(EVENT_PAGES):
        page = store.events_since(cursor, limit=EVENT_PAGE, bank=bank)
        found += [e for e in page.events if e.event_type.startswith("rule-")]
        if len(page.events) < EVENT_PAGE or page.cursor <= cursor:
            break
        cursor = page.cursor
    return found[::-1][:SHOWN_EVENTS]


def context(page: Page, bank: str) -> dict[str, Any]:
    """What the rules page's ``learned`` block shows of the queue (the admin's: the queue and
    the events are admin reads)."""
    if not page.who.admin:
        return {"waiting": [], "rejected": [], "review_events": [], "may_decide": False}
    try:
        pending = page.store.rule_pending(bank=bank).proposals
        rejected = page.store.rule_pending(bank=bank, rejected=True).proposals
    except errors.NotFoundError:
        pending = rejected = ()  # a bank not made yet has nothing waiting
    return {
        "waiting": [Waiting(p, why(p)) for p in pending],
        "rejected": list(rejected),
        "review_events": review_events(page.store, bank),
        "may_decide": True,
    }


async def _rules(page: Page, error: errors.MemoryServiceError) -> Response:
    from web_console.pages_harness import rules

    return await rules(page, error)


async def approve(page: Page) -> Response:
    name, id = page.path("bank"), page.path("id")

    def said(done: RuleDecisionResponse) -> str:
        where = "added to learned" if done.learned else "already in the rules"
        return f"approved {done.id}: {where}"

    return await page.act(
        lambda: page.store.rule_approve(id, bank=name), _rules, bank_url(name, "/rules"), said
    )


async def reject(page: Page) -> Response:
    name, id = page.path("bank"), page.path("id")
    return await page.act(
        lambda: page.store.rule_reject(id, bank=name),
        _rules,
        bank_url(name, "/rules"),
        lambda done: f"rejected {done.id}",
    )


ROUTES = [
    ("/b/{bank}/rules/review/{id}/approve", "admin", approve, ["POST"]),
    ("/b/{bank}/rules/review/{id}/reject", "admin", reject, ["POST"]),
]
