"""Redacting what is already stored, and erasing for good (``purge.py``).

``redact_rescan`` applies today's catalogue to stored memories, rules and descriptions; with
``purge`` it rewrites the log without the secret. ``purge(id)`` removes a memory and every
revision. After either, the log replays to the same state minus what was purged, and a crash
at any step of the rewrite leaves the old log or the new one, never a mix.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import store_worker.storage.bank as bank_mod
import store_worker.storage.snapshot as snapshot_mod
from shared.contract.clock import FakeClock
from shared.contract.errors import InvalidArgumentError, NotFoundError
from shared.contract.models import Event, Memory
from store_worker.core import MemoryStore
from store_worker.recall.embed import FakeEmbedder
from store_worker.storage.drafts import draft_files
from store_worker.storage.snapshot import SNAPSHOT

Factory = Callable[..., MemoryStore]

# Secrets an older catalogue let through, planted in the files by hand below.
PASSWORD = "hunter2Xy9qW"
SSHPASS = f"sshpass -p '{PASSWORD}' ssh deploy@host"
DISCORD = "MTA1NjQ1NjQ1NjQ1NjQ1NjQ1Ng.GhJk12.abcdefghijklmnopqrstuvwxyz0123456789AB"
FULL_WIDTH_AWS = "".join(chr(ord(c) + 0xFEE0) for c in "AKIAIOSFODNN7EXAMPLE")
# Stored tags are lowercase: a shape the catalogue knows in lowercase too (a Slack token) can
# be found in one again; a mixed-case one (Discord's) cannot, once folded.
SLACK = "xoxb-1234567890123-1234567890123-abcdefghijklmnopqrstuvwx"
VALUES = (PASSWORD, DISCORD, "AKIAIOSFODNN7EXAMPLE", FULL_WIDTH_AWS, SLACK)


def log_of(store: MemoryStore, bank: str = "main") -> Path:
    return store.root / bank / "memories.jsonl"


def plant(store: MemoryStore, mem: Memory, **changes: Any) -> Memory:
    """Append a next revision with ``changes`` straight to the log, as a store whose
    catalogue did not know the secret would have, then read the files again."""
    planted = mem.model_copy(update={**changes, "revision": mem.revision + 1})
    with open(log_of(store), "a", encoding="utf-8") as fh:
        fh.write(planted.to_line() + "\n")
    store.reload()
    return planted


def in_ram(store: MemoryStore, bank: str = "main") -> dict[str, dict[str, Any]]:
    return {k: m.model_dump() for k, m in store.banks[bank].records.items()}


def replayed(store: MemoryStore) -> dict[str, dict[str, Any]]:
    """Every record of the bank as a replay of its files gives it (drafts too)."""
    store.reload()
    return in_ram(store)


def records(root: Path) -> dict[str, dict[str, Any]]:
    """The same, by a new store on a data dir no other store holds (after a crash)."""
    store = MemoryStore(data_dir=root, clock=FakeClock())
    try:
        return in_ram(store)
    finally:
        store.close()


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


def assert_no_value(*blobs: bytes | str) -> None:
    for blob in blobs:
        text = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
        for value in VALUES:
            assert value not in text and value.lower() not in text, value[:10]


@pytest.fixture
def store(fresh_store: Factory) -> MemoryStore:
    return fresh_store()


@pytest.fixture
def leaky(store: MemoryStore) -> dict[str, Memory]:
    """A bank with a secret in an old revision, in a current one, in a tag, in a rule and in
    the description, and plain records around them (one superseded by another)."""
    plain = store.save("Ana prefers short answers").memory
    old = store.save("deploy notes").memory
    planted = plant(store, old, text=f"deploy with {SSHPASS}")
    store.update(old.id, text="deploy with the vault")  # current is clean, the old line is not
    tagged = store.save("the discord bot").memory
    tagged = plant(store, tagged, text=f"the discord bot {DISCORD}", tags=("bot", SLACK))
    store.pin(tagged.id)  # an event that carries the planted text
    tagged = store.get(tagged.id).memory
    loser = store.save("Ana lives in Braga").memory
    winner = store.save("Ana lives in Porto").memory
    store.supersede(loser.id, winner.id, reason="moved")
    rules = store.root / "main" / "rules"
    (rules / "deploy.md").write_text(f"Never paste {FULL_WIDTH_AWS} into chat.\n", "utf-8")
    (rules / "tone.md").write_text("Be brief.\n", "utf-8")
    meta = store.root / "main" / "bank.yaml"
    meta.write_text(meta.read_text("utf-8").replace("description: ''", f"description: {DISCORD}"))
    store.reload()
    return {
        "plain": plain,
        "old": planted,
        "tagged": tagged,
        "loser": loser,
        "winner": winner,
    }


# -- redact --rescan ---------------------------------------------------------------------------


def test_rescan_redacts_current_records_rules_and_description(
    store: MemoryStore, leaky: dict[str, Memory], seen: list[Event]
) -> None:
    # When the store rescans without purging
    res = store.redact_rescan()
    # Then the current record that held a secret has a redacted next revision
    (main,) = res.banks
    assert (main.bank, main.memories, main.rules, main.description) == ("main", 1, 1, True)
    assert set(main.kinds) == {"aws_access_key", "discord_bot_token", "slack_token"}
    assert not main.purged
    tagged = store.get(leaky["tagged"].id).memory
    assert tagged.revision == leaky["tagged"].revision + 1
    assert tagged.text == "the discord bot [REDACTED:discord_bot_token]"
    assert tagged.tags == ("bot",)  # a tag that held the secret goes whole
    assert_no_value(
        tagged.model_dump_json(),
        store.rule_get("deploy").content,
        (store.root / "main" / "rules" / "deploy.md").read_bytes(),
        (store.root / "main" / "bank.yaml").read_bytes(),
    )
    assert store.rule_get("tone").content == "Be brief.\n"
    # and an event names the kinds, never the value
    updated = [e for e in seen if e.event_type == "updated"]
    assert [e.redacted for e in updated] == [("discord_bot_token", "slack_token")]
    assert_no_value("".join(e.model_dump_json() for e in seen))
    # and the pull buffer's older events about that record no longer carry its old text
    assert_no_value(store.events_since(0, limit=10_000).model_dump_json())
    # but the log still holds the old lines: that is what --purge is for
    assert PASSWORD.encode() in log_of(store).read_bytes()
    assert store.redact_rescan().kinds == ()  # nothing left to redact in what is current


def test_rescan_of_a_clean_bank_changes_nothing(store: MemoryStore) -> None:
    store.save("plain fact")
    before = log_of(store).read_bytes()
    res = store.redact_rescan(bank="main", purge=True)
    assert res.banks[0].memories == 0 and res.banks[0].log_lines == 0 and res.kinds == ()
    assert log_of(store).read_bytes() == before


def test_rescan_refuses_bad_arguments(store: MemoryStore) -> None:
    with pytest.raises(InvalidArgumentError):
        store.redact_rescan(bank="Not A Bank")
    with pytest.raises(NotFoundError):
        store.redact_rescan(bank="nope")
    with pytest.raises(InvalidArgumentError):
        store.redact_rescan(purge="yes")  # type: ignore[arg-type]


def test_rescan_purge_rewrites_only_the_lines_that_held_a_secret(
    store: MemoryStore, leaky: dict[str, Memory], seen: list[Event]
) -> None:
    # Given the log as it is, and the state it replays to
    before_lines = lines(log_of(store))
    before = dict(store.banks["main"].records)
    # When the store rescans and purges
    res = store.redact_rescan(purge=True)
    # Then no line, rule, description or buffered event holds any form of a value
    (main,) = res.banks
    assert main.purged and main.log_lines == 3  # planted "old", planted "tagged" and its pin
    assert set(main.kinds) == {"aws_access_key", "discord_bot_token", "password", "slack_token"}
    assert_no_value(
        log_of(store).read_bytes(),
        (store.root / "main" / "bank.yaml").read_bytes(),
        (store.root / "main" / "rules" / "deploy.md").read_bytes(),
        store.events_since(0, limit=10_000).model_dump_json(),
    )
    # and every other line is byte for byte what it was, in the same order
    after_lines = lines(log_of(store))
    assert len(after_lines) == len(before_lines)
    changed = [i for i, (a, b) in enumerate(zip(before_lines, after_lines, strict=True)) if a != b]
    assert len(changed) == 3
    for i in changed:
        old, new = json.loads(before_lines[i]), json.loads(after_lines[i])
        assert {k: v for k, v in old.items() if k not in REDACTABLE} == {
            k: v for k, v in new.items() if k not in REDACTABLE
        }  # same id, revision, timestamps, pointers
    # and the audit event says what kind went and when, never the value
    audit = [e for e in seen if e.event_type == "purged"]
    assert len(audit) == 1 and audit[0].kind == "bank-changed"
    assert set(audit[0].redacted) == set(main.kinds) and audit[0].at > 0
    # and a replay from the files gives the same state, the redacted fields aside
    after = replayed(store)
    assert after.keys() == before.keys()
    for mem_id, mem in before.items():
        if mem_id == leaky["tagged"].id:
            assert after[mem_id]["text"] == "the discord bot [REDACTED:discord_bot_token]"
            continue
        assert after[mem_id] == mem.model_dump(), mem_id
    assert after[leaky["loser"].id]["superseded_by"] == leaky["winner"].id


REDACTABLE = {"text", "title", "tags", "entities", "fingerprint", "tokens", "links"}


def test_rescan_purge_clears_the_index_snapshot_and_the_vectors(
    fresh_store: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a bank with a snapshot and a vector sidecar, both made from a secret
    monkeypatch.setattr(bank_mod, "SNAPSHOT_MIN_LINES", 1)
    store = fresh_store(embedder=FakeEmbedder())
    mem = store.save("deploy notes").memory
    plant(store, mem, text=f"deploy with {SSHPASS}")
    bank = store.banks["main"]
    assert bank.snapshot_writer is not None
    bank.snapshot_writer.join()
    snap = store.root / "main" / SNAPSHOT
    assert PASSWORD.lower().encode() in snap.read_bytes()  # the index's terms
    sidecar = store.root / "main" / "vectors.jsonl"
    assert mem.id.encode() in sidecar.read_bytes()
    # When the log is purged (and the rebuilt index is too small to be snapshotted again)
    monkeypatch.setattr(bank_mod, "SNAPSHOT_MIN_LINES", 10_000)
    store.redact_rescan(purge=True)
    # Then the snapshot is gone, and the sidecar holds no vector of the old text
    assert store.banks["main"].booted_from == "rebuilt" and not snap.exists()
    vectors = [json.loads(x) for x in lines(sidecar)]
    fresh = store.get(mem.id).memory
    assert all(v["fp"] == fresh.fingerprint for v in vectors if v["id"] == mem.id)
    assert store.recall("deploy").memories[0].memory.id == mem.id


def test_a_snapshot_still_being_written_at_a_reload_never_lands_after_a_purge(
    fresh_store: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a bank whose load is still writing its index snapshot (held until someone waits)
    monkeypatch.setattr(bank_mod, "SNAPSHOT_MIN_LINES", 1)
    store = fresh_store()
    secret = store.save(f"the old deploy password is {PASSWORD}", id="old-deploy").memory
    store.save("a plain fact about the deploy")
    release = threading.Event()
    real_write = snapshot_mod.write

    def held_write(path: Path, cap: Any) -> None:
        release.wait(timeout=60)
        real_write(path, cap)

    monkeypatch.setattr(snapshot_mod, "write", held_write)
    store.reload()
    writer = store.banks["main"].snapshot_writer
    assert writer is not None and writer.is_alive()
    real_join = writer.join

    def join(timeout: float | None = None) -> None:  # whoever waits for it lets it finish
        release.set()
        real_join(timeout)

    monkeypatch.setattr(writer, "join", join)
    monkeypatch.setattr(bank_mod, "SNAPSHOT_MIN_LINES", 10_000)
    # When the bank is read again (a reload), then the secret is purged
    store.reload()
    store.purge(secret.id)
    release.set()
    writer.join()
    # Then no snapshot of the old index (its keys, its terms) is left on disk
    snap = store.root / "main" / SNAPSHOT
    assert not snap.exists() or secret.id.encode() not in snap.read_bytes()


def test_rescan_redacts_a_pending_draft_in_its_file(fresh_store: Factory) -> None:
    store = fresh_store(ratification=True)
    draft = store.save("draft fact", confidence="extracted").memory
    assert draft.status == "pending"
    path = draft_files(store.root / "main")[0]
    row = json.loads(path.read_text("utf-8"))
    path.write_text(json.dumps({**row, "text": f"draft {SSHPASS}"}), "utf-8")
    store.reload()
    res = store.redact_rescan(purge=True)
    assert res.banks[0].memories == 1
    assert_no_value(path.read_bytes())
    assert not log_of(store).exists()  # a draft never reaches the log
    assert (
        store.get(draft.id).memory.text == "draft sshpass -p '[REDACTED:password]' ssh deploy@host"
    )


def test_rescan_purge_redacts_a_corrupt_line_and_the_torn_sidecar(store: MemoryStore) -> None:
    store.save("plain fact")
    with open(log_of(store), "ab") as fh:
        fh.write(f'{{"id": "broken", "text": "{SSHPASS}"\n'.encode())  # not a record
        fh.write(f'{{"id": "torn", "text": "{DISCORD}'.encode())  # no newline: torn
    store.reload()
    torn = log_of(store).with_name("memories.jsonl.torn")
    assert DISCORD.encode() in torn.read_bytes()
    res = store.redact_rescan(purge=True)
    assert {"password", "discord_bot_token"} <= set(res.kinds)
    assert_no_value(log_of(store).read_bytes(), torn.read_bytes())
    assert store.reload().corrupt_lines == 1  # still there, still corrupt, without the value


# -- purge ID ----------------------------------------------------------------------------------


def test_purge_removes_every_revision_and_nothing_else(
    store: MemoryStore, leaky: dict[str, Memory], seen: list[Event]
) -> None:
    # Given the state the log replays to
    gone = leaky["old"].id
    before = in_ram(store)
    before_lines = lines(log_of(store))
    # When that memory is purged
    res = store.purge(gone)
    # Then every line of it went, and every other line is as it was, in order
    assert (res.id, res.bank, res.revisions, res.draft) == (gone, "main", 3, False)
    kept = [x for x in before_lines if json.loads(x)["id"] != gone]
    assert lines(log_of(store)) == kept
    assert PASSWORD.encode() not in log_of(store).read_bytes()
    # and a replay gives the same state minus the purged memory
    after = replayed(store)
    assert after == {k: v for k, v in before.items() if k != gone}
    # and RAM is the files: it is not found, not listed, not recalled
    with pytest.raises(NotFoundError):
        store.get(gone)
    assert gone not in {m.id for m in store.list(include_superseded=True).memories}
    assert store.recall("deploy vault").memories == ()
    # and the buffered events no longer carry it; the audit event names it, not its text
    held = store.events_since(0, limit=10_000).events
    assert not any(e.memory is not None and e.memory.id == gone for e in held)
    audit = [e for e in seen if e.event_type == "purged"]
    assert audit[-1].reason == f"memory {gone}: 3 revision(s)" and audit[-1].memory is None


@pytest.mark.parametrize(
    "edit",
    [
        lambda line: {**line, "mood": "a field of a newer version"},
        lambda line: {**line, "revision": "not a number"},
    ],
    ids=["unknown-field", "bad-value"],
)
def test_purge_removes_the_lines_of_it_this_version_cannot_read(
    store: MemoryStore, edit: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    """A line replay skips (corrupt, counted by doctor) still holds the memory's text: purge
    is the answer to an erasure request, so it must go with the rest."""
    # Given a memory with a later line this version cannot read (written spaced, by hand)
    mem = store.save("the old address is 12 Elm Street").memory
    kept = store.save("a plain fact about the garden").memory
    line = edit({**json.loads(mem.to_line()), "revision": mem.revision + 1})
    with open(log_of(store), "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line, indent=None, separators=(", ", ": ")) + "\n")
    store.reload()
    assert store.banks["main"].stats.corrupt == 1
    # When it is purged, Then no line of it is left, and nothing else went
    store.purge(mem.id)
    assert b"Elm Street" not in log_of(store).read_bytes()
    assert [json.loads(x)["id"] for x in lines(log_of(store))] == [kept.id]


def test_purge_removes_a_torn_fragment_of_it_set_aside_at_load(store: MemoryStore) -> None:
    # Given a memory whose next revision was torn by a crash (set aside in ``.torn`` at load)
    mem = store.save("the old address is 12 Elm Street").memory
    other = store.save("a plain fact about the garden").memory
    torn_line = mem.model_copy(update={"text": "the new address is 7 Oak Lane"}).to_line()
    with open(log_of(store), "ab") as fh:
        fh.write(torn_line[: len(torn_line) // 2 + 40].encode())
    store.reload()
    torn = log_of(store).with_name("memories.jsonl.torn")
    assert b"Oak Lane" in torn.read_bytes()
    store.save(other.text[:-6] + " shed")  # and a torn fragment of another memory beside it
    with open(log_of(store), "ab") as fh:
        fh.write(other.to_line()[:60].encode())
    store.reload()
    # When the memory is purged, Then its fragment went from the sidecar, the other stayed
    store.purge(mem.id)
    assert b"Oak Lane" not in torn.read_bytes() and b"Elm" not in torn.read_bytes()
    assert other.id.encode() in torn.read_bytes()


def test_purging_a_survivor_leaves_the_supersede_pointer(
    store: MemoryStore, leaky: dict[str, Memory]
) -> None:
    store.purge(leaky["winner"].id)
    loser = store.get(leaky["loser"].id).memory
    assert loser.superseded_by == leaky["winner"].id and loser.invalid_at is not None
    assert replayed(store)[loser.id] == loser.model_dump()


def test_purge_a_draft_removes_its_file(fresh_store: Factory) -> None:
    store = fresh_store(ratification=True)
    draft = store.save("draft fact", confidence="extracted").memory
    kept = store.save("kept fact").memory
    res = store.purge(draft.id)
    assert res.draft and res.revisions == 0
    assert draft_files(store.root / "main") == []
    assert replayed(store).keys() == {kept.id}


def test_purge_refuses_what_it_cannot_find(store: MemoryStore, dir_bytes: Any) -> None:
    store.save("plain fact")
    before = dir_bytes(store.root)
    with pytest.raises(NotFoundError):
        store.purge("no-such-memory")
    with pytest.raises(InvalidArgumentError):
        store.purge("Not An Id")
    with pytest.raises(NotFoundError):
        store.purge("plain-fact", bank="elsewhere")
    assert dir_bytes(store.root) == before


def test_purge_holds_the_store_lock_against_concurrent_saves(store: MemoryStore) -> None:
    # Given saves running on other threads while memories are purged
    victims = [store.save(f"victim number {i}").memory.id for i in range(5)]
    acked: list[str] = []
    errors: list[BaseException] = []

    def saver(n: int) -> None:
        try:
            for i in range(20):
                acked.append(store.save(f"writer {n} fact {i}").memory.id)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=saver, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for victim in victims:
        store.purge(victim)
    for t in threads:
        t.join()
    # Then every acknowledged save survives a replay, and no purged memory does
    assert not errors
    after = replayed(store)
    assert set(acked) <= after.keys() and not set(victims) & after.keys()
    assert len(acked) == 60


# -- a crash at each step of the rewrite -------------------------------------------------------


class Crash(BaseException):
    """A simulated kill: not an OSError, so no clean-up handler runs (as after SIGKILL)."""


STEPS = ("temp written", "temp fsynced", "renamed", "before dir fsync")


def crash_at(monkeypatch: pytest.MonkeyPatch, step: str, log: Path) -> None:
    """Make the log's rewrite die at ``step``: before the temp file's fsync, before the
    rename, right after the rename, or at the folder's fsync after it."""
    real_fsync, real_replace = os.fsync, os.replace
    renamed = threading.Event()

    def fsync(fd: int) -> None:
        path = Path(os.readlink(f"/proc/self/fd/{fd}"))
        if step == "temp written" and path.name.startswith(f".{log.name}."):
            raise Crash(step)
        if step == "before dir fsync" and renamed.is_set() and path == log.parent:
            raise Crash(step)
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        if Path(dst) != log:
            real_replace(src, dst)
            return
        if step == "temp fsynced":
            raise Crash(step)
        real_replace(src, dst)
        renamed.set()
        if step == "renamed":
            raise Crash(step)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)


def seeded(fresh_store: Factory, root: Path) -> MemoryStore:
    """A planted secret, four plain facts and one supersession, in a store on ``root``."""
    store = fresh_store(data_dir=root)
    mem = store.save("deploy notes").memory
    plant(store, mem, text=f"deploy with {SSHPASS}")
    for i in range(4):
        store.save(f"plain fact {i}")
    loser, winner = store.save("lives in Braga").memory, store.save("lives in Porto").memory
    store.supersede(loser.id, winner.id)
    return store


@pytest.fixture
def two_outcomes(
    fresh_store: Factory, tmp_path: Path
) -> Iterator[Callable[[Callable[[MemoryStore], object]], tuple[Any, Any, Path]]]:
    """``run(op)`` → (state before, state after ``op`` completed, data dir for a crash)."""

    def run(op: Callable[[MemoryStore], object]) -> tuple[Any, Any, Path]:
        done = seeded(fresh_store, tmp_path / "done")
        old = in_ram(done)
        op(done)
        done.close()
        new = records(done.root)
        return old, new, tmp_path / "crash"

    yield run


OPS: dict[str, Callable[[MemoryStore], object]] = {
    "purge": lambda s: s.purge("deploy-notes"),
    "rescan --purge": lambda s: s.redact_rescan(purge=True),
}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("step", STEPS)
def test_a_crash_at_any_step_leaves_the_old_log_or_the_new(
    fresh_store: Factory,
    monkeypatch: pytest.MonkeyPatch,
    two_outcomes: Callable[[Callable[[MemoryStore], object]], tuple[Any, Any, Path]],
    step: str,
    op: str,
) -> None:
    # Given the state before and after the operation, from a run that completed
    old, new, root = two_outcomes(OPS[op])
    assert old != new
    # When the same operation dies at ``step`` of the log's rewrite
    store = seeded(fresh_store, root)
    crash_at(monkeypatch, step, log_of(store))
    with pytest.raises(Crash):
        OPS[op](store)
    monkeypatch.undo()
    store.close()  # the process is gone: only the files remain
    # Then a new store replays exactly one of the two states: every acknowledged record kept
    got = records(root)
    expected = old if step in ("temp written", "temp fsynced") else new
    assert got == expected
    # and no temp file of the rewrite is left beside the log
    assert not list((root / "main").glob(".memories.jsonl.*"))


def test_purge_drops_the_vectors_even_with_no_embedder_configured(
    fresh_store: Factory, tmp_path: Path
) -> None:
    # Given a sidecar written under an embedder that is no longer configured
    root = tmp_path / "vectors"
    first = fresh_store(data_dir=root, embedder=FakeEmbedder())
    gone = first.save("deploy notes").memory.id
    kept = first.save("plain fact").memory.id
    first.close()
    sidecar = root / "main" / "vectors.jsonl"
    assert {json.loads(x)["id"] for x in lines(sidecar)} == {gone, kept}
    store = fresh_store(data_dir=root)
    # When a memory is purged
    store.purge(gone)
    # Then its vector went with it, and the others stayed
    assert {json.loads(x)["id"] for x in lines(sidecar)} == {kept}


def test_rescan_rewrites_queued_and_dead_lettered_turns(fresh_store: Factory) -> None:
    """Turns waiting for extraction (or dead-lettered) hold what was said: a secret an older
    catalogue let into a job file is redacted there too, and reported."""
    import store_worker.harness.turns as turns_mod
    from store_worker.harness.outbox import OUTBOX_DIR

    store = fresh_store()
    said = [{"role": "user", "content": f"run {SSHPASS} tonight"}]
    with pytest.MonkeyPatch.context() as older:  # an older catalogue: nothing redacted
        older.setattr(turns_mod, "redact", lambda text: turns_mod.Redaction(text, ()))
        older.setattr(
            turns_mod, "redact_many", lambda texts: [turns_mod.Redaction(t, ()) for t in texts]
        )
        queued = store.turn_completed("s1", None, said).job_id
        dead = store.turn_completed("s2", None, said).job_id
        store.outbox_claim(10)
        store.outbox_fail(dead, f"boom {SSHPASS}", dead_letter=True)
    files = list((store.root / OUTBOX_DIR).rglob("*.json"))
    assert sum(PASSWORD in p.read_text() for p in files) == 2

    done = store.redact_rescan()

    assert done.outbox_jobs == 2 and "password" in done.kinds
    assert not any(PASSWORD in p.read_text() for p in (store.root / OUTBOX_DIR).rglob("*.json"))
    job = store.outbox_job(queued)  # as the extractor will read it
    assert PASSWORD not in job.messages[0].content and "password" in job.redacted


def test_rescan_reads_a_jobs_messages_together(fresh_store: Factory) -> None:
    """A queued turn an older catalogue let through: the user names a password once, the
    assistant repeats it bare. The rescan reads the job as a whole, as an enqueue does."""
    import store_worker.harness.turns as turns_mod

    store = fresh_store()
    pw = "Qx7#vLm2pR9z"
    said = [
        {"role": "user", "content": f"my password is {pw}"},
        {"role": "assistant", "content": f"Noted; I will not repeat {pw}."},
    ]
    with pytest.MonkeyPatch.context() as older:  # an older catalogue: nothing redacted
        older.setattr(
            turns_mod, "redact_many", lambda texts: [turns_mod.Redaction(t, ()) for t in texts]
        )
        job_id = store.turn_completed("s1", None, said).job_id
    assert job_id is not None and pw in store.outbox_job(job_id).messages[1].content

    assert store.redact_rescan().outbox_jobs == 1

    job = store.outbox_job(job_id)
    assert all(pw not in m.content for m in job.messages)
    assert job.messages[1].content == "Noted; I will not repeat [REDACTED:password]."
