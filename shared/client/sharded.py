"""``ShardedStoreClient``: the sharded transport, over several store shards, routed by bank.

Every caller that takes a ``StoreAPI`` (the CLI, the extractor, the consolidator, the gateway)
can be handed this client instead of one ``StoreClient``: it holds one ``StoreAPI`` per shard
(``StoreClient`` per actor over Ray, ``connect()``; or in-process stores in tests) and sends each
call where ``shared.client.shards`` routes it:

- a call naming a bank goes to the bank's owner; naming none, to the default bank's owner;
- the harness seam (``pre_generate``, ``turn_completed``, sessions) goes to the owner of the
  session's bank (``shared.client.sessions``: the turn's ``memory_bank``, the session's, its
  parent's, else the default bank), kept in shard 0 so that a ``turn_completed`` from another
  process (a hook, another gateway) reaches the shard its session's ``pre_generate`` went to;
- calls that span banks fan out and merge: ``bank_list``, ``events_since`` (one cursor packing
  each shard's: 32 bits per shard), ``doctor`` (checks named ``<check>@shard<i>`` beyond shard 0),
  ``describe``, ``reload``, ``subscribe``, ``outbox_watch``, ``outbox_claim``/``outbox_list``
  (a claimed job's later calls go to the shard that holds it), ``state_set``;
- ``save_many`` must stay on one shard (all or nothing is a single store's promise).

A shard that no longer owns a bank answers ``[moved]``: the client re-reads the slot table from
shard 0 and goes to the owner. A client given a finder (``shared.client.finder``; ``connect(
follow=True)``, which the extractor, the consolidator and the gateway use) also follows the
number of shards: whenever the table's version changes, names a shard it does not reach, or is
older than ``follow_s`` at a fan-out, it asks the finder how many run now, adds the new ones
(re-sending them its ``outbox_watch``, ``subscribe`` and ``state_set`` calls) and drops the
stopped ones, so N can change under a running sibling without restarting it.

A bank being moved answers ``[moving]`` to writes: the client waits (backing off) and retries
for up to ``freeze_wait_s``, then hands the retryable ``SourceUnavailableError`` on.
``shared.client.rebalance`` is the mover (``memory shards rebalance``).
"""

from __future__ import annotations

import builtins
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar, cast

from shared.client.finder import RayShards, ShardFinder
from shared.client.sessions import SessionRoutes
from shared.client.shards import (
    FROZEN_MARK,
    MOVED_MARK,
    STATE_KEY,
    STATE_OWNER,
    Routing,
    shard_count,
    shard_dir,
    slot_of,
)
from shared.contract import ops
from shared.contract.api import Sharding, StoreAPI, Subscriber, Wake
from shared.contract.config import StoreSettings
from shared.contract.errors import (
    ConflictError,
    InvalidArgumentError,
    NotFoundError,
    SourceUnavailableError,
)
from shared.contract.models import (
    BankDeleteResponse,
    BankInfo,
    BankListResponse,
    DoctorCheck,
    DoctorResponse,
    Event,
    EventsResponse,
    InjectResponse,
    OutboxAckResponse,
    OutboxJob,
    OutboxListResponse,
    ReloadResponse,
    RescanResponse,
    TurnCompletedResponse,
)
from shared.contract.op import Op

T = TypeVar("T")
R = TypeVar("R")
CURSOR_BITS = 32
CURSOR_MASK = (1 << CURSOR_BITS) - 1
PAST_THE_END = 2**62
MOVED_RETRIES = 3
BACKOFF_S = (0.02, 1.0)
FOLLOW_S = 5.0  # a following client re-reads the table at a fan-out at most this often


class ShardedStoreClient(StoreAPI):
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

        from shared.client.ray import DEFAULT_TIMEOUT_S, StoreClient

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
        data dir locks)."""
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

    # -- the one entry: each op by its route, or by its own rule (``_SPECIAL``) --------------

    def call(self, op: Op[R]) -> R:
        special = _SPECIAL.get(type(op))
        if special is not None:
            return cast(R, special(self, op))
        route = op.route
        if route == "bank":
            return self._on(getattr(op, "bank", None), lambda s: s.call(op))
        if route == "name":
            return self._on(getattr(op, "name", None), lambda s: s.call(op))
        if route == "items":
            items = getattr(op, "items", ())
            return self._on(_one_shard(self, items, op.method), lambda s: s.call(op))
        if route == "job":
            return self._job(getattr(op, "job_id", ""), lambda s: s.call(op))
        if route == "first":
            return self.shards[0].call(op)
        raise InvalidArgumentError(f"{op.method} has no route over shards")  # pragma: no cover

    def sharding(self) -> Sharding:
        return self

    def _bank_list(self, op: ops.BankList) -> BankListResponse:
        banks = [b for r in self._all(lambda s: s.call(op)) for b in r.banks]
        return BankListResponse(banks=tuple(sorted(banks, key=lambda b: b.name)))

    def _redact_rescan(self, op: ops.RedactRescan) -> RescanResponse:
        """One bank on its owner; every bank on every shard (each rescans what it owns)."""
        if op.bank is not None:
            return self._on(op.bank, lambda s: s.call(op))
        found = self._all(lambda s: s.call(op))
        banks = sorted((b for r in found for b in r.banks), key=lambda b: b.bank)
        kinds = sorted({k for r in found for k in r.kinds})
        return RescanResponse(banks=tuple(banks), kinds=tuple(kinds))

    # -- the harness seam ----------------------------------------------------------------------

    def _pre_generate(self, op: ops.PreGenerate) -> InjectResponse:
        bank, binding = self.sessions.step(op.session_id, op.metadata, op.parent_session_id)
        got = self._on(bank, lambda s: s.call(op))
        if any(MOVED_MARK in note for note in got.notes):
            # injection fails open, so a stale table shows only in its notes: re-read, resend
            self.refresh()
            got = self._on(bank, lambda s: s.call(op))
        self.sessions.put(op.session_id, binding)
        return got

    def _turn_completed(self, op: ops.TurnCompleted) -> TurnCompletedResponse:
        bank, binding = self.sessions.link(op.session_id, op.parent_session_id or op.parent)
        done = self._on(bank, lambda s: s.call(op))
        if binding is not None:  # the store linked the session to its parent: so do we
            self.sessions.put(op.session_id, binding)
        return done

    def _link_session(self, op: ops.LinkSession) -> None:
        bank, binding = self.sessions.link(op.session_id, op.parent_session_id)
        self._on(bank, lambda s: s.call(op))
        if binding is not None:
            self.sessions.put(op.session_id, binding)

    def _session_lineage(self, op: ops.SessionLineage) -> tuple[str, ...]:
        bank = self.sessions.completed(op.session_id, None) if op.session_id else None
        return self._on(bank, lambda s: s.call(op))

    # -- the extraction outbox -----------------------------------------------------------------

    def _outbox_watch(self, op: ops.OutboxWatch) -> None:
        self._all(lambda s: s.call(op))
        self._watches[op.name] = op.callback

    def _outbox_claim(self, op: ops.OutboxClaim) -> builtins.list[OutboxJob]:
        """Claim from every shard, starting one further each call (no shard starves). A shard
        that does not answer is passed over: its jobs wait in its outbox (a lease it may have
        granted runs out), and one shard down must not stop extraction on the others. Only
        when no shard answers is its error raised."""
        self._fresh()
        start = next(self._claim_from)
        shards = builtins.list(self.shards)
        claimed: builtins.list[OutboxJob] = []
        down: builtins.list[SourceUnavailableError] = []
        for k in range(len(shards)):
            if len(claimed) >= op.limit:
                break
            i = (start + k) % len(shards)
            try:
                jobs = shards[i].outbox_claim(op.limit - len(claimed))
            except SourceUnavailableError as e:
                down.append(e)
                continue
            for job in jobs:
                self._jobs[job.job_id] = i
                claimed.append(job)
        if down and len(down) == len(shards):
            raise down[0]
        return claimed

    def _outbox_ack(self, op: ops.OutboxAck) -> OutboxAckResponse:
        done = self._job(op.job_id, lambda s: s.call(op))
        self._jobs.pop(op.job_id, None)
        return done

    def _outbox_list(self, op: ops.OutboxList) -> OutboxListResponse:
        parts = self._all(lambda s: s.call(op))
        jobs = [j for p in parts for j in p.jobs][: op.limit]
        return OutboxListResponse(
            queued=sum(p.queued for p in parts),
            leased=sum(p.leased for p in parts),
            dead=sum(p.dead for p in parts),
            jobs=tuple(jobs),
        )

    # -- events and state ----------------------------------------------------------------------

    def _subscribe(self, op: ops.Subscribe) -> None:
        self._all(lambda s: s.call(op))
        self._subscribers[op.name] = (op.callback, op.banks)

    def _unsubscribe(self, op: ops.Unsubscribe) -> bool:
        self._subscribers.pop(op.name, None)
        return any(self._all(lambda s: s.call(op)))

    def _events_since(self, op: ops.EventsSince) -> EventsResponse:
        """The cursor is a resume token packing each shard's cursor in ``CURSOR_BITS`` bits
        (shard 0 lowest); each event's ``seq`` is re-stamped as the token just past it, so
        ``events[-1].seq == cursor`` as on one store. ``cursor >= 2**62`` is past the end on
        every shard. Every bank: shard by shard; one bank: its owner only."""
        cursor, limit, bank = op.cursor, op.limit, op.bank
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

    def _state_set(self, op: ops.StateSet) -> None:
        """On every shard: each reads its siblings' status (the extractor's) locally."""
        if (op.owner, op.key) == (STATE_OWNER, STATE_KEY):
            raise InvalidArgumentError("the slot table changes only through shard_routing")
        self._all(lambda s: s.call(op))
        self._states[(op.owner, op.key)] = op.value

    # -- operations ----------------------------------------------------------------------------

    def _doctor(self, op: ops.Doctor) -> DoctorResponse:
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

    def _describe(self, op: ops.Describe) -> dict[str, Any]:
        parts = self._all(lambda s: s.call(op))
        return {
            **parts[0],
            "banks": sorted(b.name for b in self.bank_list().banks),
            "shards": [
                {"shard": i, "data_dir": p.get("data_dir"), "commits": p.get("commits")}
                for i, p in enumerate(parts)
            ],
            "routing_version": self.refresh().version,
        }

    def _capabilities(self, op: ops.Capabilities) -> dict[str, Any]:
        return {**self.shards[0].call(op), "shards": len(self.shards)}

    def _configure(self, op: ops.Configure) -> dict[str, Any]:
        config = op.config
        several = len(self.shards) > 1
        if several and isinstance(config, dict) and {"data_dir", "shard_index"} & set(config):
            raise InvalidArgumentError("data_dir and shard_index are per shard: set them at start")
        return self._all(lambda s: s.call(op))[0]

    def _reload(self, op: ops.Reload) -> ReloadResponse:
        parts = self._all(lambda s: s.call(op))
        return ReloadResponse(
            ok=all(p.ok for p in parts),
            banks=tuple(sorted({b for p in parts for b in p.banks})),
            corrupt_lines=sum(p.corrupt_lines for p in parts),
        )

    # -- shards --------------------------------------------------------------------------------

    def _shard_routing(self, op: ops.ShardRouting) -> dict[str, Any]:
        """Every shard's view; with ``table``, shard 0 (the truth) takes it first, then each."""
        if op.table is not None:
            from shared.client.rebalance import publish

            publish(self.shards, Routing.parse(op.table))
        views = self._all(lambda s: s.shard_routing())
        return {"shard": None, "routing": self.refresh().dump(), "shards": views}

    def _bank_place(self, op: ops.BankPlace) -> BankInfo:
        target = self.refresh().moving.get(slot_of(op.name))
        if target is None:
            raise ConflictError(f"bank {op.name!r} is not moving: nothing to import it into")
        return self.shards[target].call(op)

    def _bank_release(self, op: ops.BankRelease) -> BankDeleteResponse:
        owner = self.owner(op.name)
        for i, shard in enumerate(self.shards):
            if i != owner and op.name in shard.shard_routing()["banks"]:
                return shard.call(op)
        raise NotFoundError(f"no store shard holds a copy of {op.name!r} to release")


_SPECIAL: dict[type[Op[Any]], Callable[[ShardedStoreClient, Any], object]] = {
    ops.BankList: ShardedStoreClient._bank_list,
    ops.RedactRescan: ShardedStoreClient._redact_rescan,
    ops.PreGenerate: ShardedStoreClient._pre_generate,
    ops.TurnCompleted: ShardedStoreClient._turn_completed,
    ops.LinkSession: ShardedStoreClient._link_session,
    ops.SessionLineage: ShardedStoreClient._session_lineage,
    ops.OutboxWatch: ShardedStoreClient._outbox_watch,
    ops.OutboxClaim: ShardedStoreClient._outbox_claim,
    ops.OutboxAck: ShardedStoreClient._outbox_ack,
    ops.OutboxList: ShardedStoreClient._outbox_list,
    ops.Subscribe: ShardedStoreClient._subscribe,
    ops.Unsubscribe: ShardedStoreClient._unsubscribe,
    ops.EventsSince: ShardedStoreClient._events_since,
    ops.StateSet: ShardedStoreClient._state_set,
    ops.Doctor: ShardedStoreClient._doctor,
    ops.Describe: ShardedStoreClient._describe,
    ops.Capabilities: ShardedStoreClient._capabilities,
    ops.Configure: ShardedStoreClient._configure,
    ops.Reload: ShardedStoreClient._reload,
    ops.ShardRouting: ShardedStoreClient._shard_routing,
    ops.BankPlace: ShardedStoreClient._bank_place,
    ops.BankRelease: ShardedStoreClient._bank_release,
}
"""The ops a sharded store answers by a rule of their own (fan-outs that merge, sessions,
jobs, the slot table); every other op goes where its route says."""


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
    """``n`` in-process store shards on one data dir (``shards.shard_dir``), an even slot table
    for a fresh set; one shard is the plain embedded store (``workers.open_embedded_store``)."""
    from shared.client.rebalance import initial_routing
    from shared.client.workers import open_embedded_store

    if shard_count(n) == 1:
        return open_embedded_store(settings, one_shot=one_shot)
    root = settings.data_path
    each = [
        settings.merged({"data_dir": str(shard_dir(root, i)), "shard_index": i}) for i in range(n)
    ]
    stores = [open_embedded_store(shard, one_shot=one_shot) for shard in each]
    initial_routing(stores)
    return ShardedStoreClient(stores)
