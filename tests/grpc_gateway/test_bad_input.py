"""Bad input to every RPC: a typed error with the exact status code, never UNKNOWN, and the
data dir byte-identical afterwards (issue 3 "Bad input")."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2

from shared.proto.memory.v1 import memory_pb2 as pb

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


INVALID = "INVALID_ARGUMENT"
CASES = [
    # (service, rpc, request, gRPC code, category)
    ("memory", "Configure", _config({"nope": True}), INVALID, "invalid_argument"),
    ("memory", "Configure", _config({"recall_limit": "many"}), INVALID, "invalid_argument"),
    ("memory", "Configure", _config({"data_dir": "/tmp/elsewhere"}), INVALID, "invalid_argument"),
    ("memory", "Recall", pb.RecallRequest(turn_id="turn_03"), INVALID, "invalid_argument"),
    ("memory", "Recall", pb.RecallRequest(token_budget=-5), INVALID, "invalid_argument"),
    ("memory", "Recall", pb.RecallRequest(type_filter=[0]), INVALID, "invalid_type"),
    ("memory", "Recall", pb.RecallRequest(scope_filter=[0]), INVALID, "invalid_scope"),
    ("memory", "Recall", pb.RecallRequest(limit=100_000), INVALID, "invalid_argument"),
    ("memory", "Record", pb.RecordRequest(type=1, scope=3), INVALID, "invalid_argument"),
    ("memory", "Record", _rec(type=0), INVALID, "invalid_type"),
    ("memory", "Record", _rec(scope=0), INVALID, "invalid_scope"),
    ("memory", "Record", _rec(type=7), INVALID, "invalid_type"),
    ("memory", "Record", _rec(BIG), INVALID, "invalid_argument"),
    ("memory", "Record", _rec(id="Not A Slug"), INVALID, "invalid_argument"),
    ("memory", "Record", _rec(scope=1), INVALID, "invalid_scope"),  # session without a session
    ("memory", "Record", _rec(scope=2), INVALID, "invalid_scope"),  # project without a directory
    ("memory", "Record", _rec(turn_id="t-1"), INVALID, "invalid_argument"),
    (
        "memory",
        "UpdateRecord",
        pb.UpdateRecordRequest(content=_blocks("x")),
        INVALID,
        "invalid_argument",
    ),
    (
        "memory",
        "UpdateRecord",
        pb.UpdateRecordRequest(id="ghost", content=_blocks("x")),
        "NOT_FOUND",
        "not_found",
    ),
    ("memory", "UpdateRecord", pb.UpdateRecordRequest(id="seed"), INVALID, "invalid_argument"),
    (
        "memory",
        "UpdateRecord",
        pb.UpdateRecordRequest(id="seed", content=_blocks(BIG)),
        INVALID,
        "invalid_argument",
    ),
    ("memory", "DeleteRecord", pb.DeleteRecordRequest(), INVALID, "invalid_argument"),
    ("memory", "DeleteRecord", pb.DeleteRecordRequest(id="ghost"), "NOT_FOUND", "not_found"),
    ("memory", "ApproveRecord", pb.ApproveRecordRequest(), INVALID, "invalid_argument"),
    ("memory", "ApproveRecord", pb.ApproveRecordRequest(id="ghost"), "NOT_FOUND", "not_found"),
    ("memory", "ApproveRecord", pb.ApproveRecordRequest(id="seed"), INVALID, "invalid_argument"),
    ("memory", "RejectRecord", pb.RejectRecordRequest(), INVALID, "invalid_argument"),
    ("memory", "RejectRecord", pb.RejectRecordRequest(id="ghost"), "NOT_FOUND", "not_found"),
    ("memory", "RejectRecord", pb.RejectRecordRequest(id="seed"), INVALID, "invalid_argument"),
    ("memory", "Render", pb.RenderRequest(status_filter=9), INVALID, "invalid_argument"),
    ("memory", "Render", pb.RenderRequest(page_size=100_000), INVALID, "invalid_argument"),
    (
        "memory",
        "ListRecords",
        pb.ListRecordsRequest(page_token="garbage!"),
        INVALID,
        "invalid_argument",
    ),
    ("memory", "ListRecords", pb.ListRecordsRequest(type_filter=[0]), INVALID, "invalid_type"),
    ("memory", "ListRecords", pb.ListRecordsRequest(scope_filter=[9]), INVALID, "invalid_scope"),
    (
        "memory",
        "ListRecords",
        pb.ListRecordsRequest(page_size=100_000),
        INVALID,
        "invalid_argument",
    ),
    ("memory", "GetRecord", pb.GetRecordRequest(), INVALID, "invalid_argument"),
    ("memory", "GetRecord", pb.GetRecordRequest(id="ghost"), "NOT_FOUND", "not_found"),
    ("tools", "Remember", pb.RememberRequest(record=_rec(type=0)), INVALID, "invalid_type"),
    ("tools", "Remember", pb.RememberRequest(record=_rec(BIG)), INVALID, "invalid_argument"),
    (
        "tools",
        "Remember",
        pb.RememberRequest(record=_rec(), update_id="ghost"),
        "NOT_FOUND",
        "not_found",
    ),
    ("tools", "Forget", pb.ForgetRequest(id="ghost"), "NOT_FOUND", "not_found"),
    ("tools", "Search", pb.SearchRequest(), INVALID, "invalid_argument"),
]


@pytest.mark.parametrize(
    ("service", "rpc", "request_", "code", "category"),
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
    code: str,
    category: str,
) -> None:
    # Given a ratifying store holding one canonical record
    gw = make_gateway(ratification=True)
    gw.memory.Record(_rec("A seed record", id="seed"))
    before = snapshot(gw.data_dir)
    # When the bad request is sent
    stub = gw.memory if service == "memory" else gw.tools
    failure = rpc_error(getattr(stub, rpc), request_)
    # Then the exact code and category come back, and no file changed
    assert failure.code == grpc.StatusCode[code]
    assert failure.category_name == category
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
