"""memory.v1's worked examples replayed over the wire: a Recall/Record sequence across
turns and a cross-reference between records, checking the response shapes.

``turn_id`` must be a ULID (docs/PROTOCOLS.md#recall), so the turns use real ULIDs.
"""

from __future__ import annotations

from typing import Any

from ulid import ULID

from shared.proto.memory.v1 import memory_pb2 as pb
from shared.text.tokens import TokenCounter

CWD = "/home/user/code/acme-widgets"
TURN_07, TURN_12, TURN_03 = (str(ULID()) for _ in range(3))

RUNBOOK = (
    "Canonical runbook for the release pipeline lives at https://wiki.example/acme/"
    "deploy-runbook — check there before re-deriving rollback steps from source."
)
MIGRATION = (
    "Migrating from the legacy CI pipeline to the new deploy tool. See "
    "[[deploy-pipeline-runbook]] for rollback steps and canonical pipeline documentation."
)


RUNBOOK_TITLE = "Deploy pipeline runbook"
MIGRATION_TITLE = "Migrating the release pipeline to the new deploy tool"


def _record(
    gw: Any, rid: str, type_: int, text: str, scope: int = pb.MEMORY_SCOPE_PROJECT, **fields: Any
) -> pb.RecordResponse:
    """memory.v1 Record of one text block; ``fields`` are the request's other fields."""
    request = pb.RecordRequest(
        type=type_, scope=scope, id=rid, content=[pb.ContentBlock(text=text)], **fields
    )
    return gw.memory.Record(request)


def _history(gw: Any) -> None:
    """The records earlier sessions wrote through memory.remember."""
    remembered = {"recorded_by": "memory.remember"}
    sess_038 = {"session_id": "sess_038", "turn_id": TURN_12, "working_directory": CWD}
    _record(
        gw,
        "user-role",
        pb.MEMORY_TYPE_USER,
        "The user is the release operator for acme.",
        pb.MEMORY_SCOPE_GLOBAL,
        title="Operator role",
        session_id="sess_001",
        turn_id=TURN_07,
        **remembered,
    )
    _record(
        gw,
        "deploy-pipeline-runbook",
        pb.MEMORY_TYPE_REFERENCE,
        RUNBOOK,
        title=RUNBOOK_TITLE,
        **sess_038,
        **remembered,
    )
    _record(
        gw,
        "deploy-pipeline-migration-in-progress",
        pb.MEMORY_TYPE_PROJECT,
        MIGRATION,
        title=MIGRATION_TITLE,
        **sess_038,
        **remembered,
    )
    # an unrelated project's record must stay invisible to this working directory
    _record(
        gw,
        "other-project-note",
        pb.MEMORY_TYPE_PROJECT,
        "The gizmo project pins Node 18.",
        working_directory="/srv/gizmo",
    )


def test_worked_recall_record_sequence(gw: Any) -> None:
    # Given the records earlier sessions wrote
    _history(gw)
    # When the session recalls at context-assemble (a plain memory.v1 RecallRequest)
    response = gw.memory.Recall(
        pb.RecallRequest(
            session_id="sess_042",
            turn_id=TURN_03,
            token_budget=1500,
            model_target=pb.ModelTarget(
                id="claude-opus-5", context_window=500000, effective_ceiling=480000
            ),
            working_directory=CWD,
            scope_filter=[pb.MEMORY_SCOPE_PROJECT, pb.MEMORY_SCOPE_GLOBAL],
            include_pending=False,
        )
    )
    # Then the two kinds of record come back, shaped as the protocol says
    by_id = {r.id: r for r in response.records}
    assert "other-project-note" not in by_id
    assert {"user-role", "deploy-pipeline-migration-in-progress"} <= set(by_id)
    role = by_id["user-role"]
    assert (role.type, role.scope, role.title, role.status, list(role.links)) == (
        pb.MEMORY_TYPE_USER,
        pb.MEMORY_SCOPE_GLOBAL,
        "Operator role",
        pb.RECORD_STATUS_CANONICAL,
        [],
    )
    assert role.provenance == pb.Provenance(
        source_session_id="sess_001", source_turn_id=TURN_07, recorded_by="memory.remember"
    )
    migration = by_id["deploy-pipeline-migration-in-progress"]
    assert (migration.type, migration.scope) == (pb.MEMORY_TYPE_PROJECT, pb.MEMORY_SCOPE_PROJECT)
    assert migration.title == MIGRATION_TITLE
    assert list(migration.links) == ["deploy-pipeline-runbook"]
    assert migration.provenance.source_session_id == "sess_038"
    counter = TokenCounter("claude-opus-5")
    for rec in response.records:
        assert rec.HasField("relevance_score") and 0.0 <= rec.relevance_score <= 1.0
        assert rec.tokens == counter.count(rec.content[0].text) > 0
        assert rec.created_at.ToMilliseconds() > 0
    assert sum(r.tokens for r in response.records) <= 1500

    # When, turns later, the model writes a new project fact via memory.remember
    written = _record(
        gw,
        "deploy-pipeline-migration-done",
        pb.MEMORY_TYPE_PROJECT,
        "New deploy tool is live in production; old pipeline decommissioned. "
        "Rollback steps are documented in the runbook.",
        title="Deploy pipeline migration complete",
        session_id="sess_042",
        turn_id=str(ULID()),
        recorded_by="memory.remember",
        working_directory=CWD,
    )
    # Then the RecordResponse is exactly {result: {id, status: canonical}}
    assert written == pb.RecordResponse(
        result=pb.RecordResult(
            id="deploy-pipeline-migration-done", status=pb.RECORD_STATUS_CANONICAL
        )
    )
    assert set(pb.RecordResponse.DESCRIPTOR.fields_by_name) == {"result"}


def test_worked_cross_reference_example(gw: Any) -> None:
    # Given two records, the referencing one written FIRST (a forward reference)
    migration_id, runbook_id = "deploy-pipeline-migration-in-progress", "deploy-pipeline-runbook"
    _record(
        gw,
        migration_id,
        pb.MEMORY_TYPE_PROJECT,
        MIGRATION,
        title=MIGRATION_TITLE,
        working_directory=CWD,
    )
    dangling = [(d.source, d.target) for d in gw.store.dangling().links]
    assert dangling == [("deploy-pipeline-migration-in-progress", "deploy-pipeline-runbook")]
    _record(
        gw,
        runbook_id,
        pb.MEMORY_TYPE_REFERENCE,
        RUNBOOK,
        title=RUNBOOK_TITLE,
        working_directory=CWD,
    )
    # Then links are as written, and nothing dangles any more
    get = gw.memory.GetRecord
    runbook = get(pb.GetRecordRequest(id="deploy-pipeline-runbook")).record
    migration = get(pb.GetRecordRequest(id="deploy-pipeline-migration-in-progress")).record
    assert list(runbook.links) == []
    assert list(migration.links) == ["deploy-pipeline-runbook"]
    assert [c.text for c in migration.content] == [MIGRATION]
    assert gw.store.dangling().links == ()
    backlinks = gw.store.backlinks("deploy-pipeline-runbook")
    assert [m.id for m in backlinks.memories] == ["deploy-pipeline-migration-in-progress"]
    # and Render turns the reference into a resolved link RenderNode, not bracket text
    tree = gw.memory.Render(pb.RenderRequest()).tree
    node = next(
        n
        for s in tree.root.children
        for n in s.children
        if n.target == "deploy-pipeline-migration-in-progress"
    )
    links = [c for c in node.children if c.kind == "link"]
    assert [(c.target, c.resolved) for c in links] == [("deploy-pipeline-runbook", True)]
    assert all("[[" not in c.text for c in node.children)
