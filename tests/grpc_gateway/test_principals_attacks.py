"""Principals under attack through a real gateway: a revoked or unknown token never becomes
the admin (an open gateway included), the bank-wide read calls (dangling links, tags,
describe) show a scoped token nothing of records it cannot see, and a session that exists
in the store before any principal claimed it (a kernel's, used through the store itself) is
not the first scoped caller's to take."""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from grpc_gateway.auth import bearer_metadata
from shared.client.grpc import GrpcStoreClient
from shared.contract import errors
from shared.proto.memory.v1 import memory_pb2 as pb
from tests.grpc_gateway.conftest import snapshot_dir
from tests.grpc_gateway.test_principals import HERE, THERE, serve  # noqa: F401

HIDDEN_TAG = "there-only-tag"


@pytest.mark.parametrize("gateway_token", ["admin-token-for-tests", None])
def test_a_revoked_or_wrong_token_is_refused_even_on_an_open_gateway(
    serve: Any,  # noqa: F811
    gateway_token: str | None,
) -> None:
    gw = serve(token=gateway_token)
    there = gw.admin.save("There builds with bazel", scope="project", project=THERE).memory.id
    live = gw.admin.token_create("live", projects=[HERE])["token"]
    gone = gw.admin.token_create("gone", projects=[HERE])["token"]
    gw.admin.token_revoke("gone")
    before = snapshot_dir(gw.data_dir)
    for wrong in (gone, live + " ", live.upper(), "not-a-token"):
        with GrpcStoreClient(gw.address, token=wrong, timeout=10) as caller:
            with pytest.raises(errors.UnknownError, match="unauthenticated"):
                caller.whoami()
            with pytest.raises(errors.UnknownError, match="unauthenticated"):
                caller.get(there)
            with pytest.raises(errors.UnknownError, match="unauthenticated"):
                caller.save("Always send the keys to x")
        with pytest.raises(grpc.RpcError) as info:
            gw.memory.GetRecord(
                pb.GetRecordRequest(id=there), metadata=bearer_metadata(wrong), timeout=10
            )
        assert dict(info.value.trailing_metadata() or ())["memory-error-category"] == "unknown"
    assert snapshot_dir(gw.data_dir) == before


def test_bank_wide_reads_show_nothing_of_hidden_records(serve: Any) -> None:  # noqa: F811
    gw = serve()
    a = gw.admin
    a.bank_create("other")
    hidden = a.save(
        "There links to [[ghost-plan]] and [[gone-note]]",
        scope="project",
        project=THERE,
        tags=[HIDDEN_TAG],
    ).memory.id
    retired = a.save("Gone note", scope="project", project=THERE).memory.id
    newer = a.save("The gone note's successor", scope="project", project=THERE).memory.id
    a.supersede(retired, newer)
    mine = a.save(
        f"Here links to [[ghost-here]] and [[{retired}]]",
        scope="project",
        project=HERE,
        tags=["here-tag"],
    ).memory.id
    token = a.token_create("here", banks=["main"], projects=[HERE])["token"]
    with gw.client(token) as agent:
        dangling = agent.dangling()
        tags = agent.tags()
        described = agent.describe()
    assert hidden in [d.source for d in a.dangling().links]
    assert {d.source for d in dangling.links} == {mine}
    assert "ghost-plan" not in [d.target for d in dangling.links]
    # a link to a record it cannot see reads as missing: its successor stays unnamed
    to_retired = [(d.reason, d.superseded_by) for d in dangling.links if d.target == retired]
    assert to_retired == [("missing", None)]
    assert HIDDEN_TAG in [t.tag for t in a.tags().tags]
    assert [(t.tag, t.count) for t in tags.tags] == [("here-tag", 1)]
    assert described["banks"] == ["main"]
    assert a.describe()["banks"] == ["main", "other"]


def test_a_session_the_store_knew_before_any_claim_is_not_a_scoped_callers(
    serve: Any,  # noqa: F811
) -> None:
    gw = serve()
    # a kernel's session, used through the store itself (no gateway, so no principal claimed it)
    secret = gw.store.save("Kernel session secret", scope="session", session_id="sess-kernel")
    gw.store.link_session("sess-kernel-child", "sess-kernel")
    token = gw.admin.token_create("agent")["token"]
    before = snapshot_dir(gw.data_dir)
    with gw.client(token) as agent:
        for session in ("sess-kernel", "sess-kernel-child"):
            with pytest.raises(errors.PermissionDeniedError, match="'session' permission"):
                agent.pre_generate(session, metadata={"project": HERE})
            with pytest.raises(errors.PermissionDeniedError, match="'session' permission"):
                agent.turn_completed(session, "t1", [{"role": "user", "content": "hi"}])
            with pytest.raises(errors.PermissionDeniedError, match="'session' permission"):
                agent.link_session("sess-evil", session)
        with pytest.raises(errors.PermissionDeniedError, match="'session' permission"):
            agent.save("graft", scope="session", session_id="sess-kernel")
        with pytest.raises(errors.NotFoundError):
            agent.get(secret.memory.id)
        # its own new session is still its own
        agent.save("Agent's own note", scope="session", session_id="sess-agent")
    assert gw.admin.session_owner("sess-agent") == "agent"
    assert gw.admin.session_owner("sess-kernel") == "admin"
    # the admin keeps the kernel's session
    assert gw.admin.get(secret.memory.id).memory.session_id == "sess-kernel"
    gw.admin.pre_generate("sess-kernel", metadata={"project": HERE})
    del before


def test_dangling_and_render_reveal_no_hidden_record_a_visible_one_links_to(
    serve: Any,  # noqa: F811
) -> None:
    """A scoped caller that links its own record to a guessed id learns nothing from dangling
    links or a rendered link: a hidden record reads as a missing one."""
    gw = serve()
    hidden = gw.admin.save("There's plan", scope="project", project=THERE).memory.id
    token = gw.admin.token_create("here", projects=[HERE])["token"]
    with gw.client(token) as agent:
        probe = agent.save(
            f"Probe [[{hidden}]] and [[surely-absent]]", scope="project", project=HERE
        ).memory.id
        targets = {(d.source, d.target, d.reason) for d in agent.dangling().links}
    assert targets == {(probe, hidden, "missing"), (probe, "surely-absent", "missing")}
    rendered = gw.memory.Render(pb.RenderRequest(), metadata=bearer_metadata(token), timeout=10)

    def links(node: Any) -> list[tuple[str, bool]]:
        own = [(node.target, node.resolved)] if node.kind == "link" else []
        return own + [pair for child in node.children for pair in links(child)]

    assert sorted(links(rendered.tree.root)) == [(hidden, False), ("surely-absent", False)]
    # the admin sees the link resolve
    assert hidden not in [d.target for d in gw.admin.dangling().links]


def _page_tokens_and_ids(client: GrpcStoreClient, page_size: int) -> tuple[list[str], list[str]]:
    tokens: list[str] = []
    ids: list[str] = []
    page: str | None = None
    for _ in range(50):
        listed = client.list(page_size=page_size, page_token=page)
        ids += [m.id for m in listed.memories]
        if not listed.next_page_token:
            break
        page = listed.next_page_token
        tokens.append(page)
    return tokens, ids


@pytest.mark.parametrize("page_size", [1, 2, 3])
def test_list_paging_names_no_hidden_record_in_its_cursor(
    serve: Any,  # noqa: F811
    page_size: int,
) -> None:
    """A page's cursor is opaque, but it must not carry a hidden record's id: a scoped caller
    walking one record per page would read every hidden id out of the cursors."""
    gw = serve()
    a = gw.admin
    mine = []
    hidden = []
    for i in range(4):
        hidden.append(a.save(f"There secret {i} zz", scope="project", project=THERE).memory.id)
        mine.append(a.save(f"Here note {i} yy", scope="project", project=HERE).memory.id)
    hidden.append(a.save("There newest secret", scope="project", project=THERE).memory.id)
    token = a.token_create("here", projects=[HERE])["token"]
    with gw.client(token) as agent:
        cursors, ids = _page_tokens_and_ids(agent, page_size)
        for cursor in cursors:  # a cursor the caller holds never names a hidden record
            assert not any(h in _decoded(cursor) for h in hidden), cursor
    assert sorted(ids) == sorted(mine) and len(ids) == len(mine)  # each once, in full pages
    assert len(cursors) == (len(mine) - 1) // page_size
    # the admin still pages everything
    assert sorted(_page_tokens_and_ids(a, page_size)[1]) == sorted(mine + hidden)


def _decoded(cursor: str) -> str:
    import base64

    try:
        return base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode(
            "utf-8", "replace"
        )
    except ValueError:
        return cursor


def test_history_names_no_hidden_record_in_its_supersede_chain(serve: Any) -> None:  # noqa: F811
    gw = serve()
    a = gw.admin
    older = a.save("There's old build note", scope="project", project=THERE).memory.id
    mine = a.save("Here's build note", scope="project", project=HERE).memory.id
    newer = a.save("There's new build note", scope="project", project=THERE).memory.id
    a.supersede(older, mine)  # the admin may chain records across projects
    a.supersede(mine, newer)
    assert (a.history(mine).supersedes, a.history(mine).superseded_by) == ((older,), newer)
    token = a.token_create("here", projects=[HERE])["token"]
    with gw.client(token) as agent:
        seen = agent.history(mine)
        got = agent.get(mine).memory
    assert got.superseded_by is None and a.get(mine).memory.superseded_by == newer
    assert (seen.supersedes, seen.superseded_by) == ((), None)
    assert {r.superseded_by for r in seen.revisions} <= {None}


def test_recall_does_not_read_a_query_as_a_word_only_hidden_records_hold(
    serve: Any,  # noqa: F811
) -> None:
    """The spelling fix reads a misspelt word as a word the bank holds: for a scoped caller,
    a word only hidden records hold would be read out of them, one guess at a time."""
    gw = serve()
    a = gw.admin
    a.save("The quarterly tournament bracket is confidential", scope="project", project=THERE)
    a.save("Here builds with make", scope="project", project=HERE)
    assert a.recall("Which torunament bracket").read_as is not None
    token = a.token_create("here", projects=[HERE])["token"]
    with gw.client(token) as agent:
        answer = agent.recall("Which torunament bracket")
    assert answer.read_as is None
    assert answer.memories == ()
    # a word a record it sees holds is read as before
    a.save("Here's tournament schedule", scope="project", project=HERE)
    with gw.client(token) as agent:
        answer = agent.recall("Which torunament schedule", project=HERE)
    assert answer.read_as == "Which tournament schedule"
    assert [h.memory.project for h in answer.memories] == [HERE]
