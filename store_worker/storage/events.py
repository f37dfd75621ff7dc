"""Events: push to subscribers, and a bounded pull log with a cursor.

Delivery is fire-and-forget and at-least-once; a subscriber that raises is dropped after three
consecutive failures so a dead sibling cannot slow the store down. The pull log keeps the last
``capacity`` events; ``since(cursor)`` returns what came after a cursor (``memory watch``).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

from shared.contract.models import Event, EventsResponse, Memory
from store_worker.storage import validate as v

log = logging.getLogger(__name__)

Subscriber = Callable[[Event], Any]


class EventBus:
    def __init__(self, capacity: int = 10_000) -> None:
        self._log: deque[Event] = deque(maxlen=capacity)
        self._seq = 0
        self._subs: dict[str, tuple[Subscriber, set[str] | None]] = {}
        self._failures: dict[str, int] = {}
        self._muted: set[str] = set()
        self._sink: Callable[[Callable[[], object]], None] | None = None

    def hold(self, sink: Callable[[Callable[[], object]], None] | None) -> None:
        """Route emits into ``sink`` as deferred calls (group commit emits a write's events
        only after the fsync that covers it, ``commit.py``); ``None`` emits directly again."""
        self._sink = sink

    @property
    def cursor(self) -> int:
        return self._seq

    def subscribe(self, name: str, callback: Subscriber, banks: set[str] | None = None) -> None:
        self._subs[name] = (callback, banks)
        self._failures.pop(name, None)

    def unsubscribe(self, name: str) -> bool:
        return self._subs.pop(name, None) is not None

    def subscribers(self) -> list[str]:
        return sorted(self._subs)

    def emit(
        self,
        kind: str,
        event_type: str,
        bank: str,
        *,
        now: int,
        memory: Memory | None = None,
        reason: str | None = None,
        redacted: tuple[str, ...] = (),
    ) -> Event | None:
        """Record and push one event; ``None`` while held (it is emitted later, if at all)."""
        if self._sink is not None:
            self._sink(
                partial(
                    self.emit,
                    kind,
                    event_type,
                    bank,
                    now=now,
                    memory=memory,
                    reason=reason,
                    redacted=redacted,
                )
            )
            return None
        if bank in self._muted:  # doctor's scratch bank: nobody's business
            return Event(seq=self._seq, kind=kind, event_type=event_type, bank=bank, at=now)
        self._seq += 1
        event = Event(
            seq=self._seq,
            kind=kind,
            event_type=event_type,
            bank=bank,
            memory=memory,
            reason=reason,
            redacted=redacted,
            at=now,
        )
        self._log.append(event)
        for name, (callback, banks) in list(self._subs.items()):
            if banks is None or bank in banks:
                self._deliver(name, callback, event)
        return event

    @contextmanager
    def muted(self, bank: str) -> Iterator[None]:
        """Emit nothing about ``bank`` inside the block (an internal scratch bank)."""
        self._muted.add(bank)
        try:
            yield
        finally:
            self._muted.discard(bank)

    def _deliver(self, name: str, callback: Subscriber, event: Event) -> None:
        try:
            callback(event)
            self._failures.pop(name, None)
        except Exception as e:  # a subscriber's fault never fails the write that emitted it
            count = self._failures.get(name, 0) + 1
            self._failures[name] = count
            log.warning("event subscriber %s failed (%d): %s", name, count, e)
            if count >= 3:
                self.unsubscribe(name)

    def rewrite(self, fix: Callable[[Event], Event | None]) -> None:
        """Pass every buffered event through ``fix`` (its replacement, or None to drop it):
        ``purge.py`` keeps the old text of a purged or redacted memory out of ``since``."""
        kept = (fixed for e in self._log if (fixed := fix(e)) is not None)
        self._log = deque(kept, maxlen=self._log.maxlen)

    def since(self, cursor: int, *, limit: int = 500, bank: str | None = None) -> list[Event]:
        out = [e for e in self._log if e.seq > cursor and (bank is None or e.bank == bank)]
        return out[:limit]

    def page(self, cursor: int = 0, *, limit: int = 500, bank: str | None = None) -> EventsResponse:
        """The events after ``cursor`` (of ``bank``, or all) and the cursor to ask from next:
        the last one given, or where the log stands when a caller's cursor is past it."""
        cursor, limit, bank = v.cursor(cursor), v.events_limit(limit), v.optional_bank(bank)
        found = self.since(cursor, limit=limit, bank=bank)
        last = found[-1].seq if found else max(cursor, 0)
        if not found and cursor > self.cursor:
            last = self.cursor
        return EventsResponse(events=tuple(found), cursor=last)
