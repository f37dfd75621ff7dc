"""A pinned record is a person's on memory.v1's MemoryTools too: over a real gRPC channel,
``Forget`` of one and ``Remember`` with its ``update_id`` are refused in memory.v1's closed set
(``unknown`` / ``INTERNAL``, a message starting ``permission denied:`` that says a person
pinned it and how a person changes it) and write nothing; a record the caller may not see stays
``not_found``; a record nobody pinned stays the model's to change, and a person still pins and
unpins through memory.store.v1."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from grpc_gateway.auth import bearer_metadata
from grpc_gateway.server import build_server
from shared.client.grpc import GrpcStoreClient
from shared.client.mock import MockStore
from shared.contract import ops
from shared.contract.clock import FakeClock
from shared.contract.op import Op
from shared.proto.memory.v1 import memory_pb2 as pb
from shared.proto.memory.v1 import memory_pb2_grpc as pb_grpc
from store_worker.core import MemoryStore
from tests.grpc_gateway.conftest import snapshot_dir

ADMIN_TOKEN = "admin-token-for-pinned-tests"
ALLERGY = "The user is allergic to peanuts"
NOTE = "The user drafts posts in a notes app"  # nobody pinned it
HERE, THERE = "/srv/here", "/srv/there"


@dataclass
class Served:
    data_dir: Path
    tools: pb_grpc.MemoryToolsStub
    memory: pb_grpc.MemoryServiceStub
    person: GrpcStoreClient  # memory.store.v1 with the admin token: what the CLI does


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    started: list[Any] = []

    def make(store: Any = None) -> Served:
        data_dir = tmp_path / f"data{len(started)}"
        server, port = build_server(
            store or MemoryStore(data_dir, clock=FakeClock()), port=0, token=ADMIN_TOKEN
        )
        server.start()
        address = f"127.0.0.1:{port}"
        channel = grpc.insecure_channel(address)
        person = GrpcStoreClient(address, token=ADMIN_TOKEN, timeout=10)
        started.append((server, channel, person))
        return Served(
            data_dir, pb_grpc.MemoryToolsStub(channel), pb_grpc.MemoryServiceStub(channel), person
        )

    yield make
    for server, channel, person in started:
        person.close()
        channel.close()
        server.stop(None)


def forget(id: str) -> tuple[str, Any]:
    return "Forget", pb.ForgetRequest(id=id)


def rewrite(id: str) -> tuple[str, Any]:
    record = pb.RecordRequest(content=[pb.ContentBlock(text="The user is fine with peanuts")])
    return "Remember", pb.RememberRequest(record=record, update_id=id)


CHANGES: dict[str, Callable[[str], tuple[str, Any]]] = {"forget": forget, "rewrite": rewrite}


@dataclass
class Refusal:
    code: grpc.StatusCode
    category: str
    error: pb.MemoryError
    details: str


def refused(gw: Served, change: str, id: str, token: str = ADMIN_TOKEN) -> Refusal:
    method, request = CHANGES[change](id)
    with pytest.raises(grpc.RpcError) as info:
        getattr(gw.tools, method)(request, metadata=bearer_metadata(token), timeout=10)
    trailers = dict(info.value.trailing_metadata() or ())
    return Refusal(
        code=info.value.code(),
        category=str(trailers.get("memory-error-category")),
        error=pb.MemoryError.FromString(trailers["memory-error-bin"]),
        details=info.value.details() or "",
    )


def says_a_person_holds_it(refusal: Refusal, id: str, change: str) -> None:
    """memory.v1 has no ``permission_denied``: the refusal is ``unknown`` / ``INTERNAL``, as a
    token's missing permission is, and its message says it is one."""
    assert (refusal.code, refusal.category) == (grpc.StatusCode.INTERNAL, "unknown")
    assert refusal.error.category == pb.MEMORY_ERROR_CATEGORY_UNKNOWN
    assert refusal.error.retryable is False
    text = refusal.details
    assert refusal.error.message == text
    assert text.startswith("permission denied: "), text
    assert "pinned by a person" in text and f"`memory unpin {id}`" in text, text
    assert "console's memory page" in text, text
    assert f"no agent tool may {change} it" in text, text


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_pinned_record_is_refused_to_the_tools_and_nothing_is_written(
    serve: Any, change: str
) -> None:
    # Given a record a person pinned, and one nobody pinned
    gw = serve()
    pinned = gw.person.save(ALLERGY, pinned=True).memory
    gw.person.save(NOTE)
    before = snapshot_dir(gw.data_dir)
    # When a model's tool call would forget or rewrite it, then it is refused, saying who
    # holds it and how a person changes it
    says_a_person_holds_it(refused(gw, change, pinned.id), pinned.id, change)
    # and not a byte of the data dir changed
    assert snapshot_dir(gw.data_dir) == before
    assert gw.person.get(pinned.id).memory == pinned
    got = gw.memory.GetRecord(
        pb.GetRecordRequest(id=pinned.id), metadata=bearer_metadata(ADMIN_TOKEN), timeout=10
    )
    assert got.record.content[0].text == ALLERGY


def test_a_scoped_token_that_may_write_is_refused_the_same_and_sees_no_hidden_record(
    serve: Any,
) -> None:
    gw = serve()
    pinned = gw.person.save(ALLERGY, pinned=True).memory
    here = gw.person.save(
        "Here builds with make", scope="project", project=HERE, pinned=True
    ).memory
    there = gw.person.save(
        "There builds with bazel", scope="project", project=THERE, pinned=True
    ).memory
    token = gw.person.token_create("agent", banks=["main"], projects=[HERE])["token"]
    before = snapshot_dir(gw.data_dir)
    for change in CHANGES:
        # what the token sees and a person pinned: refused as pinned
        for id in (pinned.id, here.id):
            says_a_person_holds_it(refused(gw, change, id, token), id, change)
        # what it may not see: `not_found`, as for an id that does not exist, never "pinned"
        hidden = refused(gw, change, there.id, token)
        assert (hidden.code, hidden.category) == (grpc.StatusCode.NOT_FOUND, "not_found")
        assert "pinned" not in hidden.details
        assert hidden.details == refused(gw, change, "never-was", token).details.replace(
            "never-was", there.id
        )
    assert snapshot_dir(gw.data_dir) == before


def test_a_retired_pinned_record_stays_not_found(serve: Any) -> None:
    gw = serve()
    pinned = gw.person.save(ALLERGY, pinned=True).memory
    gw.person.delete(pinned.id)  # a person may retire what they pinned
    before = snapshot_dir(gw.data_dir)
    for change in CHANGES:
        gone = refused(gw, change, pinned.id)
        assert (gone.code, gone.category) == (grpc.StatusCode.NOT_FOUND, "not_found")
        assert "retired" in gone.details and "pinned" not in gone.details
    assert snapshot_dir(gw.data_dir) == before


def test_a_record_nobody_pinned_stays_the_models_to_change(serve: Any) -> None:
    gw = serve()
    gw.person.save(ALLERGY, pinned=True)
    auth = bearer_metadata(ADMIN_TOKEN)
    made = gw.tools.Remember(
        pb.RememberRequest(
            record=pb.RecordRequest(
                type=pb.MEMORY_TYPE_USER,
                scope=pb.MEMORY_SCOPE_GLOBAL,
                content=[pb.ContentBlock(text=NOTE)],
            )
        ),
        metadata=auth,
        timeout=10,
    )
    assert made.action == pb.REMEMBER_ACTION_CREATED
    note = made.result.id
    revised = gw.tools.Remember(
        pb.RememberRequest(
            record=pb.RecordRequest(
                content=[pb.ContentBlock(text="The user drafts posts in Obsidian")]
            ),
            update_id=note,
        ),
        metadata=auth,
        timeout=10,
    )
    assert (revised.action, revised.result.id) == (pb.REMEMBER_ACTION_UPDATED, note)
    assert gw.person.get(note).memory.text == "The user drafts posts in Obsidian"
    gone = gw.tools.Forget(pb.ForgetRequest(id=note), metadata=auth, timeout=10)
    assert gone.result.deleted is True
    assert gw.person.get(note).memory.invalid_at is not None


def test_a_person_still_pins_and_once_unpinned_the_model_may_change_it(serve: Any) -> None:
    gw = serve()
    note = gw.person.save(NOTE).memory
    # a person pins through memory.store.v1 (what `memory pin ID` does over the gateway)
    assert gw.person.pin(note.id, True).memory.pinned is True
    before = snapshot_dir(gw.data_dir)
    for change in CHANGES:
        says_a_person_holds_it(refused(gw, change, note.id), note.id, change)
    assert snapshot_dir(gw.data_dir) == before
    # once a person unpins it, the model's tools may change it again
    assert gw.person.pin(note.id, False).memory.pinned is False
    revised = gw.tools.Remember(
        pb.RememberRequest(
            record=pb.RecordRequest(content=[pb.ContentBlock(text="Posts are drafted on paper")]),
            update_id=note.id,
        ),
        metadata=bearer_metadata(ADMIN_TOKEN),
        timeout=10,
    )
    assert revised.action == pb.REMEMBER_ACTION_UPDATED
    gone = gw.tools.Forget(
        pb.ForgetRequest(id=note.id), metadata=bearer_metadata(ADMIN_TOKEN), timeout=10
    )
    assert gone.result.deleted is True


def test_restating_a_pinned_fact_reinforces_it_and_leaves_it_pinned(serve: Any) -> None:
    """Re-stating is no change to it: the pin and the text stay, as for the MCP tools."""
    gw = serve()
    pinned = gw.person.save(ALLERGY, pinned=True).memory
    again = gw.tools.Remember(
        pb.RememberRequest(
            record=pb.RecordRequest(
                type=pb.MEMORY_TYPE_USER,
                scope=pb.MEMORY_SCOPE_GLOBAL,
                content=[pb.ContentBlock(text=ALLERGY)],
            )
        ),
        metadata=bearer_metadata(ADMIN_TOKEN),
        timeout=10,
    )
    assert (again.action, again.result.id) == (pb.REMEMBER_ACTION_REINFORCED, pinned.id)
    kept = gw.person.get(pinned.id).memory
    assert (kept.text, kept.pinned, kept.invalid_at) == (ALLERGY, True, None)


def test_a_pin_made_between_the_tools_read_and_its_write_is_kept(
    serve: Any, tmp_path: Path
) -> None:
    """The rewrite is made at the revision the tool checked: a person pinning the record in
    between makes the write a conflict, so it never lands on the now pinned record."""
    real = MemoryStore(tmp_path / "raced", clock=FakeClock())
    note = real.save(NOTE).memory
    pinned_after_read: list[str] = []

    def a_person_pins_after_the_read(op: Op[Any]) -> object:
        answer = real.call(op)
        if isinstance(op, ops.Get) and op.id == note.id and not pinned_after_read:
            pinned_after_read.append(real.pin(note.id, True).memory.id)
        return answer

    gw = serve(MockStore(a_person_pins_after_the_read))
    raced = refused(gw, "rewrite", note.id)
    assert raced.category == "unknown" and "changed since it was read" in raced.details
    # read again, the model is told it is pinned
    says_a_person_holds_it(refused(gw, "rewrite", note.id), note.id, "rewrite")
    assert pinned_after_read == [note.id]
    kept = real.get(note.id).memory
    assert (kept.text, kept.pinned, kept.invalid_at) == (NOTE, True, None)
