"""``MemoryStore``: the store's whole public API (``shared.contract.api.StoreAPI``) as a plain
class.

The Ray actor (``store_worker.actor``) is a thin shell over this class, and it is usable as a
library without Ray (the embedded mode): ``MemoryStore(data_dir=...)``.

``MemoryStore`` is a façade: ``StoreParts`` (``parts.py``) builds the parts below on one data
dir, and each public method delegates to the part that owns the concept; the parts are composed,
none inherits another::

    Banks       storage/banks.py     the bank folders: load (replay/snapshot), create, trash
    Drafts      storage/drafts.py    ratification: what is pending, the draft files
    Writer      storage/writes.py    the write chain: validate → redact → revision → fsync → RAM
    Purger      storage/purge.py     redact --rescan and purge: the only rewrites of a log
    EventBus    storage/events.py    item-changed / bank-changed, pushed and pulled
    ShardGuard  storage/shards.py    this store as one shard of several; a bank's move
    Reader      recall/reads.py      get, list, tags, recall (the scorer: recall/scoring.py)
    Vectors     recall/vectors.py    the embedder, each bank's vector sidecar, query vectors
    Rules       harness/rules.py     each bank's rule files
    RuleReview  harness/review.py    proposed learned rules waiting for a person
    Sessions    harness/sessions.py  session lineage, pruning idle sessions' state
    Principals  harness/principals.py scoped tokens (hashes only) and who owns each session
    Injector    harness/inject.py    pre_generate / preview: what a turn is given
    Outbox      harness/outbox.py    the durable extraction queue the extractor drains
    siblings    harness/siblings.py  the sibling workers' checkpoints (state_get / state_set)
    ops.py                           doctor, describe, capabilities, configure
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from shared.contract import ops as op_types
from shared.contract.models import (
    BacklinksResponse,
    BankCreateResponse,
    BankDeleteResponse,
    BankInfo,
    BankListResponse,
    DanglingResponse,
    DoctorResponse,
    EventsResponse,
    ExportResponse,
    HistoryResponse,
    ImportResponse,
    InjectResponse,
    ListResponse,
    Memory,
    MemoryResponse,
    OutboxAckResponse,
    OutboxJob,
    OutboxListResponse,
    PreviewResponse,
    PurgeResponse,
    RecallResponse,
    RejectResponse,
    ReloadResponse,
    RescanResponse,
    Rule,
    RuleDecisionResponse,
    RuleListResponse,
    RulePendingResponse,
    RuleProposeResponse,
    RuleSetResponse,
    SaveManyResponse,
    SaveRequest,
    SaveResponse,
    SupersedeManyResponse,
    SupersedeRequest,
    SupersedeResponse,
    TagsResponse,
    TurnCompletedResponse,
)
from store_worker import ops
from store_worker.harness import siblings
from store_worker.parts import StoreParts, grouped, reading, serialized
from store_worker.recall import links
from store_worker.storage import history, imports, shards
from store_worker.storage import validate as v
from store_worker.storage.banks import Banks
from store_worker.storage.drafts import Drafts
from store_worker.storage.events import Subscriber
from store_worker.storage.writes import PreparedSave


class MemoryStore(StoreParts):
    """Named banks of rules and memories over plain files, with an in-RAM recall index.

    Thread-safe: writes to the memory logs are group-committed (``commit.py``); every other
    public method runs under the store lock."""

    # -- banks -----------------------------------------------------------------------------

    @serialized
    def bank_create(self, name: str, description: str | None = None) -> BankCreateResponse:
        return self.banks.create_described(name, description)

    @reading
    def bank_list(self) -> BankListResponse:
        if self.shard.owns(self.settings.default_bank):
            self.banks.resolve(None)  # the default bank materializes on first use
        return BankListResponse(banks=tuple(Banks.info(b) for b in self.banks.owned()))

    @serialized
    def bank_delete(self, name: str) -> BankDeleteResponse:
        target = self.banks.trash(name)
        self.reader.forget(v.bank_name(name))
        return BankDeleteResponse(ok=True, trashed_to=str(target))

    # -- memories: writes (writes.py) --------------------------------------------------------

    def _save(self, op: op_types.Save) -> SaveResponse:
        """Save one memory; the same normalised text re-saved reinforces instead, unless
        ``reinforce`` is False (memory.v1 Record always creates). Validation, redaction and
        derivations run outside the lock (while a commit fsyncs)."""
        return self._commit_saves([self.writer.prepare_save(op)])[0]

    def save_many(self, items: Sequence[object]) -> SaveManyResponse:
        """Save several memories as one all-or-nothing write: one fsync per bank for all of
        them, and nothing written when any item is refused (the extractor's and the
        consolidator's bursts)."""
        requests = [
            SaveRequest.of(item, f"item {i}") for i, item in enumerate(v.many(items, "save"))
        ]
        prepared = [self.writer.prepare_save(op_types.Save(**r.model_dump())) for r in requests]
        results = tuple(self._commit_saves(prepared))
        return SaveManyResponse(results=results, created=sum(r.created for r in results))

    @grouped
    def _commit_saves(self, prepared: builtins.list[PreparedSave]) -> builtins.list[SaveResponse]:
        """Commit prepared saves as one unit of the next group commit; every item is checked
        before any is written (a draft's file, a new bank's folder are written as it runs)."""
        for p in prepared:
            self.writer.check_save(p)
        return [self.writer.commit_save(p) for p in prepared]

    @grouped
    def _update(self, op: op_types.Update) -> MemoryResponse:
        """Revise a live memory in place: same id, next revision. Type and scope are immutable."""
        return self.writer.update(op)

    @grouped
    def pin(self, id: str, pinned: bool = True, *, bank: str | None = None) -> MemoryResponse:
        return self.writer.update(op_types.Update(id, bank=bank, pinned=pinned))

    @grouped
    def delete(
        self, id: str, *, bank: str | None = None, reason: str | None = None
    ) -> MemoryResponse:
        """Tombstone a memory: it leaves recall, stays on disk and in the history view."""
        return self.writer.delete(id, bank=bank, reason=reason)

    @grouped
    def _supersede(self, op: op_types.Supersede) -> SupersedeResponse:
        """Retire ``id`` in favour of the live ``superseded_by`` (tombstone + pointer); with
        ``revision``, only while ``id`` is still at that revision (else ``conflict``)."""
        return self.writer.supersede(op)

    def supersede_many(self, items: Sequence[object]) -> SupersedeManyResponse:
        """Several supersedes committed together, all or nothing (one fsync per bank): a
        consolidation pass's merges. Each item is checked as ``supersede`` checks it, in
        order, and sees the ones before it; when any is refused, none is written."""
        requests = [
            SupersedeRequest.of(item, f"item {i}")
            for i, item in enumerate(v.many(items, "supersede"))
        ]
        return SupersedeManyResponse(results=tuple(self._commit_supersedes(requests)))

    @grouped
    def _commit_supersedes(
        self, requests: builtins.list[SupersedeRequest]
    ) -> builtins.list[SupersedeResponse]:
        """Commit supersedes as one unit of the next group commit."""
        return [self.writer.supersede(op_types.Supersede(**r.model_dump())) for r in requests]

    @grouped
    def approve(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        """Make a pending draft canonical (ratification, ``drafts.py``)."""
        return self.writer.approve(id, bank=bank)

    @grouped
    def reject(self, id: str, *, bank: str | None = None) -> RejectResponse:
        """Discard a pending draft entirely: its file goes, the log never saw it."""
        return self.writer.reject(id, bank=bank)

    # -- secrets already stored (purge.py) -----------------------------------------------

    @serialized
    def redact_rescan(self, *, bank: str | None = None, purge: bool = False) -> RescanResponse:
        """Apply today's redaction catalogue to stored memories, rules and descriptions (of
        ``bank``, or every bank) and to the turns queued or dead-lettered for extraction.
        Without ``purge`` a record that held a secret gets a new, redacted revision; with it
        the log is rewritten so no line holds the secret."""
        bank = v.optional_bank(bank)
        try:
            done = self.purger.redact_rescan(bank=bank, purge=purge)
        finally:
            self.reader.forget(bank)
        # the turns waiting for (or refused by) extraction hold what was said, too
        jobs, kinds = self.outbox.rescan(None if bank is None else self.banks.resolve(bank).name)
        if not jobs:
            return done
        every = tuple(sorted({*done.kinds, *kinds}))
        return done.model_copy(update={"outbox_jobs": jobs, "kinds": every})

    @serialized
    def purge(self, id: str, *, bank: str | None = None) -> PurgeResponse:
        """Erase memory ``id`` and every revision of it for good (right to erasure)."""
        try:
            return self.purger.purge(id, bank=bank)
        finally:
            self.reader.forget(v.optional_bank(bank))

    # -- memories: reads (reads.py) ----------------------------------------------------------

    @reading
    def get(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        return self.reader.get(id, bank=bank)

    @reading
    def _history(self, op: op_types.History) -> HistoryResponse:
        return history.history(self.banks.resolve(op.bank), op)

    @serialized
    def _import(self, op: op_types.Import) -> ImportResponse:
        """Whole records in, validated and redacted, in one append (``imports.py``)."""
        return imports.import_records(self.writer, self.ratification, op)

    @reading
    def _export(self, op: op_types.Export) -> ExportResponse:
        """A page of a bank's records, or of every revision its log holds (``imports.py``)."""
        return imports.export(self.banks.resolve(op.bank), op)

    @reading
    def _list(self, op: op_types.List) -> ListResponse:
        """Newest first; ``page_token`` is an opaque cursor, stable while writes arrive.
        ``type_filter``/``scope_filter`` keep any of several types/scopes (with ``type`` and
        ``scope``, a record must match both)."""
        return self.reader.list(op)

    @reading
    def tags(self, *, bank: str | None = None) -> TagsResponse:
        return self.reader.tags(bank=bank)

    @reading
    def drafts(self, *, bank: str | None = None) -> tuple[Memory, ...]:
        """Every pending draft of a bank, oldest first (the review inbox)."""
        return Drafts.of(self.banks.resolve(bank))

    @reading
    def _recall(self, op: op_types.Recall) -> RecallResponse:
        """The ranked memories for a query (``recall/scoring.py``); ``retrieval`` names what ran.

        An empty query ranks every visible record by standing strength, lifted by the words of
        ``hint`` (``recall.score_bank``). ``model_target`` counts ``tokens`` (and the budget)
        with that model's tokenizer, in the response only. ``as_of`` (epoch ms) ranks as of
        that instant instead of the store's clock: recency decay makes a ranking a function
        of the time it is asked at, so two processes compare rankings only at one ``as_of``."""
        return self.reader.recall(op)

    @reading
    def dangling(self, *, bank: str | None = None) -> DanglingResponse:
        """Links of live records that point at no live record (``links.py``)."""
        return links.dangling(self.banks.resolve(bank))

    @reading
    def backlinks(self, id: str, *, bank: str | None = None) -> BacklinksResponse:
        """Live records whose links name ``id``, newest first (``links.py``)."""
        return links.backlinks(self.banks.resolve(bank), id)

    # -- rules (rules.py) ------------------------------------------------------------------

    @reading
    def rule_list(self, *, bank: str | None = None) -> RuleListResponse:
        return self.rules.rule_list(bank=bank)

    @reading
    def rule_get(self, name: str, *, bank: str | None = None) -> Rule:
        return self.rules.rule_get(name, bank=bank)

    @serialized
    def rule_set(
        self, name: str, content: str, *, bank: str | None = None, expect: str | None = None
    ) -> RuleSetResponse:
        """Create, replace or (with empty content) remove one rule; with ``expect``, only
        while the rule still holds that content ("": absent), else ``conflict``."""
        return self.rules.rule_set(name, content, bank=bank, expect=expect)

    # -- the rule review queue (review.py) ---------------------------------------------------

    @serialized
    def _rule_propose(self, op: op_types.RulePropose) -> RuleProposeResponse:
        return self.review.rule_propose(op)

    @reading
    def rule_pending(
        self, *, bank: str | None = None, rejected: bool = False
    ) -> RulePendingResponse:
        return self.review.rule_pending(bank=bank, rejected=rejected)

    @serialized
    def rule_approve(self, id: str, *, bank: str | None = None) -> RuleDecisionResponse:
        return self.review.rule_approve(id, bank=bank)

    @serialized
    def rule_reject(self, id: str, *, bank: str | None = None) -> RuleDecisionResponse:
        return self.review.rule_reject(id, bank=bank)

    # -- the harness seam (inject.py, outbox.py) ---------------------------------------------

    @serialized
    def pre_generate(
        self,
        session_id: str,
        turn_id: str | None = None,
        step: int = 0,
        messages: builtins.list[dict[str, Any]] | None = None,
        metadata: dict[str, Any] | None = None,
        parent_session_id: str | None = None,
        *,
        visible_sessions: Iterable[str] | None = None,
    ) -> InjectResponse:
        """The memory a step is given (``harness/inject.py``)."""
        return self.injector.pre_generate(
            session_id,
            turn_id,
            step,
            messages,
            metadata,
            parent_session_id,
            visible_sessions=visible_sessions,
        )

    @reading
    def preview(
        self,
        query: str,
        *,
        bank: str | None = None,
        session_id: str | None = None,
        visible_sessions: Iterable[str] | None = None,
    ) -> PreviewResponse:
        """What a new session would get for a hypothetical message."""
        return self.injector.preview(
            query, bank=bank, session_id=session_id, visible_sessions=visible_sessions
        )

    @serialized
    def turn_completed(
        self,
        session_id: str,
        turn_id: str | None = None,
        messages: builtins.list[dict[str, Any]] | None = None,
        status: str = "completed",
        parent_session_id: str | None = None,
        *,
        parent: str | None = None,
    ) -> TurnCompletedResponse:
        """Queue one durable extraction job for a finished turn (the harness's turn-completed
        hook)."""
        return self.outbox.enqueue(
            session_id, turn_id, messages, status, parent_session_id, parent=parent
        )

    @serialized
    def link_session(self, session_id: str, parent_session_id: str | None) -> None:
        """Record a sub-session's parent, so it sees its ancestors' session memories."""
        self.sessions.link(session_id, parent_session_id)

    @reading
    def session_lineage(self, session_id: str | None) -> tuple[str, ...]:
        return self.sessions.lineage(session_id)

    @serialized
    def prune_session_state(self, *, force: bool = True) -> int:
        """Forget idle sessions' injection and outbox state (``sessions.py``)."""
        return self.sessions.prune(force=force)

    # -- principals: scoped tokens, session owners (harness/principals.py) --------------------

    @serialized
    def _token_create(self, op: op_types.TokenCreate) -> dict[str, Any]:
        return self.principals.create(op)

    @reading
    def token_list(self) -> builtins.list[dict[str, Any]]:
        return self.principals.list()

    @serialized
    def token_revoke(self, name: str) -> dict[str, Any]:
        return self.principals.revoke(name)

    @reading
    def token_resolve(self, digest: str) -> dict[str, Any] | None:
        return self.principals.resolve(digest)

    @serialized
    def session_owner(self, session_id: str, claim: str | None = None) -> str | None:
        """Who owns ``session_id``; ``claim`` makes that principal its owner when it has none."""
        return self.principals.session_owner(session_id, claim)

    # -- the extraction outbox (outbox.py) ---------------------------------------------------

    @serialized
    def outbox_watch(self, name: str, callback: Callable[[], Any] | None) -> None:
        self.outbox.watch(name, callback)

    @serialized
    def outbox_claim(self, limit: int = 8) -> builtins.list[OutboxJob]:
        return self.outbox.claim(limit)

    @serialized
    def outbox_note(self, job_id: str, reply: dict[str, Any], *, lease: str) -> OutboxJob:
        return self.outbox.note(job_id, reply, lease=lease)

    @serialized
    def outbox_ack(self, job_id: str) -> OutboxAckResponse:
        return self.outbox.ack(job_id)

    @serialized
    def _outbox_fail(self, op: op_types.OutboxFail) -> OutboxAckResponse:
        return self.outbox.fail(op)

    @serialized
    def outbox_requeue(self, job_id: str, *, fresh: bool = False) -> OutboxAckResponse:
        return self.outbox.requeue(job_id, fresh=fresh)

    @serialized
    def outbox_drop(self, job_id: str) -> OutboxAckResponse:
        return self.outbox.drop(job_id)

    @reading
    def outbox_list(self, *, include_dead: bool = True, limit: int = 100) -> OutboxListResponse:
        return self.outbox.listing(include_dead=include_dead, limit=limit)

    @reading
    def outbox_job(self, job_id: str) -> OutboxJob:
        return self.outbox.job(job_id)

    # -- events and sibling state ------------------------------------------------------------

    @serialized
    def subscribe(
        self, name: str, callback: Subscriber, banks: Iterable[str] | None = None
    ) -> None:
        self.events.subscribe(name, callback, set(banks) if banks else None)

    @serialized
    def unsubscribe(self, name: str) -> bool:
        return self.events.unsubscribe(name)

    @reading
    def events_since(
        self, cursor: int = 0, *, limit: int = 500, bank: str | None = None
    ) -> EventsResponse:
        return self.events.page(cursor, limit=limit, bank=bank)

    @reading
    def state_get(self, owner: str, key: str) -> object | None:
        """A sibling's checkpoint (``siblings.py``); None when never written."""
        return siblings.get(self.state, self.shard, owner, key)

    @serialized
    def state_set(self, owner: str, key: str, value: object) -> None:
        """Write a sibling's checkpoint, redacted like every other write (``siblings.py``)."""
        siblings.put(self.state, owner, key, value)

    # -- operations --------------------------------------------------------------------------

    @reading  # its write probe goes through the write verbs, which refuse what they must
    def doctor(self, siblings: ops.SiblingProbe | None = None) -> DoctorResponse:
        self._refuse_if_closed(moved=False)  # a data dir moved away is a failed check
        return ops.doctor(self, siblings)

    @reading
    def describe(self) -> dict[str, Any]:
        return ops.describe(self)

    @reading
    def capabilities(self) -> dict[str, Any]:
        return ops.capabilities(self)

    @serialized
    def configure(self, config: dict[str, Any]) -> dict[str, Any]:
        """Validate and apply a partial settings change; unknown keys change nothing."""
        return ops.configure(self, config)

    @serialized
    def reload(self) -> ReloadResponse:
        self._reopen()
        corrupt = sum(b.stats.corrupt for b in self.banks.values())
        return ReloadResponse(ok=True, banks=tuple(sorted(self.banks)), corrupt_lines=corrupt)

    # -- this store as one shard of several (shards.py; the mover: shared.client.sharded) --

    @reading
    def shard_routing(self, table: dict[str, Any] | None = None) -> dict[str, Any]:
        """This shard's number, slot table and every bank folder it holds (owned or not);
        with ``table``, take that slot table first (durably; an older version is refused)."""
        if table is not None:
            self._refuse_if_closed()  # a read, but taking a table writes it
            self.shard.set(table)
        return {**self.shard.describe(), "banks": sorted(self.banks)}

    @reading
    def bank_copy(self, name: str) -> dict[str, bytes]:
        """A frozen or foreign bank's files, by relative path (a move's copy step)."""
        return shards.copy_bank(self.shard, self.banks, name)

    @serialized
    def bank_place(self, name: str, files: dict[str, bytes]) -> BankInfo:
        """Place a bank's files (``bank_copy``) here and load them; the bank must not be
        owned by this shard yet, and an earlier copy of it goes to ``.trash``."""
        name = shards.place_bank(self.shard, self.banks, self.root, name, files)
        self.reader.forget(name)
        return Banks.info(self.banks.reload(name))

    @serialized
    def bank_release(self, name: str) -> BankDeleteResponse:
        """Trash this shard's copy of a bank another shard now owns (a move's last step)."""
        target = shards.release_bank(self.shard, self.banks, name)
        self.reader.forget(v.bank_name(name))
        return BankDeleteResponse(ok=True, trashed_to=str(target))

    def trash_dir(self) -> Path:
        return self.banks.trash_dir

    @serialized
    def purge_trash(self, path: str) -> None:
        """Remove one trashed folder for good (doctor's scratch bank only)."""
        self.banks.purge_trashed(path)


MemoryStore.SERVED_AS_OPS = {
    op_types.Save: MemoryStore._save,
    op_types.List: MemoryStore._list,
    op_types.Recall: MemoryStore._recall,
    op_types.Update: MemoryStore._update,
    op_types.History: MemoryStore._history,
    op_types.Import: MemoryStore._import,
    op_types.Export: MemoryStore._export,
    op_types.Supersede: MemoryStore._supersede,
    op_types.OutboxFail: MemoryStore._outbox_fail,
    op_types.RulePropose: MemoryStore._rule_propose,
    op_types.TokenCreate: MemoryStore._token_create,
}
