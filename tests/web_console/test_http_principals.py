"""The console under the gateway's principals, over HTTP (Starlette's TestClient on a real
embedded store, tokens made as `memory token create` makes them): the admin token sees and
does everything; a bank-scoped token sees only its banks and a memory outside its scope is not
found; a read-only one gets no write forms and a 403 on a POST; the admin's pages and actions
are refused to a scoped token; a revoked token is refused at its next request. Every refusal
writes nothing."""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import redirect_stderr
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from shared.client import admin_token, console_file
from store_worker.core import MemoryStore
from web_console.app import build_app
from web_console.auth import ADMIN, Gate, Unauthenticated
from web_console.cli import auth_for
from web_console.settings import ConsoleSettings

from .conftest import open_store

TOKEN = "principals-admin-token"
ADMIN_PAGES = ("/outbox", "/consolidate", "/redaction", "/b/team/rules/edit")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    opened = open_store(tmp_path / "data")
    opened.bank_create("team")
    yield opened
    opened.close()


@pytest.fixture
def gate() -> Gate:
    return Gate(TOKEN)


def client_for(store: MemoryStore, gate: Gate, token: str) -> TestClient:
    client = TestClient(build_app(store, gate))
    assert client.get(f"/login?token={token}", follow_redirects=False).status_code == 303
    return client


def snapshot(store: MemoryStore) -> dict[str, object]:
    """What a refused request must leave as it was."""
    return {
        "memories": {
            b.name: [m.model_dump() for m in store.list(bank=b.name).memories]
            for b in store.bank_list().banks
        },
        "rules": {
            b.name: [r.model_dump() for r in store.rule_list(bank=b.name).rules]
            for b in store.bank_list().banks
        },
        "tokens": store.token_list(),
    }


def test_the_admin_token_sees_every_bank_and_the_admins_pages(
    store: MemoryStore, gate: Gate
) -> None:
    store.save("Main bank fact about tabs", bank="main")
    store.save("Team bank fact about spaces", bank="team")
    client = client_for(store, gate, TOKEN)
    home = client.get("/")
    assert home.status_code == 200 and ">main<" in home.text and ">team<" in home.text
    assert 'id="save-form"' in home.text and 'id="nav-outbox"' in home.text
    for path in ADMIN_PAGES:
        assert client.get(path).status_code == 200, path


def test_a_bank_scoped_token_sees_only_its_banks(store: MemoryStore, gate: Gate) -> None:
    main = store.save("Main bank fact about tabs", bank="main").memory
    team = store.save("Team bank fact about tabs", bank="team").memory
    token = store.token_create("teamer", banks=["team"])["token"]
    client = client_for(store, gate, token)
    before = snapshot(store)

    # the banks page lists its bank only; its bank's memories and search answer
    home = client.get("/")
    assert home.status_code == 200 and ">team<" in home.text and ">main<" not in home.text
    assert "teamer" in home.text and 'id="nav-outbox"' not in home.text
    listed = client.get("/b/team")
    assert listed.status_code == 200 and team.id in listed.text
    found = client.get("/b/team", params={"q": "tabs"})
    assert found.status_code == 200 and team.id in found.text and main.id not in found.text
    assert client.get(f"/b/team/m/{team.id}").status_code == 200

    # another bank: its pages, its search and its memory are refused
    for path in ("/b/main", "/b/main?q=tabs", f"/b/main/m/{main.id}", "/b/main/drafts"):
        got = client.get(path)
        assert got.status_code == 403 and "error: permission_denied" in got.text, path
        assert main.text not in got.text
    # a memory of another bank asked for under its own: not found
    assert client.get(f"/b/team/m/{main.id}").status_code == 404

    # its writes to another bank are refused and write nothing
    csrf = gate.csrf(token)
    assert (
        client.post("/save", data={"text": "x fact", "bank": "main", "csrf": csrf}).status_code
        == 403
    )
    pin = client.post(f"/b/main/m/{main.id}/pin", data={"pinned": "1", "csrf": csrf})
    assert pin.status_code == 403
    forget = client.post(f"/b/main/m/{main.id}/forget", data={"reason": "no", "csrf": csrf})
    assert forget.status_code == 403
    assert snapshot(store) == before

    # and a write to its own bank lands (a save naming no bank goes to its first)
    done = client.post("/save", data={"text": "Team note about linting", "csrf": csrf})
    assert done.status_code == 200 and "saved" in done.text
    assert "Team note about linting" in [m.text for m in store.list(bank="team").memories]


def test_a_memory_outside_a_tokens_projects_is_not_found(store: MemoryStore, gate: Gate) -> None:
    mine = store.save("The app uses tabs", bank="team", scope="project", project="/srv/app").memory
    other = store.save(
        "The billing service deploys on fridays", bank="team", scope="project", project="/srv/other"
    ).memory
    token = store.token_create("app", banks=["team"], projects=["/srv/app"])["token"]
    client = client_for(store, gate, token)
    listed = client.get("/b/team")
    assert mine.text in listed.text and other.text not in listed.text
    assert client.get(f"/b/team/m/{mine.id}").status_code == 200
    got = client.get(f"/b/team/m/{other.id}")
    assert got.status_code == 404 and "error: not_found" in got.text and other.text not in got.text
    pin = client.post(f"/b/team/m/{other.id}/pin", data={"pinned": "1", "csrf": gate.csrf(token)})
    assert pin.status_code == 404 and not store.get(other.id, bank="team").memory.pinned


def test_a_read_only_token_gets_no_write_forms_and_a_403_on_post(
    store: MemoryStore, gate: Gate
) -> None:
    mem = store.save("The user likes tabs").memory
    draft = store.save("Draft waiting for approval", status="pending").memory
    token = store.token_create("reader", read_only=True)["token"]
    client = client_for(store, gate, token)
    before = snapshot(store)
    home = client.get("/")
    assert home.status_code == 200 and 'id="save-form"' not in home.text
    page = client.get(f"/b/main/m/{mem.id}")
    assert page.status_code == 200 and "The user likes tabs" in page.text
    for form in ("edit-form", "pin-form", "supersede-form", "forget-form"):
        assert f'id="{form}"' not in page.text
    drafts = client.get("/b/main/drafts")
    assert drafts.status_code == 200 and f"approve-{draft.id}" not in drafts.text

    csrf = gate.csrf(token)
    for path, data in (
        ("/save", {"text": "A new fact"}),
        (f"/b/main/m/{mem.id}/pin", {"pinned": "1"}),
        (f"/b/main/m/{mem.id}/edit", {"text": "changed", "revision": str(mem.revision)}),
        (f"/b/main/m/{mem.id}/forget", {"reason": "no"}),
        (f"/b/main/drafts/{draft.id}/approve", {}),
    ):
        got = client.post(path, data={**data, "csrf": csrf})
        assert got.status_code == 403 and "reader is read-only" in got.text, path
    assert snapshot(store) == before
    assert [d.id for d in store.drafts(bank="main")] == [draft.id]


def test_the_admins_pages_and_actions_need_the_admin(store: MemoryStore, gate: Gate) -> None:
    token = store.token_create("writer")["token"]  # read-write, every bank: still not the admin
    client = client_for(store, gate, token)
    rules = client.get("/b/main/rules")
    assert rules.status_code == 200 and 'id="new-rule"' not in rules.text
    for path in ADMIN_PAGES:
        got = client.get(path)
        assert got.status_code == 403 and "writer is not the admin" in got.text, path
    before = snapshot(store)
    csrf = gate.csrf(token)
    for path, data in (
        ("/b/main/rules/save", {"name": "style", "content": "- tabs\n", "expect": ""}),
        ("/redaction/rescan", {"bank": "main", "purge": "1"}),
        ("/consolidate/apply", {"bank": "main"}),
        ("/consolidate/dry-run", {"bank": "main"}),
        ("/outbox/some-job/drop", {}),
    ):
        got = client.post(path, data={**data, "csrf": csrf})
        assert got.status_code == 403 and "writer is not the admin" in got.text, path
    assert snapshot(store) == before


def test_a_revoked_token_is_refused_at_its_next_request(store: MemoryStore, gate: Gate) -> None:
    mem = store.save("The user likes tabs").memory
    token = store.token_create("leaver")["token"]
    client = client_for(store, gate, token)
    assert client.get("/").status_code == 200
    store.token_revoke("leaver")  # `memory token revoke leaver`, while signed in
    got = client.get("/")
    assert got.status_code == 401 and "error: unauthenticated" in got.text
    before = snapshot(store)
    pin = client.post(f"/b/main/m/{mem.id}/pin", data={"pinned": "1", "csrf": gate.csrf(token)})
    assert pin.status_code == 401 and snapshot(store) == before
    assert client.get(f"/login?token={token}", follow_redirects=False).status_code == 401
    with pytest.raises(Unauthenticated):
        gate.principal(token)


def test_served_open_a_request_is_the_admins_unless_a_scoped_token_limits_it(
    store: MemoryStore,
) -> None:
    gate = Gate(None, open=True)
    store.save("Main fact", bank="main")
    anyone = TestClient(build_app(store, gate))
    home = anyone.get("/")
    assert home.status_code == 200 and ">main<" in home.text and ">team<" in home.text
    token = store.token_create("teamer", banks=["team"])["token"]
    scoped = client_for(store, gate, token)
    assert ">main<" not in scoped.get("/").text and scoped.get("/b/main").status_code == 403


def test_the_printed_url_signs_in_as_the_admin_without_the_admin_token(
    store: MemoryStore, gate: Gate
) -> None:
    info = console_file.ConsoleInfo("http://testserver", TOKEN, 1)
    assert TOKEN not in info.login_url
    client = TestClient(build_app(store, gate))
    done = client.get(info.login_url, follow_redirects=False)
    assert done.status_code == 303 and TOKEN not in done.headers["set-cookie"]
    home = client.get("/")
    assert home.status_code == 200 and 'id="nav-outbox"' in home.text  # the admin
    # a key made from another token is no key
    other = console_file.login_key("another-token")
    assert client.get(f"/login?token={other}", follow_redirects=False).status_code == 401


def settings(env: dict[str, str]) -> ConsoleSettings:
    return ConsoleSettings.from_env(env)


def test_the_console_takes_the_gateways_token_else_the_users_admin_token() -> None:
    env = {"MEMORY_GRPC_TOKEN": "the-gateway-token"}
    assert auth_for(settings(env), env) == admin_token.Auth("the-gateway-token", None)
    # no token configured: this user's admin token, from its file (made if none)
    auth = auth_for(settings({}), {})
    assert auth.token_file == admin_token.path().resolve() or auth.token_file == admin_token.path()
    assert auth.token == admin_token.load(admin_token.path())
    # the no-token opt-in: announced, and the gate is open
    warned = io.StringIO()
    with redirect_stderr(warned):
        open_auth = auth_for(settings({"MEMORY_CONSOLE_NO_TOKEN": "1"}), {})
    assert open_auth.token is None and "NO bearer token" in warned.getvalue()
    assert Gate(None, open=True).principal(None) == ADMIN


def test_the_record_names_the_token_file_never_the_token(tmp_path: Path) -> None:
    target = admin_token.ensure()
    token = admin_token.load(target)
    record = console_file.write(tmp_path, "http://127.0.0.1:1", target)
    assert token not in record.read_text("utf-8") and str(target) in record.read_text("utf-8")
    info = console_file.read(tmp_path, env={})
    key = console_file.login_key(token)
    assert info is not None and info.login_url == f"http://127.0.0.1:1/login?token={key}"
    assert token not in info.login_url
    # a token given in the environment is taken from it, and never written
    console_file.write(tmp_path, "http://127.0.0.1:1", None)
    info = console_file.read(tmp_path, env={"MEMORY_GRPC_TOKEN": "env-token"})
    assert info is not None and info.token == "env-token"
    assert "env-token" not in record.read_text("utf-8")
    console_file.write(tmp_path, "http://127.0.0.1:1", None, no_token=True)
    info = console_file.read(tmp_path, env={"MEMORY_GRPC_TOKEN": "env-token"})
    assert info is not None and info.login_url == "http://127.0.0.1:1"
