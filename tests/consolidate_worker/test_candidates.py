"""Candidate sources: rare-token blocking, recall per memory, and the ``auto`` switch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from consolidate_worker.candidates import RareTokenBlocker
from consolidate_worker.core import Consolidator
from consolidate_worker.settings import ConsolidatorSettings
from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore
from tests.consolidate_worker.test_dedup import feat

TEXTS = (
    "The user prefers dark mode in the editor",
    "The user prefers dark mode in their editor",
    "Deploys to the staging cluster happen from the release branch",
    "Deploys to the staging cluster happen from the release branches",
    "The standup happens in the small meeting room",
)


def test_blocking_pairs_near_duplicates_only_within_one_place() -> None:
    feats = [feat(t, f"m{i}") for i, t in enumerate(TEXTS)]
    feats.append(feat(TEXTS[0], "m9", type="feedback"))
    found = RareTokenBlocker().neighbours(feats)
    pairs = {tuple(sorted((a, b))) for a, bs in found.items() for b in bs}
    assert ("m0", "m1") in pairs and ("m2", "m3") in pairs
    assert not any("m9" in p for p in pairs)  # another type: another place
    assert not any("m4" in p for p in pairs)


def test_common_words_are_no_keys() -> None:
    feats = [feat(f"the user {w}", f"m{i}") for i, w in enumerate(("a", "b", "c", "d"))]
    found = RareTokenBlocker(max_postings=2).neighbours(feats)
    assert all(len(v) == 0 for v in found.values())  # only 'the'/'user' are shared: too common


class CountingStore:
    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.recalls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def recall(self, *args: Any, **kw: Any) -> Any:
        self.recalls += 1
        return self.store.recall(*args, **kw)


@pytest.fixture
def counting(tmp_path: Path) -> Iterator[CountingStore]:
    store = MemoryStore(tmp_path / "data", clock=FakeClock())
    for text in TEXTS:
        store.save(text)
    yield CountingStore(store)
    store.close()


@pytest.mark.parametrize(
    ("overrides", "recalls"),
    [
        ({}, 6),  # auto, small bank: recall per memory (+1 semantic probe) plus blocking
        ({"recall_max_bank": 4}, 0),  # auto, bank above the limit: blocking only
        ({"candidate_source": "local"}, 0),
        ({"candidate_source": "recall"}, 6),
    ],
)
def test_every_source_finds_the_pairs(
    counting: CountingStore, overrides: dict[str, Any], recalls: int
) -> None:
    settings = ConsolidatorSettings(**overrides)
    report = Consolidator(counting, settings=settings).run_pass(dry_run=True)  # type: ignore[arg-type]
    assert len(report.groups) == 2
    assert counting.recalls == recalls
