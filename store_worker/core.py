"""``MemoryStore``: the store's whole public API (``shared.api.StoreAPI``) as a plain class.

The Ray actor (``store_worker.actor``) is a thin shell over this class, and it is usable as a
library without Ray (the embedded mode): ``MemoryStore(data_dir=...)``.

``MemoryStore`` is a façade: it builds the parts below on one data dir and delegates each
public method to the part that owns the concept (STYLE §5a: compose, don't mix in)::

    Banks     banks.py     the bank folders: load (replay/snapshot), create, trash, resolve
    Drafts    drafts.py    ratification: what is pending, the draft files (``.ratification``)
    Vectors   vectors.py   the embedder, each bank's vector sidecar, query vectors
    Writer    writes.py    the write chain: validate → redact → revision → fsync → RAM → event
    Reader    reads.py     get, list, tags, recall (the scorer is ``recall.py``)
    Rules     rules.py     each bank's rule files
    Sessions  sessions.py  session lineage, pruning idle sessions' state
    Injector  inject.py    pre_generate / preview: what a turn is given
    Outbox    outbox.py    the durable extraction queue the extractor drains
    Purger    purge.py     redact --rescan and purge: the only rewrites of a log
    EventBus  events.py    item-changed / bank-changed, pushed and pulled
    ops.py                 doctor, describe, capabilities
"""

from __future__ import annotations

import builtins
import functools
import shutil
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar

from shared import errors
from shared.clock import Clock, SystemClock
from shared.config import StoreSettings
from shared.models import (
    MAX_SAVE_ITEMS,
    BacklinksResponse,
    BankCreateResponse,
    BankDeleteResponse,
    BankInfo,
    BankListResponse,
    DanglingResponse,
    DoctorResponse,
    EventsResponse,
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
    RuleListResponse,
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
from shared.redact import redact, redact_json
from shared.shards import STATE_KEY, STATE_OWNER, frozen_error
from shared.tokens import TokenCounter
from store_worker import ops
from store_worker.harness.inject import STATE_OWNER as INJECT_OWNER
from store_worker.harness.inject import Injector
from store_worker.harness.outbox import Outbox
from store_worker.harness.rules import Rules
from store_worker.harness.sessions import Sessions
from store_worker.recall import links
from store_worker.recall import scoring as recall_mod
from store_worker.recall import synonyms as synonyms_mod
from store_worker.recall.embed import Embedder, embedder_for
from store_worker.recall.reads import Reader
from store_worker.recall.synonyms import SynonymSource
from store_worker.recall.vectors import Vectors
from store_worker.storage import lock as dir_lock
from store_worker.storage import shards
from store_worker.storage import validate as v
from store_worker.storage.bank import Bank
from store_worker.storage.banks import Banks
from store_worker.storage.commit import GroupCommit
from store_worker.storage.drafts import Drafts
from store_worker.storage.events import EventBus, Subscriber
from store_worker.storage.files import MEMORIES, TRASH_DIR, check_writable, remove_stale_staging
from store_worker.storage.state import StateStore
from store_worker.storage.purge import Purger
from store_worker.storage.shards import ShardGuard
from store_worker.storage.writes import PreparedSave, Writer

MAX_SAVE_MANY = MAX_SAVE_ITEMS
P = ParamSpec("P")
R = TypeVar("R")
StoreMethod = Callable[Concatenate["MemoryStore", P], R]


def _serialized(method: StoreMethod[P, R]) -> StoreMethod[P, R]:
    """Run under the store lock: a read sees no batch half-committed (``commit.py``). A
    closed store refuses it (it may change files another process now holds)."""
    return _locked(method, writes=True)


def _reading(method: StoreMethod[P, R]) -> StoreMethod[P, R]:
    """Like ``_serialized`` for a method that changes nothing on disk: a closed store still
    answers from RAM (what it held when it closed)."""
    return _locked(method, writes=False)


def _locked(method: StoreMethod[P, R], *, writes: bool) -> StoreMethod[P, R]:
    @functools.wraps(method)
    def locked(self: MemoryStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.lock:
            if writes:
                self._refuse_if_closed()
            self._held.depth = getattr(self._held, "depth", 0) + 1
            try:
                return method(self, *args, **kwargs)
            finally:
                self._held.depth -= 1

    return locked


def _grouped(method: StoreMethod[P, R]) -> StoreMethod[P, R]:
    """Run as part of the next group commit: acknowledged only once its line is fsynced."""

    @functools.wraps(method)
    def committed(self: MemoryStore, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if getattr(self._held, "depth", 0):  # already inside a locked call (doctor's probe):
            return method(self, *args, **kwargs)  # commit alone rather than wait on itself

        def write() -> R:  # run by the batch's leader under the store lock, as close is
            self._refuse_if_closed()
            return method(self, *args, **kwargs)

        self._refuse_if_closed()
        return self.commits.run(write)

    return committed


def _items(items: object, verb: str) -> Sequence[object]:
    """A ``*_many`` call's items: a list or tuple of at most ``MAX_SAVE_MANY``."""
    if not isinstance(items, list | tuple) or len(items) > MAX_SAVE_MANY:
        raise errors.InvalidArgumentError(
            f"items must be a list of at most {MAX_SAVE_MANY} {verb} requests"
        )
    return items


class MemoryStore:
    """Named banks of rules and memories over plain files, with an in-RAM recall index.

    Thread-safe: writes to the memory logs are group-committed (``commit.py``); every other
    public method runs under the store lock."""

    def __init__(
        self,
        data_dir: str | Path | None = None,
        *,
        settings: StoreSettings | None = None,
        clock: Clock | None = None,
        embedder: Embedder | None = None,
        recall_tuning: recall_mod.Tuning | None = None,
        synonyms: SynonymSource | Literal["packaged"] | None = "packaged",
        lazy_records: bool = False,
    ) -> None:
        base = settings or StoreSettings()
        if data_dir is not None:
            base = base.merged({"data_dir": str(data_dir)})
        self.settings = base
        self.clock = clock or SystemClock()
        self.recall_tuning = recall_tuning or recall_mod.Tuning()  # the eval varies it
        # query words' neighbours: the installed model's word table unless told (synonyms.py)
        self.synonyms = synonyms_mod.packaged() if synonyms == "packaged" else synonyms
        self.vectors = Vectors(embedder or _embedder_from(base))
        self.tokens = TokenCounter(base.token_model)
        self.events = EventBus(base.event_buffer)
        self._watchers: dict[str, Callable[[], Any]] = {}
        self.lock = threading.RLock()  # hold it to read the parts consistently (metrics)
        self._held = threading.local()
        self._dir_lock: dir_lock.DirLock | None = None  # one writer per data dir (lock.py)
        self._closed = False
        # a one-shot process decodes a snapshot-covered record when it first uses it
        # (store_worker/storage/records.py); not for a store shared between threads
        self.lazy_records = lazy_records
        try:
            self._open()
        except BaseException:  # no caller holds a store that failed to open: let go of the
            dir_lock.release(self._dir_lock)  # data dir, or this process is locked out of it
            raise
        self.commits = GroupCommit(self.lock, banks=self.banks, events=self.events)

    # -- lifecycle ---------------------------------------------------------------------------

    def _open(self, *, carry: Banks | None = None) -> None:
        """Build the parts on the data dir and load every bank (replay or snapshot);
        ``carry``, the repository being replaced, lends its log objects (``Banks.open``).
        The parts are built first and swapped in together: a part that refuses (a routing
        table edited by hand, an outbox folder that cannot be made) leaves the old ones."""
        try:
            self._build(carry)
        except OSError as e:
            raise errors.storage_error(f"cannot open data dir {self.settings.data_path}", e) from e

    def _build(self, carry: Banks | None) -> None:
        s, clock = self.settings, self.clock
        root = s.data_path
        self._dir_lock = dir_lock.hold(root, self._dir_lock)  # one writer per data dir
        remove_stale_staging(root)
        check_writable(root, full_ok=True)  # boot-fatal: never run in RAM (DESIGN §2)
        state = StateStore(root)
        state.remove_stale_temps()
        sessions = Sessions(state, s)
        drafts = Drafts(s)
        banks = Banks(
            root,
            s,
            clock=clock,
            events=self.events,
            on_load=(Drafts.load, self.vectors.load),
            lazy_records=self.lazy_records,
            may_write=self._refuse_if_closed,
        )
        shard = ShardGuard(state, s.shard_index)
        banks.guard = shard
        writer = Writer(
            s,
            banks=banks,
            drafts=drafts,
            vectors=self.vectors,
            events=self.events,
            clock=clock,
            tokens=self.tokens,
        )
        reader = Reader(
            s,
            banks=banks,
            vectors=self.vectors,
            sessions=sessions,
            clock=clock,
            tokens=self.tokens,
            tuning=self.recall_tuning,
            synonyms=self.synonyms,
        )
        rules = Rules(banks, self.events, clock)
        injector = Injector(
            s, banks=banks, sessions=sessions, state=state, clock=clock, recall=reader.recall
        )
        outbox = Outbox(
            root,
            s,
            banks=banks,
            state=state,
            sessions=sessions,
            clock=clock,
            turn_bank=injector.turn_bank,
            watchers=self._watchers,  # a reopen keeps the extractor's wake-up
        )
        purger = Purger(
            banks=banks,
            rules=rules,
            vectors=self.vectors,
            events=self.events,
            clock=clock,
            tokens=self.tokens,
        )
        self.root, self.state, self.sessions, self.ratification = root, state, sessions, drafts
        self.banks, self.shard, self.writer, self.reader = banks, shard, writer, reader
        self.rules, self.injector, self.outbox, self.purger = rules, injector, outbox, purger
        # A bank that cannot be read waits for its next use: at boot the others serve
        # meanwhile; an explicit reload (``carry``) is refused instead, so its caller hears.
        banks.open(carry=carry, strict=carry is not None)
        sessions.prune()

    def _reopen(self) -> None:
        """Close the banks' logs and build the parts again (the lock is kept); later group
        commits go to the new repository, even when loading one of its banks failed (the
        writers already use it: a batch staged in the old one would append at once)."""
        old = self.banks
        old.close()
        try:
            self._open(carry=old)
        finally:
            self.commits.banks = self.banks

    def close(self) -> None:
        """Close the logs and let go of the data dir: every later write is refused, since
        another process may now hold the dir (``lock.py``); reads answer from RAM. Closing
        twice is harmless."""
        with self.lock:
            self._closed = True
            self.banks.close()
            self.commits.close()
            dir_lock.release(self._dir_lock)

    def _refuse_if_closed(self, *, moved: bool = True) -> None:
        """Refuse a write once the store no longer holds its data dir: closed, or (unless
        ``moved`` is False: doctor reports it instead) moved away under it."""
        if self._closed:
            raise errors.SourceUnavailableError(
                f"this store was closed and no longer holds {self.root}; open it again",
                retryable=False,
            )
        if moved and not self.holds_data_dir:
            raise errors.SourceUnavailableError(
                f"{self.root} is no longer the folder this store opened (moved, removed or "
                "replaced while it ran); nothing is written there: close the store, open it again",
                retryable=False,
            )

    @property
    def holds_data_dir(self) -> bool:
        """Whether the data dir's path still names the folder this store holds (``lock.py``):
        not once it was moved, removed or replaced while the store ran. Its writes would land
        in a folder no lock keeps a second store out of."""
        return self._dir_lock is None or self._dir_lock.names_its_folder()

    def now(self) -> int:
        return self.clock.now_ms()

    @property
    def embedder(self) -> Embedder | None:
        return self.vectors.embedder

    # -- banks -----------------------------------------------------------------------------

    @_serialized
    def bank_create(self, name: str, description: str | None = None) -> BankCreateResponse:
        name = v.bank_name(name)
        scrubbed = redact(v.optional_str(description, "description", 2000) or "")
        description = scrubbed.text
        if self.shard.check(name) and name not in self.banks:
            raise frozen_error(name)
        bank, created = self.banks.create(name, description)
        if not created and description and description != bank.description:
            target = self.banks.writable(self.banks.resolve(name))
            try:
                target.files.write_meta(description, bank.created_at)
            except errors.MemoryServiceError:
                # refused past the rename (the folder's sync): the next boot reads the new
                # description, so RAM takes what the file says (the caller was told it failed)
                bank.description = target.files.read_meta()[0]
                raise
            bank.description = description
        return BankCreateResponse(bank=Banks.info(bank), created=created, redacted=scrubbed.labels)

    @_reading
    def bank_list(self) -> BankListResponse:
        if self.shard.owns(self.settings.default_bank):
            self.banks.resolve(None)  # the default bank materializes on first use
        return BankListResponse(banks=tuple(Banks.info(b) for b in self.banks.owned()))

    @_serialized
    def bank_delete(self, name: str) -> BankDeleteResponse:
        target = self.banks.trash(name)
        self.reader.forget(v.bank_name(name))
        return BankDeleteResponse(ok=True, trashed_to=str(target))

    # -- memories: writes (writes.py) --------------------------------------------------------

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
        reinforce: bool = True,
        occurred_at: int | None = None,
    ) -> SaveResponse:
        """Save one memory; the same normalised text re-saved reinforces instead, unless
        ``reinforce`` is False (memory.v1 Record always creates, seeds/001)."""
        # validation, redaction and derivations outside the lock (while a commit fsyncs)
        prepared = self.writer.prepare_save(
            text,
            bank=bank,
            title=title,
            id=id,
            type=type,
            scope=scope,
            project=project,
            session_id=session_id,
            turn_id=turn_id,
            recorded_by=recorded_by,
            tags=tags,
            entities=entities,
            pinned=pinned,
            confidence=confidence,
            status=status,
            reinforce=reinforce,
            occurred_at=occurred_at,
        )
        return self._commit_saves([prepared])[0]

    def save_many(self, items: Sequence[SaveRequest | dict[str, Any]]) -> SaveManyResponse:
        """Save several memories as one all-or-nothing write: one fsync per bank for all of
        them, and nothing written when any item is refused (the extractor's and the
        consolidator's bursts)."""
        requests = [
            SaveRequest.of(item, f"item {i}") for i, item in enumerate(_items(items, "save"))
        ]
        prepared = [
            self.writer.prepare_save(r.text, **r.model_dump(exclude={"text"})) for r in requests
        ]
        results = tuple(self._commit_saves(prepared))
        return SaveManyResponse(results=results, created=sum(r.created for r in results))

    @_grouped
    def _commit_saves(self, prepared: builtins.list[PreparedSave]) -> builtins.list[SaveResponse]:
        """Commit prepared saves as one unit of the next group commit; every item is checked
        before any is written (a draft's file, a new bank's folder are written as it runs)."""
        for p in prepared:
            self.writer.check_save(p)
        return [self.writer.commit_save(p) for p in prepared]

    @_grouped
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
        occurred_at: int | None = None,
    ) -> MemoryResponse:
        """Revise a live memory in place: same id, next revision. Type and scope are immutable."""
        return self.writer.update(
            id,
            bank=bank,
            text=text,
            title=title,
            tags=tags,
            entities=entities,
            pinned=pinned,
            type=type,
            scope=scope,
            occurred_at=occurred_at,
        )

    @_grouped
    def pin(self, id: str, pinned: bool = True, *, bank: str | None = None) -> MemoryResponse:
        return self.writer.update(id, bank=bank, pinned=pinned)

    @_grouped
    def delete(
        self, id: str, *, bank: str | None = None, reason: str | None = None
    ) -> MemoryResponse:
        """Tombstone a memory: it leaves recall, stays on disk and in the history view."""
        return self.writer.delete(id, bank=bank, reason=reason)

    @_grouped
    def supersede(
        self,
        id: str,
        superseded_by: str,
        *,
        bank: str | None = None,
        reason: str | None = None,
        reinforce: bool = False,
        revision: int | None = None,
    ) -> SupersedeResponse:
        """Retire ``id`` in favour of the live ``superseded_by`` (tombstone + pointer); with
        ``revision``, only while ``id`` is still at that revision (else ``conflict``)."""
        return self.writer.supersede(
            id, superseded_by, bank=bank, reason=reason, reinforce=reinforce, revision=revision
        )

    def supersede_many(
        self, items: Sequence[SupersedeRequest | dict[str, Any]]
    ) -> SupersedeManyResponse:
        """Several supersedes committed together, all or nothing (one fsync per bank): a
        consolidation pass's merges. Each item is checked as ``supersede`` checks it, in
        order, and sees the ones before it; when any is refused, none is written."""
        requests = [
            SupersedeRequest.of(item, f"item {i}")
            for i, item in enumerate(_items(items, "supersede"))
        ]
        return SupersedeManyResponse(results=tuple(self._commit_supersedes(requests)))

    @_grouped
    def _commit_supersedes(
        self, requests: builtins.list[SupersedeRequest]
    ) -> builtins.list[SupersedeResponse]:
        """Commit supersedes as one unit of the next group commit."""
        return [
            self.writer.supersede(
                r.id, r.superseded_by, **r.model_dump(exclude={"id", "superseded_by"})
            )
            for r in requests
        ]

    @_grouped
    def approve(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        """Make a pending draft canonical (ratification, ``drafts.py``)."""
        return self.writer.approve(id, bank=bank)

    @_grouped
    def reject(self, id: str, *, bank: str | None = None) -> RejectResponse:
        """Discard a pending draft entirely: its file goes, the log never saw it."""
        return self.writer.reject(id, bank=bank)

    # -- secrets already stored (purge.py) -----------------------------------------------

    @_serialized
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

    @_serialized
    def purge(self, id: str, *, bank: str | None = None) -> PurgeResponse:
        """Erase memory ``id`` and every revision of it for good (right to erasure)."""
        try:
            return self.purger.purge(id, bank=bank)
        finally:
            self.reader.forget(v.optional_bank(bank))

    # -- memories: reads (reads.py) ----------------------------------------------------------

    @_reading
    def get(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        return self.reader.get(id, bank=bank)

    @_reading
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
        type_filter: Iterable[str] | None = None,
        scope_filter: Iterable[str] | None = None,
    ) -> ListResponse:
        """Newest first; ``page_token`` is an opaque cursor, stable while writes arrive.
        ``type_filter``/``scope_filter`` keep any of several types/scopes (with ``type`` and
        ``scope``, a record must match both)."""
        return self.reader.list(
            bank=bank,
            tag=tag,
            type=type,
            scope=scope,
            status=status,
            include_superseded=include_superseded,
            page_size=page_size,
            page_token=page_token,
            type_filter=type_filter,
            scope_filter=scope_filter,
        )

    @_reading
    def tags(self, *, bank: str | None = None) -> TagsResponse:
        return self.reader.tags(bank=bank)

    @_reading
    def drafts(self, *, bank: str | None = None) -> tuple[Memory, ...]:
        """Every pending draft of a bank, oldest first (the review inbox)."""
        return Drafts.of(self.banks.resolve(bank))

    @_reading
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
        hint: str | None = None,
        model_target: str | None = None,
        as_of: int | None = None,
    ) -> RecallResponse:
        """The ranked memories for a query (DESIGN §4); ``retrieval`` names what ran.

        An empty query ranks every visible record by standing strength, lifted by the words of
        ``hint`` (``recall.score_bank``). ``model_target`` counts ``tokens`` (and the budget)
        with that model's tokenizer, in the response only. ``as_of`` (epoch ms) ranks as of
        that instant instead of the store's clock: recency decay makes a ranking a function
        of the time it is asked at, so two processes compare rankings only at one ``as_of``."""
        return self.reader.recall(
            query,
            bank=bank,
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
            hint=hint,
            model_target=model_target,
            as_of=as_of,
        )

    @_reading
    def dangling(self, *, bank: str | None = None) -> DanglingResponse:
        """Links of live records that point at no live record (``links.py``)."""
        return links.dangling(self.banks.resolve(bank))

    @_reading
    def backlinks(self, id: str, *, bank: str | None = None) -> BacklinksResponse:
        """Live records whose links name ``id``, newest first (``links.py``)."""
        return links.backlinks(self.banks.resolve(bank), id)

    # -- rules (rules.py) ------------------------------------------------------------------

    @_reading
    def rule_list(self, *, bank: str | None = None) -> RuleListResponse:
        return self.rules.rule_list(bank=bank)

    @_reading
    def rule_get(self, name: str, *, bank: str | None = None) -> Rule:
        return self.rules.rule_get(name, bank=bank)

    @_serialized
    def rule_set(
        self, name: str, content: str, *, bank: str | None = None, expect: str | None = None
    ) -> RuleSetResponse:
        """Create, replace or (with empty content) remove one rule; with ``expect``, only
        while the rule still holds that content ("": absent), else ``conflict``."""
        return self.rules.rule_set(name, content, bank=bank, expect=expect)

    # -- the harness seam (inject.py, outbox.py) ---------------------------------------------

    @_serialized
    def pre_generate(
        self,
        session_id: str,
        turn_id: str | None = None,
        step: int = 0,
        messages: builtins.list[dict[str, Any]] | None = None,
        metadata: dict[str, Any] | None = None,
        parent_session_id: str | None = None,
    ) -> InjectResponse:
        """The memory a step is given (DESIGN §5)."""
        return self.injector.pre_generate(
            session_id, turn_id, step, messages, metadata, parent_session_id
        )

    @_reading
    def preview(
        self, query: str, *, bank: str | None = None, session_id: str | None = None
    ) -> PreviewResponse:
        """What a new session would get for a hypothetical message (seeds/003)."""
        return self.injector.preview(query, bank=bank, session_id=session_id)

    @_serialized
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
        """Queue one durable extraction job for a finished turn (seeds/003 turn-completed)."""
        return self.outbox.enqueue(
            session_id, turn_id, messages, status, parent_session_id, parent=parent
        )

    @_serialized
    def link_session(self, session_id: str, parent_session_id: str | None) -> None:
        """Record a sub-session's parent, so it sees its ancestors' session memories."""
        self.sessions.link(session_id, parent_session_id)

    @_reading
    def session_lineage(self, session_id: str | None) -> tuple[str, ...]:
        return self.sessions.lineage(session_id)

    @_serialized
    def prune_session_state(self, *, force: bool = True) -> int:
        """Forget idle sessions' injection and outbox state (``sessions.py``)."""
        return self.sessions.prune(force=force)

    # -- the extraction outbox (outbox.py) ---------------------------------------------------

    @_serialized
    def outbox_watch(self, name: str, callback: Callable[[], Any] | None) -> None:
        self.outbox.watch(name, callback)

    @_serialized
    def outbox_claim(self, limit: int = 8) -> builtins.list[OutboxJob]:
        return self.outbox.claim(limit)

    @_serialized
    def outbox_note(self, job_id: str, reply: dict[str, Any], *, lease: str) -> OutboxJob:
        return self.outbox.note(job_id, reply, lease=lease)

    @_serialized
    def outbox_ack(self, job_id: str) -> OutboxAckResponse:
        return self.outbox.ack(job_id)

    @_serialized
    def outbox_fail(
        self,
        job_id: str,
        error: str,
        *,
        retry_after_ms: int | None = None,
        dead_letter: bool = False,
        lease: str | None = None,
    ) -> OutboxAckResponse:
        return self.outbox.fail(
            job_id, error, retry_after_ms=retry_after_ms, dead_letter=dead_letter, lease=lease
        )

    @_serialized
    def outbox_requeue(self, job_id: str, *, fresh: bool = False) -> OutboxAckResponse:
        return self.outbox.requeue(job_id, fresh=fresh)

    @_reading
    def outbox_list(self, *, include_dead: bool = True, limit: int = 100) -> OutboxListResponse:
        return self.outbox.listing(include_dead=include_dead, limit=limit)

    @_reading
    def outbox_job(self, job_id: str) -> OutboxJob:
        return self.outbox.job(job_id)

    # -- events and sibling state ------------------------------------------------------------

    @_serialized
    def subscribe(
        self, name: str, callback: Subscriber, banks: Iterable[str] | None = None
    ) -> None:
        self.events.subscribe(name, callback, set(banks) if banks else None)

    @_serialized
    def unsubscribe(self, name: str) -> bool:
        return self.events.unsubscribe(name)

    @_reading
    def events_since(
        self, cursor: int = 0, *, limit: int = 500, bank: str | None = None
    ) -> EventsResponse:
        cursor, limit, bank = v.cursor(cursor), v.events_limit(limit), v.optional_bank(bank)
        found = self.events.since(cursor, limit=limit, bank=bank)
        last = found[-1].seq if found else max(cursor, 0)
        if not found and cursor > self.events.cursor:
            last = self.events.cursor
        return EventsResponse(events=tuple(found), cursor=last)

    @_reading
    def state_get(self, owner: str, key: str) -> object | None:
        owner, key = _sibling_owner(owner), v.rule_name(key)
        if (owner, key) == (STATE_OWNER, STATE_KEY):  # the table this shard serves by
            return self.shard.describe()["routing"] if self.shard.routing.version else None
        return self.state.get(owner, key)

    @_serialized
    def state_set(self, owner: str, key: str, value: object) -> None:
        v.json_value(value, "state value")
        owner = v.no_credential(_sibling_owner(owner), "state owner") or owner
        key = v.no_credential(v.rule_name(key), "state key") or key
        if (owner, key) == (STATE_OWNER, STATE_KEY):  # the next open would serve by it
            raise errors.InvalidArgumentError("the slot table changes only through shard_routing")
        # a sibling's state is written to disk like any other write: redacted (DESIGN §6)
        self.state.set(owner, key, redact_json(value))

    # -- operations --------------------------------------------------------------------------

    @_reading  # its write probe goes through the write verbs, which refuse what they must
    def doctor(self, siblings: ops.SiblingProbe | None = None) -> DoctorResponse:
        self._refuse_if_closed(moved=False)  # a data dir moved away is a failed check
        return ops.doctor(self, siblings)

    @_reading
    def describe(self) -> dict[str, Any]:
        return ops.describe(self)

    @_reading
    def capabilities(self) -> dict[str, Any]:
        return ops.capabilities(self)

    @_serialized
    def configure(self, config: dict[str, Any]) -> dict[str, Any]:
        """Validate and apply a partial settings change; unknown keys change nothing."""
        if not isinstance(config, dict):
            raise errors.InvalidArgumentError("config must be a mapping of setting → value")
        new = self.settings.merged(config)
        if self.settings.ratification and not new.ratification:
            _refuse_stranding_drafts(self.banks.values())
        embedder = self.embedder
        if "embedding_model" in config or "embeddings_enabled" in config:
            fresh = _embedder_from(new)  # before any change: a bad folder changes nothing
            if _embedder_name(fresh) != _embedder_name(self.embedder):
                embedder = fresh
        # Another model's vectors mean nothing to the new one: reopening re-reads the sidecars.
        reopen = new.data_path != self.settings.data_path or embedder is not self.embedder
        # A move takes the new dir's lock and lets go of the old one only once the parts are
        # the new dir's: refused before that, the store goes on with the old dir, held.
        held, banks = self._dir_lock, self.banks
        moving = new.data_path != self.settings.data_path
        taken = dir_lock.acquire(new.data_path) if moving else held  # refused: nothing changed
        before = (self._dir_lock, self.settings, self.tokens, self.vectors)
        self._dir_lock, self.settings, self.tokens = taken, new, TokenCounter(new.token_model)
        try:
            if reopen:
                self.vectors = Vectors(embedder)
                self._reopen()
            else:
                self._retune(new)
        except BaseException:
            if self.banks is banks:  # the parts were not swapped in
                self._dir_lock, self.settings, self.tokens, self.vectors = before
            raise
        finally:
            if moving:
                dir_lock.release(taken if self._dir_lock is held else held)
        return new.model_dump()

    def _retune(self, new: StoreSettings) -> None:
        """Hand every part the new settings (no reopen needed: same data dir and embedder)."""
        for part in (
            self.sessions,
            self.ratification,
            self.banks,
            self.writer,
            self.reader,
            self.injector,
            self.outbox,
        ):
            part.settings = new
        self.writer.tokens = self.reader.tokens = self.purger.tokens = self.tokens

    @_serialized
    def reload(self) -> ReloadResponse:
        self._reopen()
        corrupt = sum(b.stats.corrupt for b in self.banks.values())
        return ReloadResponse(ok=True, banks=tuple(sorted(self.banks)), corrupt_lines=corrupt)

    # -- this store as one shard of several (shards.py; the mover is shared.sharded) ----------

    @_reading
    def shard_routing(self, table: dict[str, Any] | None = None) -> dict[str, Any]:
        """This shard's number, slot table and every bank folder it holds (owned or not);
        with ``table``, take that slot table first (durably; an older version is refused)."""
        if table is not None:
            self._refuse_if_closed()  # a read, but taking a table writes it
            self.shard.set(table)
        return {**self.shard.describe(), "banks": sorted(self.banks)}

    @_reading
    def bank_export(self, name: str) -> dict[str, bytes]:
        """A frozen or foreign bank's files, by relative path (a move's copy step)."""
        name = v.bank_name(name)
        self.shard.can_export(name)
        bank = self.banks.get(name)
        if bank is None:
            raise errors.NotFoundError(f"no bank named {name!r} on this shard")
        exported = shards.export_files(bank.files.dir)
        if MEMORIES in exported:  # as replay reads it: never a refused append left uncut
            exported[MEMORIES] = bank.files.log.read_bytes()  # (``AppendLog.good_size``)
        return exported

    @_serialized
    def bank_import(self, name: str, files: dict[str, bytes]) -> BankInfo:
        """Place a bank's files (``bank_export``) here and load them; the bank must not be
        owned by this shard yet, and an earlier copy of it goes to ``.trash``."""
        name = v.bank_name(name)
        self.shard.can_import(name)
        staged = shards.check_import(files)
        staging = shards.write_staged(self.root, name, staged)
        old = self.banks.get(name)
        if old is not None:
            self.banks.discard(old)
        elif (self.root / name).exists():  # a folder no bank was loaded from
            shutil.rmtree(staging, ignore_errors=True)
            raise errors.ConflictError(f"{self.root / name} exists and is not a bank")
        try:
            shards.place(staging, self.root / name)
        except errors.MemoryServiceError:
            if (self.root / name).is_dir():  # past the rename (the folder's sync failed): a
                self.banks.reread(name)  # bank in place that RAM ignored refused the retry
            raise
        self.reader.forget(name)
        return Banks.info(self.banks.reload(name))

    @_serialized
    def bank_release(self, name: str) -> BankDeleteResponse:
        """Trash this shard's copy of a bank another shard now owns (a move's last step)."""
        name = v.bank_name(name)
        self.shard.can_release(name)
        bank = self.banks.get(name)
        if bank is None:
            raise errors.NotFoundError(f"no bank named {name!r} on this shard")
        target = self.banks.discard(bank)
        self.reader.forget(name)
        return BankDeleteResponse(ok=True, trashed_to=str(target))

    def trash_dir(self) -> Path:
        return self.root / TRASH_DIR

    @_serialized
    def purge_trash(self, path: str) -> None:
        """Remove one trashed folder for good (doctor's scratch bank only)."""
        target = Path(path).resolve()
        if target.parent != self.trash_dir().resolve():
            raise errors.InvalidArgumentError("only folders directly in .trash can be purged")
        shutil.rmtree(target, ignore_errors=True)


# The store's own state under ``.state/`` (session lineage and subscribers, each session's
# injection state and outbox tail): not a sibling's checkpoint. Through ``state_set`` a caller
# could re-parent a session into another's (and see its session memories) or replace the
# rules section a session is given with any text; ``state_get`` would read other sessions'.
STORE_STATE_OWNERS = frozenset({"store", INJECT_OWNER, "outbox"})


def _sibling_owner(owner: object) -> str:
    name = v.rule_name(owner)
    if name in STORE_STATE_OWNERS:
        raise errors.InvalidArgumentError(
            f"state owner {name!r} is the store's own; siblings keep their state under their "
            "own name (extractor, consolidator ...)"
        )
    return name


def _embedder_from(settings: StoreSettings) -> Embedder | None:
    """The configured backend (``embedder_for``); a bad ``local:`` folder raises here."""
    if settings.embeddings_enabled and settings.embedding_model:
        return embedder_for(settings.embedding_model)
    return None


def _embedder_name(embedder: Embedder | None) -> str | None:
    return None if embedder is None else embedder.name


def _refuse_stranding_drafts(banks: Iterable[Bank]) -> None:
    """Ratification goes off only with no draft waiting: with it off nothing may be pending
    (seeds/002) and approve/reject refuse, so a draft left behind could never be resolved.
    Refusing, rather than approving or discarding them, leaves that choice to a reviewer."""
    waiting = {b.name: n for b in banks if (n := sum(m.status == "pending" for m in b.live()))}
    if waiting:
        where = ", ".join(f"{n} in {name!r}" for name, n in sorted(waiting.items()))
        raise errors.DraftsWaitingError(
            f"ratification cannot be turned off while {sum(waiting.values())} pending draft(s) "
            f"wait for review ({where}); approve or reject them first"
        )
