"""``AsyncMemory``: mem0's asynchronous ``Memory``, the same one-line switch::

    from integrations.mem0_compat import AsyncMemory   # was: from mem0 import AsyncMemory

Each method is ``Memory``'s (``integrations.mem0_compat``), awaited: it runs in a worker
thread so the event loop is not blocked, one call of an object at a time (its store client is
shared), and answers as ``Memory`` does."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from integrations.mem0_compat import Memory
from shared.contract.api import StoreAPI
from shared.llm import LLM

T = TypeVar("T")


class AsyncMemory:
    """mem0's ``AsyncMemory`` over ``Memory``: the same constructor and answers, awaited."""

    def __init__(
        self,
        store: StoreAPI | str | None = None,
        *,
        bank: str | None = None,
        model: str | None = None,
        llm: LLM | None = None,
    ) -> None:
        self._bind(Memory(store, bank=bank, model=model, llm=llm))

    def _bind(self, memory: Memory) -> None:
        self.memory = memory
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config_dict: dict[str, Any] | None = None, **kw: Any) -> AsyncMemory:
        """As ``Memory.from_config`` (synchronous, as mem0's)."""
        made = cls.__new__(cls)
        made._bind(Memory.from_config(config_dict, **kw))
        return made

    @property
    def model(self) -> str | None:
        return self.memory.model

    async def _run(self, call: Callable[..., T], *args: Any, **kw: Any) -> T:
        def locked() -> T:
            with self._lock:
                return call(*args, **kw)

        return await asyncio.to_thread(locked)

    async def add(self, messages: Any, **kw: Any) -> dict[str, Any]:
        return await self._run(self.memory.add, messages, **kw)

    async def search(self, query: str, **kw: Any) -> dict[str, Any]:
        return await self._run(self.memory.search, query, **kw)

    async def get(self, memory_id: str) -> dict[str, Any] | None:
        return await self._run(self.memory.get, memory_id)

    async def get_all(self, **kw: Any) -> dict[str, Any]:
        return await self._run(self.memory.get_all, **kw)

    async def update(
        self, memory_id: str, data: str, metadata: dict[str, Any] | None = None
    ) -> Any:
        return await self._run(self.memory.update, memory_id, data, metadata)

    async def delete(self, memory_id: str) -> dict[str, str]:
        return await self._run(self.memory.delete, memory_id)

    async def delete_all(self, **kw: Any) -> dict[str, str]:
        return await self._run(self.memory.delete_all, **kw)

    async def history(self, memory_id: str) -> list[dict[str, Any]]:
        return await self._run(self.memory.history, memory_id)

    async def reset(self) -> None:
        await self._run(self.memory.reset)

    def close(self) -> None:
        self.memory.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
