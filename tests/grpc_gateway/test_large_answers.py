"""Answers past gRPC's default 4 MiB reach a ``GrpcStoreClient`` (fifth review of faults).

The store accepts a turn of up to 200 messages of 32k characters (6.4 MB) and memories of up
to 16k characters; a client that could not receive more than 4 MiB was refused the claim of
such a turn (which the store had leased: every claim failed until the lease ran out, and
again after) and a page of events about long memories (``memory watch`` stuck at a cursor).
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterator
from pathlib import Path

import pytest

from grpc_gateway.server import build_server
from shared.client.grpc import GrpcStoreClient
from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore


@pytest.fixture
def client(tmp_path: Path) -> Iterator[GrpcStoreClient]:
    store = MemoryStore(tmp_path / "data", clock=FakeClock())
    server, port = build_server(store, port=0)
    server.start()
    client = GrpcStoreClient(f"127.0.0.1:{port}")
    yield client
    client.close()
    server.stop(None)
    store.close()


def words(rng: random.Random, chars: int) -> str:
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(chars // 8))


def test_a_claim_of_the_longest_turn_reaches_the_client(client: GrpcStoreClient) -> None:
    # Given the longest turn the store takes, and a short one queued behind it
    rng = random.Random(5)
    long_turn = [
        {"role": ("user", "assistant")[i % 2], "content": words(rng, 32_000)} for i in range(200)
    ]
    assert client.turn_completed("long-session", messages=long_turn).queued
    assert client.turn_completed("short-session", messages=[{"role": "user", "content": "tea"}])
    # When the extractor claims over gRPC, Then it gets both jobs whole
    jobs = client.outbox_claim(8)
    assert sorted(len(j.messages) for j in jobs) == [1, 200]


def test_a_page_of_events_about_long_memories_reaches_the_client(
    client: GrpcStoreClient,
) -> None:
    # Given 300 memories of 16k characters (each event carries its memory)
    rng = random.Random(7)
    for _ in range(6):
        client.save_many([{"text": words(rng, 16_000)} for _item in range(50)])
    # When a follower pages the events, Then each page comes, and the cursor moves on
    page = client.events_since(0, limit=500)
    created = [e for e in page.events if e.memory is not None]
    assert len(created) == 300 and page.cursor == page.events[-1].seq
