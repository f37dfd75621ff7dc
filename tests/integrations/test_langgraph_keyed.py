"""A LangGraph item is the application's data, not a remembered fact: the automatic paths that
curate memories (consolidation's merges and promotions, extraction's reinforcements and
corrections) leave it as the application put it."""

from __future__ import annotations

import json
from collections.abc import Callable

from ulid import ULID

from consolidate_worker.core import Consolidator
from extract_worker.core import Extractor
from extract_worker.settings import ExtractorSettings
from integrations.langgraph_store import AgentMemoryStore
from shared.contract.clock import FakeClock
from shared.contract.models import KEYED
from shared.llm import FakeLLM
from store_worker.core import MemoryStore

Factory = Callable[..., MemoryStore]
NS = ("users", "u1", "prefs")


def test_equal_values_under_two_keys_survive_a_consolidation_pass(fresh_store: Factory) -> None:
    store = fresh_store()
    graph = AgentMemoryStore(store, bank="main")
    graph.put(NS, "editor", {"note": "The user prefers dark mode in the editor"})
    graph.put(NS, "editor-copy", {"note": "The user prefers dark mode in the editor"})
    graph.put(NS, "editor-near", {"note": "The user prefers dark mode in their editor"})
    # beside them, two ordinary memories that are near-duplicates: those are merged
    store.save("The user prefers tabs in the editor", bank="main")
    store.save("The user prefers tabs in their editor", bank="main")

    report = Consolidator(store).run_pass()

    assert len(report.merged) == 1  # the ordinary pair, nothing of the application's
    assert {k: graph.get(NS, k).value for k in ("editor", "editor-copy", "editor-near")} == {  # type: ignore[union-attr]
        "editor": {"note": "The user prefers dark mode in the editor"},
        "editor-copy": {"note": "The user prefers dark mode in the editor"},
        "editor-near": {"note": "The user prefers dark mode in their editor"},
    }
    assert all(KEYED in m.tags for m in store.list(bank="main", tag=KEYED).memories)
    assert len(store.list(bank="main", tag=KEYED).memories) == 3


def test_extraction_neither_shows_nor_corrects_an_application_item(fresh_store: Factory) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    graph = AgentMemoryStore(store, bank="main")
    graph.put(NS, "day", {"note": "The user publishes on Tuesdays."})
    item = store.list(bank="main", tag=KEYED).memories[0]
    store.turn_completed(
        "s1",
        str(ULID()),
        [
            {"role": "user", "content": "actually I publish on Wednesdays now"},
            {"role": "assistant", "content": "Noted."},
        ],
    )
    # a model that names the item anyway (it was not shown: a replay, or one making ids up)
    reply = {
        "memories": [
            {"text": "The user publishes on Wednesdays.", "supersedes": item.id},
            {"text": "The user publishes blog posts weekly.", "reinforces": item.id},
        ]
    }
    llm = FakeLLM.of(json.dumps(reply))
    settings = ExtractorSettings(extraction_model="fake/x")
    assert Extractor(store, llm, settings, clock=clock).drain().done == 1

    prompt = json.dumps(llm.calls[0])
    assert item.id not in prompt and "Tuesdays" not in prompt
    kept = store.get(item.id, bank="main").memory
    assert kept.invalid_at is None and kept.superseded_by is None
    assert kept.corroboration == item.corroboration and kept.text == item.text
    assert graph.get(NS, "day").value == {"note": "The user publishes on Tuesdays."}  # type: ignore[union-attr]
    texts = {m.text for m in store.list(bank="main").memories}
    assert "The user publishes on Wednesdays." in texts  # the turn's facts are still saved
