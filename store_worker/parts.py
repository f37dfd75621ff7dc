"""The parts of one store on one data dir, and how a call holds them.

``StoreParts`` builds the parts (``core.py`` lists them) on a data dir it holds alone (the
directory lock: one writer per data dir), swaps them together on a reload or a move to another
dir, and closes them together. ``MemoryStore`` is this plus the public API.

Every public method runs in one of three ways: ``serialized`` (under the store lock; a closed
store refuses it, as it may change files another process now holds), ``reading`` (under the
lock, answered from RAM even once closed) or ``grouped`` (as part of the next group commit,
acknowledged only once its line is durable: ``storage/commit.py``).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Concatenate, Literal, ParamSpec, TypeVar, cast

from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.contract.clock import Clock, SystemClock
from shared.contract.config import StoreSettings
from shared.contract.op import Op
from shared.text.tokens import TokenCounter
from store_worker.harness.blocks import BlockKey
from store_worker.harness.inject import STATE_OWNER as INJECT_STATE
from store_worker.harness.inject import Injector
from store_worker.harness.messages import session_key
from store_worker.harness.outbox import Outbox
from store_worker.harness.principals import Principals, session_known
from store_worker.harness.review import RuleReview
from store_worker.harness.rules import Rules
from store_worker.harness.sessions import Sessions
from store_worker.recall import scoring as recall_mod
from store_worker.recall import synonyms as synonyms_mod
from store_worker.recall.embed import Embedder, from_settings
from store_worker.recall.reads import Reader
from store_worker.recall.synonyms import SynonymSource
from store_worker.recall.vectors import Vectors
from store_worker.storage import lock as dir_lock
from store_worker.storage.banks import Banks
from store_worker.storage.commit import GroupCommit
from store_worker.storage.drafts import Drafts
from store_worker.storage.events import EventBus
from store_worker.storage.files import check_writable, remove_stale_staging
from store_worker.storage.purge import Purger
from store_worker.storage.shards import ShardGuard
from store_worker.storage.state import StateStore
from store_worker.storage.writes import Writer

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound="StoreParts")
StoreMethod = Callable[Concatenate[S, P], R]


def serialized(method: StoreMethod[S, P, R]) -> StoreMethod[S, P, R]:
    """Run under the store lock: a read sees no batch half-committed (``commit.py``). A
    closed store refuses it (it may change files another process now holds)."""
    return _locked(method, writes=True)


def reading(method: StoreMethod[S, P, R]) -> StoreMethod[S, P, R]:
    """Like ``serialized`` for a method that changes nothing on disk: a closed store still
    answers from RAM (what it held when it closed)."""
    return _locked(method, writes=False)


def _locked(method: StoreMethod[S, P, R], *, writes: bool) -> StoreMethod[S, P, R]:
    @functools.wraps(method)
    def locked(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.lock:
            if writes:
                self._refuse_if_closed()
            self._held.depth = getattr(self._held, "depth", 0) + 1
            try:
                return method(self, *args, **kwargs)
            finally:
                self._held.depth -= 1

    return locked


def grouped(method: StoreMethod[S, P, R]) -> StoreMethod[S, P, R]:
    """Run as part of the next group commit: acknowledged only once its line is fsynced."""

    @functools.wraps(method)
    def committed(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        if getattr(self._held, "depth", 0):  # already inside a locked call (doctor's probe):
            return method(self, *args, **kwargs)  # commit alone rather than wait on itself

        def write() -> R:  # run by the batch's leader under the store lock, as close is
            self._refuse_if_closed()
            return method(self, *args, **kwargs)

        self._refuse_if_closed()
        return self.commits.run(write)

    return committed


class StoreParts(StoreAPI):
    """The store's parts on one data dir: built, reopened and closed together."""

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
        self.vectors = Vectors(embedder or from_settings(base))
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
        check_writable(root, full_ok=True)  # boot-fatal: the files are the truth, never RAM alone
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
        review = RuleReview(s, banks=banks, rules=rules, events=self.events, clock=clock)
        injector = Injector(
            s,
            banks=banks,
            sessions=sessions,
            state=state,
            clock=clock,
            recall=reader.recall,
            key=BlockKey(state.dir),
            events=self.events,
            count_tokens=self.tokens.count,
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
        known = session_known(
            lambda: sessions.parents,
            lambda sid: state.get(INJECT_STATE, session_key(sid)),
            lambda: (m for b in banks.owned() for m in b.records.values()),
        )
        self.principals = Principals(state, known)  # scoped tokens, session owners
        self.banks, self.shard, self.writer, self.reader = banks, shard, writer, reader
        self.rules, self.injector, self.outbox, self.purger = rules, injector, outbox, purger
        self.review = review
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

    # -- the one entry of every transport (shared.contract.api) -----------------------------

    SERVED_AS_OPS: ClassVar[dict[type[Op[Any]], Callable[..., Any]]] = {}
    """Ops served by a method that takes the op itself (no second copy of its arguments);
    every other op by the façade method of its name, with the op's arguments."""

    def ping(self) -> str:
        """``"pong"``: an open store answers (it reads nothing, and writes nothing)."""
        return "pong"

    def call(self, op: Op[R]) -> R:
        """Serve one op (``shared.contract.ops``) by the façade method of its name, which delegates
        to the part that owns the concept."""
        if not isinstance(op, Op):
            raise errors.InvalidArgumentError(f"{type(op).__name__} is not a store operation")
        served_as_op = self.SERVED_AS_OPS.get(type(op))
        if served_as_op is not None:  # a part that takes the op itself
            return cast(R, served_as_op(self, op))
        serve = getattr(type(self), op.method)
        if serve is getattr(StoreAPI, op.method):  # not served here: it would call itself
            raise errors.InvalidArgumentError(f"this store does not serve {op.method!r}")
        return cast(R, serve(self, **op.args()))
