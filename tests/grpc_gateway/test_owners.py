"""A Record without the owner its scope needs (memory.v1's RecordRequest has no session
or directory; those are this provider's extension fields) is created, owned by the latest
Recall's context, never refused as ``invalid_scope`` for a scope GetCapabilities lists
(invalid_scope means a scope absent from ``supported_scopes``;
docs/PROTOCOLS.md#types-and-scopes). Over a real gRPC channel."""

from __future__ import annotations

import os
from typing import Any

from ulid import ULID

from shared.proto.memory.v1 import memory_pb2 as pb

CWD = "/home/user/code/acme-widgets"


def _plain_record(scope: int, text: str, **kw: Any) -> pb.RecordRequest:
    """A RecordRequest with memory.v1's own fields only."""
    return pb.RecordRequest(
        type=pb.MEMORY_TYPE_PROJECT, scope=scope, content=[pb.ContentBlock(text=text)], **kw
    )


def _recalled(gw: Any, **context: Any) -> list[str]:
    return [r.id for r in gw.memory.Recall(pb.RecallRequest(**context)).records]


def test_a_plain_project_record_is_created_in_the_recalled_project(gw: Any) -> None:
    # Given the session recalled at context-assemble (memory.v1's RecallRequest)
    gw.memory.Recall(
        pb.RecallRequest(
            session_id="sess_042",
            turn_id=str(ULID()),
            token_budget=1500,
            working_directory=CWD,
            scope_filter=[pb.MEMORY_SCOPE_PROJECT, pb.MEMORY_SCOPE_GLOBAL],
        )
    )
    # When the model writes a plain memory.v1 RecordRequest (no directory, no session)
    written = gw.memory.Record(
        _plain_record(
            pb.MEMORY_SCOPE_PROJECT,
            "New deploy tool is live in production; old pipeline decommissioned. "
            "Rollback steps are documented in the runbook.",
            id="deploy-pipeline-migration-done",
            title="Deploy pipeline migration complete",
        )
    )
    # Then a RecordResponse comes back, and the record belongs to that project
    assert written == pb.RecordResponse(
        result=pb.RecordResult(
            id="deploy-pipeline-migration-done", status=pb.RECORD_STATUS_CANONICAL
        )
    )
    got = gw.memory.GetRecord(pb.GetRecordRequest(id="deploy-pipeline-migration-done")).record
    assert (got.type, got.scope) == (pb.MEMORY_TYPE_PROJECT, pb.MEMORY_SCOPE_PROJECT)
    assert _recalled(gw, working_directory=CWD, query="deploy tool") == [got.id]
    assert _recalled(gw, working_directory="/srv/elsewhere", query="deploy tool") == []


def test_every_supported_scope_can_be_recorded_with_the_protocol_fields_only(gw: Any) -> None:
    # Given a gateway no Recall has told of any context
    caps = gw.memory.GetCapabilities(pb.GetCapabilitiesRequest()).capabilities
    # When each supported scope is recorded without an owner
    ids = {
        scope: gw.memory.Record(_plain_record(scope, f"Scope probe {scope}")).result.id
        for scope in caps.supported_scopes
    }
    # Then each is created with its scope, owned by the gateway's own directory and session
    assert set(ids) == {pb.MEMORY_SCOPE_SESSION, pb.MEMORY_SCOPE_PROJECT, pb.MEMORY_SCOPE_GLOBAL}
    for scope, rid in ids.items():
        assert gw.memory.GetRecord(pb.GetRecordRequest(id=rid)).record.scope == scope
    project = gw.store.get(ids[pb.MEMORY_SCOPE_PROJECT]).memory
    assert project.project == os.path.normpath(os.getcwd())
    session = gw.store.get(ids[pb.MEMORY_SCOPE_SESSION]).memory
    assert session.session_id and session.session_id.startswith("memory-grpc-")
    # and no other session recalls the session record
    assert ids[pb.MEMORY_SCOPE_SESSION] not in _recalled(gw, session_id="sess_other")


def test_a_given_owner_wins_and_a_session_keeps_its_own_directory(gw: Any) -> None:
    # Given two sessions that recalled in two projects, sess_b last
    gw.memory.Recall(pb.RecallRequest(session_id="sess_a", working_directory="/srv/a"))
    gw.memory.Recall(pb.RecallRequest(session_id="sess_b", working_directory="/srv/b"))

    def owner(**kw: Any) -> tuple[str | None, str | None]:
        scope = kw.pop("scope")
        rid = gw.memory.Record(_plain_record(scope, f"Owner probe {ULID()}", **kw)).result.id
        mem = gw.store.get(rid).memory
        return mem.session_id, mem.project

    # Then a project record naming sess_a lands in sess_a's directory, one naming none in
    # the latest, one naming a directory in that one; a session record in the latest session
    assert owner(scope=pb.MEMORY_SCOPE_PROJECT, session_id="sess_a")[1] == "/srv/a"
    assert owner(scope=pb.MEMORY_SCOPE_PROJECT)[1] == "/srv/b"
    assert owner(scope=pb.MEMORY_SCOPE_PROJECT, working_directory="/srv/c")[1] == "/srv/c"
    assert owner(scope=pb.MEMORY_SCOPE_SESSION)[0] == "sess_b"
    assert owner(scope=pb.MEMORY_SCOPE_SESSION, session_id="sess_z")[0] == "sess_z"


def test_a_refused_recall_leaves_the_context_alone(gw: Any, rpc_error: Any) -> None:
    gw.memory.Recall(pb.RecallRequest(session_id="sess_a", working_directory="/srv/a"))
    rpc_error(gw.memory.Recall, pb.RecallRequest(working_directory="/srv/b", token_budget=-1))
    rid = gw.memory.Record(_plain_record(pb.MEMORY_SCOPE_PROJECT, "After a refusal")).result.id
    assert gw.store.get(rid).memory.project == "/srv/a"


def test_remember_with_the_protocol_fields_only_is_created(gw: Any) -> None:
    gw.memory.Recall(pb.RecallRequest(session_id="sess_042", working_directory=CWD))
    made = gw.tools.Remember(
        pb.RememberRequest(record=_plain_record(pb.MEMORY_SCOPE_PROJECT, "The CI runs on arm64"))
    )
    assert made.action == pb.REMEMBER_ACTION_CREATED
    assert gw.store.get(made.result.id).memory.project == CWD


def test_one_agents_recall_never_owns_another_agents_record(tmp_path: Any) -> None:
    # One gateway serves many agents. Agent B recalled in /srv/b, then agent A in /srv/a: B's
    # ownerless project record was filed under /srv/a (and its session record under A's
    # session), where agent A then recalled it.
    import grpc

    from grpc_gateway.server import build_server
    from shared.contract.clock import FakeClock
    from shared.proto.memory.v1 import memory_pb2_grpc as pb_grpc
    from store_worker.core import MemoryStore

    store = MemoryStore(tmp_path / "data", clock=FakeClock())
    server, port = build_server(store, port=0)
    server.start()
    own = [("grpc.use_local_subchannel_pool", 1)]  # two processes: two connections
    channels = [grpc.insecure_channel(f"127.0.0.1:{port}", options=own) for _ in range(2)]
    try:
        agent_a, agent_b = (pb_grpc.MemoryServiceStub(c) for c in channels)
        agent_b.Recall(pb.RecallRequest(session_id="sess_b", working_directory="/srv/b"))
        agent_a.Recall(pb.RecallRequest(session_id="sess_a", working_directory="/srv/a"))
        project = agent_b.Record(_plain_record(pb.MEMORY_SCOPE_PROJECT, "B ships with heron"))
        session = agent_b.Record(_plain_record(pb.MEMORY_SCOPE_SESSION, "B drafts the memo"))
        assert store.get(project.result.id).memory.project == "/srv/b"
        assert store.get(session.result.id).memory.session_id == "sess_b"
        seen = agent_a.Recall(
            pb.RecallRequest(session_id="sess_a", working_directory="/srv/a", query="heron memo")
        )
        assert [r.id for r in seen.records] == []
        # and the same caller still gets its own latest context (recall, then write in the same
        # session)
        again = agent_a.Record(_plain_record(pb.MEMORY_SCOPE_PROJECT, "A ships with kestrel"))
        assert store.get(again.result.id).memory.project == "/srv/a"
    finally:
        for channel in channels:
            channel.close()
        server.stop(None)
        store.close()
