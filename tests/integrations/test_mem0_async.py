"""mem0's ``AsyncMemory`` through the same one-line switch: each method awaited, answering as
``Memory`` does, embedded and through a gateway."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from integrations.mem0_compat import AsyncMemory  # was: from mem0 import AsyncMemory


def test_async_memory_answers_as_memory_does(store_target: str) -> None:
    async def session() -> None:
        async with AsyncMemory(store_target) as m:
            added = await asyncio.gather(
                m.add("I like tea", user_id="alice", infer=False),
                m.add("I like coffee", user_id="alice", metadata={"k": 1}, infer=False),
            )
            tea, coffee = (a["results"][0] for a in added)
            assert (tea["event"], coffee["metadata"]) == ("ADD", {"k": 1})

            rows = (await m.get_all(user_id="alice"))["results"]
            assert sorted(r["memory"] for r in rows) == ["I like coffee", "I like tea"]
            found = (await m.search("coffee", filters={"user_id": "alice", "k": 1}))["results"]
            assert [r["memory"] for r in found] == ["I like coffee"]

            assert (await m.update(tea["id"], "I like green tea"))["message"]
            got = await m.get(tea["id"])
            assert got is not None and got["memory"] == "I like green tea"
            assert [h["event"] for h in await m.history(tea["id"])] == ["ADD", "UPDATE"]
            await m.delete(coffee["id"])
            assert await m.get(coffee["id"]) is None
            with pytest.raises(ValueError, match="user_id"):
                await m.add("hello", infer=False)
            await m.delete_all(user_id="alice")
            assert (await m.get_all(user_id="alice"))["results"] == []
            assert await m.reset() is None

    asyncio.run(session())


def test_async_memory_from_config(tmp_path: Path) -> None:
    config = {"llm": {"provider": "openai", "config": {"model": "gpt-4o-mini"}}}
    m = AsyncMemory.from_config(config, store=f"file:{tmp_path / 'data'}")
    try:
        assert m.model == "openai/gpt-4o-mini"
    finally:
        m.close()
