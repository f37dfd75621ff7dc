"""The write chain: every change to a memory, in one place.

Each write reads top to bottom as the same chain::

    validate the input (nothing written on a bad call) → redact every free-text field →
    build the next revision → append one fsynced line (``Bank.apply``; a pending draft goes to
    its own file, ``Drafts.commit``) → change RAM → embed (when a model is configured) → emit
    an ``item-changed`` event.

``save`` reinforces instead of duplicating when the same normalised text already lives in the
same place (a restatement strengthens what it repeats); ids are slugs, a collision gets
``-2``, ``-3`` … (never an overwrite).

Redaction comes before every derivation, and nothing is derived from what it leaves:
slugs, derived entities and links come from the text with its placeholders blanked out
(``strip_placeholders``), and a given tag or entity that is, or became, a placeholder is
dropped. Identifier fields (``id``, ``session_id``, ``recorded_by``, ``project``, ``turn_id``)
are not redacted but refused when they hold a credential (``validate.no_credential``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np

from shared.contract import errors
from shared.contract.clock import Clock
from shared.contract.config import StoreSettings
from shared.contract.models import (
    CORROBORATED_BY_KEPT,
    Event,
    Memory,
    MemoryResponse,
    Provenance,
    RejectResponse,
    SaveResponse,
    SupersedeResponse,
)
from shared.contract.ops import Save, Supersede, Update
from shared.redact import is_placeholder, redact, redact_many, repeats, strip_placeholders
from shared.text import fingerprint, parse_links, slugify
from shared.text.tokens import TokenCounter
from store_worker.recall.entities import derive_entities
from store_worker.recall.vectors import Vectors
from store_worker.storage import validate as v
from store_worker.storage.bank import Bank
from store_worker.storage.banks import Banks
from store_worker.storage.drafts import Drafts, discard
from store_worker.storage.events import EventBus
from store_worker.storage.labels import LabelMemo, clean_labels


@dataclass(frozen=True, slots=True)
class PreparedSave:
    """A save's validated, redacted input and what derives from it alone (``prepare_save``)."""

    bank: str | None
    clean: dict[str, Any]
    type: str
    scope: str
    project: str | None
    session: str | None
    provenance: Provenance
    wanted_id: str  # the author's id, or the slug of the title or text (before suffixing)
    occurred_at: int | None
    confidence: str
    status: str | None
    pinned: bool
    reinforce: bool
    fingerprint: str
    entities: tuple[str, ...]
    links: tuple[str, ...]
    tokens: int


@dataclass(eq=False, repr=False)
class Writer:
    """save (prepare_save, then commit_save), update, delete, supersede, approve and reject
    over the banks."""

    settings: StoreSettings
    _: KW_ONLY
    banks: Banks
    drafts: Drafts
    vectors: Vectors
    events: EventBus
    clock: Clock
    tokens: TokenCounter

    def prepare_save(self, op: Save) -> PreparedSave:
        """Everything of a save that reads no store state: validation, redaction and what is
        derived from the redacted text. It runs outside the store lock, in the caller's
        thread, so concurrent callers do it while a group commit's fsync is under way
        (``commit.py``); a refused input raises here, before anything is queued."""
        clean = self.clean_fields(text=op.text, title=op.title, tags=op.tags, entities=op.entities)
        mem_type = v.memory_type(op.type)
        mem_scope = v.memory_scope(op.scope)
        project_dir = v.project_path(op.project, catalogue=True) if mem_scope == "project" else None
        session = v.no_credential(v.optional_str(op.session_id, "session_id"), "session_id")
        if mem_scope == "session" and session is None:
            raise errors.InvalidScopeError("scope 'session' needs a session_id")
        provenance = Provenance(
            source_session_id=session,
            source_turn_id=v.no_credential(v.turn_id(op.turn_id), "turn_id"),
            recorded_by=v.no_credential(
                v.optional_str(op.recorded_by, "recorded_by"), "recorded_by"
            ),
        )
        wanted_id = v.no_credential(v.memory_id(op.id), "id") if op.id is not None else None
        when = (
            None if op.occurred_at is None else v.occurred_at(op.occurred_at, self.clock.now_ms())
        )
        conf = v.confidence(op.confidence)
        body = clean["text"]
        return PreparedSave(
            bank=op.bank,
            clean=clean,
            type=mem_type,
            scope=mem_scope,
            project=project_dir,
            session=session,
            provenance=provenance,
            wanted_id=wanted_id or derived_slug(clean["title"] or body),
            occurred_at=when,
            confidence=conf,
            status=op.status,
            pinned=v.flag(op.pinned, "pinned"),
            reinforce=v.flag(op.reinforce, "reinforce"),
            fingerprint=fingerprint(body),
            entities=clean["entities"] or derived_entities(body),
            links=derived_links(body),
            tokens=self.tokens.count(body),
        )

    def check_save(self, p: PreparedSave) -> None:
        """What ``commit_save`` would refuse ``p`` for that depends on no other item (its
        status, its bank), refused before any item of a ``save_many`` is written."""
        self.drafts.status_for(p.status, p.confidence)
        self.banks.check_write(p.bank)

    def commit_save(self, p: PreparedSave) -> SaveResponse:
        """The part of a save that reads and changes the store (under its lock, in a group
        commit): reinforce or create, a free id, the append. The same normalised text re-saved
        reinforces instead, unless ``reinforce`` was False (memory.v1 Record always
        creates)."""
        mem_status = self.drafts.status_for(p.status, p.confidence)  # pending under ratification
        target = self.banks.resolve(p.bank, create=True)
        clean = p.clean
        fp = p.fingerprint
        existing = _same_fact(target, fp, p.scope, p.project, p.session) if p.reinforce else None
        if existing is not None:
            turn_id = p.provenance.source_turn_id
            return self._reinforce(target, existing, clean, p.pinned, turn_id, p.occurred_at)
        turn = p.provenance.source_turn_id
        draft = (
            _draft_of_turn(target, fp, turn, p.scope, p.project, p.session)
            if (p.reinforce and mem_status == "pending" and turn is not None)
            else None
        )
        if draft is not None:  # this turn's draft of the fact, saved before a replay
            return SaveResponse(
                created=False, memory=draft, bank=target.name, redacted=tuple(clean["redacted"])
            )
        now = self.clock.now_ms()
        mem = Memory(
            id=self._free_id(target, p.wanted_id),
            fingerprint=fp,
            type=p.type,
            scope=p.scope,
            project=p.project,
            session_id=p.session if p.scope == "session" else None,
            title=clean["title"],
            text=clean["text"],
            tags=clean["tags"],
            entities=p.entities,
            links=p.links,
            pinned=p.pinned,
            confidence=p.confidence,
            status=mem_status,
            provenance=p.provenance,
            created_at=now,
            updated_at=now,
            stated_at=now,
            occurred_at=p.occurred_at,
            tokens=p.tokens,
        )
        self.drafts.commit(target, mem)  # a pending draft stays out of the log
        self.vectors.embed_one(target, mem)
        redacted = tuple(clean["redacted"])
        self._emit_item("created", target, mem, redacted=redacted)
        return SaveResponse(created=True, memory=mem, bank=target.name, redacted=redacted)

    def clean_fields(
        self,
        *,
        text: object = None,
        title: object = None,
        tags: Iterable[Any] | None = None,
        entities: Iterable[Any] | None = None,
        text_required: bool = True,
        memo: LabelMemo | None = None,
    ) -> dict[str, Any]:
        """Validate, then redact every free-text field (on every write path: redaction before
        the disk). ``memo`` keeps what redaction found in each tag or entity, and each list
        of them cleaned, across calls (a bulk import's records repeat the same few labels)."""
        labels: set[str] = set()
        body = (
            v.text(text, max_chars=self.settings.max_text_chars)
            if text_required or text is not None
            else None
        )
        # the text and the title read together: a secret named in one is redacted in both
        said = redact_many([body or "", v.title(title)])
        secrets = [pair for result in said for pair in result.values]
        in_list: set[str] = set()  # what the list being cleaned held

        def scrub_label(value: str) -> str:
            """A tag or entity that held a secret, repeats one the text or title named, or
            is a placeholder, goes whole: a label is a handle, and half a credential around
            a marker is no handle to anything."""
            known = None if memo is None else memo.found.get(value)
            if known is None:
                known = redact(value).labels
                if memo is not None:
                    memo.found[value] = known
            found = {*known, *repeats(secrets, value)}
            labels.update(found)
            in_list.update(found)
            return "" if found else value

        def clean(values: Iterable[Any] | None, what: str) -> tuple[str, ...]:
            """``clean_labels``; a list this write's memo has cleaned before comes from it
            (unless the text or title named a secret, which a label may repeat)."""
            if memo is None or secrets or not isinstance(values, list | tuple):
                return clean_labels(values, what, scrub_label)
            key = (what, tuple(values))
            try:
                kept = memo.lists.get(key)
            except TypeError:  # a mapping among them: refused by the checks below
                return clean_labels(values, what, scrub_label)
            if kept is None:
                in_list.clear()
                cleaned = clean_labels(values, what, scrub_label)
                kept = memo.lists[key] = (cleaned, tuple(sorted(in_list)))
            labels.update(kept[1])
            return kept[0]

        for result in said:
            labels.update(result.labels)
        out: dict[str, Any] = {}
        if body is not None:
            out["text"] = said[0].text
        out["title"] = said[1].text
        out["tags"] = clean(tags, "tags")
        out["entities"] = clean(entities, "entities")
        out["redacted"] = sorted(labels)
        return out

    def _free_id(self, bank: Bank, wanted: str) -> str:
        """The wanted slug, or the first free ``-2``, ``-3`` … suffix: never an overwrite
        (nor the id of a draft file that could not be read, ``Bank.unread_drafts``)."""
        held = bank.unread_drafts
        if wanted not in bank.records and wanted not in held:
            return wanted  # a valid author-suggested id is kept whole (up to 80 chars)
        base = wanted[:72].rstrip("-") or "memory"  # room for the suffix
        n = 2
        while f"{base}-{n}" in bank.records or f"{base}-{n}" in held:
            n += 1
        return f"{base}-{n}"

    def _reinforce(
        self,
        bank: Bank,
        existing: Memory,
        clean: dict[str, Any],
        pinned: bool,
        turn: str | None,
        when: int | None = None,
    ) -> SaveResponse:
        """Count one more statement of the fact; a turn that already stated it counts once.

        The same turn saving the same fact again is an extraction job replayed after a crash
        (the outbox is at-least-once): that save changes nothing, unless it pins."""
        redacted = tuple(clean["redacted"])
        again = turn is not None and _stated_in(existing, turn)
        if again and (existing.pinned or not pinned):
            return SaveResponse(created=False, memory=existing, bank=bank.name, redacted=redacted)
        now = self.clock.now_ms()
        seen = existing.corroborated_by
        mem = existing.model_copy(
            update={
                "corroboration": existing.corroboration + (0 if again else 1),
                "corroborated_by": (
                    (*seen, turn)[-CORROBORATED_BY_KEPT:] if turn and not again else seen
                ),
                "tags": v.merge_labels(existing.tags, clean["tags"]),
                "entities": v.merge_labels(existing.entities, clean["entities"]),
                "pinned": existing.pinned or bool(pinned),  # re-saving never unpins
                "title": existing.title or clean["title"],
                "occurred_at": existing.occurred_at if existing.occurred_at is not None else when,
                "stated_at": now,
                "updated_at": now,
                "revision": existing.revision + 1,
            }
        )
        bank.apply(mem)
        self._emit_item("updated", bank, mem, reason="reinforced", redacted=redacted)
        return SaveResponse(created=False, memory=mem, bank=bank.name, redacted=redacted)

    def update(self, op: Update) -> MemoryResponse:
        """Revise a live memory in place: same id, next revision. Type and scope are immutable."""
        when = (
            None if op.occurred_at is None else v.occurred_at(op.occurred_at, self.clock.now_ms())
        )
        if op.revision is not None:
            v.count(op.revision, "revision", most=2**62)
        target = self.banks.resolve(op.bank)
        current = self._live(target, op.id)
        if op.revision is not None and current.revision != op.revision:
            raise errors.ConflictError(
                f"{op.id} changed since it was read (revision {current.revision}, not "
                f"{op.revision}); read it again before editing it"
            )
        if op.type is not None and op.type != current.type:
            raise errors.InvalidTypeError(f"type is immutable ({current.type}); save a new memory")
        if op.scope is not None and op.scope != current.scope:
            raise errors.InvalidScopeError(
                f"scope is immutable ({current.scope}); save a new memory"
            )
        clean = self.clean_fields(
            text=op.text, title=op.title, tags=op.tags, entities=op.entities, text_required=False
        )
        now = self.clock.now_ms()
        changes: dict[str, Any] = {"updated_at": now, "revision": current.revision + 1}
        if "text" in clean and clean["text"] != current.text:
            changes.update(
                text=clean["text"],
                fingerprint=fingerprint(clean["text"]),
                links=derived_links(clean["text"]),
                tokens=self.tokens.count(clean["text"]),
                stated_at=now,  # the fact was re-stated; pin/tag edits never move it
            )
        if op.title is not None:
            changes["title"] = clean["title"]
        if op.tags is not None:
            changes["tags"] = clean["tags"]
        if op.entities is not None:
            changes["entities"] = clean["entities"]
        if op.pinned is not None:
            changes["pinned"] = v.flag(op.pinned, "pinned")
        if when is not None:
            changes["occurred_at"] = when
        mem = self.drafts.commit(target, current.model_copy(update=changes))
        if "text" in changes:
            self.vectors.embed_one(target, mem)
        redacted = tuple(clean["redacted"])
        self._emit_item("updated", target, mem, redacted=redacted)
        return MemoryResponse(memory=mem, bank=target.name, redacted=redacted)

    def delete(
        self, id: str, *, bank: str | None = None, reason: str | None = None
    ) -> MemoryResponse:
        """Tombstone a memory: it leaves recall, stays on disk and in the history view."""
        reason, redacted = _scrubbed_reason(reason)
        target = self.banks.resolve(bank)
        current = self._live(target, id)
        now = self.clock.now_ms()
        mem = self.drafts.commit(
            target,
            current.model_copy(
                update={"invalid_at": now, "updated_at": now, "revision": current.revision + 1}
            ),
        )
        self._emit_item("deleted", target, mem, reason=reason, redacted=redacted)
        return MemoryResponse(memory=mem, bank=target.name, redacted=redacted)

    def supersede(self, op: Supersede) -> SupersedeResponse:
        """Retire ``id`` in favour of the live ``superseded_by`` (tombstone + pointer). With
        ``revision``, only while ``id`` is still at that revision: a caller that planned from
        an earlier read (the consolidator's pass) never retires a memory for a text it has
        lost since (an edit between the read and the write is a ``conflict``)."""
        id, superseded_by, reason = op.id, op.superseded_by, op.reason
        if op.revision is not None:
            v.count(op.revision, "revision", most=2**62)
        reason, redacted = _scrubbed_reason(reason)
        target = self.banks.resolve(op.bank)
        v.memory_id(id)
        v.memory_id(superseded_by)
        if id == superseded_by:
            raise errors.ConflictError(f"{id} cannot supersede itself")
        survivor = self._live(target, superseded_by, role="survivor")
        loser = self._live(target, id)
        if op.revision is not None and loser.revision != op.revision:
            raise errors.ConflictError(
                f"{id} changed since it was read (revision {loser.revision}, not {op.revision}); "
                "read it again before superseding it"
            )
        self.drafts.refuse(loser, survivor)
        if loser.pinned:
            raise errors.ConflictError(f"{id} is pinned; unpin it before superseding it")
        now = self.clock.now_ms()
        retired = loser.model_copy(
            update={
                "invalid_at": now,
                "superseded_by": survivor.id,
                "updated_at": now,
                "revision": loser.revision + 1,
            }
        )
        merged = survivor
        reinforced = op.reinforce and not survivor.pinned
        if reinforced:
            merged = survivor.model_copy(
                update={
                    "corroboration": survivor.corroboration + loser.corroboration + 1,
                    "tags": v.merge_labels(survivor.tags, loser.tags),
                    "entities": v.merge_labels(survivor.entities, loser.entities),
                    "stated_at": max(survivor.stated_at, loser.stated_at),
                    "updated_at": now,
                    "revision": survivor.revision + 1,
                }
            )
        target.apply_many([retired, merged] if reinforced else [retired])
        self._emit_item("superseded", target, retired, reason=reason, redacted=redacted)
        if reinforced:
            self._emit_item(
                "updated", target, merged, reason=reason or "reinforced", redacted=redacted
            )
        return SupersedeResponse(
            memory=retired,
            survivor=merged,
            reinforced=reinforced,
            bank=target.name,
            redacted=redacted,
        )

    def approve(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        """Make a pending draft canonical: append it to the log, then drop its draft file."""
        target = self.banks.resolve(bank)
        draft = self.drafts.pending(target, id)
        now = self.clock.now_ms()
        mem = draft.model_copy(
            update={"status": "canonical", "updated_at": now, "revision": draft.revision + 1}
        )
        self.drafts.approved(target, mem)
        self.vectors.embed_one(target, mem)
        self._emit_item("updated", target, mem, reason="approved")
        return MemoryResponse(memory=mem, bank=target.name)

    def reject(self, id: str, *, bank: str | None = None) -> RejectResponse:
        """Discard a pending draft entirely: its file goes, the log never saw it."""
        target = self.banks.resolve(bank)
        draft = self.drafts.pending(target, id)
        discard(target, draft.id)
        now = self.clock.now_ms()
        gone = draft.model_copy(update={"invalid_at": now, "updated_at": now})
        self._emit_item("deleted", target, gone, reason="rejected")
        return RejectResponse(id=draft.id, bank=target.name, deleted=True)

    def _live(self, bank: Bank, id: str, *, role: str = "memory") -> Memory:
        mem = bank.records.get(v.memory_id(id))
        if mem is None:
            raise errors.NotFoundError(f"no {role} {v.quoted(id)} in bank {bank.name!r}")
        if mem.invalid_at is not None:
            how = f"superseded by {mem.superseded_by}" if mem.superseded_by else "deleted"
            raise errors.ConflictError(f"{role} {id!r} is retired ({how})")
        return mem

    def _emit_item(
        self,
        event_type: str,
        bank: Bank,
        mem: Memory,
        *,
        reason: str | None = None,
        redacted: tuple[str, ...] = (),
    ) -> Event | None:
        if reason:  # a caller's free text reaches subscribers: redact it like any write
            scrubbed = redact(reason)  # (a no-op for a reason _scrubbed_reason already saw)
            reason = scrubbed.text
            redacted = tuple(sorted({*redacted, *scrubbed.labels}))
        return self.events.emit(
            "item-changed",
            event_type,
            bank.name,
            now=self.clock.now_ms(),
            memory=mem,
            reason=reason,
            redacted=redacted,
        )


# A delete's or supersede's reason rides every event of it, which the store keeps in RAM
# (``event_buffer`` of them): a reason of megabytes was kept as is, thousands of times over.
MAX_REASON_CHARS = 2_000


def _scrubbed_reason(reason: object) -> tuple[str | None, tuple[str, ...]]:
    """A delete's or supersede's free-text reason, redacted, and what kinds that took."""
    text = v.optional_text(reason, "reason", max_chars=MAX_REASON_CHARS)
    if not text:
        return None, ()
    result = redact(text)
    return result.text, result.labels


def derived_slug(text: str) -> str:
    """The slug of a record's title or text, from what its placeholders leave: never
    ``openai-key-redacted-openai-key``. A word ``redacted`` the caller wrote is dropped too,
    so no derived id is ever mistaken for (or is) a placeholder's remains."""
    slug = slugify(strip_placeholders(text))
    kept = [w for w in slug.split("-") if not is_placeholder(w)]
    return "-".join(kept) or "memory"


def derived_entities(text: str) -> tuple[str, ...]:
    """``derive_entities`` over the text without placeholders, minus any placeholder piece."""
    return tuple(e for e in derive_entities(strip_placeholders(text)) if not is_placeholder(e))


def derived_links(text: str) -> tuple[str, ...]:
    """``[[slug]]`` links of the text; a placeholder is no link (``[[REDACTED:jwt]]``)."""
    return tuple(x for x in parse_links(strip_placeholders(text)) if not is_placeholder(x))


def _same_fact(
    bank: Bank, fp: str, scope: str, project: str | None, session: str | None
) -> Memory | None:
    """The live canonical record with this fingerprint in the same place, if any (the same
    text may also live in other scopes, projects or sessions)."""
    for mem_id in bank.fp_holders(fp):
        mem = bank.records[mem_id]
        if _same_place(mem, scope, project, session):
            return mem
    return None


def _stated_in(mem: Memory, turn: str) -> bool:
    """Whether this turn created the record or is among its recent corroborations."""
    return mem.provenance.source_turn_id == turn or turn in mem.corroborated_by


def _draft_of_turn(
    bank: Bank, fp: str, turn: str, scope: str, project: str | None, session: str | None
) -> Memory | None:
    """The pending draft this turn already saved for this fact in this place, if any: under
    ratification a replayed extraction job must not file the draft twice. Drafts are few, and
    the index finds them without a walk over every record."""
    idx = bank.index
    drafts = np.flatnonzero(idx.col("pending").astype(bool) & idx.col("alive").astype(bool))
    for slot in drafts.tolist():
        mem = bank.records.get(idx.keys[slot])
        if (
            mem is not None
            and mem.status == "pending"
            and mem.invalid_at is None
            and mem.fingerprint == fp
            and mem.provenance.source_turn_id == turn
            and _same_place(mem, scope, project, session)
        ):
            return mem
    return None


def _same_place(mem: Memory, scope: str, project: str | None, session: str | None) -> bool:
    """Reinforce only a record that lives where the new one would (same scope and owner)."""
    if mem.scope != scope:
        return False
    if scope == "project":
        return mem.project == project
    if scope == "session":
        return mem.session_id == session
    return True
