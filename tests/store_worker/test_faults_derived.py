"""Derived files under faults (fifth review of durability under faults).

The vector sidecar (``vectors.jsonl``) and the index snapshot (``index.snap``) are derived:
rebuilt from the log, never trusted over it. A fault in one must cost time (embedding again,
a slower boot), never a bank: before this review a sidecar that could not be read (an I/O
error, a folder in its place) made its whole bank unreadable at boot, every read and write
refused.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore
from store_worker.recall.embed import FakeEmbedder


@pytest.fixture
def embedded(data_dir: Path, clock: FakeClock) -> Iterator[FakeEmbedder]:
    """A data dir whose main bank holds two memories and their vectors."""
    embedder = FakeEmbedder()
    store = MemoryStore(data_dir, clock=clock, embedder=embedder)
    store.save("galaxies and telescopes at night", id="astro")
    store.save("sourdough bread needs a starter", id="bread")
    store.close()
    yield embedder


def sidecar(data_dir: Path) -> Path:
    return data_dir / "main" / "vectors.jsonl"


def test_a_sidecar_that_cannot_be_read_costs_an_embedding_not_the_bank(
    data_dir: Path, clock: FakeClock, embedded: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a disk that fails to read the vector sidecar (EIO) when the store opens
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "vectors.jsonl":
            raise OSError(errno.EIO, "Input/output error")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    store = MemoryStore(data_dir, clock=clock, embedder=embedded)
    try:
        # Then the bank serves: semantic recall (its records embedded again) and writes
        hits = store.recall("telescopes", mode="semantic").memories
        assert hits and hits[0].memory.id == "astro"
        store.save("tides follow the moon", id="tides")
        assert {m.id for m in store.list().memories} == {"astro", "bread", "tides"}
    finally:
        store.close()
    # And once the disk reads again, the sidecar is whole: every live record has its vector
    monkeypatch.setattr(Path, "read_bytes", real)
    ids = {json.loads(line)["id"] for line in sidecar(data_dir).read_bytes().splitlines()}
    assert ids == {"astro", "bread", "tides"}


def test_a_folder_in_place_of_the_sidecar_costs_no_bank(
    data_dir: Path, clock: FakeClock, embedded: FakeEmbedder
) -> None:
    # Given a folder where the sidecar was
    sidecar(data_dir).unlink()
    sidecar(data_dir).mkdir()
    # When the store opens, Then the bank reads and writes; the folder is left alone
    store = MemoryStore(data_dir, clock=clock, embedder=embedded)
    try:
        hits = store.recall("sourdough", mode="semantic").memories
        assert hits and hits[0].memory.id == "bread"
        store.save("tides follow the moon", id="tides")
    finally:
        store.close()
    again = MemoryStore(data_dir, clock=clock, embedder=embedded)
    try:
        assert {m.id for m in again.list().memories} == {"astro", "bread", "tides"}
    finally:
        again.close()
    assert sidecar(data_dir).is_dir()


def test_a_purge_goes_on_past_a_sidecar_that_cannot_be_read(
    data_dir: Path, clock: FakeClock, embedded: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a store whose disk then fails to read the vector sidecar (EIO)
    store = MemoryStore(data_dir, clock=clock, embedder=embedded)
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self.name == "vectors.jsonl":
            raise OSError(errno.EIO, "Input/output error")
        return real(self)

    try:
        monkeypatch.setattr(Path, "read_bytes", read_bytes)
        # When a memory is purged (the right to erasure), Then the purge is done
        assert store.purge("astro").revisions == 1
        monkeypatch.setattr(Path, "read_bytes", real)
        # And no vector of the purged memory is left on disk; the others are embedded again
        rows = [json.loads(x) for x in sidecar(data_dir).read_bytes().splitlines()]
        assert {row["id"] for row in rows} == {"bread"}
        hits = store.recall("sourdough", mode="semantic").memories
        assert [h.memory.id for h in hits] == ["bread"]
    finally:
        store.close()
