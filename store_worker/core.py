"""``MemoryStore``: the store's whole public API as a plain class (DESIGN §1-4).

The Ray actor (``store_worker.actor``) is a thin shell over this class, and it is usable as a
library without Ray (the embedded mode): ``MemoryStore(data_dir=...)``.

Every mutating method follows the same chain: validate and redact the input (nothing written
on a bad call) → build the next revision → append one fsynced line → change RAM → emit an event.
"""

from __future__ import annotations

import base64
import bisect
import builtins
import json
import logging
import shutil
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from shared import errors
from shared.clock import Clock, SystemClock
from shared.config import StoreSettings
from shared.models import (
    CORROBORATED_BY_KEPT,
    BankCreateResponse,
    BankDeleteResponse,
    BankInfo,
    BankListResponse,
    DoctorResponse,
    Event,
    EventsResponse,
    ListResponse,
    Memory,
    MemoryResponse,
    Provenance,
    RecallResponse,
    ReloadResponse,
    SaveResponse,
    ScoredMemory,
    SupersedeResponse,
    TagCount,
    TagsResponse,
)
from shared.redact import redact
from shared.text import fingerprint, parse_links, slugify
from shared.tokens import TokenCounter
from store_worker import lock as dir_lock
from store_worker import ops
from store_worker import recall as recall_mod
from store_worker import validate as v
from store_worker.bank import Bank
from store_worker.drafts import DraftsMixin
from store_worker.embed import Embedder, embedder_for
from store_worker.entities import derive_entities
from store_worker.events import EventBus, Subscriber
from store_worker.files import TRASH_DIR, StateStore, check_writable, remove_stale_staging
from store_worker.inject import InjectMixin
from store_worker.links import LinksMixin
from store_worker.outbox import OutboxMixin
from store_worker.provider import ProviderMixin
from store_worker.rules import RulesMixin
from store_worker.tools import ToolsMixin
from store_worker.vectors import VectorMixin

log = logging.getLogger(__name__)
# Sibling-state owners whose keys are per session (inject.py, outbox.py): safe to forget.
SESSION_STATE_OWNERS = ("inject", "outbox")
PRUNE_EVERY_S = 86_400.0


def _embedder_name(embedder: Embedder | None) -> str | None:
    return None if embedder is None else embedder.name


class MemoryStore(
    RulesMixin,
    VectorMixin,
    InjectMixin,
    OutboxMixin,
    DraftsMixin,
    LinksMixin,
    ToolsMixin,
    ProviderMixin,
):
    """Named banks of rules and memories over plain files, with an in-RAM recall index."""

    def __init__(
        self,
        data_dir: str | Path | None = None,
        *,
        settings: StoreSettings | None = None,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        base = settings or StoreSettings()
        if data_dir is not None:
            base = base.merged({"data_dir": str(data_dir)})
        self.settings = base
        self.clock = clock or SystemClock()
        self.embedder = embedder or self._embedder_from(base)
        self._query_vectors: OrderedDict[tuple[str, str], list[float]] = OrderedDict()
        self.tokens = TokenCounter(base.token_model)
        self.events = EventBus(base.event_buffer)
        self.banks: dict[str, Bank] = {}
        self.session_parents: dict[str, str] = {}
        self._list_cache: dict[str, tuple[object, Any, Any]] = {}
        self._lock: dir_lock.DirLock | None = None
        self._open()

    # -- lifecycle ---------------------------------------------------------------------------

    @staticmethod
    def _embedder_from(settings: StoreSettings) -> Embedder | None:
        """The configured backend (``embedder_for``); a bad ``local:`` folder raises here."""
        if settings.embeddings_enabled and settings.embedding_model:
            return embedder_for(settings.embedding_model)
        return None

    def _open(self) -> None:
        self.root = self.settings.data_path
        self._lock = dir_lock.hold(self.root, self._lock)  # one writer per data dir
        remove_stale_staging(self.root)
        check_writable(self.root)  # boot-fatal: never run in RAM (DESIGN §2)
        self.state = StateStore(self.root)
        self.banks = {}
        self._list_cache = {}
        for path in sorted(self.root.iterdir()):
            if path.is_dir() and not path.name.startswith("."):
                try:
                    v.bank_name(path.name)
                except errors.InvalidArgumentError:
                    log.warning("ignoring folder %s: not a valid bank name", path)
                    continue
                self._load_bank(path.name)
        parents = self.state.get("store", "session-parents")
        self.session_parents = dict(parents) if isinstance(parents, dict) else {}
        self._open_outbox()
        self._pruned_at = 0.0
        self.prune_session_state()

    def prune_session_state(self, *, force: bool = True) -> int:
        """Forget the per-session injection and outbox state of sessions idle for longer than
        ``session_state_days`` (their files' mtime, wall clock). Runs at open and at most once
        a day from ``pre_generate``/``turn_completed``; returns how many files went. A session
        that comes back after that starts afresh: its rules section is sent whole again, and a
        whole-window caller's old messages are queued again (restatements only reinforce)."""
        days = self.settings.session_state_days
        now = time.time()
        if days <= 0 or (not force and now - self._pruned_at < PRUNE_EVERY_S):
            return 0
        self._pruned_at = now
        cutoff = now - days * 86_400
        gone = sum(self.state.prune(owner, cutoff) for owner in SESSION_STATE_OWNERS)
        if gone:
            log.info("pruned the state of %d idle session file(s)", gone)
        return gone

    def _load_bank(self, name: str) -> Bank:
        bank = Bank(self.root, name)
        bank.load()
        self._load_drafts(bank)
        self.banks[name] = bank
        self._load_vectors(bank)
        return bank

    def close(self) -> None:
        self._close_logs()
        dir_lock.release(self._lock)

    def _close_logs(self) -> None:
        for bank in self.banks.values():
            bank.files.log.close()

    def now(self) -> int:
        return self.clock.now_ms()

    # -- banks -----------------------------------------------------------------------------

    def _bank(self, name: str | None, *, create: bool = False) -> Bank:
        """Resolve a bank: the default materializes on first use; writes create others."""
        name = v.bank_name(name or self.settings.default_bank)
        bank = self.banks.get(name)
        if bank is not None:
            return bank
        if create or name == self.settings.default_bank:
            return self._create_bank(name, "")[0]
        raise errors.NotFoundError(f"no bank named {name!r}")

    def _create_bank(self, name: str, description: str) -> tuple[Bank, bool]:
        existing = self.banks.get(name)
        if existing is not None:
            return existing, False
        bank = Bank(self.root, name)
        if bank.files.exists():  # created on disk by hand since the last reload
            bank.load()
            self._load_drafts(bank)
        else:
            bank.files.create(description, self.now())
            bank.description, bank.created_at = bank.files.read_meta()
        self.banks[name] = bank
        self.events.emit("bank-changed", "created", name, now=self.now())
        return bank, True

    def _info(self, bank: Bank) -> BankInfo:
        live, pinned = bank.counts()
        return BankInfo(
            name=bank.name,
            description=bank.description,
            created_at=bank.created_at,
            memories=live,
            rules=len(bank.rules),
            pinned=pinned,
        )

    def bank_create(self, name: str, description: str | None = None) -> BankCreateResponse:
        name = v.bank_name(name)
        description = redact(v.optional_str(description, "description", 2000) or "").text
        bank, created = self._create_bank(name, description)
        if not created and description and description != bank.description:
            bank.files.write_meta(description, bank.created_at)
            bank.description = description
        return BankCreateResponse(bank=self._info(bank), created=created)

    def bank_list(self) -> BankListResponse:
        self._bank(None)  # the default bank materializes on first use
        return BankListResponse(banks=tuple(self._info(b) for _, b in sorted(self.banks.items())))

    def bank_delete(self, name: str) -> BankDeleteResponse:
        bank = self._bank(v.bank_name(name))
        target = bank.files.trash(self.now())
        del self.banks[bank.name]
        self._list_cache.pop(bank.name, None)
        self.events.emit("bank-changed", "trashed", bank.name, now=self.now())
        return BankDeleteResponse(ok=True, trashed_to=str(target))

    # -- memories: writes ------------------------------------------------------------------

    def save(
        self,
        text: str,
        *,
        bank: str | None = None,
        title: str | None = None,
        id: str | None = None,
        type: str = "user",
        scope: str = "global",
        project: str | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        recorded_by: str | None = None,
        tags: Iterable[str] | None = None,
        entities: Iterable[str] | None = None,
        pinned: bool = False,
        confidence: str = "stated",
        status: str | None = None,
    ) -> SaveResponse:
        """Save one memory; the same normalised text re-saved reinforces instead."""
        clean = self._clean_fields(text=text, title=title, tags=tags, entities=entities)
        mem_type = v.memory_type(type)
        mem_scope = v.memory_scope(scope)
        project_dir = v.project_path(project) if mem_scope == "project" else None
        session = v.optional_str(session_id, "session_id")
        if mem_scope == "session" and session is None:
            raise errors.InvalidScopeError("scope 'session' needs a session_id")
        provenance = Provenance(
            source_session_id=session,
            source_turn_id=v.turn_id(turn_id),
            recorded_by=v.optional_str(recorded_by, "recorded_by"),
        )
        wanted_id = v.memory_id(id) if id is not None else None
        conf = v.confidence(confidence)
        mem_status = self._status_for(status, conf)  # drafts.py: pending under ratification
        target = self._bank(bank, create=True)
        fp = fingerprint(clean["text"])
        existing = _same_fact(target, fp, mem_scope, project_dir, session)
        if existing is not None:
            return self._reinforce(target, existing, clean, pinned, provenance.source_turn_id)
        turn = provenance.source_turn_id
        draft = (
            _draft_of_turn(target, fp, turn, mem_scope, project_dir, session)
            if (mem_status == "pending" and turn is not None)
            else None
        )
        if draft is not None:  # this turn's draft of the fact, saved before a replay
            return SaveResponse(
                created=False, memory=draft, bank=target.name, redacted=tuple(clean["redacted"])
            )
        now = self.now()
        mem = Memory(
            id=self._free_id(target, wanted_id or slugify(clean["title"] or clean["text"])),
            fingerprint=fp,
            type=mem_type,
            scope=mem_scope,
            project=project_dir,
            session_id=session if mem_scope == "session" else None,
            title=clean["title"],
            text=clean["text"],
            tags=clean["tags"],
            entities=clean["entities"] or derive_entities(clean["text"]),
            links=tuple(parse_links(clean["text"])),
            pinned=bool(pinned),
            confidence=conf,
            status=mem_status,
            provenance=provenance,
            created_at=now,
            updated_at=now,
            stated_at=now,
            tokens=self.tokens.count(clean["text"]),
        )
        self._commit(target, mem)  # drafts.py: a pending draft stays out of the log
        self._embed_one(target, mem)
        redacted = tuple(clean["redacted"])
        self._emit_item("created", target, mem, redacted=redacted)
        return SaveResponse(created=True, memory=mem, bank=target.name, redacted=redacted)

    def _clean_fields(
        self,
        *,
        text: object = None,
        title: object = None,
        tags: Iterable[Any] | None = None,
        entities: Iterable[Any] | None = None,
        text_required: bool = True,
    ) -> dict[str, Any]:
        """Validate, then redact every free-text field (DESIGN §6 "on every write path")."""
        labels: set[str] = set()

        def scrub(value: str) -> str:
            result = redact(value)
            labels.update(result.labels)
            return result.text

        out: dict[str, Any] = {}
        if text_required or text is not None:
            out["text"] = scrub(v.text(text, max_chars=self.settings.max_text_chars))
        out["title"] = scrub(v.title(title))
        out["tags"] = _clean_labels(tags, "tags", scrub)
        out["entities"] = _clean_labels(entities, "entities", scrub)
        out["redacted"] = sorted(labels)
        return out

    def _free_id(self, bank: Bank, wanted: str) -> str:
        """The wanted slug, or the first free ``-2``, ``-3`` … suffix: never an overwrite."""
        if wanted not in bank.records:
            return wanted  # a valid author-suggested id is kept whole (up to 80 chars)
        base = wanted[:72].rstrip("-") or "memory"  # room for the suffix
        n = 2
        while f"{base}-{n}" in bank.records:
            n += 1
        return f"{base}-{n}"

    def _reinforce(
        self,
        bank: Bank,
        existing: Memory,
        clean: dict[str, Any],
        pinned: bool,
        turn: str | None,
    ) -> SaveResponse:
        """Count one more statement of the fact; a turn that already stated it counts once.

        The same turn saving the same fact again is an extraction job replayed after a crash
        (the outbox is at-least-once): that save changes nothing, unless it pins."""
        redacted = tuple(clean["redacted"])
        again = turn is not None and _stated_in(existing, turn)
        if again and (existing.pinned or not pinned):
            return SaveResponse(created=False, memory=existing, bank=bank.name, redacted=redacted)
        now = self.now()
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
                "stated_at": now,
                "updated_at": now,
                "revision": existing.revision + 1,
            }
        )
        bank.apply(mem)
        self._emit_item("updated", bank, mem, reason="reinforced", redacted=redacted)
        return SaveResponse(created=False, memory=mem, bank=bank.name, redacted=redacted)

    def update(
        self,
        id: str,
        *,
        bank: str | None = None,
        text: str | None = None,
        title: str | None = None,
        tags: Iterable[str] | None = None,
        entities: Iterable[str] | None = None,
        pinned: bool | None = None,
        type: str | None = None,
        scope: str | None = None,
    ) -> MemoryResponse:
        """Revise a live memory in place: same id, next revision. Type and scope are immutable."""
        target = self._bank(bank)
        current = self._live(target, id)
        if type is not None and type != current.type:
            raise errors.InvalidTypeError(f"type is immutable ({current.type}); save a new memory")
        if scope is not None and scope != current.scope:
            raise errors.InvalidScopeError(
                f"scope is immutable ({current.scope}); save a new memory"
            )
        clean = self._clean_fields(
            text=text, title=title, tags=tags, entities=entities, text_required=False
        )
        now = self.now()
        changes: dict[str, Any] = {"updated_at": now, "revision": current.revision + 1}
        if "text" in clean and clean["text"] != current.text:
            changes.update(
                text=clean["text"],
                fingerprint=fingerprint(clean["text"]),
                links=tuple(parse_links(clean["text"])),
                tokens=self.tokens.count(clean["text"]),
                stated_at=now,  # the fact was re-stated; pin/tag edits never move it
            )
        if title is not None:
            changes["title"] = clean["title"]
        if tags is not None:
            changes["tags"] = clean["tags"]
        if entities is not None:
            changes["entities"] = clean["entities"]
        if pinned is not None:
            changes["pinned"] = bool(pinned)
        mem = self._commit(target, current.model_copy(update=changes))
        if "text" in changes:
            self._embed_one(target, mem)
        self._emit_item("updated", target, mem, redacted=tuple(clean["redacted"]))
        return MemoryResponse(memory=mem, bank=target.name)

    def pin(self, id: str, pinned: bool = True, *, bank: str | None = None) -> MemoryResponse:
        return self.update(id, bank=bank, pinned=pinned)

    def delete(
        self, id: str, *, bank: str | None = None, reason: str | None = None
    ) -> MemoryResponse:
        """Tombstone a memory: it leaves recall, stays on disk and in the history view."""
        reason = v.optional_text(reason, "reason") or None
        target = self._bank(bank)
        current = self._live(target, id)
        now = self.now()
        mem = self._commit(
            target,
            current.model_copy(
                update={"invalid_at": now, "updated_at": now, "revision": current.revision + 1}
            ),
        )
        self._emit_item("deleted", target, mem, reason=reason)
        return MemoryResponse(memory=mem, bank=target.name)

    def supersede(
        self,
        id: str,
        superseded_by: str,
        *,
        bank: str | None = None,
        reason: str | None = None,
        reinforce: bool = False,
    ) -> SupersedeResponse:
        """Retire ``id`` in favour of the live ``superseded_by`` (tombstone + pointer)."""
        reason = v.optional_text(reason, "reason") or None
        target = self._bank(bank)
        v.memory_id(id)
        v.memory_id(superseded_by)
        if id == superseded_by:
            raise errors.ConflictError(f"{id} cannot supersede itself")
        survivor = self._live(target, superseded_by, role="survivor")
        loser = self._live(target, id)
        self._refuse_drafts(loser, survivor)
        if loser.pinned:
            raise errors.ConflictError(f"{id} is pinned; unpin it before superseding it")
        now = self.now()
        retired = loser.model_copy(
            update={
                "invalid_at": now,
                "superseded_by": survivor.id,
                "updated_at": now,
                "revision": loser.revision + 1,
            }
        )
        merged = survivor
        reinforced = reinforce and not survivor.pinned
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
        self._emit_item("superseded", target, retired, reason=reason)
        if reinforced:
            self._emit_item("updated", target, merged, reason=reason or "reinforced")
        return SupersedeResponse(
            memory=retired, survivor=merged, reinforced=reinforced, bank=target.name
        )

    def _live(self, bank: Bank, id: str, *, role: str = "memory") -> Memory:
        mem = bank.records.get(v.memory_id(id))
        if mem is None:
            raise errors.NotFoundError(f"no {role} {id!r} in bank {bank.name!r}")
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
    ) -> Event:
        if reason:  # a caller's free text reaches subscribers: redact it like any write
            scrubbed = redact(reason)
            reason = scrubbed.text
            redacted = tuple(sorted({*redacted, *scrubbed.labels}))
        return self.events.emit(
            "item-changed",
            event_type,
            bank.name,
            now=self.now(),
            memory=mem,
            reason=reason,
            redacted=redacted,
        )

    # -- memories: reads -------------------------------------------------------------------

    def get(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        target = self._bank(bank)
        mem = target.records.get(v.memory_id(id))
        if mem is None:
            raise errors.NotFoundError(f"no memory {id!r} in bank {target.name!r}")
        return MemoryResponse(memory=mem, bank=target.name)

    def list(
        self,
        *,
        bank: str | None = None,
        tag: str | None = None,
        type: str | None = None,
        scope: str | None = None,
        status: str | None = None,
        include_superseded: bool = False,
        page_size: int | None = None,
        page_token: str | None = None,
    ) -> ListResponse:
        """Newest first; ``page_token`` is an opaque cursor, stable while writes arrive."""
        size = v.page_size(page_size)
        mem_type = v.memory_type(type) if type is not None else None
        mem_scope = v.memory_scope(scope) if scope is not None else None
        if status not in (None, "canonical", "pending"):
            raise errors.InvalidArgumentError(f"unknown status {status!r}")
        after = _decode_token(page_token) if page_token else None
        target = self._bank(bank)
        tag_norm = v.labels([tag], "tags")[0] if tag else None
        filters = (tag_norm, mem_type, mem_scope, status, bool(include_superseded))
        rows, keys = self._listing(target, filters)
        total = len(rows)
        # keys ascend (oldest first): the page after a cursor is the slice just below it
        end = bisect.bisect_left(keys, after) if after is not None else len(keys)
        page = rows[max(end - size, 0) : end][::-1]
        token = _encode_token(page[-1]) if end > size else None
        return ListResponse(
            memories=tuple(page), next_page_token=token, total=total, bank=target.name
        )

    def _listing(
        self, bank: Bank, filters: tuple[object, ...]
    ) -> tuple[builtins.list[Memory], builtins.list[tuple[int, str]]]:
        """The records matching ``filters``, oldest first, with their sort keys.

        Cached until the bank changes, so paging through a large bank (the consolidator reads
        every page) costs one filter-and-sort, not one per page. Every write gives the index a
        new slot and a discarded draft shrinks ``records``, so (index object, slots, records)
        names the bank's state exactly."""
        state = (bank.index, bank.index.capacity, len(bank.records), filters)
        cached = self._list_cache.get(bank.name)
        if cached is not None and cached[0] == state:
            return cached[1], cached[2]
        tag, mem_type, mem_scope, status, include_superseded = filters
        rows = sorted(
            (
                m
                for m in bank.records.values()
                if (include_superseded or m.invalid_at is None)
                and (tag is None or tag in m.tags)
                and (mem_type is None or m.type == mem_type)
                and (mem_scope is None or m.scope == mem_scope)
                and (status is None or m.status == status)
            ),
            key=lambda m: (m.created_at, m.id),
        )
        keys = [(m.created_at, m.id) for m in rows]
        self._list_cache[bank.name] = (state, rows, keys)
        return rows, keys

    def tags(self, *, bank: str | None = None) -> TagsResponse:
        target = self._bank(bank)
        counts = Counter(t for m in target.live() for t in m.tags)
        ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        return TagsResponse(
            bank=target.name, tags=tuple(TagCount(tag=t, count=c) for t, c in ordered)
        )

    def recall(
        self,
        query: str,
        *,
        bank: str | None = None,
        limit: int | None = None,
        tag: str | None = None,
        mode: str = "hybrid",
        include_superseded: bool = False,
        include_pending: bool = False,
        token_budget: int | None = None,
        session_id: str | None = None,
        project: str | None = None,
        type_filter: Iterable[str] | None = None,
        scope_filter: Iterable[str] | None = None,
    ) -> RecallResponse:
        """The ranked memories for a query (DESIGN §4); ``retrieval`` names what ran."""
        params = self._recall_params(
            query,
            limit=limit,
            tag=tag,
            mode=mode,
            include_superseded=include_superseded,
            include_pending=include_pending,
            token_budget=token_budget,
            session_id=session_id,
            project=project,
            type_filter=type_filter,
            scope_filter=scope_filter,
        )
        target = self._bank(bank)
        query_vector, retrieval = self._query_vector(target, params)
        hits = recall_mod.run(target, params, self.now(), query_vector)
        return RecallResponse(
            memories=tuple(
                ScoredMemory(memory=h.memory, relevance_score=h.relevance, score=h.score)
                for h in hits
            ),
            retrieval=retrieval,
            bank=target.name,
        )

    def _recall_params(self, query: object, **kw: Any) -> recall_mod.RecallParams:
        if not isinstance(query, str):
            raise errors.InvalidArgumentError("query must be a string")
        if kw["mode"] not in ("hybrid", "lexical", "semantic"):
            raise errors.InvalidArgumentError(f"unknown recall mode {kw['mode']!r}")
        budget = kw["token_budget"]
        if budget is not None and (not isinstance(budget, int) or budget < 0):
            raise errors.InvalidArgumentError("token_budget must be a non-negative integer")
        session = v.optional_str(kw["session_id"], "session_id")
        return recall_mod.RecallParams(
            query=query[: self.settings.max_text_chars],
            limit=v.limit(kw["limit"], self.settings.recall_limit),
            mode=kw["mode"],
            tag=v.labels([kw["tag"]], "tags")[0] if kw["tag"] else None,
            include_superseded=bool(kw["include_superseded"]),
            include_pending=bool(kw["include_pending"]),
            token_budget=budget,
            session_ids=frozenset(self.session_lineage(session)),
            project=v.project_path(kw["project"]) if kw["project"] else None,
            type_filter=v.memory_types(kw["type_filter"]),
            scope_filter=v.memory_scopes(kw["scope_filter"]),
            half_life_days=self.settings.decay_half_life_days,
        )

    # -- sessions (visibility of session-scoped records) ------------------------------------

    def link_session(self, session_id: str, parent_session_id: str | None) -> None:
        """Record a sub-session's parent, so it sees its ancestors' session memories."""
        session_id = v.optional_str(session_id, "session_id") or ""
        parent_session_id = v.optional_str(parent_session_id, "parent_session_id")
        if not session_id or not parent_session_id or parent_session_id == session_id:
            return
        if self.session_parents.get(session_id) == parent_session_id:
            return
        parents = {**self.session_parents, session_id: parent_session_id}
        self.state.set("store", "session-parents", parents)  # disk first: a refusal keeps RAM
        self.session_parents = parents

    def session_lineage(self, session_id: str | None) -> tuple[str, ...]:
        session_id = v.optional_str(session_id, "session_id")
        out: builtins.list[str] = []
        while session_id and session_id not in out and len(out) < 64:
            out.append(session_id)
            session_id = self.session_parents.get(session_id)
        return tuple(out)

    # -- events and sibling state --------------------------------------------------------------

    def subscribe(
        self, name: str, callback: Subscriber, banks: Iterable[str] | None = None
    ) -> None:
        self.events.subscribe(name, callback, set(banks) if banks else None)

    def unsubscribe(self, name: str) -> bool:
        return self.events.unsubscribe(name)

    def events_since(
        self, cursor: int = 0, *, limit: int = 500, bank: str | None = None
    ) -> EventsResponse:
        cursor, limit, bank = v.cursor(cursor), v.events_limit(limit), v.optional_bank(bank)
        found = self.events.since(cursor, limit=limit, bank=bank)
        last = found[-1].seq if found else max(cursor, 0)
        if not found and cursor > self.events.cursor:
            last = self.events.cursor
        return EventsResponse(events=tuple(found), cursor=last)

    def state_get(self, owner: str, key: str) -> object | None:
        return self.state.get(v.rule_name(owner), v.rule_name(key))

    def state_set(self, owner: str, key: str, value: object) -> None:
        v.json_value(value, "state value")
        self.state.set(v.rule_name(owner), v.rule_name(key), value)

    # -- operations ------------------------------------------------------------------------

    def doctor(self, siblings: ops.SiblingProbe | None = None) -> DoctorResponse:
        return ops.doctor(self, siblings)

    def describe(self) -> dict[str, Any]:
        return ops.describe(self)

    def capabilities(self) -> dict[str, Any]:
        return ops.capabilities(self)

    def configure(self, config: dict[str, Any]) -> dict[str, Any]:
        """Validate and apply a partial settings change; unknown keys change nothing."""
        if not isinstance(config, dict):
            raise errors.InvalidArgumentError("config must be a mapping of setting → value")
        new = self.settings.merged(config)
        embedder = self.embedder
        if "embedding_model" in config or "embeddings_enabled" in config:
            fresh = self._embedder_from(new)  # before any change: a bad folder changes nothing
            if _embedder_name(fresh) != _embedder_name(self.embedder):
                embedder = fresh
        # Another model's vectors mean nothing to the new one: reopening re-reads the sidecars.
        reopen = new.data_path != self.settings.data_path or embedder is not self.embedder
        self._lock = dir_lock.hold(new.data_path, self._lock)  # refused: nothing changed
        self.settings = new
        self.tokens = TokenCounter(new.token_model)
        self.embedder = embedder
        if reopen:
            self._close_logs()
            self._open()
        return new.model_dump()

    def reload(self) -> ReloadResponse:
        self._close_logs()
        self._open()
        corrupt = sum(b.stats.corrupt for b in self.banks.values())
        return ReloadResponse(ok=True, banks=tuple(sorted(self.banks)), corrupt_lines=corrupt)

    def trash_dir(self) -> Path:
        return self.root / TRASH_DIR

    def purge_trash(self, path: str) -> None:
        """Remove one trashed folder for good (doctor's scratch bank only)."""
        target = Path(path).resolve()
        if target.parent != self.trash_dir().resolve():
            raise errors.InvalidArgumentError("only folders directly in .trash can be purged")
        shutil.rmtree(target, ignore_errors=True)


def _clean_labels(
    values: Iterable[Any] | None, what: str, scrub: Callable[[str], str]
) -> tuple[str, ...]:
    """Validate labels, then redact the values *as given*: normalising first would lowercase
    a secret (an AWS key) out of the shape the redactor knows, and store it."""
    raw = v.label_list(values, what)
    v.labels(raw, what)  # types and count, before anything is redacted
    return v.labels([scrub(x) for x in raw], what)


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


def _encode_token(mem: Memory) -> str:
    raw = json.dumps([mem.created_at, mem.id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_token(token: str) -> tuple[int, str]:
    return v.page_token(token)
