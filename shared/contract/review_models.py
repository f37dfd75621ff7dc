"""The learned-rule review queue's answers (``shared.contract.models`` re-exports them)."""

from __future__ import annotations

from typing import Literal

from shared.contract.frozen import Frozen


class RuleProposal(Frozen):
    """A proposed line of the ``learned`` rule held for a person (``rule_review``): its
    ``shapes`` say why it waits (``store_worker/harness/shapes.py``; none under ``all``)."""

    id: str
    bank: str
    text: str
    origin: str = "extraction"  # extraction | quoted | promotion
    shapes: tuple[str, ...] = ()
    proposed_at: int = 0
    turn_id: str | None = None
    rejected_at: int = 0  # a person rejected it (``rule_pending(rejected=True)``); 0: waiting


class RuleProposeResponse(Frozen):
    bank: str
    learned: tuple[str, ...] = ()  # lines added to ``learned``
    pending: tuple[RuleProposal, ...] = ()  # held for a person
    known: int = 0  # already a line of one of the bank's rules
    dropped: int = 0  # not grounded in the user's words: never learned
    rejected: int = 0  # a person rejected the line before: dropped, not asked again


class RulePendingResponse(Frozen):
    bank: str
    proposals: tuple[RuleProposal, ...] = ()


class RuleDecisionResponse(Frozen):
    bank: str
    id: str
    decision: Literal["approved", "rejected"]
    text: str
    learned: bool = False  # approved as a new line of ``learned`` (False: it was there)
