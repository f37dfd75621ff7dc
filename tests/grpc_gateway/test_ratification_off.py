"""memory.v1: a ``status: pending`` record is never returned unless ``ratification_supported``
is true (the memory.v1 conformance matrix; docs/PROTOCOLS.md#ratification-and-pending-drafts),
over a real gRPC channel.

Turning ratification off while drafts wait is refused (``ratification_unsupported``,
FailedPrecondition, naming how many wait): approving or discarding them silently would decide a
review nobody made. Drafts a restart left on disk under ``ratification=false`` are hidden from
every read until ratification is on again.
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import struct_pb2

from shared.contract.clock import FakeClock
from shared.proto.memory.v1 import memory_pb2 as pb
from store_worker.core import MemoryStore


def _request(**values: Any) -> pb.ConfigureRequest:
    config = struct_pb2.Struct()
    config.update(values)
    return pb.ConfigureRequest(config=config)


def _configure(gw: Any, **values: Any) -> Any:
    return gw.memory.Configure(_request(**values))


def _draft(gw: Any, text: str) -> str:
    req = pb.RecordRequest(
        type=pb.MEMORY_TYPE_USER,
        scope=pb.MEMORY_SCOPE_GLOBAL,
        content=[pb.ContentBlock(text=text)],
        status=pb.RECORD_STATUS_PENDING,
    )
    return str(gw.memory.Record(req).result.id)


def _caps(gw: Any) -> Any:
    return gw.memory.GetCapabilities(pb.GetCapabilitiesRequest()).capabilities


def test_turning_ratification_off_with_drafts_waiting_is_refused(
    make_gateway: Any, rpc_error: Any, snapshot: Any
) -> None:
    # Given ratification turned on over the wire and two drafts recorded
    gw = make_gateway()
    _configure(gw, ratification=True)
    first = _draft(gw, "The user may move to Porto")
    _draft(gw, "The user may adopt a cat")
    before = snapshot(gw.data_dir)
    # When ratification is turned off
    failure = rpc_error(gw.memory.Configure, _request(ratification=False))
    # Then the change is refused, naming how many drafts wait, and nothing changed
    assert (failure.code, failure.category_name) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "ratification_unsupported",
    )
    assert "2 pending draft(s)" in failure.error.message
    assert _caps(gw).ratification_supported is True
    got = gw.memory.GetRecord(pb.GetRecordRequest(id=first)).record
    assert got.status == pb.RECORD_STATUS_PENDING  # still listable: ratification is still on
    assert snapshot(gw.data_dir) == before
    # And once the drafts are resolved, it turns off
    for rec in gw.memory.ListRecords(pb.ListRecordsRequest()).records:
        if rec.status == pb.RECORD_STATUS_PENDING:
            gw.memory.RejectRecord(pb.RejectRecordRequest(id=rec.id))
    _configure(gw, ratification=False)
    assert _caps(gw).ratification_supported is False


def test_no_read_returns_a_draft_while_ratification_is_off(
    make_gateway: Any, rpc_error: Any
) -> None:
    # Given a draft on disk and a store restarted with ratification off (the settings default)
    rgw = make_gateway(ratification=True)
    canon = str(
        rgw.memory.Record(
            pb.RecordRequest(
                type=pb.MEMORY_TYPE_USER,
                scope=pb.MEMORY_SCOPE_GLOBAL,
                content=[pb.ContentBlock(text="The user's mango tree is in Lisbon")],
            )
        ).result.id
    )
    draft = _draft(rgw, "The user's mango tree may be sold")
    rgw.store.close()
    gw = make_gateway(store=MemoryStore(rgw.data_dir, clock=FakeClock()))
    assert _caps(gw).ratification_supported is False
    # When every read is asked, drafts included where the request allows it
    got = rpc_error(gw.memory.GetRecord, pb.GetRecordRequest(id=draft))
    listed = gw.memory.ListRecords(pb.ListRecordsRequest())
    pending = gw.memory.ListRecords(pb.ListRecordsRequest(status_filter=pb.RECORD_STATUS_PENDING))
    recalled = gw.memory.Recall(pb.RecallRequest(query="mango tree", include_pending=True))
    ambient = gw.memory.Recall(pb.RecallRequest(include_pending=True))
    searched = gw.tools.Search(pb.SearchRequest(query="mango tree", include_pending=True))
    tree = gw.memory.Render(pb.RenderRequest())
    # Then no read shows the draft: it does not exist for the protocol while ratification is off
    assert (got.code, got.category_name) == (grpc.StatusCode.NOT_FOUND, "not_found")
    assert [r.id for r in listed.records] == [canon]
    assert list(pending.records) == [] and pending.next_page_token == ""
    for found in (recalled, ambient, searched):
        assert [r.id for r in found.records] == [canon]
    assert draft not in str(tree)
    assert "Pending drafts" not in str(tree)
    for call, req in (
        (
            gw.memory.UpdateRecord,
            pb.UpdateRecordRequest(id=draft, content=[pb.ContentBlock(text="x")]),
        ),
        (gw.memory.DeleteRecord, pb.DeleteRecordRequest(id=draft)),
        (gw.tools.Forget, pb.ForgetRequest(id=draft)),
    ):
        assert rpc_error(call, req).category_name == "not_found"
    # And turning ratification back on shows it again
    _configure(gw, ratification=True)
    again = gw.memory.GetRecord(pb.GetRecordRequest(id=draft)).record
    assert again.status == pb.RECORD_STATUS_PENDING
