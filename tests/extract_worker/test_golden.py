"""Golden extraction fixtures: a transcript and a recorded model reply → the
expected store state. Files: ``tests/extract_worker/golden/*.json``; regenerate only on purpose.

Fixture shape::

    {"description": ..., "settings": {ExtractorSettings overrides},
     "store_settings": {StoreSettings overrides: the outbox retry policy, outbox_max_attempts},
     "setup": {"memories": [{"text", "id"?, "pinned"?, "entities"?}], "rules": {name: content}},
     "turns": [{"messages": [{role, content, timestamp}], "reply": "<raw model reply>"}],
     "expect": {"outcome": done|retry|dead, "live": [{"text", ...fields}],
                "superseded": [{"text", "by_text", "reason_prefix"?}], "rules": {name: content},
                "prompt_contains": [...], "dead_letters": n, "queued": n}}
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from extract_worker.core import Extractor
from extract_worker.settings import ExtractorSettings
from shared.contract.clock import FakeClock
from shared.llm import FakeLLM
from store_worker.core import MemoryStore

GOLDEN = Path(__file__).parent / "golden"
FIXTURES = sorted(GOLDEN.glob("*.json"))
START_MS = 1_772_701_200_000  # 2026-03-05 09:00 UTC, the fixtures' first message


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return data


def seed(store: MemoryStore, setup: dict[str, Any]) -> None:
    for mem in setup.get("memories", []):
        store.save(
            mem["text"],
            id=mem.get("id"),
            pinned=mem.get("pinned", False),
            entities=mem.get("entities"),
        )
    for name, content in setup.get("rules", {}).items():
        store.rule_set(name, content)


def check_live(store: MemoryStore, expected: list[dict[str, Any]]) -> None:
    live = {m.text: m for m in store.list(page_size=500).memories}
    assert sorted(live) == sorted(e["text"] for e in expected)
    for want in expected:
        mem = live[want["text"]]
        for key, value in want.items():
            got = getattr(mem, key)
            assert (list(got) if isinstance(got, tuple) else got) == value, (want["text"], key)
        assert mem.provenance.recorded_by in ("extractor", None)


def check_superseded(
    store: MemoryStore, expected: list[dict[str, Any]], reasons: list[str]
) -> None:
    every = store.list(include_superseded=True, page_size=500).memories
    by_id = {m.id: m for m in every}
    retired = [m for m in every if m.superseded_by]
    assert sorted(m.text for m in retired) == sorted(e["text"] for e in expected)
    for want in expected:
        (mem,) = [m for m in retired if m.text == want["text"]]
        assert mem.superseded_by is not None
        assert by_id[mem.superseded_by].text == want["by_text"]
        if "reason_prefix" in want:
            assert any(r.startswith(want["reason_prefix"]) for r in reasons)


@pytest.mark.parametrize("path", FIXTURES, ids=[p.stem for p in FIXTURES])
def test_golden(path: Path, fresh_store: Callable[..., MemoryStore]) -> None:
    fx = load(path)
    clock = FakeClock(start_ms=START_MS)
    # the retry policy is the store's (a fixture's "store_settings": outbox_max_attempts ...)
    store = fresh_store(clock=clock, **fx.get("store_settings", {}))
    seed(store, fx.get("setup", {}))
    settings = ExtractorSettings(extraction_model="fake/golden", **fx.get("settings", {}))
    llm = FakeLLM()
    extractor = Extractor(store, llm, settings, clock=clock)
    reasons: list[str] = []
    store.subscribe("t", lambda e: reasons.append(e.reason or ""))
    outcomes = []
    # When each turn completes and the extractor drains
    for i, turn in enumerate(fx["turns"]):
        store.turn_completed(f"golden-{path.stem}", str(ULID()), turn["messages"])
        llm.replies = [turn["reply"]]
        outcomes += [r.outcome for r in extractor.drain().results]
        assert len(llm.calls) == i + 1  # one LLM call per turn
    # Then the store holds what the fixture expects
    want = fx["expect"]
    assert outcomes[-1] == want["outcome"]
    check_live(store, want.get("live", []))
    check_superseded(store, want.get("superseded", []), reasons)
    if "rules" in want:
        assert {r.name: r.content for r in store.rule_list().rules} == want["rules"]
    prompt = "\n".join(m["content"] for m in llm.calls[-1])
    for needle in want.get("prompt_contains", []):
        assert needle in prompt
    listing = store.outbox_list()
    assert listing.dead == want.get("dead_letters", 0)
    assert listing.queued + listing.leased == want.get("queued", 0)


def test_every_fixture_is_described_and_well_formed() -> None:
    assert len(FIXTURES) >= 15
    for path in FIXTURES:
        fx = load(path)
        assert fx["description"] and fx["turns"]
        assert fx["expect"]["outcome"] in ("done", "retry", "dead")
