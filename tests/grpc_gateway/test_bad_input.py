"""Bad input to every RPC: one of memory.v1's seven error categories with its gRPC code
(never UNKNOWN, never a category outside the seven: a kernel handles only those), a message
naming what was malformed, and the data dir byte-identical afterwards (bad input writes
nothing)."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2

from shared.proto.memory.v1 import memory_pb2 as pb
from tests.grpc_gateway.conftest import SPEC_CODES

CWD = "/srv/acme"
BIG = "x" * 16_001  # one past the default max_text_chars


def _blocks(text: str) -> list[pb.ContentBlock]:
    return [pb.ContentBlock(text=text)]


def _rec(text: str = "ok", type: int = 1, scope: int = 3, **kw: Any) -> pb.RecordRequest:
    return pb.RecordRequest(type=type, scope=scope, content=_blocks(text), **kw)


def _config(values: dict[str, Any]) -> pb.ConfigureRequest:
    struct = struct_pb2.Struct()
    struct.update(values)
    return pb.ConfigureRequest(config=struct)


BAD_ID = "Not A Slug!"
CASES = [
    # (service, rpc, request, category, words the message must name)
    ("memory", "Configure", _config({"nope": True}), "unknown", "nope"),
    ("memory", "Configure", _config({"recall_limit": "many"}), "unknown", "recall_limit"),
    ("memory", "Configure", _config({"data_dir": "/tmp/elsewhere"}), "unknown", "data_dir"),
    (
        "memory",
        "Configure",
        _config({"embedding_model": "local:/tmp/someones-model"}),
        "unknown",
        "local model folder",
    ),
    ("memory", "Recall", pb.RecallRequest(turn_id="turn_03"), "unknown", "turn_id"),
    ("memory", "Recall", pb.RecallRequest(token_budget=-5), "unknown", "token_budget"),
    ("memory", "Recall", pb.RecallRequest(type_filter=[0]), "invalid_type", "type"),
    ("memory", "Recall", pb.RecallRequest(scope_filter=[0]), "invalid_scope", "scope"),
    ("memory", "Recall", pb.RecallRequest(limit=100_000), "unknown", "limit"),
    ("memory", "Recall", pb.RecallRequest(query="x", min_relevance=1.5), "unknown", "min_rel"),
    ("memory", "Recall", pb.RecallRequest(min_relevance=float("nan")), "unknown", "min_rel"),
    ("memory", "Recall", pb.RecallRequest(min_relevance=-0.25), "unknown", "min_relevance"),
    ("memory", "Record", pb.RecordRequest(type=1, scope=3), "unknown", "text"),
    ("memory", "Record", _rec(type=0), "invalid_type", "type"),
    ("memory", "Record", _rec(scope=0), "invalid_scope", "scope"),
    ("memory", "Record", _rec(type=7), "invalid_type", "type"),
    ("memory", "Record", _rec(BIG), "unknown", "text"),
    ("memory", "Record", _rec(id="Not A Slug"), "unknown", "id"),
    ("memory", "Record", _rec(turn_id="t-1"), "unknown", "turn_id"),
    ("memory", "UpdateRecord", pb.UpdateRecordRequest(content=_blocks("x")), "not_found", "''"),
    (
        "memory",
        "UpdateRecord",
        pb.UpdateRecordRequest(id=BAD_ID, content=_blocks("x")),
        "not_found",
        BAD_ID,
    ),
    (
        "memory",
        "UpdateRecord",
        pb.UpdateRecordRequest(id="ghost", content=_blocks("x")),
        "not_found",
        "ghost",
    ),
    ("memory", "UpdateRecord", pb.UpdateRecordRequest(id="seed"), "unknown", "text"),
    (
        "memory",
        "UpdateRecord",
        pb.UpdateRecordRequest(id="seed", content=_blocks(BIG)),
        "unknown",
        "text",
    ),
    ("memory", "DeleteRecord", pb.DeleteRecordRequest(), "not_found", "''"),
    ("memory", "DeleteRecord", pb.DeleteRecordRequest(id=BAD_ID), "not_found", BAD_ID),
    ("memory", "DeleteRecord", pb.DeleteRecordRequest(id="ghost"), "not_found", "ghost"),
    ("memory", "ApproveRecord", pb.ApproveRecordRequest(), "not_found", "''"),
    ("memory", "ApproveRecord", pb.ApproveRecordRequest(id="ghost"), "not_found", "ghost"),
    ("memory", "ApproveRecord", pb.ApproveRecordRequest(id="seed"), "not_found", "canonical"),
    ("memory", "RejectRecord", pb.RejectRecordRequest(), "not_found", "''"),
    ("memory", "RejectRecord", pb.RejectRecordRequest(id="ghost"), "not_found", "ghost"),
    ("memory", "RejectRecord", pb.RejectRecordRequest(id="seed"), "not_found", "canonical"),
    ("memory", "Render", pb.RenderRequest(status_filter=9), "unknown", "RecordStatus"),
    ("memory", "Render", pb.RenderRequest(page_size=-1), "unknown", "page_size"),
    (
        "memory",
        "ListRecords",
        pb.ListRecordsRequest(page_token="garbage!"),
        "unknown",
        "page_token",
    ),
    ("memory", "ListRecords", pb.ListRecordsRequest(type_filter=[0]), "invalid_type", "type"),
    ("memory", "ListRecords", pb.ListRecordsRequest(scope_filter=[9]), "invalid_scope", "scope"),
    ("memory", "ListRecords", pb.ListRecordsRequest(page_size=-1), "unknown", "page_size"),
    ("memory", "GetRecord", pb.GetRecordRequest(), "not_found", "''"),
    ("memory", "GetRecord", pb.GetRecordRequest(id=BAD_ID), "not_found", BAD_ID),
    ("memory", "GetRecord", pb.GetRecordRequest(id="ghost"), "not_found", "ghost"),
    ("tools", "Remember", pb.RememberRequest(record=_rec(type=0)), "invalid_type", "type"),
    ("tools", "Remember", pb.RememberRequest(record=_rec(BIG)), "unknown", "text"),
    (
        "tools",
        "Remember",
        pb.RememberRequest(record=_rec(), update_id="ghost"),
        "not_found",
        "ghost",
    ),
    ("tools", "Forget", pb.ForgetRequest(id=BAD_ID), "not_found", BAD_ID),
    ("tools", "Forget", pb.ForgetRequest(id="ghost"), "not_found", "ghost"),
    ("tools", "Search", pb.SearchRequest(), "unknown", "query"),
]


@pytest.mark.parametrize(
    ("service", "rpc", "request_", "category", "names"),
    CASES,
    ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)],
)
def test_bad_input_is_a_typed_error_and_writes_nothing(
    make_gateway: Any,
    rpc_error: Any,
    snapshot: Any,
    service: str,
    rpc: str,
    request_: Any,
    category: str,
    names: str,
) -> None:
    # Given a ratifying store holding one canonical record
    gw = make_gateway(ratification=True)
    gw.memory.Record(_rec("A seed record", id="seed"))
    before = snapshot(gw.data_dir)
    # When the bad request is sent
    stub = gw.memory if service == "memory" else gw.tools
    failure = rpc_error(getattr(stub, rpc), request_)
    # Then one of the seven memory.v1 categories comes back with its gRPC code, a message
    # naming what was wrong, and no file changed
    assert failure.code == grpc.StatusCode[SPEC_CODES[category]]
    assert failure.category_name == category
    assert names.lower() in failure.error.message.lower()
    assert failure.error.category == pb.MemoryErrorCategory.Value(
        f"MEMORY_ERROR_CATEGORY_{category.upper()}"
    )
    assert failure.error.message
    assert snapshot(gw.data_dir) == before


def test_every_rpc_with_input_has_a_bad_input_case() -> None:
    names = {m.name for m in pb.DESCRIPTOR.services_by_name["MemoryService"].methods}
    names |= {m.name for m in pb.DESCRIPTOR.services_by_name["MemoryTools"].methods}
    no_input = {"GetCapabilities", "Describe"}  # empty requests: nothing can be malformed
    assert names - no_input == {c[1] for c in CASES}


@pytest.mark.parametrize("rpc", ["GetRecord", "DeleteRecord"])
def test_a_token_given_as_an_id_is_never_quoted_back(
    make_gateway: Any, rpc_error: Any, rpc: str
) -> None:
    # Given an agent that sends a GitHub token where a record id goes
    gw = make_gateway()
    token = "ghp_" + "aB3" * 12
    request = getattr(pb, f"{rpc}Request")(id=token)
    # When the gateway refuses it, then the error names the kind, never the value (gRPC
    # metadata and the agent's transcript are not redacted)
    failure = rpc_error(getattr(gw.memory, rpc), request)
    assert failure.category_name == "not_found"
    assert token not in failure.error.message and token not in str(failure.details)
    assert "looks like a credential (github_token)" in failure.error.message


@pytest.mark.parametrize("rpc", ["Record", "Recall"])
def test_a_request_past_grpcs_default_4_mib_is_classified_too(
    make_gateway: Any, rpc_error: Any, snapshot: Any, rpc: str
) -> None:
    # Given a request of ~5 MiB (gRPC's default receive limit is 4 MiB)
    gw = make_gateway()
    big = "word " * 1_000_000
    request = _rec(big) if rpc == "Record" else pb.RecallRequest(session_id=big)
    before = snapshot(gw.data_dir)
    # When it is sent, then the store's own limit answers with a MemoryError (not gRPC's
    # RESOURCE_EXHAUSTED, which is budget_exceeded's code), and nothing is written
    failure = rpc_error(getattr(gw.memory, rpc), request)
    assert (failure.code, failure.category_name) == (grpc.StatusCode.INTERNAL, "unknown")
    assert ("text" if rpc == "Record" else "session_id") in failure.error.message
    assert snapshot(gw.data_dir) == before
