"""The ``memory-extractor`` Ray shell drains the ``memory-store`` actor's outbox."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ulid import ULID

from extract_worker.actor import start
from extract_worker.spec import ACTOR_NAME, WORKER
from shared.client.workers import discover
from shared.llm import FakeLLM

pytestmark = pytest.mark.ray


def test_worker_spec_is_discoverable() -> None:
    spec = next(s for s in discover() if s.name == "extractor")
    assert spec is WORKER and spec.actor_name == ACTOR_NAME and spec.order == 10


def test_extractor_actor_drains_the_store_actor(
    ray_cluster: Any, store_actor: Any, unique_bank: str
) -> None:
    # Given a finished turn queued in the store actor's outbox
    store_actor.bank_create(unique_bank)
    turn = str(ULID())
    msgs = [{"role": "user", "content": "I publish on Tuesdays"}]
    inj = store_actor.pre_generate("ray-s1", turn, 0, msgs, {"memory_bank": unique_bank})
    assert inj.bank == unique_bank
    store_actor.turn_completed("ray-s1", turn, msgs)
    reply = json.dumps({"memories": [{"text": "The user publishes on Tuesdays."}], "rules": []})
    # When the extractor actor starts (with a scripted LLM) and drains
    handle = start({"MEMORY_EXTRACTION_MODEL": "fake/x"}, llm=FakeLLM.of(reply))
    try:
        ray_cluster.get(handle.drain.remote(), timeout=60)
        # Then the memory is in the turn's bank and the outbox is empty
        texts = [m.text for m in store_actor.list(bank=unique_bank).memories]
        assert texts == ["The user publishes on Tuesdays."]
        stats = ray_cluster.get(handle.stats.remote(), timeout=60)
        assert stats["enabled"] and stats["totals"]["done"] >= 1 and stats["totals"]["tokens"] > 0
        assert store_actor.outbox_list().queued == 0
        status = store_actor.state_get("extractor", "status")
        assert status["enabled"] and status["model"] == "fake/x"
    finally:
        ray_cluster.get(handle.stop.remote(), timeout=60)
        ray_cluster.kill(handle, no_restart=True)
