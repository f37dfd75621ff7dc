"""Principals through a real gateway: the admin token keeps the audit path, a scoped token
(``memory token create``) sees and changes only its banks, projects and sessions, on memory.v1
(refusals in its closed set: an unseen record is ``not_found``, a forbidden call ``unknown``
naming the permission) and memory.store.v1 (``PERMISSION_DENIED``) alike, and every refusal
writes nothing."""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from grpc_gateway.auth import bearer_metadata
from grpc_gateway.server import build_server
from integrations.mcp_tools import MemoryTools
from shared.client.grpc import GrpcStoreClient
from shared.contract import errors
from shared.contract.clock import FakeClock
from shared.proto.memory.v1 import memory_pb2 as pb
from shared.proto.memory.v1 import memory_pb2_grpc as pb_grpc
from store_worker.core import MemoryStore
from tests.grpc_gateway.conftest import snapshot_dir

ADMIN_TOKEN = "admin-token-for-tests"
HERE, THERE = "/srv/here", "/srv/there"


@dataclass
class Served:
    store: MemoryStore
    address: str
    data_dir: Path
    memory: pb_grpc.MemoryServiceStub
    tools: pb_grpc.MemoryToolsStub
    admin: GrpcStoreClient

    def client(self, token: str) -> GrpcStoreClient:
        return GrpcStoreClient(self.address, token=token, timeout=10)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    started: list[Any] = []

    def make(token: str | None = ADMIN_TOKEN) -> Served:
        data_dir = tmp_path / f"data{len(started)}"
        store = MemoryStore(data_dir, clock=FakeClock())
        server, port = build_server(store, port=0, token=token)
        server.start()
        address = f"127.0.0.1:{port}"
        channel = grpc.insecure_channel(address)
        admin = GrpcStoreClient(address, token=token, timeout=10)
        started.append((server, channel, admin))
        return Served(
            store,
            address,
            data_dir,
            pb_grpc.MemoryServiceStub(channel),
            pb_grpc.MemoryToolsStub(channel),
            admin,
        )

    yield make
    for server, channel, admin in started:
        admin.close()
        channel.close()
        server.stop(None)


def _v1_failure(call: Callable[..., Any], request: Any, token: str) -> tuple[str, str]:
    with pytest.raises(grpc.RpcError) as info:
        call(request, metadata=bearer_metadata(token), timeout=10)
    trailers = dict(info.value.trailing_metadata() or ())
    return str(trailers.get("memory-error-category")), info.value.details() or ""


def _seeded(gw: Served) -> dict[str, str]:
    """A global memory, one of each project and one of an admin's session, in bank main,
    and one in bank other."""
    a = gw.admin
    ids = {
        "global": a.save("The team ships on Fridays").memory.id,
        "here": a.save("Here builds with make", scope="project", project=HERE).memory.id,
        "there": a.save("There builds with bazel", scope="project", project=THERE).memory.id,
        "alpha": a.save(
            "Alpha's draft plan is secret", scope="session", session_id="sess-alpha"
        ).memory.id,
    }
    a.bank_create("other")
    ids["other"] = a.save("Other bank fact about lunch", bank="other").memory.id
    return ids


def test_token_create_answers_the_token_once_and_keeps_only_its_hash(serve: Any) -> None:
    gw = serve()
    made = gw.admin.token_create("agent", banks=["main"], projects=[HERE + "/"], read_only=True)
    token = made["token"]
    assert made["principal"] == {
        "name": "agent",
        "banks": ["main"],
        "projects": [HERE],
        "read_only": True,
        "admin": False,
    }
    kept = gw.data_dir / ".state" / "store" / "tokens.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert token not in kept.read_text()
    assert [t["name"] for t in gw.admin.token_list()] == ["agent"]
    # the token speaks for its principal, through the gateway
    with gw.client(token) as agent:
        assert agent.recall("Fridays").bank == "main"
        # token management is the admin's
        with pytest.raises(errors.PermissionDeniedError, match="'admin' permission"):
            agent.token_create("more")
        with pytest.raises(errors.PermissionDeniedError):
            agent.token_list()
    # a name is never given twice, even after a revoke
    gw.admin.token_revoke("agent")
    with pytest.raises(errors.ConflictError):
        gw.admin.token_create("agent")
    # a revoked token is refused like a wrong one
    with gw.client(token) as agent, pytest.raises(errors.UnknownError, match="unauthenticated"):
        agent.recall("Fridays")


def test_tokens_survive_a_restart(serve: Any, tmp_path: Path) -> None:
    gw = serve()
    token = gw.admin.token_create("agent", read_only=True)["token"]
    gw.store.close()
    again = MemoryStore(gw.data_dir, clock=FakeClock())
    server, port = build_server(again, port=0, token=ADMIN_TOKEN)
    server.start()
    try:
        with GrpcStoreClient(f"127.0.0.1:{port}", token=token, timeout=10) as agent:
            assert agent.whoami()["name"] == "agent"
            assert agent.recall("anything").bank == "main"
    finally:
        server.stop(None)
        again.close()


def test_read_only_token_cannot_write_on_any_surface(serve: Any) -> None:
    gw = serve()
    _seeded(gw)
    token = gw.admin.token_create("reader", read_only=True)["token"]
    before = snapshot_dir(gw.data_dir)
    record = pb.RecordRequest(type=1, scope=3, content=[pb.ContentBlock(text="Written anyway")])
    category, details = _v1_failure(gw.memory.Record, record, token)
    assert category == "unknown"
    assert "permission denied" in details and "'write' permission" in details
    category, details = _v1_failure(
        gw.tools.Remember, pb.RememberRequest(record=record, confirm_new=True), token
    )
    assert (category, "'write' permission" in details) == ("unknown", True)
    with gw.client(token) as reader:
        for write in (
            lambda: reader.save("Written anyway"),
            lambda: reader.pre_generate("sess-r"),
            lambda: reader.link_session("sess-r", "sess-q"),
        ):
            with pytest.raises(errors.PermissionDeniedError, match="'write' permission"):
                write()
        assert reader.recall("Fridays").memories  # reads still work
    assert snapshot_dir(gw.data_dir) == before


def test_store_v1_refusal_is_permission_denied_on_the_wire(serve: Any) -> None:
    gw = serve()
    token = gw.admin.token_create("reader", read_only=True)["token"]
    channel = grpc.insecure_channel(gw.address)
    call = channel.unary_unary("/memory.store.v1.StoreService/Call")
    from shared.proto.memory.store.v1 import store_pb2 as spb

    request = spb.StoreCall(op="save", args_json='{"text": "nope"}').SerializeToString()
    with pytest.raises(grpc.RpcError) as info:
        call(request, metadata=bearer_metadata(token), timeout=10)
    channel.close()
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_admin_only_operations_are_refused_naming_the_permission(serve: Any) -> None:
    gw = serve()
    ids = _seeded(gw)
    token = gw.admin.token_create("writer")["token"]
    before = snapshot_dir(gw.data_dir)
    category, details = _v1_failure(gw.memory.Configure, pb.ConfigureRequest(), token)
    assert category == "unknown" and "'admin' permission" in details
    with gw.client(token) as writer:
        for admin_only in (
            lambda: writer.purge(ids["global"]),
            lambda: writer.bank_delete("other"),
            lambda: writer.rule_set("style", "Write tersely."),
            lambda: writer.configure({"inject_rules": False}),
            lambda: writer.events_since(0),
            lambda: writer.outbox_list(),
        ):
            with pytest.raises(errors.PermissionDeniedError, match="'admin' permission"):
                admin_only()
    assert snapshot_dir(gw.data_dir) == before


def test_bank_scoped_token_cannot_see_another_bank(serve: Any) -> None:
    gw = serve()
    ids = _seeded(gw)
    token = gw.admin.token_create("mainonly", banks=["main"])["token"]
    with gw.client(token) as agent:
        assert [b.name for b in agent.bank_list().banks] == ["main"]
        with pytest.raises(errors.PermissionDeniedError, match="'bank' permission"):
            agent.recall("lunch", bank="other")
        with pytest.raises(errors.PermissionDeniedError, match="'bank' permission"):
            agent.get(ids["other"], bank="other")
        assert agent.get(ids["global"]).memory.id == ids["global"]  # its own bank, by default
    other = (("x-memory-bank", "other"), *bearer_metadata(token))
    with pytest.raises(grpc.RpcError) as info:
        gw.memory.ListRecords(pb.ListRecordsRequest(), metadata=other, timeout=10)
    assert "'bank' permission" in (info.value.details() or "")
    # the admin lists the other bank (the audit path)
    admin_other = (("x-memory-bank", "other"), *bearer_metadata(ADMIN_TOKEN))
    listed = gw.memory.ListRecords(pb.ListRecordsRequest(), metadata=admin_other, timeout=10)
    assert [r.id for r in listed.records] == [ids["other"]]


def test_by_id_calls_across_projects_and_sessions_are_not_found_as_on_mcp(serve: Any) -> None:
    gw = serve()
    ids = _seeded(gw)
    token = gw.admin.token_create("here", projects=[HERE])["token"]
    mcp = MemoryTools(gw.store, project=HERE)  # the MCP tools' rule, over the same store
    before = snapshot_dir(gw.data_dir)
    for hidden in ("there", "alpha"):
        rid = ids[hidden]
        with pytest.raises(errors.NotFoundError):
            mcp.reachable(rid, bank=None)
        for call, request in (
            (gw.memory.GetRecord, pb.GetRecordRequest(id=rid)),
            (
                gw.memory.UpdateRecord,
                pb.UpdateRecordRequest(id=rid, content=[pb.ContentBlock(text="Rewritten")]),
            ),
            (gw.memory.DeleteRecord, pb.DeleteRecordRequest(id=rid)),
            (gw.tools.Forget, pb.ForgetRequest(id=rid)),
        ):
            category, details = _v1_failure(call, request, token)
            assert category == "not_found", (hidden, call)
            assert "permission" not in details  # its existence is not revealed
        with gw.client(token) as agent, pytest.raises(errors.NotFoundError):
            agent.get(rid)
    # an id that does not exist answers the same way
    assert _v1_failure(gw.memory.GetRecord, pb.GetRecordRequest(id="no-such-x"), token)[0] == (
        "not_found"
    )
    assert snapshot_dir(gw.data_dir) == before
    # what it sees: the global memory and its own project's, by id and listed
    for seen in ("global", "here"):
        mcp.reachable(ids[seen], bank=None)
        got = gw.memory.GetRecord(
            pb.GetRecordRequest(id=ids[seen]), metadata=bearer_metadata(token), timeout=10
        )
        assert got.record.id == ids[seen]
    listed = gw.memory.ListRecords(
        pb.ListRecordsRequest(), metadata=bearer_metadata(token), timeout=10
    )
    assert {r.id for r in listed.records} == {ids["global"], ids["here"]}
    # the admin token keeps the audit path: every record, by id and listed
    admin = bearer_metadata(ADMIN_TOKEN)
    listed = gw.memory.ListRecords(pb.ListRecordsRequest(), metadata=admin, timeout=10)
    assert {r.id for r in listed.records} == {ids[k] for k in ("global", "here", "there", "alpha")}
    for rid in ids.values():
        if rid != ids["other"]:
            assert gw.memory.GetRecord(pb.GetRecordRequest(id=rid), metadata=admin).record.id


def test_a_project_outside_the_token_is_refused(serve: Any) -> None:
    gw = serve()
    token = gw.admin.token_create("here", projects=[HERE])["token"]
    before = snapshot_dir(gw.data_dir)
    with gw.client(token) as agent:
        with pytest.raises(errors.PermissionDeniedError, match="'project' permission"):
            agent.save("Elsewhere", scope="project", project=THERE)
        with pytest.raises(errors.PermissionDeniedError, match="'project' permission"):
            agent.save("Prefix is no folder", scope="project", project="/srv/herebefore")
        assert snapshot_dir(gw.data_dir) == before
        saved = agent.save("Below is covered", scope="project", project=HERE + "/web")
        assert saved.memory.project == HERE + "/web"


def test_a_session_cannot_be_grafted_onto_another_principals(serve: Any) -> None:
    gw = serve()
    ids = _seeded(gw)  # sess-alpha: first used by the admin
    one = gw.admin.token_create("one")["token"]
    two = gw.admin.token_create("two")["token"]
    with gw.client(one) as first, gw.client(two) as second:
        first.pre_generate("sess-one")
        first.save("One's session note", scope="session", session_id="sess-one")
        before = snapshot_dir(gw.data_dir)
        for victim in ("sess-one", "sess-alpha"):
            for graft in (
                lambda v=victim: second.link_session("sess-evil", v),
                lambda v=victim: second.pre_generate("sess-evil", parent_session_id=v),
                lambda v=victim: second.turn_completed("sess-evil", parent_session_id=v),
                lambda v=victim: second.recall("note plan", session_id=v),
                lambda v=victim: second.save("Mine now", scope="session", session_id=v),
            ):
                with pytest.raises(errors.PermissionDeniedError, match="'session' permission"):
                    graft()
        assert snapshot_dir(gw.data_dir) == before  # nothing written, not even a claim
        assert gw.admin.session_lineage("sess-evil") == ("sess-evil",)
        # the owner extends its own lineage, and its sub-session sees its session memories
        first.pre_generate("sess-child", parent_session_id="sess-one")
        found = first.recall("session note", session_id="sess-child")
        assert [h.memory.text for h in found.memories] == ["One's session note"]
        with pytest.raises(errors.NotFoundError):
            second.get(ids["alpha"])
    # the admin may extend any lineage
    gw.admin.link_session("sess-audit", "sess-one")
    assert gw.admin.session_lineage("sess-audit") == ("sess-audit", "sess-one")


def test_graft_over_memory_v1_record_with_anothers_session_is_refused(serve: Any) -> None:
    gw = serve()
    _seeded(gw)
    token = gw.admin.token_create("agent")["token"]
    before = snapshot_dir(gw.data_dir)
    record = pb.RecordRequest(
        type=1, scope=1, session_id="sess-alpha", content=[pb.ContentBlock(text="Planted")]
    )
    category, details = _v1_failure(gw.memory.Record, record, token)
    assert category == "unknown" and "'session' permission" in details
    assert snapshot_dir(gw.data_dir) == before


def test_open_gateway_still_limits_a_scoped_token(serve: Any) -> None:
    gw = serve(token=None)
    ids = _seeded(gw)
    token = gw.admin.token_create("reader", read_only=True, projects=[HERE])["token"]
    with gw.client(token) as reader:
        with pytest.raises(errors.PermissionDeniedError):
            reader.save("x")
        with pytest.raises(errors.NotFoundError):
            reader.get(ids["there"])
    # no token at all: the admin, as before
    with GrpcStoreClient(gw.address, timeout=10) as anyone:
        assert anyone.get(ids["there"]).memory.id == ids["there"]


def test_whoami_names_the_principal(serve: Any) -> None:
    gw = serve()
    token = gw.admin.token_create("reader", read_only=True, banks=["main"])["token"]
    assert gw.admin.whoami()["admin"] is True
    with gw.client(token) as reader:
        me = reader.whoami()
    assert (me["name"], me["read_only"], me["banks"]) == ("reader", True, ["main"])


def test_a_turn_in_another_project_and_links_from_unseen_records_stay_hidden(
    serve: Any,
) -> None:
    gw = serve()
    ids = _seeded(gw)
    linking = gw.admin.save(
        f"There links to [[{ids['global']}]]", scope="project", project=THERE
    ).memory.id
    token = gw.admin.token_create("here", projects=[HERE])["token"]
    before = snapshot_dir(gw.data_dir)
    with gw.client(token) as agent:
        for meta in ({"project": THERE}, {"cwd": THERE + "/src"}):
            with pytest.raises(errors.PermissionDeniedError, match="'project' permission"):
                agent.pre_generate("sess-here", metadata=meta)
        assert snapshot_dir(gw.data_dir) == before
        assert linking not in [m.id for m in agent.backlinks(ids["global"]).memories]
    assert linking in [m.id for m in gw.admin.backlinks(ids["global"]).memories]


def test_a_refused_write_claims_no_session(serve: Any) -> None:
    gw = serve()
    one = gw.admin.token_create("one")["token"]
    two = gw.admin.token_create("two")["token"]
    before = snapshot_dir(gw.data_dir)
    with gw.client(one) as first, gw.client(two) as second:
        with pytest.raises(errors.InvalidArgumentError):
            first.save("   ", scope="session", session_id="sess-new")  # empty: refused
        assert snapshot_dir(gw.data_dir) == before
        second.save("Two's note", scope="session", session_id="sess-new")
        assert gw.admin.session_owner("sess-new") == "two"
