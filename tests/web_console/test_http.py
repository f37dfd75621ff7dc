"""The console's HTTP contract without a browser: who may ask, CSRF, and refusals that write
nothing (Starlette's TestClient over the app on a real embedded store)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from shared.contract import errors
from store_worker.core import MemoryStore
from web_console.app import MAX_FORM_BYTES, build_app
from web_console.auth import ADMIN, COOKIE, Forbidden, Gate, Unauthenticated
from web_console.pages_memory import tags_of
from web_console.server import Server

from .conftest import open_store

TOKEN = "http-test-token"
GATEWAY = "the-gateway-bearer-token"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    opened = open_store(tmp_path / "data")
    yield opened
    opened.close()


@pytest.fixture
def gate() -> Gate:
    return Gate(TOKEN, GATEWAY)


@pytest.fixture
def client(store: MemoryStore, gate: Gate) -> TestClient:
    return TestClient(build_app(store, gate))


def signed_in(client: TestClient, token: str = TOKEN) -> TestClient:
    assert client.get(f"/login?token={token}", follow_redirects=False).status_code == 303
    return client


def test_every_page_refuses_a_request_without_a_known_token(
    client: TestClient, store: MemoryStore
) -> None:
    mem = store.save("The user likes tabs").memory
    for path in ("/", "/b/main", f"/b/main/m/{mem.id}", "/outbox", "/consolidate", "/redaction"):
        got = client.get(path)
        assert got.status_code == 401 and "error: unauthenticated" in got.text, path
    client.cookies.set(COOKIE, "not-a-token")
    assert client.get("/").status_code == 401
    refused = client.post(f"/b/main/m/{mem.id}/pin", data={"pinned": "1"})
    assert refused.status_code == 401
    assert not store.get(mem.id).memory.pinned  # nothing written


def test_sign_in_sets_a_strict_httponly_cookie_and_the_gateway_token_works_too(
    client: TestClient,
) -> None:
    assert client.get("/login?token=wrong", follow_redirects=False).status_code == 401
    done = client.get(f"/login?token={GATEWAY}", follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/"
    cookie = done.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    assert client.get("/").status_code == 200


def test_a_script_may_send_the_token_as_a_bearer_header(client: TestClient) -> None:
    assert client.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert client.get("/", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_a_form_without_its_csrf_token_is_refused_and_writes_nothing(
    client: TestClient, store: MemoryStore, gate: Gate
) -> None:
    mem = store.save("The user likes tabs").memory
    signed_in(client)
    for csrf in (None, "forged", gate.csrf("another-session")):
        data = {"pinned": "1"} | ({"csrf": csrf} if csrf else {})
        got = client.post(f"/b/main/m/{mem.id}/pin", data=data)
        assert got.status_code == 403 and "error: permission_denied" in got.text
    assert not store.get(mem.id).memory.pinned
    ok = client.post(f"/b/main/m/{mem.id}/pin", data={"pinned": "1", "csrf": gate.csrf(TOKEN)})
    assert ok.status_code == 200 and store.get(mem.id).memory.pinned


def test_a_principal_without_the_write_scope_may_read_but_not_write(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a gate whose token maps to a reader only (the seam scoped principals plug into)
    gate = Gate(TOKEN)
    reader = type(ADMIN)("reader", frozenset({"read"}))
    monkeypatch.setattr(gate, "principal", lambda token: reader)
    client = TestClient(build_app(store, gate))
    mem = store.save("The user likes tabs").memory
    assert client.get("/b/main").status_code == 200
    got = client.post(f"/b/main/m/{mem.id}/pin", data={"pinned": "1", "csrf": gate.csrf("")})
    assert got.status_code == 403 and "reader may not write" in got.text
    assert not store.get(mem.id).memory.pinned


def test_the_gate_names_what_is_wrong() -> None:
    gate = Gate(TOKEN)
    with pytest.raises(Unauthenticated):
        gate.authorize(None, "read")
    with pytest.raises(Forbidden, match="CSRF"):
        gate.authorize(TOKEN, "write", None)
    assert gate.authorize(TOKEN, "write", gate.csrf(TOKEN)) == ADMIN
    with pytest.raises(ValueError):
        Gate(None, "")


def test_a_form_past_the_size_limit_is_refused_before_it_is_read(
    client: TestClient, store: MemoryStore, gate: Gate
) -> None:
    signed_in(client)
    big = "x" * (MAX_FORM_BYTES + 1)
    got = client.post("/save", data={"text": big, "csrf": gate.csrf(TOKEN)})
    assert got.status_code == 413
    assert store.bank_list().banks[0].memories == 0


def test_a_tag_holding_a_credential_is_refused_by_kind() -> None:
    key = "AKIA" + "IOSFODNN7EXAMPLE"
    with pytest.raises(errors.InvalidArgumentError, match=r"credential \(aws_access_key\)") as e:
        tags_of(f"style, {key}")
    assert key not in e.value.message
    assert tags_of(" style , go ") == ["style", "go"] and tags_of("") is None


def test_a_forged_consolidation_plan_is_refused(
    client: TestClient, store: MemoryStore, gate: Gate
) -> None:
    keep = store.save("The user likes tabs").memory
    lose = store.save("The user likes tabs!", reinforce=False).memory
    signed_in(client)
    plan = [
        {"bank": "main", "reason": "x", "score": 1, "survivor": [keep.id, 0],
         "retire": [[lose.id, 0]]}
    ]  # fmt: skip
    payload = base64.urlsafe_b64encode(json.dumps(plan).encode()).decode()
    got = client.post(
        "/consolidate/apply",
        data={"plan": payload, "signature": "0" * 64, "csrf": gate.csrf(TOKEN)},
    )
    assert got.status_code == 400 and "not a plan this console showed" in got.text
    assert store.get(lose.id).memory.live


def test_the_console_listens_on_loopback_only(store: MemoryStore, gate: Gate) -> None:
    with pytest.raises(errors.InvalidArgumentError, match="loopback only"):
        Server(build_app(store, gate), "0.0.0.0", 0)
