"""The memory.v1 conformance matrix, one test per MUST / SHOULD row (named after the row), driven
over a real gRPC channel against a real gateway and store (fixtures in this folder's conftest).
"""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest
from google.protobuf import struct_pb2
from ulid import ULID

from shared.proto.memory.v1 import memory_pb2 as pb
from shared.text.tokens import TokenCounter
from store_worker import ops
from tests.grpc_gateway.conftest import SPEC_CODES

T = pb.MemoryType
S = pb.MemoryScope
CWD = "/home/user/code/acme-widgets"


def record(
    text: str,
    *,
    type: int = pb.MEMORY_TYPE_USER,
    scope: int = pb.MEMORY_SCOPE_GLOBAL,
    **kw: Any,
) -> pb.RecordRequest:
    return pb.RecordRequest(type=type, scope=scope, content=[pb.ContentBlock(text=text)], **kw)


def put(gw: Any, text: str, **kw: Any) -> str:
    return str(gw.memory.Record(record(text, **kw)).result.id)


# -- the core surface ----------------------------------------------------------------------


def test_must_core_rpcs_are_implemented(gw: Any) -> None:
    # Given a fresh provider
    # When each core RPC is called with a valid request
    caps = gw.memory.GetCapabilities(pb.GetCapabilitiesRequest()).capabilities
    config = struct_pb2.Struct()
    config.update({"recall_limit": 7})
    configured = gw.memory.Configure(pb.ConfigureRequest(config=config))
    rid = put(gw, "The user deploys with the new deploy tool")
    recalled = gw.memory.Recall(pb.RecallRequest(query="deploy tool", token_budget=500))
    updated = gw.memory.UpdateRecord(
        pb.UpdateRecordRequest(id=rid, content=[pb.ContentBlock(text="The user deploys daily")])
    )
    listed = gw.memory.ListRecords(pb.ListRecordsRequest())
    got = gw.memory.GetRecord(pb.GetRecordRequest(id=rid))
    described = gw.memory.Describe(pb.DescribeRequest())
    deleted = gw.memory.DeleteRecord(pb.DeleteRecordRequest(id=rid))
    # Then every one answers with its own response shape
    assert caps.default_token_budget == 1500
    assert configured.effective["recall_limit"] == 7
    assert [r.id for r in recalled.records] == [rid]
    assert updated.result.id == rid
    assert [r.id for r in listed.records] == [rid]
    assert got.record.content[0].text == "The user deploys daily"
    assert described.producer.name
    assert deleted.result.deleted is True
    assert gw.store.get(rid).memory.invalid_at is not None


def test_must_configure_is_validated_and_unknown_keys_are_errors(gw: Any, rpc_error: Any) -> None:
    config = struct_pb2.Struct()
    config.update({"no_such_setting": 1})
    failure = rpc_error(gw.memory.Configure, pb.ConfigureRequest(config=config))
    # memory.v1 has no category for a bad setting: "unknown" (anything else), saying which
    assert (failure.code, failure.category_name) == (grpc.StatusCode.INTERNAL, "unknown")
    assert "no_such_setting" in failure.error.message
    config = struct_pb2.Struct()
    config.update({"recall_limit": -3})
    failure = rpc_error(gw.memory.Configure, pb.ConfigureRequest(config=config))
    assert failure.error.category == pb.MEMORY_ERROR_CATEGORY_UNKNOWN
    assert "recall_limit" in failure.error.message
    assert gw.store.settings.recall_limit == 10


def test_must_getcapabilities_reports_budget_taxonomies_ratification_schema(gw: Any) -> None:
    caps = gw.memory.GetCapabilities(pb.GetCapabilitiesRequest()).capabilities
    assert caps.default_token_budget == gw.store.settings.recall_budget_tokens
    assert caps.ratification_supported is False  # MUST, default false
    names = {f.name for f in caps.config_schema.fields}
    assert {"ratification", "recall_budget_tokens", "token_model"} <= names
    assert json.loads(caps.config_schema.json_schema)["properties"]["ratification"]
    assert list(caps.supported_hook_points) == []


# -- ListRecords / GetRecord ---------------------------------------------------------------


def test_must_listrecords_getrecord_list_pending_without_a_gate(rgw: Any) -> None:
    # Given a canonical record and a pending draft (an automatic write under ratification)
    canonical = put(rgw, "The user writes Rust at work")
    draft = put(rgw, "The user may like Zig", status=pb.RECORD_STATUS_PENDING)
    # When listing with no status filter, and with each filter
    every = rgw.memory.ListRecords(pb.ListRecordsRequest())
    pending = rgw.memory.ListRecords(pb.ListRecordsRequest(status_filter=pb.RECORD_STATUS_PENDING))
    canon = rgw.memory.ListRecords(pb.ListRecordsRequest(status_filter=pb.RECORD_STATUS_CANONICAL))
    # Then the draft is listable (no include_pending gate) and fetchable
    assert {r.id for r in every.records} == {canonical, draft}
    assert [r.id for r in pending.records] == [draft]
    assert [r.id for r in canon.records] == [canonical]
    got = rgw.memory.GetRecord(pb.GetRecordRequest(id=draft)).record
    assert got.status == pb.RECORD_STATUS_PENDING


def test_must_listrecords_paginates_with_an_opaque_token(gw: Any) -> None:
    ids = {put(gw, f"The user owns widget number {n}") for n in range(5)}
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        page = gw.memory.ListRecords(pb.ListRecordsRequest(page_size=2, page_token=token))
        seen += [r.id for r in page.records]
        pages += 1
        token = page.next_page_token
        if not token:
            break
    assert pages == 3
    assert sorted(seen) == sorted(ids)
    assert len(seen) == len(set(seen))


def test_must_listrecords_serves_any_page_size_and_ends_on_the_last_page(gw: Any) -> None:
    # Given three records
    ids = {put(gw, f"The user owns gadget number {n}") for n in range(3)}
    # When a page as large as the records, and one far larger than any page, are asked for
    exact = gw.memory.ListRecords(pb.ListRecordsRequest(page_size=3))
    huge = gw.memory.ListRecords(pb.ListRecordsRequest(page_size=1_000_000))
    tree = gw.memory.Render(pb.RenderRequest(page_size=1_000_000)).tree
    # Then each is the last page (memory.v1 sets no maximum; an empty token means the last page)
    for page in (exact, huge):
        assert {r.id for r in page.records} == ids
        assert page.next_page_token == ""
    assert {n.target for s in tree.root.children for n in s.children} == ids


def test_must_getrecord_fails_not_found_on_unknown_id(gw: Any, rpc_error: Any) -> None:
    failure = rpc_error(gw.memory.GetRecord, pb.GetRecordRequest(id="never-written"))
    assert failure.code == grpc.StatusCode.NOT_FOUND
    assert failure.error.category == pb.MEMORY_ERROR_CATEGORY_NOT_FOUND
    assert failure.error.retryable is False
    # a deleted record no longer exists for the protocol either
    rid = put(gw, "The user has a cat named Miso")
    gw.memory.DeleteRecord(pb.DeleteRecordRequest(id=rid))
    assert rpc_error(gw.memory.GetRecord, pb.GetRecordRequest(id=rid)).code == (
        grpc.StatusCode.NOT_FOUND
    )


def test_must_describe_reports_this_builds_own_identity(gw: Any) -> None:
    producer = gw.memory.Describe(pb.DescribeRequest()).producer
    assert producer.name == ops.SERVICE_NAME
    assert producer.version == ops.version()
    assert producer.digest == ops.source_digest()
    assert producer.digest.startswith("sha256:") and len(producer.digest) == 7 + 64


# -- records -------------------------------------------------------------------------------


def test_must_provenance_is_kernel_populated_and_immutable(gw: Any) -> None:
    # Given a record written with the kernel's provenance
    turn = str(ULID())
    rid = put(
        gw,
        "The release train leaves on Thursdays",
        session_id="sess_001",
        turn_id=turn,
        recorded_by="memory.remember",
    )
    before = gw.memory.GetRecord(pb.GetRecordRequest(id=rid)).record.provenance
    # When the record is updated wholesale and re-stated
    gw.memory.UpdateRecord(
        pb.UpdateRecordRequest(
            id=rid, content=[pb.ContentBlock(text="The release train leaves on Fridays")]
        )
    )
    put(
        gw,
        "The release train leaves on Fridays",
        session_id="sess_999",
        turn_id=str(ULID()),
        recorded_by="someone.else",
    )
    after = gw.memory.GetRecord(pb.GetRecordRequest(id=rid)).record.provenance
    # Then provenance is what the creating call said, unchanged
    assert (before.source_session_id, before.source_turn_id, before.recorded_by) == (
        "sess_001",
        turn,
        "memory.remember",
    )
    assert after == before
    assert not hasattr(pb.UpdateRecordRequest(), "provenance")


def test_must_relevance_score_in_unit_range_recall_list_only_never_persisted(gw: Any) -> None:
    # Given records of very different strength
    for n in range(6):
        put(gw, f"The deploy tool step {n} runs deploy checks deploy deploy")
    put(gw, "Unrelated note about lunch")
    # When recalled
    recalled = gw.memory.Recall(pb.RecallRequest(query="deploy checks", token_budget=5000))
    # Then each result carries a score in [0, 1], in descending order
    scores = [r.relevance_score for r in recalled.records]
    assert recalled.records and all(r.HasField("relevance_score") for r in recalled.records)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    # and never on a write response, a GetRecord, or on disk
    rid = recalled.records[0].id
    assert not gw.memory.GetRecord(pb.GetRecordRequest(id=rid)).record.HasField("relevance_score")
    for line in (gw.data_dir / "main" / "memories.jsonl").read_text().splitlines():
        assert not [key for key in json.loads(line) if "relevance" in key]


def test_must_recall_turn_id_is_a_ulid(gw: Any, rpc_error: Any) -> None:
    put(gw, "The user likes green tea")
    ok = gw.memory.Recall(pb.RecallRequest(query="tea", turn_id=str(ULID())))
    assert len(ok.records) == 1
    failure = rpc_error(gw.memory.Recall, pb.RecallRequest(query="tea", turn_id="turn_03"))
    assert (failure.code, failure.category_name) == (grpc.StatusCode.INTERNAL, "unknown")
    assert "ULID" in failure.error.message
    failure = rpc_error(gw.memory.Record, record("x y z", turn_id="turn_07"))
    assert (failure.code, failure.category_name) == (grpc.StatusCode.INTERNAL, "unknown")
    assert "turn_07" in failure.error.message


def test_must_memory_type_taxonomy_is_fixed(gw: Any, rpc_error: Any) -> None:
    caps = gw.memory.GetCapabilities(pb.GetCapabilitiesRequest()).capabilities
    assert list(caps.supported_types) == [
        pb.MEMORY_TYPE_USER,
        pb.MEMORY_TYPE_FEEDBACK,
        pb.MEMORY_TYPE_PROJECT,
        pb.MEMORY_TYPE_REFERENCE,
    ]
    for value in caps.supported_types:
        rid = put(gw, f"A record of type {T.Name(value)}", type=value)
        assert gw.memory.GetRecord(pb.GetRecordRequest(id=rid)).record.type == value
    for bad in (pb.MEMORY_TYPE_UNSPECIFIED, 99):
        failure = rpc_error(gw.memory.Record, record("typed wrong", type=bad))
        assert failure.code == grpc.StatusCode.INVALID_ARGUMENT
        assert failure.error.category == pb.MEMORY_ERROR_CATEGORY_INVALID_TYPE


def test_must_memory_scope_taxonomy_is_fixed(gw: Any, rpc_error: Any) -> None:
    caps = gw.memory.GetCapabilities(pb.GetCapabilitiesRequest()).capabilities
    assert list(caps.supported_scopes) == [
        pb.MEMORY_SCOPE_SESSION,
        pb.MEMORY_SCOPE_PROJECT,
        pb.MEMORY_SCOPE_GLOBAL,
    ]
    owners = {"session_id": "sess_1", "working_directory": CWD}
    for value in caps.supported_scopes:
        rid = put(gw, f"A record of scope {S.Name(value)}", scope=value, **owners)
        assert gw.memory.GetRecord(pb.GetRecordRequest(id=rid)).record.scope == value
    for bad in (pb.MEMORY_SCOPE_UNSPECIFIED, 42):
        failure = rpc_error(gw.memory.Record, record("scoped wrong", scope=bad))
        assert failure.code == grpc.StatusCode.INVALID_ARGUMENT
        assert failure.error.category == pb.MEMORY_ERROR_CATEGORY_INVALID_SCOPE


def test_must_scope_visibility_on_recall(gw: Any) -> None:
    # Given one record per scope, owned by session A and project acme
    gw.store.link_session("sess_child", "sess_a")
    put(gw, "Kiwi fact global", scope=pb.MEMORY_SCOPE_GLOBAL)
    put(gw, "Kiwi fact project", scope=pb.MEMORY_SCOPE_PROJECT, working_directory=CWD)
    put(gw, "Kiwi fact session", scope=pb.MEMORY_SCOPE_SESSION, session_id="sess_a")

    def seen(**kw: Any) -> set[str]:
        found = gw.memory.Recall(pb.RecallRequest(query="kiwi fact", **kw)).records
        return {r.content[0].text.rsplit(" ", 1)[-1] for r in found}

    # Then global is everywhere, project only in its directory, session only in its tree
    assert seen() == {"global"}
    assert seen(working_directory=CWD + "/") == {"global", "project"}
    assert seen(session_id="sess_a") == {"global", "session"}
    assert seen(session_id="sess_child") == {"global", "session"}
    assert seen(session_id="sess_other", working_directory="/elsewhere") == {"global"}
    # and the session record stays listable for audit
    assert len(gw.memory.ListRecords(pb.ListRecordsRequest()).records) == 3


def test_must_record_type_and_scope_are_immutable_after_creation(gw: Any) -> None:
    # Given a user/global record
    rid = put(gw, "The user is on call this week", id="on-call")
    # When UpdateRecord replaces it (the wire has no type/scope to change) ...
    fields = {f.name for f in pb.UpdateRecordRequest.DESCRIPTOR.fields}
    assert fields == {"id", "title", "content"}
    gw.memory.UpdateRecord(
        pb.UpdateRecordRequest(
            id=rid, content=[pb.ContentBlock(text="The user is on call next week")]
        )
    )
    # ... or a Record reuses its id with another type and scope
    other = put(
        gw,
        "On call rota lives in the wiki",
        id="on-call",
        type=pb.MEMORY_TYPE_REFERENCE,
        scope=pb.MEMORY_SCOPE_PROJECT,
        working_directory=CWD,
    )
    # Then the original keeps its type and scope; the new record got its own id
    got = gw.memory.GetRecord(pb.GetRecordRequest(id=rid)).record
    assert (got.type, got.scope) == (pb.MEMORY_TYPE_USER, pb.MEMORY_SCOPE_GLOBAL)
    assert other == "on-call-2"
    # and the store refuses a type or scope change outright
    from shared.contract.errors import InvalidScopeError, InvalidTypeError

    with pytest.raises(InvalidTypeError):
        gw.store.update(rid, type="feedback")
    with pytest.raises(InvalidScopeError):
        gw.store.update(rid, scope="session")


# -- recall and budget ---------------------------------------------------------------------


def test_must_recall_fits_the_shared_token_budget(gw: Any, rpc_error: Any) -> None:
    # Given several records that together exceed a small budget
    for n in range(8):
        put(gw, f"Budget fact {n}: the widget service retries calls with jittered backoff")
    tokens = gw.store.list().memories[0].tokens
    # When recalling with a budget that holds three of them
    found = gw.memory.Recall(pb.RecallRequest(query="widget backoff", token_budget=3 * tokens + 1))
    # Then the provider self-truncates to the budget, and each record says its cost
    assert len(found.records) == 3
    assert sum(r.tokens for r in found.records) <= 3 * tokens + 1
    # and a budget nothing fits in is budget_exceeded
    failure = rpc_error(gw.memory.Recall, pb.RecallRequest(query="widget backoff", token_budget=2))
    assert failure.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert failure.error.category == pb.MEMORY_ERROR_CATEGORY_BUDGET_EXCEEDED


def test_must_include_pending_defaults_to_false(rgw: Any) -> None:
    put(rgw, "Mango draft note", status=pb.RECORD_STATUS_PENDING)
    put(rgw, "Mango canonical note")
    default = rgw.memory.Recall(pb.RecallRequest(query="mango note"))
    assert pb.RecallRequest().include_pending is False
    assert [r.status for r in default.records] == [pb.RECORD_STATUS_CANONICAL]
    both = rgw.memory.Recall(pb.RecallRequest(query="mango note", include_pending=True))
    assert {r.status for r in both.records} == {
        pb.RECORD_STATUS_CANONICAL,
        pb.RECORD_STATUS_PENDING,
    }


@pytest.mark.parametrize("mem_type", [pb.MEMORY_TYPE_PROJECT, pb.MEMORY_TYPE_USER])
def test_should_project_records_weigh_recency_under_budget_pressure(gw: Any, mem_type: int) -> None:
    # Given an older but stronger (pinned) record and a fresh one, both of one type
    old = put(
        gw,
        "Sprint status: the billing rewrite is blocked",
        type=mem_type,
        scope=pb.MEMORY_SCOPE_PROJECT,
        working_directory=CWD,
    )
    gw.store.pin(old, True)
    gw.clock.advance(days=10)  # the pin (x1.25) outweighs 10 days of decay (x0.89)
    new = put(
        gw,
        "Sprint status: the billing rewrite is unblocked",
        type=mem_type,
        scope=pb.MEMORY_SCOPE_PROJECT,
        working_directory=CWD,
    )
    one = max(r.tokens for r in gw.store.list().memories)
    # When recalled with room for both, and under pressure (room for one)
    roomy = gw.memory.Recall(pb.RecallRequest(working_directory=CWD, token_budget=10 * one))
    tight = gw.memory.Recall(pb.RecallRequest(working_directory=CWD, token_budget=one + 1))
    # Then without pressure the stronger old record leads; under pressure a project-type
    # record's recency wins, while other types keep their ranking
    assert [r.id for r in roomy.records] == [old, new]
    expected = new if mem_type == pb.MEMORY_TYPE_PROJECT else old
    assert [r.id for r in tight.records] == [expected]


def test_must_tokens_are_computed_with_the_count_tokens_tokenizer(gw: Any) -> None:
    text = "ラーメンが好きです、とユーザーは言った。"
    rid = put(gw, text)
    stored = gw.memory.GetRecord(pb.GetRecordRequest(id=rid)).record.tokens
    counter = TokenCounter(gw.store.settings.token_model)
    assert counter.exact  # a real tokenizer, not the 4-chars-per-token estimate
    assert stored == counter.count(text) != (len(text) + 3) // 4


def test_must_recall_model_target_sets_token_counts_and_budget(gw: Any) -> None:
    text = "ラーメンが好きです、とユーザーは言った。"
    put(gw, text)
    o200k = TokenCounter("gpt-4o").count(text)
    cl100k = TokenCounter(None).count(text)
    assert o200k < cl100k  # the two tokenizers disagree on this text

    def recall(model: str, budget: int) -> list[pb.MemoryRecord]:
        req = pb.RecallRequest(
            query="ラーメン",
            token_budget=budget,
            model_target=pb.ModelTarget(id=model, context_window=128000, effective_ceiling=120000),
        )
        return list(gw.memory.Recall(req).records)

    assert [r.tokens for r in recall("gpt-4o", 1000)] == [o200k]
    assert [r.tokens for r in recall("claude-opus-5", 1000)] == [cl100k]
    # the budget is checked in the target model's tokens: fits for gpt-4o only
    assert len(recall("gpt-4o", o200k)) == 1
    with pytest.raises(grpc.RpcError) as info:
        recall("gpt-4", o200k)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


# -- ids, links ----------------------------------------------------------------------------


def test_must_slug_ids_are_human_meaningful_with_kernel_enforced_uniqueness(gw: Any) -> None:
    derived = put(gw, "The staging database is rebuilt every Monday night")
    titled = put(gw, "whatever body text", title="Deploy pipeline runbook")
    first = put(gw, "First body", id="deploy-notes")
    second = put(gw, "Second body", id="deploy-notes")
    third = put(gw, "Third body", id="deploy-notes")
    assert derived == "staging-database-rebuilt-every-monday-night"
    assert titled == "deploy-pipeline-runbook"
    assert (first, second, third) == ("deploy-notes", "deploy-notes-2", "deploy-notes-3")
    texts = {
        r.id: r.content[0].text for r in gw.memory.ListRecords(pb.ListRecordsRequest()).records
    }
    assert texts["deploy-notes"] == "First body"  # never an overwrite


def test_must_update_and_delete_fail_on_unknown_id_rather_than_no_op(
    gw: Any, rpc_error: Any, snapshot: Any
) -> None:
    put(gw, "The user keeps a garden")
    before = snapshot(gw.data_dir)
    upd = rpc_error(
        gw.memory.UpdateRecord,
        pb.UpdateRecordRequest(id="ghost", content=[pb.ContentBlock(text="boo")]),
    )
    dele = rpc_error(gw.memory.DeleteRecord, pb.DeleteRecordRequest(id="ghost"))
    for failure in (upd, dele):
        assert failure.code == grpc.StatusCode.NOT_FOUND
        assert failure.error.category == pb.MEMORY_ERROR_CATEGORY_NOT_FOUND
    assert snapshot(gw.data_dir) == before


def test_must_updaterecord_replaces_content_wholesale_and_reparses_links(gw: Any) -> None:
    # Given a record with a title and two links
    rid = put(gw, "Old body: see [[alpha]] and [[beta]]", title="Kept title")
    before = gw.memory.GetRecord(pb.GetRecordRequest(id=rid)).record
    gw.clock.advance(days=1)
    # When UpdateRecord sends new content and no title
    gw.memory.UpdateRecord(
        pb.UpdateRecordRequest(id=rid, content=[pb.ContentBlock(text="New body: [[gamma]]")])
    )
    after = gw.memory.GetRecord(pb.GetRecordRequest(id=rid)).record
    # Then the content is replaced (not patched), links follow it, the title stays, and only
    # updated_at moves
    assert [c.text for c in after.content] == ["New body: [[gamma]]"]
    assert list(after.links) == ["gamma"]
    assert after.title == "Kept title"
    assert after.created_at == before.created_at
    assert after.updated_at.ToMilliseconds() > before.updated_at.ToMilliseconds()
    assert (after.type, after.scope, after.provenance) == (
        before.type,
        before.scope,
        before.provenance,
    )


def test_must_kernel_parse_links_and_render_them_as_link_nodes(gw: Any) -> None:
    # Given a record referencing another with [[name]]
    put(
        gw,
        "Canonical runbook lives in the wiki",
        id="deploy-pipeline-runbook",
        type=pb.MEMORY_TYPE_REFERENCE,
    )
    rid = put(
        gw,
        "Migrating. See [[deploy-pipeline-runbook]] for rollback steps.",
        type=pb.MEMORY_TYPE_PROJECT,
    )
    # Then links are parsed at Record time
    got = gw.memory.GetRecord(pb.GetRecordRequest(id=rid)).record
    assert list(got.links) == ["deploy-pipeline-runbook"]
    # and Render resolves the reference into a link node pointing at the target
    tree = gw.memory.Render(pb.RenderRequest()).tree
    records = [n for section in tree.root.children for n in section.children]
    node = next(n for n in records if n.target == rid)
    kinds = [(c.kind, c.text, c.target, c.resolved) for c in node.children]
    assert kinds == [
        ("text", "Migrating. See ", "", False),
        ("link", "deploy-pipeline-runbook", "deploy-pipeline-runbook", True),
        ("text", " for rollback steps.", "", False),
    ]


def test_must_not_reject_dangling_links_at_write_time(gw: Any) -> None:
    # When a record links forward to a record that does not exist yet
    rid = put(gw, "Depends on [[future-decision]] landing first")
    # Then the write succeeds, and the dangling link is queryable
    assert list(gw.memory.GetRecord(pb.GetRecordRequest(id=rid)).record.links) == [
        "future-decision"
    ]
    dangling = gw.store.dangling().links
    assert [(d.source, d.target, d.reason) for d in dangling] == [
        (rid, "future-decision", "missing")
    ]
    assert [m.id for m in gw.store.backlinks("future-decision").memories] == [rid]
    tree = gw.memory.Render(pb.RenderRequest()).tree
    link = [
        c for s in tree.root.children for n in s.children for c in n.children if c.kind == "link"
    ]
    assert [(c.target, c.resolved) for c in link] == [("future-decision", False)]
    # and once the target exists the link resolves
    put(gw, "We decided.", id="future-decision")
    assert gw.store.dangling().links == ()


def test_must_links_hold_only_the_names_written_in_brackets(gw: Any) -> None:
    # When a record holds brackets that name nothing beside a real reference
    rid = put(gw, "Blank [[ ]] and [[--]] then [[release-notes]]")
    # Then links name the reference only (not a slug made up for the blank ones)
    assert list(gw.memory.GetRecord(pb.GetRecordRequest(id=rid)).record.links) == ["release-notes"]
    tree = gw.memory.Render(pb.RenderRequest()).tree
    node = next(n for s in tree.root.children for n in s.children if n.target == rid)
    assert [(c.kind, c.target) for c in node.children if c.kind == "link"] == [
        ("link", "release-notes")
    ]
    assert "".join(c.text for c in node.children) == "Blank [[ ]] and [[--]] then release-notes"


# -- writes: remember, ratification --------------------------------------------------------


def test_must_remember_runs_a_fuzzy_near_match_check_before_creating(gw: Any) -> None:
    # Given an existing record
    rid = put(gw, "The user prefers tabs over spaces")
    near = pb.RememberRequest(record=record("The user prefers tabs over spaces in Python"))
    # When remembering a close variant
    asked = gw.tools.Remember(near)
    # Then nothing is written and the candidates come back for the caller to choose
    assert asked.action == pb.REMEMBER_ACTION_NEEDS_CONFIRMATION
    assert [c.record.id for c in asked.candidates] == [rid]
    assert 0.75 <= asked.candidates[0].similarity <= 1.0
    assert not asked.HasField("result")
    assert len(gw.store.list().memories) == 1
    # the caller picks: update that id ...
    chose = gw.tools.Remember(pb.RememberRequest(record=near.record, update_id=rid))
    assert (chose.action, chose.result.id) == (pb.REMEMBER_ACTION_UPDATED, rid)
    assert gw.store.get(rid).memory.text.endswith("in Python")
    # ... or confirms a new record
    again = pb.RememberRequest(
        record=record("The user prefers tabs over spaces in Go"), confirm_new=True
    )
    made = gw.tools.Remember(again)
    assert made.action == pb.REMEMBER_ACTION_CREATED and made.result.id != rid
    # and an unrelated fact is created straight away
    fresh = gw.tools.Remember(pb.RememberRequest(record=record("The user lives in Lisbon")))
    assert fresh.action == pb.REMEMBER_ACTION_CREATED


def test_may_approve_and_reject_have_the_standardized_shape(rgw: Any) -> None:
    keep = put(rgw, "Draft one: the user likes jazz", status=pb.RECORD_STATUS_PENDING)
    drop = put(rgw, "Draft two: the user hates jazz", status=pb.RECORD_STATUS_PENDING)
    approved = rgw.memory.ApproveRecord(pb.ApproveRecordRequest(id=keep))
    rejected = rgw.memory.RejectRecord(pb.RejectRecordRequest(id=drop))
    assert approved.result == pb.RecordResult(id=keep, status=pb.RECORD_STATUS_CANONICAL)
    assert rejected.result == pb.DeleteResult(deleted=True)
    log = (rgw.data_dir / "main" / "memories.jsonl").read_text()
    assert keep in log and drop not in log  # a rejected draft never touched the log
    assert not list((rgw.data_dir / "main" / "drafts").glob("*.json"))


def test_must_not_return_pending_unless_ratification_supported(gw: Any, rpc_error: Any) -> None:
    # Given ratification off (the default)
    assert not gw.memory.GetCapabilities(
        pb.GetCapabilitiesRequest()
    ).capabilities.ratification_supported
    # When an automatic write arrives (the extractor's path) and Record asks for a draft
    auto = gw.store.save("The user might enjoy chess", confidence="extracted")
    asked = rpc_error(gw.memory.Record, record("Maybe chess", status=pb.RECORD_STATUS_PENDING))
    # Then nothing is pending anywhere, and ratification RPCs say it is unsupported
    assert auto.memory.status == "canonical"
    assert asked.error.category == pb.MEMORY_ERROR_CATEGORY_RATIFICATION_UNSUPPORTED
    listed = gw.memory.ListRecords(pb.ListRecordsRequest()).records
    assert {r.status for r in listed} == {pb.RECORD_STATUS_CANONICAL}
    for method, req in (
        (gw.memory.ApproveRecord, pb.ApproveRecordRequest(id=auto.memory.id)),
        (gw.memory.RejectRecord, pb.RejectRecordRequest(id=auto.memory.id)),
    ):
        failure = rpc_error(method, req)
        assert failure.code == grpc.StatusCode.FAILED_PRECONDITION
        assert failure.error.category == pb.MEMORY_ERROR_CATEGORY_RATIFICATION_UNSUPPORTED


def test_should_autonomous_writes_land_as_pending_drafts_via_the_automatic_path(
    rgw: Any,
) -> None:
    # Given ratification on; a finished turn is queued for extraction (the hook-driven trigger)
    queued = rgw.store.turn_completed(
        "sess_042",
        str(ULID()),
        [{"role": "user", "content": "I moved to Porto last month"}],
    )
    jobs = rgw.store.outbox_claim(limit=4)
    assert queued and [j.session_id for j in jobs] == ["sess_042"]
    # When the extractor writes what it found (confidence extracted: an automatic write)
    auto = rgw.store.save(
        "The user moved to Porto",
        confidence="extracted",
        session_id="sess_042",
        recorded_by="memory-extractor",
    )
    # Then it lands as a pending draft, listable, not recalled, until approved
    assert auto.memory.status == "pending"
    assert rgw.memory.Recall(pb.RecallRequest(query="Porto")).records == []
    listed = rgw.memory.ListRecords(pb.ListRecordsRequest(status_filter=pb.RECORD_STATUS_PENDING))
    assert [r.id for r in listed.records] == [auto.memory.id]
    rgw.memory.ApproveRecord(pb.ApproveRecordRequest(id=auto.memory.id))
    assert [r.id for r in rgw.memory.Recall(pb.RecallRequest(query="Porto")).records] == [
        auto.memory.id
    ]


def test_should_reference_tools_remember_forget_search(gw: Any, rpc_error: Any) -> None:
    made = gw.tools.Remember(pb.RememberRequest(record=record("The user's dog is called Pixel")))
    assert made.action == pb.REMEMBER_ACTION_CREATED
    restated = gw.tools.Remember(
        pb.RememberRequest(record=record("the user's dog is called pixel."))
    )
    assert (restated.action, restated.result.id) == (pb.REMEMBER_ACTION_REINFORCED, made.result.id)
    assert gw.store.get(made.result.id).memory.provenance.recorded_by == "memory.remember"
    found = gw.tools.Search(pb.SearchRequest(query="dog name"))
    assert [r.id for r in found.records] == [made.result.id]
    assert 0.0 <= found.records[0].relevance_score <= 1.0
    forgot = gw.tools.Forget(pb.ForgetRequest(id=made.result.id))
    assert forgot.result.deleted is True
    assert gw.tools.Search(pb.SearchRequest(query="dog name")).records == []
    assert rpc_error(gw.tools.Forget, pb.ForgetRequest(id=made.result.id)).code == (
        grpc.StatusCode.NOT_FOUND
    )
    assert rpc_error(gw.tools.Search, pb.SearchRequest(query="  ")).code == (
        grpc.StatusCode.INTERNAL  # "unknown": memory.v1 has no category for an empty query
    )


# -- the error taxonomy ----------------------------------------------------------------------


class _Broken:
    """A StoreAPI whose backend fails: unreachable, or with an unexpected exception."""

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise self.exc

        return fail


def test_must_errors_follow_the_structured_taxonomy(
    gw: Any, make_gateway: Any, rpc_error: Any
) -> None:
    from shared.contract.errors import SourceUnavailableError

    rid = put(gw, "Taxonomy probe record")
    cases = [
        ("not_found", gw.memory.GetRecord, pb.GetRecordRequest(id="nope"), gw),
        ("invalid_type", gw.memory.Record, record("x", type=0), gw),
        ("invalid_scope", gw.memory.Record, record("x", scope=0), gw),
        ("ratification_unsupported", gw.memory.ApproveRecord, pb.ApproveRecordRequest(id=rid), gw),
        (
            "budget_exceeded",
            gw.memory.Recall,
            pb.RecallRequest(query="taxonomy probe", token_budget=1),
            gw,
        ),
        ("not_found", gw.memory.GetRecord, pb.GetRecordRequest(id="Not A Slug!"), gw),
        ("unknown", gw.memory.ListRecords, pb.ListRecordsRequest(page_token="garbage!"), gw),
    ]
    down = make_gateway(store=_Broken(SourceUnavailableError("store actor is restarting")))
    crashed = make_gateway(store=_Broken(RuntimeError("disk on fire")))
    cases += [
        ("source_unavailable", down.memory.Describe, pb.DescribeRequest(), down),
        ("unknown", crashed.memory.Describe, pb.DescribeRequest(), crashed),
    ]
    assert {c[0] for c in cases} == set(SPEC_CODES)  # each of the seven, and only those
    for category, method, req, _ in cases:
        failure = rpc_error(method, req)
        assert failure.code == grpc.StatusCode[SPEC_CODES[category]], category
        assert failure.category_name == category
        assert pb.MemoryErrorCategory.Name(failure.error.category) == (
            "MEMORY_ERROR_CATEGORY_" + category.upper()
        )
        assert failure.error.message and failure.error.message == failure.details
        assert failure.error.retryable is (category == "source_unavailable")
    unknown = rpc_error(crashed.memory.Describe, pb.DescribeRequest())
    assert "RuntimeError: disk on fire" in unknown.error.message  # enough detail to debug
