"""Events, and redaction on every write path (redaction before the disk).

item-changed {created|updated|superseded|deleted} and bank-changed {created|trashed|
rules-changed}; push subscribers filtered by bank; a failing subscriber never fails a write; a
pull cursor (``events_since``). Secrets never reach a file or an event; events list labels.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from shared.contract.clock import FakeClock
from shared.contract.models import Event
from store_worker.core import MemoryStore

AWS = "AKIAQ3EGRZ7WXYV5KLMN"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SECRETS = (AWS, GITHUB, SLACK)


def shape(events: list[Event] | tuple[Event, ...]) -> list[tuple[str, str, str, str | None]]:
    return [(e.kind, e.event_type, e.bank, e.memory.id if e.memory else None) for e in events]


# -- item-changed ---------------------------------------------------------------------------------


def test_item_events_for_every_mutation(store: MemoryStore, seen: list[Event]) -> None:
    a = store.save("alpha fact").memory
    store.save("alpha fact")
    store.update(a.id, text="alpha revised")
    store.pin(a.id)
    b = store.save("beta fact").memory
    store.pin(a.id, False)
    store.supersede(a.id, b.id, reason="merged")
    store.delete(b.id, reason="obsolete")
    assert shape(seen) == [
        ("bank-changed", "created", "main", None),  # the default bank materialized
        ("item-changed", "created", "main", a.id),
        ("item-changed", "updated", "main", a.id),
        ("item-changed", "updated", "main", a.id),
        ("item-changed", "updated", "main", a.id),
        ("item-changed", "created", "main", b.id),
        ("item-changed", "updated", "main", a.id),
        ("item-changed", "superseded", "main", a.id),
        ("item-changed", "deleted", "main", b.id),
    ]
    assert seen[2].reason == "reinforced"
    assert seen[7].reason == "merged" and seen[7].memory and seen[7].memory.superseded_by == b.id
    assert seen[8].reason == "obsolete" and seen[8].memory and seen[8].memory.invalid_at
    # the event carries the record as written
    assert seen[1].memory == a
    assert seen[-1].memory == store.get(b.id).memory
    seqs = [e.seq for e in seen]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_bank_events(store: MemoryStore, seen: list[Event]) -> None:
    store.bank_create("work")
    store.bank_create("work")  # idempotent: no second event
    store.rule_set("style", "x", bank="work")
    store.bank_delete("work")
    assert shape(seen) == [
        ("bank-changed", "created", "work", None),
        ("bank-changed", "rules-changed", "work", None),
        ("bank-changed", "trashed", "work", None),
    ]


def test_subscribers_filter_by_bank(store: MemoryStore) -> None:
    work: list[Event] = []
    both: list[Event] = []
    store.subscribe("work-only", work.append, banks=["work"])
    store.subscribe("both", both.append, banks=["work", "main"])
    store.save("in main")
    store.save("in work", bank="work")
    store.save("in other", bank="other")
    assert {e.bank for e in work} == {"work"}
    assert {e.bank for e in both} == {"main", "work"}
    assert [e.event_type for e in work] == ["created", "created"]  # bank + item


def test_a_failing_subscriber_never_fails_the_write(
    store: MemoryStore, seen: list[Event], caplog: pytest.LogCaptureFixture
) -> None:
    calls = {"n": 0}

    def broken(event: Event) -> None:
        calls["n"] += 1
        raise RuntimeError("sibling is down")

    store.subscribe("broken", broken)
    for i in range(5):
        assert store.save(f"fact {i}").created is True
    assert store.list().total == 5
    assert calls["n"] == 3  # dropped after three consecutive failures
    assert len([e for e in seen if e.kind == "item-changed"]) == 5  # others still served
    assert "broken" in caplog.text


def test_a_subscriber_recovering_is_kept(store: MemoryStore) -> None:
    state = {"fail": True, "got": 0}

    def flaky(event: Event) -> None:
        if state["fail"]:
            state["fail"] = False
            raise RuntimeError("once")
        state["got"] += 1

    store.subscribe("flaky", flaky)
    for i in range(6):
        store.save(f"fact {i}")
    assert state["got"] == 6  # bank-created failed; then six item events


def test_unsubscribe(store: MemoryStore, seen: list[Event]) -> None:
    store.save("one")
    assert store.unsubscribe("recorder") is True
    assert store.unsubscribe("recorder") is False
    store.save("two")
    assert [e.memory.text for e in seen if e.memory] == ["one"]


# -- the pull cursor ------------------------------------------------------------------------------


def test_events_since_cursor(store: MemoryStore) -> None:
    store.save("one")
    first = store.events_since(0)
    assert [e.event_type for e in first.events] == ["created", "created"]
    assert first.cursor == first.events[-1].seq
    # nothing new: same cursor, no events
    again = store.events_since(first.cursor)
    assert again.events == () and again.cursor == first.cursor
    store.save("two")
    store.save("three")
    nxt = store.events_since(first.cursor)
    assert [e.memory.text for e in nxt.events if e.memory] == ["two", "three"]
    # a cursor from the future (a restarted store) snaps back to now
    assert store.events_since(10_000).cursor == nxt.cursor


def test_events_since_limit_and_bank(store: MemoryStore) -> None:
    for i in range(5):
        store.save(f"main {i}")
        store.save(f"work {i}", bank="work")
    page = store.events_since(0, limit=3)
    assert len(page.events) == 3
    rest = store.events_since(page.cursor)
    assert page.events[-1].seq < rest.events[0].seq
    assert len(page.events) + len(rest.events) == 12
    work = store.events_since(0, bank="work")
    assert {e.bank for e in work.events} == {"work"} and len(work.events) == 6


def test_pull_log_is_bounded(tmp_path: Path) -> None:
    from shared.contract.config import StoreSettings

    s = MemoryStore(
        settings=StoreSettings(data_dir=str(tmp_path / "d"), event_buffer=100), clock=FakeClock()
    )
    for i in range(120):
        s.save(f"fact {i}")
    got = s.events_since(0, limit=1000).events
    assert len(got) == 100
    assert got[-1].seq == 121 and got[0].seq == 22
    s.close()


# -- redaction on every write path ----------------------------------------------------------------


def all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


def assert_no_secret(root: Path, events: list[Event]) -> None:
    blob = all_bytes(root)
    dumped = "".join(e.model_dump_json() for e in events)
    for secret in SECRETS:
        for form in (secret, secret.lower()):
            assert form.encode() not in blob, f"{form} reached a file"
            assert form not in dumped, f"{form} reached an event"


WRITE_PATHS: dict[str, Callable[[MemoryStore], object]] = {
    "save text": lambda s: s.save(f"the deploy key is {AWS} ok"),
    "save title": lambda s: s.save("plain text", title=f"key {GITHUB}"),
    "save tags": lambda s: s.save("plain text", tags=[AWS, "ok"]),
    "save entities": lambda s: s.save("plain text", entities=[GITHUB]),
    "update text": lambda s: s.update(s.save("plain").memory.id, text=f"now {SLACK}"),
    "update title": lambda s: s.update(s.save("plain").memory.id, title=f"t {AWS}"),
    "update tags": lambda s: s.update(s.save("plain").memory.id, tags=[AWS]),
    "update entities": lambda s: s.update(s.save("plain").memory.id, entities=[SLACK]),
    "reinforce tags": lambda s: (s.save("plain"), s.save("plain", tags=[AWS]))[1],
    "delete reason": lambda s: s.delete(s.save("plain").memory.id, reason=f"leak {AWS}"),
    "supersede reason": lambda s: s.supersede(
        s.save("old").memory.id, s.save("new").memory.id, reason=f"leak {GITHUB}"
    ),
    "rule content": lambda s: s.rule_set("deploy", f"use {SLACK}"),
    "bank description": lambda s: s.bank_create("ops", f"token {GITHUB}"),
}


@pytest.mark.parametrize("path", list(WRITE_PATHS), ids=list(WRITE_PATHS))
def test_secrets_never_reach_a_file_or_an_event(
    store: MemoryStore, data_dir: Path, seen: list[Event], path: str
) -> None:
    WRITE_PATHS[path](store)
    assert_no_secret(data_dir, seen)
    if path.endswith(("tags", "entities")):  # a label that held a secret is dropped whole
        assert b"[redacted:" not in all_bytes(data_dir).lower()
    else:
        assert b"[redacted:" in all_bytes(data_dir).lower() or any(
            e.reason and "[REDACTED:" in e.reason for e in seen
        )
    # the event that carried the write names what was redacted (bank descriptions emit none)
    if path != "bank description":
        labels = {label for e in seen for label in e.redacted}
        assert labels & {"aws_access_key", "github_token", "slack_token"}


def test_save_reports_labels_and_the_event_matches(store: MemoryStore, seen: list[Event]) -> None:
    res = store.save(f"keys {AWS} and {GITHUB}", tags=[SLACK])
    assert set(res.redacted) == {"aws_access_key", "github_token", "slack_token"}
    assert seen[-1].redacted == res.redacted
    assert "[REDACTED:aws_access_key]" in res.memory.text
    assert "[REDACTED:github_token]" in res.memory.text


def test_redacted_text_is_what_recall_and_the_index_see(store: MemoryStore) -> None:
    store.save(f"deploy credentials {AWS}")
    assert store.recall(AWS).memories == ()
    assert (
        store.recall("deploy credentials")
        .memories[0]
        .memory.text.endswith("[REDACTED:aws_access_key]")
    )


def test_plain_text_is_untouched(store: MemoryStore, seen: list[Event]) -> None:
    text = (
        "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed "
        "uuid 123e4567-e89b-12d3-a456-426614174000"
    )
    res = store.save(text)
    assert res.memory.text == text and res.redacted == () and seen[-1].redacted == ()
