"""Durability (the files are the truth): on disk before the call returns, replay, torn and
corrupt lines, failures."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.contract.clock import FakeClock
from shared.contract.errors import DataDirUnwritableError, SourceUnavailableError
from shared.contract.models import Memory
from store_worker.core import MemoryStore


def log_path(data_dir: Path, bank: str = "main") -> Path:
    return data_dir / bank / "memories.jsonl"


def last_record(data_dir: Path, bank: str = "main") -> Memory:
    raw = log_path(data_dir, bank).read_bytes()
    assert raw.endswith(b"\n")
    return Memory.from_line(raw.splitlines()[-1])


def reopen(data_dir: Path) -> MemoryStore:
    return MemoryStore(data_dir, clock=FakeClock(start_ms=1_900_000_000_000))


# -- every mutation is on disk before the call returns --------------------------------------------


def test_every_memory_mutation_is_on_disk_when_it_returns(
    store: MemoryStore, data_dir: Path
) -> None:
    a = store.save("alpha fact", tags=["x"]).memory
    assert last_record(data_dir) == a
    r = store.save("alpha fact").memory  # reinforce
    assert last_record(data_dir) == r
    u = store.update(a.id, text="alpha fact revised").memory
    assert last_record(data_dir) == u
    p = store.pin(a.id).memory
    assert last_record(data_dir) == p
    b = store.save("beta fact").memory
    store.pin(a.id, False)
    sup = store.supersede(a.id, b.id, reinforce=True)
    lines = log_path(data_dir).read_bytes().splitlines()
    assert [Memory.from_line(x) for x in lines[-2:]] == [sup.memory, sup.survivor]
    c = store.save("gamma fact").memory
    d = store.delete(c.id).memory
    assert last_record(data_dir) == d
    assert len(lines) + 2 == len(log_path(data_dir).read_bytes().splitlines())


def test_rules_and_banks_are_on_disk_when_they_return(store: MemoryStore, data_dir: Path) -> None:
    store.bank_create("work", "the work bank")
    assert "description: the work bank" in (data_dir / "work" / "bank.yaml").read_text()
    store.rule_set("style", "Be brief.", bank="work")
    assert (data_dir / "work" / "rules" / "style.md").read_text() == "Be brief."
    store.rule_set("style", "", bank="work")
    assert not (data_dir / "work" / "rules" / "style.md").exists()
    store.state_set("extractor", "cursor", {"n": 3})
    assert json.loads((data_dir / ".state" / "extractor" / "cursor.json").read_text()) == {"n": 3}


def test_one_line_per_mutation(store: MemoryStore, data_dir: Path) -> None:
    m = store.save("counted").memory
    store.update(m.id, tags=["a"])
    store.pin(m.id)
    assert len(log_path(data_dir).read_bytes().splitlines()) == 3


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="names descriptors via /proc")
@pytest.mark.parametrize("bank", ["main", "fresh"])
def test_a_new_file_or_folder_is_synced_into_its_parent_before_a_write_returns(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, bank: str
) -> None:
    """fsync(2): syncing a file does not make its entry in the folder durable; a power cut
    could drop a log created since the folder's last sync, with every line in it."""
    synced: list[str] = []
    for name in ("fsync", "fdatasync"):
        real = getattr(os, name)

        def sync(fd: int, real: Callable[[int], None] = real) -> None:
            synced.append(os.readlink(f"/proc/self/fd/{fd}"))
            real(fd)

        monkeypatch.setattr(os, name, sync)
    # a new data dir: its entry and the folders the store makes in it are synced at open
    store = reopen(data_dir)
    outbox = data_dir / ".outbox"
    assert {str(data_dir.parent), str(data_dir), str(outbox)} <= set(synced)
    store.bank_list()  # the default bank's folder exists, its log does not yet
    synced.clear()
    store.save("the first fact of a new log", bank=bank)
    log = str(log_path(data_dir, bank))
    assert log in synced
    assert str(data_dir / bank) in synced[synced.index(log) :]
    # and a file written into folders made for it: each folder's entry in its parent too
    synced.clear()
    store.state_set("new-owner", "cursor", {"n": 1})
    assert {str(data_dir), str(data_dir / ".state"), str(data_dir / ".state" / "new-owner")} <= set(
        synced
    )
    store.close()


# -- replay ---------------------------------------------------------------------------------------


def _line(mem_id: str, text: str, revision: int) -> str:
    return Memory(
        id=mem_id,
        fingerprint="fp0000000000000000",
        text=text,
        created_at=1,
        updated_at=1,
        stated_at=1,
        revision=revision,
    ).to_line()


def test_replay_is_last_wins_by_revision(data_dir: Path) -> None:
    (data_dir / "main").mkdir(parents=True)
    log_path(data_dir).write_text(
        "\n".join(
            [
                _line("a", "a rev 2", 2),
                _line("a", "a rev 1 written later", 1),  # a stale revision never wins
                _line("b", "b first at rev 3", 3),
                _line("b", "b second at rev 3", 3),  # a tie: the later line wins
                _line("c", "c only", 0),
            ]
        )
        + "\n"
    )
    s = reopen(data_dir)
    assert s.get("a").memory.text == "a rev 2"
    assert s.get("b").memory.text == "b second at rev 3"
    assert s.get("c").memory.text == "c only"
    assert s.list().total == 3
    s.close()


def test_reload_picks_up_hand_appended_revisions(store: MemoryStore, data_dir: Path) -> None:
    m = store.save("before the hand edit").memory
    edited = m.model_copy(update={"text": "after the hand edit", "revision": 5})
    with open(log_path(data_dir), "a", encoding="utf-8") as fh:
        fh.write(edited.to_line() + "\n")
    assert store.get(m.id).memory.text == "before the hand edit"
    store.reload()
    assert store.get(m.id).memory.text == "after the hand edit"
    assert store.recall("after hand edit").memories[0].memory.id == m.id


def test_torn_last_line_is_skipped_repaired_and_reported(data_dir: Path) -> None:
    # Given a log whose last append was cut off mid-line
    s = reopen(data_dir)
    kept = [s.save(f"kept fact {i}").memory for i in range(3)]
    s.close()
    whole = log_path(data_dir).read_bytes()
    torn = kept[-1].model_copy(update={"id": "torn", "revision": 0}).to_line().encode()
    log_path(data_dir).write_bytes(whole + torn[: len(torn) // 2])
    # When the store opens
    s2 = reopen(data_dir)
    # Then boot succeeds, the complete lines are there, the fragment is gone and reported
    assert {m.id for m in s2.list().memories} == {m.id for m in kept}
    assert s2.banks["main"].stats.torn == 1
    report = {c.name: c for c in s2.doctor().checks}
    assert not report["log_integrity"].ok and "1 torn" in report["log_integrity"].detail
    assert s2.doctor().ok  # advisory: a skipped torn line does not make the store unhealthy
    assert log_path(data_dir).read_bytes() == whole  # the fragment was cut off ...
    assert (data_dir / "main" / "memories.jsonl.torn").read_bytes() == torn[
        : len(torn) // 2
    ] + b"\n"
    # and the next append starts on a clean line
    new = s2.save("after the tear").memory
    s2.close()
    s3 = reopen(data_dir)
    assert s3.get(new.id).memory == new
    assert s3.banks["main"].stats.torn == 0 and s3.banks["main"].stats.corrupt == 0
    s3.close()


def test_corrupt_middle_lines_are_skipped_and_counted(data_dir: Path) -> None:
    s = reopen(data_dir)
    a = s.save("first good fact").memory
    b = s.save("second good fact").memory
    s.close()
    good = log_path(data_dir).read_bytes().splitlines()
    log_path(data_dir).write_bytes(
        b"\n".join([good[0], b"{not json", b'{"id": "x"}', b"\xff\xfe", good[1]]) + b"\n"
    )
    s2 = reopen(data_dir)
    assert {m.id for m in s2.list().memories} == {a.id, b.id}
    stats = s2.banks["main"].stats
    assert stats.corrupt == 3 and stats.torn == 0 and stats.corrupt_at == [2, 3, 4]
    assert s2.reload().corrupt_lines == 3
    report = {c.name: c for c in s2.doctor().checks}
    assert not report["log_integrity"].ok and "3 corrupt" in report["log_integrity"].detail
    assert report["log_integrity"].required is False
    # corrupt lines are left in place for a human; nothing rewrote the file
    assert b"{not json" in log_path(data_dir).read_bytes()
    s2.close()


@pytest.mark.parametrize("when", ["before-open", "before-reload"])
def test_a_hand_edit_without_a_final_newline_is_never_glued_to(data_dir: Path, when: str) -> None:
    # Given a log whose last (valid) line lost its newline in a hand edit
    s = reopen(data_dir)
    a = s.save("first fact").memory
    if when == "before-open":
        s.close()
    log_path(data_dir).write_bytes(log_path(data_dir).read_bytes().rstrip(b"\n"))
    if when == "before-open":
        s = reopen(data_dir)
    else:
        s.reload()
    # When the next record is appended
    b = s.save("second fact").memory
    s.close()
    # Then both survive replay
    s2 = reopen(data_dir)
    assert s2.get(a.id).memory == a and s2.get(b.id).memory == b
    assert s2.banks["main"].stats.corrupt == 0
    s2.close()


def test_blank_lines_are_harmless(data_dir: Path) -> None:
    s = reopen(data_dir)
    a = s.save("fact").memory
    s.close()
    log_path(data_dir).write_bytes(b"\n\n" + log_path(data_dir).read_bytes() + b"\n  \n")
    s2 = reopen(data_dir)
    assert s2.get(a.id).memory == a
    assert s2.banks["main"].stats.corrupt == 0
    s2.close()


# -- an unwritable data dir is fatal --------------------------------------------------------------


def test_data_dir_under_a_file_is_fatal(tmp_path: Path) -> None:
    # We run as root, so chmod cannot make a folder unwritable; a path under a regular file
    # fails for root too (ENOTDIR).
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(DataDirUnwritableError, match="not writable"):
        MemoryStore(blocker / "sub", clock=FakeClock())
    with pytest.raises(DataDirUnwritableError):
        MemoryStore(blocker, clock=FakeClock())
    assert blocker.read_text() == "not a folder"


def test_data_dir_on_a_read_only_filesystem_is_fatal() -> None:
    # /proc is read-only even for root.
    with pytest.raises(DataDirUnwritableError):
        MemoryStore("/proc/memory-store-test", clock=FakeClock())


def test_reconfigure_to_an_unwritable_dir_is_fatal(store: MemoryStore, tmp_path: Path) -> None:
    blocker = tmp_path / "f"
    blocker.write_text("x")
    with pytest.raises(DataDirUnwritableError):
        store.configure({"data_dir": str(blocker / "sub")})


# -- a full disk ----------------------------------------------------------------------------------


def _enospc(*_: object) -> int:
    raise OSError(errno.ENOSPC, "No space left on device")


def _half_then_enospc() -> Callable[[int, bytes], int]:
    real = os.write
    calls = {"n": 0}

    def write(fd: int, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real(fd, bytes(data[: max(len(data) // 2, 1)]))
        raise OSError(errno.ENOSPC, "No space left on device")

    return write


@pytest.mark.parametrize("partial", [False, True], ids=["nothing-written", "half-written"])
@pytest.mark.parametrize("op", ["save", "reinforce", "update", "pin", "delete", "supersede"])
def test_full_disk_is_source_unavailable_and_changes_nothing(
    store: MemoryStore, data_dir: Path, monkeypatch: pytest.MonkeyPatch, op: str, partial: bool
) -> None:
    # Given a store with two memories
    a = store.save("alpha fact zebra").memory
    b = store.save("beta fact").memory
    before_bytes = log_path(data_dir).read_bytes()
    before_ram = store.list(include_superseded=True)
    before_cursor = store.events_since(0).cursor
    calls: dict[str, Callable[[], object]] = {
        "save": lambda: store.save("gamma fact zebra"),
        "reinforce": lambda: store.save("alpha fact zebra"),
        "update": lambda: store.update(a.id, text="alpha replaced zebra"),
        "pin": lambda: store.pin(a.id),
        "delete": lambda: store.delete(a.id),
        "supersede": lambda: store.supersede(a.id, b.id, reinforce=True),
    }
    # When the disk is full
    monkeypatch.setattr(os, "write", _half_then_enospc() if partial else _enospc)
    with pytest.raises(SourceUnavailableError) as info:
        calls[op]()
    monkeypatch.undo()
    # Then the error is typed and retryable, the file is byte-identical, RAM is unchanged
    assert info.value.retryable is True
    assert log_path(data_dir).read_bytes() == before_bytes
    assert store.list(include_superseded=True) == before_ram
    assert store.events_since(0).cursor == before_cursor  # no event for a write that failed
    assert [h.memory.id for h in store.recall("zebra").memories] == [a.id]
    # and once space is back, writes work and replay agrees
    store.save("delta after the disk cleared")
    store.reload()
    assert store.list().total == 3


def test_full_disk_on_a_rule_write_keeps_the_old_rule(
    store: MemoryStore, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.rule_set("style", "Old rule.")
    monkeypatch.setattr(os, "replace", lambda *a: _enospc())
    with pytest.raises(SourceUnavailableError):
        store.rule_set("style", "New rule.")
    monkeypatch.undo()
    rules_dir = data_dir / "main" / "rules"
    assert (rules_dir / "style.md").read_text() == "Old rule."
    assert sorted(p.name for p in rules_dir.iterdir()) == ["style.md"]  # no temp file left
    assert store.rule_list().rules[0].content == "Old rule."
