"""Client-side coalescing of concurrent saves: a transport wrapper (``Coalescing``).

Through Ray, a save's cost is mostly the round trip (~1.2 ms median for a sync actor call,
measured on this machine), not the store's work (~0.25 ms) nor its fsync, which group commit
already shares (``store_worker/storage/commit.py``).
So threads of one process that save at the same time (an extractor's replicas, a service's
request handlers) send their saves together: while ``max_in_flight`` calls are out, later
saves queue; the next thread free to send takes the whole queue (up to ``max_items``) as one
``save_many``, and each caller gets its own ``SaveResponse`` back. Before sending, it waits up
to ``linger_s`` for callers the last call just answered (they are inside ``save`` but neither
queued nor in a call), so calls carry all the busy callers, not half of them.

- A lone save goes out at once as a plain ``save``: one caller pays no wait and no change.
- ``save_many`` is all-or-nothing (nothing of it is written when an item is refused), so when
  the store refuses a coalesced call for its input (``REFUSALS``), every item is re-sent alone
  and each caller gets exactly what its own ``save`` would have: its result or its error. Any
  other failure (the actor unavailable, a timeout) goes to every caller of that call as it is:
  a write is never re-sent after an outcome the client cannot know (``store_worker/actor.py``).
- Acknowledgement is unchanged: a caller returns only once the store answered the call that
  carried its save, i.e. after the fsync covering it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from shared.contract import ops
from shared.contract.api import Sharding, StoreAPI
from shared.contract.errors import REFUSALS, UnknownError
from shared.contract.models import MAX_SAVE_ITEMS, SaveManyResponse, SaveResponse
from shared.contract.op import Op

R = TypeVar("R")

# Calls out at once per client. One: the callers answered by a call queue up again behind
# the next, so calls carry ~half the callers each. Measured with 8 callers (bench.writes, one
# run, 2 busy cores): 1 in flight 1,051 saves/s at 3.9 saves/call and 231 us of client CPU
# per save; 2 in flight 918/s, 2.6, 378 us; 4 in flight 849/s, 1.6, 439 us.
MAX_IN_FLIGHT = 1
# How long a sender may hold the queue for callers the last call just answered (_linger).
# Measured, 8 callers through the actor, one run, medians of 4 rounds: no linger 1,059
# saves/s at 4.0 saves/call; 0.5 ms 1,556/s at 7.7; 1 ms 1,348/s; 2 ms 1,350/s (7.8).
LINGER_S = 0.0005


@dataclass(eq=False)
class _Pending:
    item: dict[str, Any]
    result: SaveResponse | None = None
    error: BaseException | None = None
    done: bool = False


@dataclass(eq=False, repr=False, kw_only=True)
class SaveCoalescer:
    """Sends concurrent ``save`` calls as few ``save_many`` calls (see the module docstring)."""

    one: Callable[[dict[str, Any]], SaveResponse]
    many: Callable[[list[dict[str, Any]]], SaveManyResponse]
    max_items: int
    max_in_flight: int = MAX_IN_FLIGHT
    linger_s: float = LINGER_S

    def __post_init__(self) -> None:
        self._cv = threading.Condition(threading.Lock())
        self._queue: list[_Pending] = []
        self._in_flight = 0
        self._inside = 0  # threads inside save(): queued, in a call, or just answered
        self._carried = 0  # saves in the calls out now
        self.calls = 0  # calls sent and saves carried (for benchmarks and tests)
        self.saves = 0

    def save(self, item: dict[str, Any]) -> SaveResponse:
        """Send one save's arguments (``SaveRequest`` fields) with whatever else is queued."""
        pending = _Pending(item)
        with self._cv:
            self._queue.append(pending)
            self._inside += 1
            self._cv.notify_all()  # a sender lingering for the others may go now
            try:
                self._until_done(pending)
            finally:
                self._inside -= 1
                self._cv.notify_all()
        if pending.error is not None:
            raise pending.error
        assert pending.result is not None
        return pending.result

    def _until_done(self, pending: _Pending) -> None:
        """Wait, or send the queue, until ``pending`` has its answer (``_cv`` held)."""
        lingered = False
        while not pending.done:
            if self._in_flight >= self.max_in_flight or not self._queue:
                self._cv.wait()
                continue
            if not lingered and self._linger():
                lingered = True  # at most once per send; look again: another thread may
                continue  # have sent the queue meanwhile
            lingered = False
            batch = self._queue[: self.max_items]
            del self._queue[: self.max_items]
            self._in_flight += 1
            self._carried += len(batch)
            self.calls += 1
            self.saves += len(batch)
            self._cv.release()
            try:
                self._send(batch)
            finally:
                self._cv.acquire()
                self._in_flight -= 1
                self._carried -= len(batch)
                self._cv.notify_all()

    def _linger(self) -> bool:
        """Hold the queue up to ``linger_s`` while some thread inside ``save`` is neither
        queued nor in a call: one the last call just answered, about to leave (and, in a
        busy service, to save again). Waiting for it makes calls bigger and fewer, which is
        what a round trip costs. Returns whether it waited (the caller looks again)."""
        if not self.linger_s or self._inside <= len(self._queue) + self._carried:
            return False
        deadline = time.monotonic() + self.linger_s
        while self._inside > len(self._queue) + self._carried:
            left = deadline - time.monotonic()
            if left <= 0 or not self._queue or self._in_flight >= self.max_in_flight:
                break
            self._cv.wait(left)
        return True

    def _send(self, batch: Sequence[_Pending]) -> None:
        try:
            if len(batch) == 1:
                self._alone(batch[0])
            else:
                self._together(batch)
        finally:
            for pending in batch:
                pending.done = True

    def _alone(self, pending: _Pending) -> None:
        try:
            pending.result = self.one(pending.item)
        except BaseException as e:  # the caller's own save's error, raised in its thread
            pending.error = e

    def _together(self, batch: Sequence[_Pending]) -> None:
        try:
            answer = self.many([p.item for p in batch])
        except REFUSALS:  # nothing was written: each save alone gets its own answer
            for pending in batch:
                self._alone(pending)
            return
        except BaseException as e:  # an outcome nobody knows: never re-sent
            for pending in batch:
                pending.error = e
            return
        if len(answer.results) != len(batch):  # a store of another version
            err = UnknownError(f"save_many answered {len(answer.results)} of {len(batch)} saves")
            for pending in batch:
                pending.error = err
            return
        for pending, result in zip(batch, answer.results, strict=True):
            pending.result = result


class Coalescing(StoreAPI):
    """A transport over another: concurrent reinforcing ``Save`` ops go out together as
    ``SaveMany`` (see the module docstring); every other op passes through as it is."""

    def __init__(
        self, inner: StoreAPI, *, linger_s: float = LINGER_S, max_items: int = MAX_SAVE_ITEMS
    ) -> None:
        self.inner = inner
        self.coalescer = SaveCoalescer(
            one=lambda item: inner.call(ops.Save(**item)),
            many=lambda items: inner.call(ops.SaveMany(items)),
            max_items=max_items,
            linger_s=linger_s,
        )

    def call(self, op: Op[R]) -> R:
        if isinstance(op, ops.Save) and op.reinforce:  # save_many always reinforces
            return cast(R, self.coalescer.save(op.changed()))
        return self.inner.call(op)

    def close(self) -> None:
        self.inner.close()

    def sharding(self) -> Sharding | None:
        return self.inner.sharding()
