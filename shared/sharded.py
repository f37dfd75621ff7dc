"""``ShardedStoreClient``: ``StoreAPI`` over several store shards, routed by bank (issue 16).

Every caller that takes a ``StoreAPI`` (the CLI, the extractor, the consolidator, the gateway)
can be handed this client instead of one ``StoreClient``: it holds one ``StoreAPI`` per shard
(``StoreClient`` per actor over Ray, ``connect()``; or in-process stores in tests) and sends each
call where ``shared.shards`` routes it:

- a call naming a bank goes to the bank's owner; naming none, to the default bank's owner;
- the harness seam (``pre_generate``, ``turn_completed``, sessions) goes to the owner of the
  session's bank (``shared.session_routes``: the turn's ``memory_bank``, the session's, its
  parent's, else the default bank), kept in shard 0 so that a ``turn_completed`` from another
  process (a hook, another gateway) reaches the shard its session's ``pre_generate`` went to;
- calls that span banks fan out and merge: ``bank_list``, ``events_since`` (one cursor packing
  each shard's: 32 bits per shard), ``doctor`` (checks named ``<check>@shard<i>`` beyond shard 0),
  ``describe``, ``reload``, ``subscribe``, ``outbox_watch``, ``outbox_claim``/``outbox_list``
  (a claimed job's later calls go to the shard that holds it), ``state_set``;
- ``save_many`` must stay on one shard (all or nothing is a single store's promise).

A shard that no longer owns a bank answers ``[moved]``: the client re-reads the slot table from
shard 0 and goes to the owner. A client given a finder (``shared.shard_finder``; ``connect(
follow=True)``, which the extractor, the consolidator and the gateway use) also follows the
number of shards: whenever the table's version changes, names a shard it does not reach, or is
older than ``follow_s`` at a fan-out, it asks the finder how many run now, adds the new ones
(re-sending them its ``outbox_watch``, ``subscribe`` and ``state_set`` calls) and drops the
stopped ones, so N can change under a running sibling without restarting it.

A bank being moved answers ``[moving]`` to writes: the client waits (backing off) and retries
for up to ``freeze_wait_s``, then hands the retryable ``SourceUnavailableError`` on.
``shared.rebalance`` is the mover (``memory shards rebalance``).
"""

from __future__ import annotations

import builtins
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from shared.api import Message, StoreAPI, Subscriber, Wake
from shared.config import StoreSettings
from shared.errors import ConflictError, InvalidArgumentError, NotFoundError, SourceUnavailableError
from shared.models import (
    BacklinksResponse,
    BankCreateResponse,
    BankDeleteResponse,
    BankInfo,
    BankListResponse,
    DanglingResponse,
    DoctorCheck,
    DoctorResponse,
    Event,
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
from shared.session_routes import SessionRoutes
from shared.shard_finder import RayShards, ShardFinder
from shared.shards import (
    FROZEN_MARK,
    MOVED_MARK,
    STATE_KEY,
    STATE_OWNER,
    Routing,
    shard_count,
    shard_dir,
    slot_of,
)

T = TypeVar("T")
CURSOR_BITS = 32
CURSOR_MASK = (1 << CURSOR_BITS) - 1
PAST_THE_END = 2**62
MOVED_RETRIES = 3
BACKOFF_S = (0.02, 1.0)
FOLLOW_S = 5.0  # a following client re-reads the table at a fan-out at most this often


class ShardedStoreClient:
    """``StoreAPI`` over ``shards[i]`` = store shard ``i`` (see the module docstring)."""

    def __init__(
        self,
        shards: Sequence[StoreAPI],
        *,
        freeze_wait_s: float = 30.0,
        sleep: Callable[[float], object] = time.sleep,
        finder: ShardFinder | None = None,
        follow_s: float = FOLLOW_S,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if not shards:
            raise InvalidArgumentError("a sharded client needs at least one shard")
        self.shards = list(shards)
        self.freeze_wait_s = freeze_wait_s
        self.finder = finder
        self.follow_s = follow_s
        self._sleep = sleep
        self._monotonic = monotonic
        self._read_at = -float("inf")
        self._routing: Routing | None = None
        self._default: str | None = None
        self._jobs: dict[str, int] = {}  # job id → the shard whose outbox holds it
        self.sessions = SessionRoutes(lambda: self.shards[0])  # session → its bank, in shard 0
        self._claim_from = itertools.count()
        # what a new shard must be told too (a following client re-sends it: _resync)
        self._watches: dict[str, Wake | None] = {}
        self._subscribers: dict[str, tuple[Subscriber, Iterable[str] | None]] = {}
        self._states: dict[tuple[str, str], object] = {}
        self._resyncing = threading.Lock()

    @classmethod
    def connect(
        cls,
        *,
        timeout: float | None = None,
        freeze_wait_s: float = 30.0,
        follow: bool = False,
    ) -> StoreAPI:
        """Over Ray: ``memory-store`` and every ``memory-store-<i>`` running after it. One
        shard answers a plain ``StoreClient`` (no routing at all: today's single store), and
        so does a process not joined to a cluster (the client connects lazily, as before).
        ``follow``: a long-lived caller (a sibling, a gateway) always gets this client, which
        follows shards being added and removed (the module docstring)."""
        import ray

        from shared.client import DEFAULT_TIMEOUT_S, StoreClient

        wait = DEFAULT_TIMEOUT_S if timeout is None else timeout
        if not ray.is_initialized():  # never start Ray here (get_actor would): one store
            return StoreClient(timeout=wait)
        finder = RayShards(timeout=wait)
        clients = [finder.client(i) for i in range(finder.count())]
        if len(clients) == 1 and not follow:
            return clients[0]
        return cls(clients, freeze_wait_s=freeze_wait_s, finder=finder if follow else None)

    def close(self) -> None:
        """Close each shard that has something to close (embedded shards: their files and
        data dir locks; ``shared.cli_store.close_store`` calls this)."""
        for shard in self.shards:
            close = getattr(shard, "close", None)
            if callable(close):
                close()

    # -- routing -------------------------------------------------------------------------------

    @property
    def routing(self) -> Routing:
        if self._routing is None:
            self.refresh()
        assert self._routing is not None
        return self._routing

    def refresh(self, *, recount: bool = False) -> Routing:
        """Re-read the slot table from shard 0 (the one owner of the truth); while shard 0 is
        unreachable, the newest copy another shard was given (each keeps the last it got).
        A following client then re-counts the shards when the table changed (or ``recount``)."""
        before = self._routing
        try:
            table = Routing.parse(self.shards[0].state_get(STATE_OWNER, STATE_KEY))
        except SourceUnavailableError:
            copies = []
            for shard in self.shards[1:]:
                try:
                    copies.append(Routing.parse(shard.shard_routing()["routing"]))
                except SourceUnavailableError:
                    continue
            if not copies:
                raise
            table = max(copies, key=lambda t: t.version)
        self._routing, self._read_at = table, self._monotonic()
        if self.finder is not None and (
            recount
            or before is None
            or before.version != table.version
            or _needs(table) > len(self.shards)
        ):
            self._resync()
        return table

    def _fresh(self) -> None:
        """Before a fan-out: a following client re-reads a table older than ``follow_s`` and
        re-counts the shards (one stopped without a table change is dropped here)."""
        if self.finder is not None and self._monotonic() - self._read_at >= self.follow_s:
            self.refresh(recount=True)

    def _resync(self) -> None:
        """Take the shards the finder counts now: new ones are told what the others were told
        (wake-ups, subscriptions, sibling state); stopped ones (the top) are dropped. The list
        is replaced whole, so a fan-out running in another thread keeps its own."""
        assert self.finder is not None
        with self._resyncing:
            n = max(self.finder.count(), 1)
            shards = self.shards[:n]
            for i in range(len(shards), n):
                shard = self.finder.client(i)
                for name, wake in list(self._watches.items()):
                    shard.outbox_watch(name, wake)
                for name, (callback, banks) in list(self._subscribers.items()):
                    shard.subscribe(name, callback, banks)
                for (owner, key), value in list(self._states.items()):
                    shard.state_set(owner, key, value)
                shards.append(shard)
            self.shards = shards

    @property
    def default_bank(self) -> str:
        if self._default is None:
            for shard in self.shards:  # every shard has the same settings; shard 0 may be down
                try:
                    self._default = str(shard.describe()["default_bank"])
                    break
                except SourceUnavailableError:
                    if shard is self.shards[-1]:
                        raise
        assert self._default is not None
        return self._default

    def owner(self, bank: str | None) -> int:
        owner = self.routing.owner(bank or self.default_bank)
        if owner >= len(self.shards) and self.finder is not None:
            owner = self.refresh().owner(bank or self.default_bank)  # a shard started since
        if owner >= len(self.shards):
            raise SourceUnavailableError(
                f"bank {bank or self.default_bank!r} is on store shard {owner}, which this "
                f"client does not reach (it knows {len(self.shards)})"
            )
        return owner

    def _on(self, bank: str | None, call: Callable[[StoreAPI], T]) -> T:
        """``call`` on the bank's owner, following moves and waiting out a freeze."""
        deadline = time.monotonic() + self.freeze_wait_s
        pause, moved = BACKOFF_S[0], 0
        while True:
            try:
                return call(self.shards[self.owner(bank)])
            except SourceUnavailableError as e:
                if MOVED_MARK in e.message and moved < MOVED_RETRIES:
                    moved += 1
                elif FROZEN_MARK not in e.message or time.monotonic() + pause > deadline:
                    raise
                else:
                    self._sleep(pause)
                    pause = min(pause * 2, BACKOFF_S[1])
                self.refresh()

    def _all(self, call: Callable[[StoreAPI], T]) -> list[T]:
        self._fresh()
        return [call(shard) for shard in list(self.shards)]

    def _job(self, job_id: str, call: Callable[[StoreAPI], T]) -> T:
        shard = self._jobs.get(job_id)
        if shard is None or shard >= len(self.shards):  # unknown, or on a shard since stopped
            shard = self._find_job(job_id)
        return call(self.shards[shard])

    def _find_job(self, job_id: str) -> int:
        for i, shard in enumerate(self.shards):
            try:
                shard.outbox_job(job_id)
            except NotFoundError:
                continue
            self._jobs[job_id] = i
            return i
        return 0  # on no shard: shard 0 answers as a single store would (not_found, missing)

    # -- banks ---------------------------------------------------------------------------------

    def bank_create(self, name: str, description: str | None = None) -> BankCreateResponse:
        return self._on(name, lambda s: s.bank_create(name, description))

    def bank_list(self) -> BankListResponse:
        banks = [b for r in self._all(lambda s: s.bank_list()) for b in r.banks]
        return BankListResponse(banks=tuple(sorted(banks, key=lambda b: b.name)))

    def bank_delete(self, name: str) -> BankDeleteResponse:
        return self._on(name, lambda s: s.bank_delete(name))

    # -- memories: writes ----------------------------------------------------------------------

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
        tags, entities = _once(tags), _once(entities)
        return self._on(
            bank,
            lambda s: s.save(
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
            ),
        )

    def save_many(self, items: Sequence[SaveRequest | dict[str, Any]]) -> SaveManyResponse:
        return self._on(_one_shard(self, items, "save_many"), lambda s: s.save_many(items))

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
        tags, entities = _once(tags), _once(entities)
        return self._on(
            bank,
            lambda s: s.update(
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
            ),
        )

    def pin(self, id: str, pinned: bool = True, *, bank: str | None = None) -> MemoryResponse:
        return self._on(bank, lambda s: s.pin(id, pinned, bank=bank))

    def delete(
        self, id: str, *, bank: str | None = None, reason: str | None = None
    ) -> MemoryResponse:
        return self._on(bank, lambda s: s.delete(id, bank=bank, reason=reason))

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
        return self._on(
            bank,
            lambda s: s.supersede(
                id, superseded_by, bank=bank, reason=reason, reinforce=reinforce, revision=revision
            ),
        )

    def supersede_many(
        self, items: Sequence[SupersedeRequest | dict[str, Any]]
    ) -> SupersedeManyResponse:
        return self._on(
            _one_shard(self, items, "supersede_many"), lambda s: s.supersede_many(items)
        )

    # -- memories: reads -----------------------------------------------------------------------

    def get(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        return self._on(bank, lambda s: s.get(id, bank=bank))

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
        type_filter, scope_filter = _once(type_filter), _once(scope_filter)
        return self._on(
            bank,
            lambda s: s.list(
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
            ),
        )

    def tags(self, *, bank: str | None = None) -> TagsResponse:
        return self._on(bank, lambda s: s.tags(bank=bank))

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
        type_filter, scope_filter = _once(type_filter), _once(scope_filter)
        return self._on(
            bank,
            lambda s: s.recall(
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
            ),
        )

    def backlinks(self, id: str, *, bank: str | None = None) -> BacklinksResponse:
        return self._on(bank, lambda s: s.backlinks(id, bank=bank))

    def dangling(self, *, bank: str | None = None) -> DanglingResponse:
        return self._on(bank, lambda s: s.dangling(bank=bank))

    # -- drafts, rules -------------------------------------------------------------------------

    def redact_rescan(self, *, bank: str | None = None, purge: bool = False) -> RescanResponse:
        """One bank on its owner; every bank on every shard (each rescans what it owns)."""
        if bank is not None:
            return self._on(bank, lambda s: s.redact_rescan(bank=bank, purge=purge))
        found = self._all(lambda s: s.redact_rescan(purge=purge))
        banks = sorted((b for r in found for b in r.banks), key=lambda b: b.bank)
        kinds = sorted({k for r in found for k in r.kinds})
        return RescanResponse(banks=tuple(banks), kinds=tuple(kinds))

    def purge(self, id: str, *, bank: str | None = None) -> PurgeResponse:
        return self._on(bank, lambda s: s.purge(id, bank=bank))

    def approve(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        return self._on(bank, lambda s: s.approve(id, bank=bank))

    def reject(self, id: str, *, bank: str | None = None) -> RejectResponse:
        return self._on(bank, lambda s: s.reject(id, bank=bank))

    def drafts(self, *, bank: str | None = None) -> tuple[Memory, ...]:
        return self._on(bank, lambda s: s.drafts(bank=bank))

    def rule_list(self, *, bank: str | None = None) -> RuleListResponse:
        return self._on(bank, lambda s: s.rule_list(bank=bank))

    def rule_get(self, name: str, *, bank: str | None = None) -> Rule:
        return self._on(bank, lambda s: s.rule_get(name, bank=bank))

    def rule_set(
        self, name: str, content: str, *, bank: str | None = None, expect: str | None = None
    ) -> RuleSetResponse:
        return self._on(bank, lambda s: s.rule_set(name, content, bank=bank, expect=expect))

    # -- the harness seam ----------------------------------------------------------------------

    def pre_generate(
        self,
        session_id: str,
        turn_id: str | None = None,
        step: int = 0,
        messages: builtins.list[Message] | None = None,
        metadata: dict[str, Any] | None = None,
        parent_session_id: str | None = None,
    ) -> InjectResponse:
        bank, binding = self.sessions.step(session_id, metadata, parent_session_id)

        def call(s: StoreAPI) -> InjectResponse:
            return s.pre_generate(session_id, turn_id, step, messages, metadata, parent_session_id)

        got = self._on(bank, call)
        if any(MOVED_MARK in note for note in got.notes):
            # injection fails open, so a stale table shows only in its notes: re-read, resend
            self.refresh()
            got = self._on(bank, call)
        self.sessions.put(session_id, binding)
        return got

    def preview(
        self, query: str, *, bank: str | None = None, session_id: str | None = None
    ) -> PreviewResponse:
        return self._on(bank, lambda s: s.preview(query, bank=bank, session_id=session_id))

    def turn_completed(
        self,
        session_id: str,
        turn_id: str | None = None,
        messages: builtins.list[Message] | None = None,
        status: str = "completed",
        parent_session_id: str | None = None,
        *,
        parent: str | None = None,
    ) -> TurnCompletedResponse:
        bank, binding = self.sessions.link(session_id, parent_session_id or parent)
        done = self._on(
            bank,
            lambda s: s.turn_completed(
                session_id, turn_id, messages, status, parent_session_id, parent=parent
            ),
        )
        if binding is not None:  # the store linked the session to its parent: so do we
            self.sessions.put(session_id, binding)
        return done

    def link_session(self, session_id: str, parent_session_id: str | None) -> None:
        bank, binding = self.sessions.link(session_id, parent_session_id)
        self._on(bank, lambda s: s.link_session(session_id, parent_session_id))
        if binding is not None:
            self.sessions.put(session_id, binding)

    def session_lineage(self, session_id: str | None) -> tuple[str, ...]:
        bank = self.sessions.completed(session_id, None) if session_id else None
        return self._on(bank, lambda s: s.session_lineage(session_id))

    # -- the extraction outbox -----------------------------------------------------------------

    def outbox_watch(self, name: str, callback: Wake | None) -> None:
        self._all(lambda s: s.outbox_watch(name, callback))
        self._watches[name] = callback

    def outbox_claim(self, limit: int = 8) -> builtins.list[OutboxJob]:
        """Claim from every shard, starting one further each call (no shard starves). A shard
        that does not answer is passed over: its jobs wait in its outbox (a lease it may have
        granted runs out), and one shard down must not stop extraction on the others. Only
        when no shard answers is its error raised."""
        self._fresh()
        start = next(self._claim_from)
        shards = list(self.shards)
        claimed: builtins.list[OutboxJob] = []
        down: builtins.list[SourceUnavailableError] = []
        for k in range(len(shards)):
            if len(claimed) >= limit:
                break
            i = (start + k) % len(shards)
            try:
                jobs = shards[i].outbox_claim(limit - len(claimed))
            except SourceUnavailableError as e:
                down.append(e)
                continue
            for job in jobs:
                self._jobs[job.job_id] = i
                claimed.append(job)
        if down and len(down) == len(shards):
            raise down[0]
        return claimed

    def outbox_note(self, job_id: str, reply: dict[str, Any], *, lease: str) -> OutboxJob:
        return self._job(job_id, lambda s: s.outbox_note(job_id, reply, lease=lease))

    def outbox_ack(self, job_id: str) -> OutboxAckResponse:
        done = self._job(job_id, lambda s: s.outbox_ack(job_id))
        self._jobs.pop(job_id, None)
        return done

    def outbox_fail(
        self,
        job_id: str,
        error: str,
        *,
        retry_after_ms: int | None = None,
        dead_letter: bool = False,
        lease: str | None = None,
    ) -> OutboxAckResponse:
        return self._job(
            job_id,
            lambda s: s.outbox_fail(
                job_id, error, retry_after_ms=retry_after_ms, dead_letter=dead_letter, lease=lease
            ),
        )

    def outbox_requeue(self, job_id: str, *, fresh: bool = False) -> OutboxAckResponse:
        return self._job(job_id, lambda s: s.outbox_requeue(job_id, fresh=fresh))

    def outbox_list(self, *, include_dead: bool = True, limit: int = 100) -> OutboxListResponse:
        parts = self._all(lambda s: s.outbox_list(include_dead=include_dead, limit=limit))
        jobs = [j for p in parts for j in p.jobs][:limit]
        return OutboxListResponse(
            queued=sum(p.queued for p in parts),
            leased=sum(p.leased for p in parts),
            dead=sum(p.dead for p in parts),
            jobs=tuple(jobs),
        )

    def outbox_job(self, job_id: str) -> OutboxJob:
        return self._job(job_id, lambda s: s.outbox_job(job_id))

    # -- events and state ----------------------------------------------------------------------

    def subscribe(
        self, name: str, callback: Subscriber, banks: Iterable[str] | None = None
    ) -> None:
        wanted = _once(banks)
        self._all(lambda s: s.subscribe(name, callback, wanted))
        self._subscribers[name] = (callback, wanted)

    def unsubscribe(self, name: str) -> bool:
        self._subscribers.pop(name, None)
        return any(self._all(lambda s: s.unsubscribe(name)))

    def events_since(
        self, cursor: int = 0, *, limit: int = 500, bank: str | None = None
    ) -> EventsResponse:
        """The cursor is a resume token packing each shard's cursor in ``CURSOR_BITS`` bits
        (shard 0 lowest); each event's ``seq`` is re-stamped as the token just past it, so
        ``events[-1].seq == cursor`` as on one store. ``cursor >= 2**62`` is past the end on
        every shard. Every bank: shard by shard; one bank: its owner only."""
        if not isinstance(cursor, int) or cursor < 0:
            raise InvalidArgumentError("cursor must be an integer >= 0")
        self._fresh()
        cursors = _unpack(cursor, len(self.shards))
        if bank is not None:
            owner = self.owner(bank)
            got = self._on(bank, lambda s: s.events_since(cursors[owner], limit=limit, bank=bank))
            return _restamped([(owner, got)], cursors)
        parts = []
        left = limit
        for i, shard in enumerate(self.shards):
            if left <= 0:
                break
            got = shard.events_since(cursors[i], limit=left)
            parts.append((i, got))
            left -= len(got.events)
        return _restamped(parts, cursors)

    def state_get(self, owner: str, key: str) -> object | None:
        return self.shards[0].state_get(owner, key)

    def state_set(self, owner: str, key: str, value: object) -> None:
        """On every shard: each reads its siblings' status (the extractor's) locally."""
        if (owner, key) == (STATE_OWNER, STATE_KEY):
            raise InvalidArgumentError("the slot table changes only through shard_routing")
        self._all(lambda s: s.state_set(owner, key, value))
        self._states[(owner, key)] = value

    # -- operations ----------------------------------------------------------------------------

    def doctor(self) -> DoctorResponse:
        """Every shard's checks (``<check>@shard<i>`` beyond shard 0); a shard that does not
        answer is a failed check naming it, so the others' checks are still reported."""
        checks: builtins.list[DoctorCheck] = []
        for i, report in enumerate(self._all(_doctor_of)):
            if isinstance(report, SourceUnavailableError):
                where = "store" if i == 0 else f"store@shard{i}"
                checks.append(DoctorCheck(name=where, ok=False, detail=report.message))
                continue
            for check in report.checks:
                named = (
                    check if i == 0 else check.model_copy(update={"name": f"{check.name}@shard{i}"})
                )
                checks.append(named)
        return DoctorResponse(ok=all(c.ok or not c.required for c in checks), checks=tuple(checks))

    def describe(self) -> dict[str, Any]:
        parts = self._all(lambda s: s.describe())
        return {
            **parts[0],
            "banks": sorted(b.name for b in self.bank_list().banks),
            "shards": [
                {"shard": i, "data_dir": p.get("data_dir"), "commits": p.get("commits")}
                for i, p in enumerate(parts)
            ],
            "routing_version": self.refresh().version,
        }

    def capabilities(self) -> dict[str, Any]:
        return {**self.shards[0].capabilities(), "shards": len(self.shards)}

    def configure(self, config: dict[str, Any]) -> dict[str, Any]:
        several = len(self.shards) > 1
        if several and isinstance(config, dict) and {"data_dir", "shard_index"} & set(config):
            raise InvalidArgumentError("data_dir and shard_index are per shard: set them at start")
        return self._all(lambda s: s.configure(config))[0]

    def reload(self) -> ReloadResponse:
        parts = self._all(lambda s: s.reload())
        return ReloadResponse(
            ok=all(p.ok for p in parts),
            banks=tuple(sorted({b for p in parts for b in p.banks})),
            corrupt_lines=sum(p.corrupt_lines for p in parts),
        )

    # -- shards --------------------------------------------------------------------------------

    def shard_routing(self, table: dict[str, Any] | None = None) -> dict[str, Any]:
        """Every shard's view; with ``table``, shard 0 (the truth) takes it first, then each."""
        if table is not None:
            from shared.rebalance import publish

            publish(self.shards, Routing.parse(table))
        views = self._all(lambda s: s.shard_routing())
        return {"shard": None, "routing": self.refresh().dump(), "shards": views}

    def bank_export(self, name: str) -> dict[str, bytes]:
        return self.shards[self.owner(name)].bank_export(name)

    def bank_import(self, name: str, files: dict[str, bytes]) -> BankInfo:
        target = self.refresh().moving.get(slot_of(name))
        if target is None:
            raise ConflictError(f"bank {name!r} is not moving: nothing to import it into")
        return self.shards[target].bank_import(name, files)

    def bank_release(self, name: str) -> BankDeleteResponse:
        owner = self.owner(name)
        for i, shard in enumerate(self.shards):
            if i != owner and name in shard.shard_routing()["banks"]:
                return shard.bank_release(name)
        raise NotFoundError(f"no store shard holds a copy of {name!r} to release")


if TYPE_CHECKING:  # mypy: a client that does not implement the contract fails here
    _contract: type[StoreAPI] = ShardedStoreClient


def _once(values: Iterable[str] | None) -> Iterable[str] | None:
    """An iterable option as a tuple: a retried call must not find a spent generator."""
    if values is None or isinstance(values, str):
        return values
    return tuple(values)


def _doctor_of(shard: StoreAPI) -> DoctorResponse | SourceUnavailableError:
    try:
        return shard.doctor()
    except SourceUnavailableError as e:
        return e


def _needs(table: Routing) -> int:
    """How many shards the table routes to (owners and move targets)."""
    return max([table.shards, *(t + 1 for t in table.moving.values())])


def _unpack(cursor: int, n: int) -> builtins.list[int]:
    if cursor >= PAST_THE_END:
        return [PAST_THE_END] * n
    return [(cursor >> (CURSOR_BITS * i)) & CURSOR_MASK for i in range(n)]


def _pack(cursors: Sequence[int]) -> int:
    return sum(min(c, CURSOR_MASK) << (CURSOR_BITS * i) for i, c in enumerate(cursors))


def _restamped(
    parts: Sequence[tuple[int, EventsResponse]], cursors: builtins.list[int]
) -> EventsResponse:
    """Events re-stamped with packed tokens, and the packed cursor after them all."""
    events: builtins.list[Event] = []
    for i, got in parts:
        for event in got.events:
            cursors[i] = event.seq
            events.append(event.model_copy(update={"seq": _pack(cursors)}))
        cursors[i] = got.cursor
    return EventsResponse(events=tuple(events), cursor=_pack(cursors))


def _item_bank(item: object) -> str | None:
    bank = item.get("bank") if isinstance(item, dict) else getattr(item, "bank", None)
    return bank if isinstance(bank, str) else None


def _one_shard(store: ShardedStoreClient, items: Sequence[object], verb: str) -> str | None:
    """The bank that routes a ``*_many`` call: its items must all live on one shard (all or
    nothing is a single store's promise)."""
    if len({store.owner(_item_bank(item)) for item in items}) > 1:
        raise InvalidArgumentError(
            f"{verb} items span store shards; all or nothing holds per shard: "
            "send one call per bank"
        )
    return _item_bank(items[0]) if items else None


def open_embedded_shards(settings: StoreSettings, n: int, *, one_shot: bool = False) -> StoreAPI:
    """``n`` in-process store shards on one data dir (``shared.shards.shard_dir``); one shard
    is the plain embedded store. A fresh set of shards gets an even slot table. ``one_shot``
    as for ``shared.workers.open_embedded_store``."""
    from shared.rebalance import initial_routing
    from shared.workers import open_embedded_store

    if shard_count(n) == 1:
        return open_embedded_store(settings, one_shot=one_shot)
    root = settings.data_path
    stores = [
        open_embedded_store(
            settings.merged({"data_dir": str(shard_dir(root, i)), "shard_index": i}),
            one_shot=one_shot,
        )
        for i in range(n)
    ]
    initial_routing(stores)
    return ShardedStoreClient(stores)
