"""The rule review queue: what may become a line of the ``learned`` rule without a person.

A learned rule is a standing instruction in every later session's system prompt, so the
automatic paths (the extractor, the consolidator's promotion) do not write it themselves: they
*propose* lines here (``rule_propose``), and ``rule_review`` decides:

- ``flagged`` (the default): a line with a dangerous shape (``shapes.py``: it sends data
  somewhere, mentions credentials, overrides instructions, changes what tools run) waits for a
  person, and so does every promotion (repetition alone never makes a rule) and every line
  the user only quoted or pasted (``origin="quoted"``: "the page says ..."); the rest is
  learned at once;
- ``all``: every proposed line waits;
- ``none``: every line is learned at once, as before the queue existed.

A line the extractor could not ground in the user's own words is never learned: it arrives with
``grounded=False``, is counted in a ``rule-dropped`` event and written nowhere.

Each waiting line is one file, written atomically::

    <data_dir>/<bank>/review/<id>.json     {"id", "bank", "text", "origin", "shapes", ...}

and its id is derived from the line's fingerprint, so proposing it again (the next turn, the
next pass) finds the same file. ``rule_approve`` (a person's act: the CLI, the store API, never
an MCP tool or the extraction path) appends the line to ``learned`` and then removes the file;
a crash in between leaves the file, and approving it again finds the line already learned.
``rule_reject`` moves the file aside, to ``review/rejected/<id>.json`` (with ``rejected_at``):
a rejection is remembered, so the same line (by fingerprint: the id) proposed again, by the
next turn or the next promotion, is dropped with a ``rule-dropped`` event ("rejected before")
instead of asking the person again. ``rule_pending(rejected=True)`` lists the rejected lines,
and ``rule_approve`` takes a rejected id too (a person changing their mind). The rejected file
is written before the waiting one is removed: a crash in between leaves both, and the line
counts as rejected. Every proposal, approval, rejection and drop is an event.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from shared.contract import errors
from shared.contract.config import NAME_RE
from shared.contract.models import (
    RuleDecisionResponse,
    RulePendingResponse,
    RuleProposal,
    RuleProposeResponse,
)
from shared.redact import redact
from shared.text import fingerprint, rule_lines
from store_worker.harness.messages import HIDDEN
from store_worker.harness.rules import LEARNED
from store_worker.harness.shapes import flagged
from store_worker.storage import validate as v
from store_worker.storage.files import REJECTED_DIR, REVIEW_DIR, atomic_write, fsync_dir

if TYPE_CHECKING:
    from shared.contract.clock import Clock
    from shared.contract.config import StoreSettings
    from shared.contract.review_ops import RulePropose
    from store_worker.harness.rules import Rules
    from store_worker.storage.bank import Bank
    from store_worker.storage.banks import Banks
    from store_worker.storage.events import EventBus

log = logging.getLogger(__name__)

ORIGINS = ("extraction", "quoted", "promotion")
MAX_LINE_CHARS = 500
MAX_PROPOSED = 50  # lines in one proposal
_ID = re.compile(r"\Arule-[0-9a-f]{12}\Z")


def proposal_id(text: str) -> str:
    """The id of a proposed line: the same line (by fingerprint) always has the same id."""
    return "rule-" + hashlib.sha256(fingerprint(text).encode("utf-8")).hexdigest()[:12]


class RuleReview:
    """``rule_propose``, ``rule_pending``, ``rule_approve``, ``rule_reject``."""

    def __init__(
        self, settings: StoreSettings, *, banks: Banks, rules: Rules, events: EventBus, clock: Clock
    ) -> None:
        self.settings = settings
        self.banks = banks
        self.rules = rules
        self.events = events
        self.clock = clock

    # -- proposing -------------------------------------------------------------------------

    def rule_propose(self, op: RulePropose) -> RuleProposeResponse:
        """Lines for ``learned``: learned at once or held for a person (``rule_review``)."""
        bank, origin, grounded = op.bank, op.origin, op.grounded
        lines = _lines(op.rules)
        if origin not in ORIGINS:
            raise errors.InvalidArgumentError(f"origin must be one of {', '.join(ORIGINS)}")
        turn = v.no_credential(v.turn_id(op.turn_id), "turn_id")
        if not isinstance(grounded, bool):
            raise errors.InvalidArgumentError("grounded must be true or false")
        if not grounded:
            name = _bank_name(bank, self.settings.default_bank)
            where = f"turn {turn}" if turn else origin
            for _ in lines:
                self._emit("rule-dropped", name, f"not in the user's own words ({where})")
            return RuleProposeResponse(bank=name, dropped=len(lines))
        if not lines:
            return RuleProposeResponse(bank=_bank_name(bank, self.settings.default_bank))
        target = self.banks.writable(self.banks.resolve(bank, create=True))
        seen = {
            fingerprint(line) for content in target.rules.values() for line in rule_lines(content)
        }
        learn: list[str] = []
        hold: list[RuleProposal] = []
        known = rejected = 0
        for text in lines:
            fp = fingerprint(text)
            if fp in seen:
                known += 1
                continue
            seen.add(fp)
            ident = proposal_id(text)
            if self._read(target, ident, REJECTED_DIR) is not None:
                rejected += 1
                self._emit("rule-dropped", target.name, f"{ident} was rejected before ({origin})")
                continue
            shapes = flagged(text)
            if self._waits(origin, shapes):
                hold.append(self._hold(target, text, origin, shapes, turn))
            else:
                learn.append(text)
        if learn:
            self._learn(target.name, learn)
        return RuleProposeResponse(
            bank=target.name,
            learned=tuple(learn),
            pending=tuple(hold),
            known=known,
            rejected=rejected,
        )

    def _waits(self, origin: str, shapes: tuple[str, ...]) -> bool:
        mode = self.settings.rule_review
        if mode == "none":
            return False
        return mode == "all" or bool(shapes) or origin != "extraction"

    def _hold(
        self, bank: Bank, text: str, origin: str, shapes: tuple[str, ...], turn: str | None
    ) -> RuleProposal:
        ident = proposal_id(text)
        held = self._read(bank, ident)
        if held is not None:
            return held  # proposed before: it waits once
        proposal = RuleProposal(
            id=ident,
            bank=bank.name,
            text=text,
            origin=origin,
            shapes=shapes,
            proposed_at=self.clock.now_ms(),
            turn_id=turn,
        )
        atomic_write(_folder(bank) / f"{ident}.json", proposal.model_dump_json().encode("utf-8"))
        why = ", ".join(shapes) or (
            "the user only quoted it"
            if origin == "quoted"
            else f"rule_review={self.settings.rule_review}"
        )
        self._emit("rule-proposed", bank.name, f"{ident} from {origin}: {why}")
        return proposal

    def _learn(self, bank: str, lines: list[str]) -> bool:
        """Append ``lines`` to ``learned`` (under the store lock: no other writer between the
        read and the write); whether a line was added."""
        target = self.banks.resolve(bank, create=True)
        seen = {
            fingerprint(line) for content in target.rules.values() for line in rule_lines(content)
        }
        added = [line for line in lines if fingerprint(line) not in seen]
        if not added:
            return False
        read = target.rules.get(LEARNED, "")
        body = read.rstrip("\n")
        content = (body + "\n" if body else "") + "".join(f"- {line}\n" for line in added)
        self.rules.rule_set(LEARNED, content, bank=target.name, expect=read)
        return True

    # -- a person's decision ---------------------------------------------------------------

    def rule_pending(
        self, *, bank: str | None = None, rejected: bool = False
    ) -> RulePendingResponse:
        """The lines waiting for a person, oldest first; ``rejected``: the ones a person
        rejected, most recent first."""
        if not isinstance(rejected, bool):
            raise errors.InvalidArgumentError("rejected must be true or false")
        target = self.banks.resolve(bank)
        if rejected:
            found = self._all(target, REJECTED_DIR)
            order = sorted(found, key=lambda p: (-p.rejected_at, p.id))
            return RulePendingResponse(bank=target.name, proposals=tuple(order))
        gone = {p.id for p in self._all(target, REJECTED_DIR)}  # a crash mid-rejection
        waiting = (p for p in self._all(target, REVIEW_DIR) if p.id not in gone)
        proposals = sorted(waiting, key=lambda p: (p.proposed_at, p.id))
        return RulePendingResponse(bank=target.name, proposals=tuple(proposals))

    def rule_approve(self, id: str, *, bank: str | None = None) -> RuleDecisionResponse:
        """A waiting line, or one rejected before (a person changing their mind), learned."""
        target, proposal = self._proposal(id, bank, REVIEW_DIR, REJECTED_DIR)
        self.banks.writable(target)
        added = self._learn(target.name, [proposal.text])
        self._remove(target, proposal.id, REVIEW_DIR)
        self._remove(target, proposal.id, REJECTED_DIR)
        self._emit("rule-approved", target.name, proposal.id)
        return RuleDecisionResponse(
            bank=target.name, id=proposal.id, decision="approved", text=proposal.text, learned=added
        )

    def rule_reject(self, id: str, *, bank: str | None = None) -> RuleDecisionResponse:
        """A waiting line set aside for good: proposing it again drops it (``rule_approve``
        still takes it). Rejecting a rejected line again changes nothing."""
        target, proposal = self._proposal(id, bank, REVIEW_DIR, REJECTED_DIR)
        self.banks.writable(target)
        if not proposal.rejected_at:
            record = proposal.model_copy(update={"rejected_at": self.clock.now_ms()})
            data = record.model_dump_json().encode("utf-8")
            atomic_write(_folder(target, REJECTED_DIR) / f"{proposal.id}.json", data)
        self._remove(target, proposal.id, REVIEW_DIR)
        self._emit("rule-rejected", target.name, proposal.id)
        return RuleDecisionResponse(
            bank=target.name, id=proposal.id, decision="rejected", text=proposal.text
        )

    # -- the files -------------------------------------------------------------------------

    def _proposal(self, id: object, bank: str | None, *where: str) -> tuple[Bank, RuleProposal]:
        """The proposal ``id``, from the first of the folders ``where`` that holds it."""
        if not isinstance(id, str) or not _ID.match(id):
            raise errors.InvalidArgumentError(
                f"{v.quoted(str(id))} is not a proposed rule's id (rule-<12 hex>)"
            )
        target = self.banks.resolve(bank)
        for folder in where:
            proposal = self._read(target, id, folder)
            if proposal is not None:
                return target, proposal
        raise errors.NotFoundError(f"no proposed rule {id} in bank {target.name!r}")

    def _all(self, bank: Bank, where: str) -> list[RuleProposal]:
        folder = _folder(bank, where)
        try:
            names = sorted(p.name for p in folder.glob("rule-*.json"))
        except OSError as e:
            raise errors.storage_error(f"cannot list {folder}", e) from e
        found = (self._read(bank, name[: -len(".json")], where) for name in names)
        return [p for p in found if p is not None]

    def _read(self, bank: Bank, ident: str, where: str = REVIEW_DIR) -> RuleProposal | None:
        """The proposal's file in ``where``, or None when it is not there. A file that cannot
        be read is skipped with a warning (a hand edit): it is never approved unseen."""
        path = _folder(bank, where) / f"{ident}.json"
        try:
            raw = json.loads(path.read_bytes().decode("utf-8"))
            proposal = RuleProposal.model_validate(raw)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, ValidationError) as e:
            log.warning("unreadable proposed rule %s: %s", path, type(e).__name__)
            return None
        if proposal.id != ident:
            log.warning("proposed rule %s names another id; skipped", path)
            return None
        if (where == REJECTED_DIR) != bool(proposal.rejected_at):
            log.warning("proposed rule %s: its rejected_at does not fit its folder", path)
            return None
        # as it may enter a prompt: redacted again (a hand-edited file), one line
        text = _shown(proposal.text)[:MAX_LINE_CHARS]
        return proposal.model_copy(update={"text": text, "bank": bank.name})

    def _remove(self, bank: Bank, ident: str, where: str) -> None:
        folder = _folder(bank, where)
        try:
            try:
                os.unlink(folder / f"{ident}.json")
            except FileNotFoundError:
                return  # not there (a rejected line was never waiting in this folder)
            fsync_dir(folder)
        except OSError as e:
            raise errors.storage_error(f"cannot remove proposed rule {ident}", e) from e

    def _emit(self, event_type: str, bank: str, reason: str) -> None:
        self.events.emit("bank-changed", event_type, bank, now=self.clock.now_ms(), reason=reason)


def _shown(text: str) -> str:
    """``text`` as a person reviews it and as it would enter a prompt: nothing hidden (no
    control, bidi or invisible character: an ANSI "conceal" or a right-to-left override could
    show a reviewer other words than the model reads), redacted, one line."""
    return " ".join(redact(HIDDEN.sub("", text)).text.split())


def _folder(bank: Bank, where: str = REVIEW_DIR) -> Path:
    return bank.files.dir / where


def _bank_name(bank: str | None, default: str) -> str:
    name = default if bank is None else bank
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise errors.InvalidArgumentError(f"invalid bank name {v.quoted(str(name))}")
    return name


def _lines(rules: object) -> list[str]:
    """The proposed lines, each one line, redacted; bad input is refused before any write."""
    if rules is None:
        return []
    if isinstance(rules, str) or not isinstance(rules, Iterable):
        raise errors.InvalidArgumentError("rules must be a list of lines")
    out: dict[str, None] = {}
    for item in rules:
        if not isinstance(item, str):
            raise errors.InvalidArgumentError("each proposed rule must be a string")
        v.utf8(item, "rule")
        line = _shown(item).lstrip("-*• ").strip()
        if not line:
            raise errors.InvalidArgumentError("a proposed rule needs text")
        if len(line) > MAX_LINE_CHARS:
            raise errors.InvalidArgumentError(
                f"a proposed rule is {len(line)} chars; the limit is {MAX_LINE_CHARS}"
            )
        out.setdefault(line, None)
    if len(out) > MAX_PROPOSED:
        raise errors.InvalidArgumentError(f"at most {MAX_PROPOSED} rules in one proposal")
    return list(out)
