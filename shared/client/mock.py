"""``MockStore``: a transport whose answers come from a function, for tests.

::

    store = MockStore(lambda op: SaveResponse(...) if isinstance(op, ops.Save) else None)
    store.save("x")          # handler(Save(text="x")); store.calls == [Save(text="x")]

Every typed method of ``StoreAPI`` works on it unchanged, since each only builds an op and
calls ``call``; the handler may raise the store's errors to script a failure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

from shared.contract.api import StoreAPI
from shared.contract.op import Op

R = TypeVar("R")


class MockStore(StoreAPI):
    """Answers each op with ``handler(op)`` and keeps every op it was given in ``calls``."""

    def __init__(self, handler: Callable[[Op[Any]], object]) -> None:
        self.handler = handler
        self.calls: list[Op[Any]] = []

    def call(self, op: Op[R]) -> R:
        self.calls.append(op)
        return cast(R, self.handler(op))
