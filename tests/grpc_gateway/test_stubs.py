"""The committed memory.v1 and memory.store.v1 stubs are exactly what protoc makes of the
committed protos."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.proto import build

pytest.importorskip("grpc_tools", reason="grpcio-tools is in the dev extra")


def test_generated_stubs_are_current(tmp_path: Path) -> None:
    fresh = build.generate(tmp_path)
    assert len(fresh) == sum(len(build.outputs(p)) for p in build.PROTOS)
    for path in fresh:
        committed = build.ROOT / path.relative_to(tmp_path)
        assert committed.read_bytes() == path.read_bytes(), (
            f"{committed.name} is stale: run `python -m shared.proto.build`"
        )


def test_proto_declares_every_memory_v1_rpc_and_unspecified_zero_enums() -> None:
    from shared.proto.memory.v1 import memory_pb2 as pb

    service = pb.DESCRIPTOR.services_by_name["MemoryService"]
    assert [m.name for m in service.methods] == [
        "GetCapabilities",
        "Configure",
        "Recall",
        "Record",
        "UpdateRecord",
        "DeleteRecord",
        "ApproveRecord",
        "RejectRecord",
        "Render",
        "ListRecords",
        "GetRecord",
        "Describe",
    ]
    assert pb.DESCRIPTOR.package == "memory.v1"
    for enum in pb.DESCRIPTOR.enum_types_by_name.values():
        assert enum.values[0].number == 0 and enum.values[0].name.endswith("_UNSPECIFIED")
