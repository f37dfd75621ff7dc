"""The clock behind a small interface, with a fake for tests (recency decay and leases depend
on "now", so a test sets it instead of sleeping)."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class FakeClock:
    """A clock that only moves when told; ``tick`` advances it after every read if set."""

    def __init__(self, start_ms: int = 1_767_225_600_000, tick: int = 1) -> None:
        self.ms = start_ms
        self.tick = tick

    def now_ms(self) -> int:
        value = self.ms
        self.ms += self.tick
        return value

    def advance(self, *, days: float = 0, ms: int = 0) -> None:
        self.ms += int(days * 86_400_000) + ms
