"""The learned-rule review queue's store operations: proposals from extraction and promotion,
and a person's decisions (``shared.contract.ops`` re-exports them with the others)."""

from __future__ import annotations

from dataclasses import KW_ONLY
from typing import TYPE_CHECKING

from shared.contract.op import Labels, Read, Write

if TYPE_CHECKING:  # the answers' types, named in strings
    from shared.contract import models  # noqa: F401


class RulePropose(Write["models.RuleProposeResponse"]):
    """Propose lines for the ``learned`` rule (extraction, promotion): learned at once or held
    for a person, as ``rule_review`` says; ``grounded=False`` (not in the user's words) drops
    them with an event and writes nothing."""

    rules: Labels
    _: KW_ONLY
    bank: str | None = None
    origin: str = "extraction"
    turn_id: str | None = None
    grounded: bool = True


class RulePending(Read["models.RulePendingResponse"]):
    """The proposed rules waiting for a person (``rejected``: the ones a person rejected)."""

    _: KW_ONLY
    bank: str | None = None
    rejected: bool = False


class RuleApprove(Write["models.RuleDecisionResponse"]):
    """A person's approval: the proposal (waiting, or rejected before) becomes a line of
    ``learned``."""

    id: str
    _: KW_ONLY
    bank: str | None = None


class RuleReject(Write["models.RuleDecisionResponse"]):
    """A person's rejection: the proposal is dropped, and proposing the line again drops it."""

    id: str
    _: KW_ONLY
    bank: str | None = None
