"""memory.v1 Record always creates (the memory.v1 conformance matrix; Record is the
write side: a suggested id is used, a collision gets a numeric suffix rather than overwriting
or rejecting; docs/PROTOCOLS.md#record-and-the-reference-tools), while the store's own ``save``
keeps reinforcing a re-saved fact (corroboration counts re-observations). Over a real gRPC
channel."""

from __future__ import annotations

from typing import Any

from shared.proto.memory.v1 import memory_pb2 as pb

TEXT = "The user deploys on Fridays"


def _record(text: str, **kw: Any) -> pb.RecordRequest:
    return pb.RecordRequest(
        type=pb.MEMORY_TYPE_USER,
        scope=pb.MEMORY_SCOPE_GLOBAL,
        content=[pb.ContentBlock(text=text)],
        **kw,
    )


def test_record_with_the_same_content_creates_a_second_record(gw: Any) -> None:
    # Given a record
    first = gw.memory.Record(_record(TEXT, id="x-first", title="First")).result.id
    # When the same content is recorded with another suggested id and title
    second = gw.memory.Record(_record(TEXT, id="x-second", title="Second, different title"))
    # Then the suggested id is a new record with the new title; the first is untouched
    assert second.result.id == "x-second"
    got = gw.memory.GetRecord(pb.GetRecordRequest(id="x-second")).record
    assert got.title == "Second, different title"
    assert got.content[0].text == TEXT
    assert gw.store.get(first).memory.corroboration == 0
    assert gw.store.get(first).memory.title == "First"
    listed = gw.memory.ListRecords(pb.ListRecordsRequest()).records
    assert sorted(r.id for r in listed) == ["x-first", "x-second"]


def test_record_without_an_id_never_merges(gw: Any) -> None:
    ids = [gw.memory.Record(_record(TEXT)).result.id for _ in range(3)]
    assert len(set(ids)) == 3
    base = ids[0]
    assert ids[1:] == [f"{base}-2", f"{base}-3"]  # derived slug, then numeric suffixes


def test_a_colliding_suggested_id_gets_a_numeric_suffix(gw: Any) -> None:
    gw.memory.Record(_record("The user likes tea", id="drink"))
    again = gw.memory.Record(_record("The user likes coffee", id="drink"))
    assert again.result.id == "drink-2"
    tea = gw.memory.GetRecord(pb.GetRecordRequest(id="drink")).record
    assert tea.content[0].text == "The user likes tea"  # never overwritten


def test_the_stores_own_save_still_reinforces(gw: Any) -> None:
    first = gw.store.save(TEXT, id="x-first").memory
    again = gw.store.save(TEXT, id="x-second")
    assert (again.created, again.memory.id) == (False, first.id)
    assert again.memory.corroboration == first.corroboration + 1


def test_an_empty_suggested_id_is_no_suggestion(gw: Any) -> None:
    # Given a client that always sets the optional id, empty when it has none
    request = _record("The user bakes sourdough on Sundays", id="")
    assert request.HasField("id")
    # When it records, then the provider derives the id from the content
    made = gw.memory.Record(request).result
    assert made.id == "user-bakes-sourdough-sundays"
    assert made.status == pb.RECORD_STATUS_CANONICAL
