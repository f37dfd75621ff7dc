"""Fault suite: a read-only, full, failing or descriptor-starved disk under every write verb.

Each case: the verb gets a typed ``SourceUnavailableError`` (retryable when the cause may
pass), the data dir is byte-identical afterwards, RAM still shows what the files say, a reopen
sees the same store, and the verb works once the fault is gone. The ``OSError``-injecting file
layer is ``failing_fs`` (tests/store_worker/conftest.py); ``test_real_tmpfs_*`` repeat the
two main cases on a real tmpfs where the test may mount one.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.contract.clock import FakeClock
from shared.contract.errors import DataDirUnwritableError, SourceUnavailableError
from store_worker.core import MemoryStore
from store_worker.recall.embed import FakeEmbedder

ERRNOS = {
    "ENOSPC": (errno.ENOSPC, True),
    "EDQUOT": (errno.EDQUOT, True),
    "EIO": (errno.EIO, True),
    "EMFILE": (errno.EMFILE, True),
    "EROFS": (errno.EROFS, False),
    "EACCES": (errno.EACCES, False),
}
DATA_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EIO)
# Verbs that only rename or unlink: a full disk does not stop them.
METADATA_ONLY = {"bank_delete", "rule_remove"}
SNAPSHOT = Callable[[Path], dict[str, bytes | None]]

MSGS = [{"role": "user", "content": "I always deploy on Fridays"}]

VERBS: dict[str, Callable[[MemoryStore], Any]] = {
    "save": lambda s: s.save("the user prefers tea over coffee"),
    "save_into_new_bank": lambda s: s.save("a fact for a bank not made yet", bank="fresh"),
    "update": lambda s: s.update("alpha", text="alpha changed entirely"),
    "pin": lambda s: s.pin("alpha"),
    "delete": lambda s: s.delete("alpha"),
    "supersede": lambda s: s.supersede("alpha", "beta"),
    "bank_create": lambda s: s.bank_create("fresh", "a new bank"),
    "bank_describe": lambda s: s.bank_create("work", "a new description"),
    "bank_delete": lambda s: s.bank_delete("work"),
    "rule_set": lambda s: s.rule_set("tone", "be brief"),
    "rule_replace": lambda s: s.rule_set("style", "tabs, not spaces"),
    "rule_remove": lambda s: s.rule_set("style", ""),
    "state_set": lambda s: s.state_set("sibling", "fresh-key", {"n": 1}),
    "state_replace": lambda s: s.state_set("sibling", "cursor", {"n": 2}),
    "link_session": lambda s: s.link_session("child-session", "parent-session"),
    "turn_completed": lambda s: s.turn_completed("session-1", messages=MSGS),
}


def seed(store: MemoryStore) -> None:
    store.save("alpha fact about the build", id="alpha")
    store.save("beta fact about the deploy", id="beta")
    store.save("work fact about reviews", bank="work")
    store.rule_set("style", "spaces, not tabs")
    store.state_set("sibling", "cursor", {"n": 1})
    store.reload()  # drop cached descriptors: every verb must open what it writes


def view(store: MemoryStore) -> dict[str, Any]:
    """What a caller can see: banks, every record of every bank, rules, state."""
    banks = {b.name: (b.description, b.memories, b.rules) for b in store.bank_list().banks}
    return {
        "banks": banks,
        "records": {
            name: sorted(m.model_dump_json() for m in store.banks[name].records.values())
            for name in banks
        },
        "rules": {name: store.rule_list(bank=name).model_dump() for name in banks},
        "state": store.state_get("sibling", "cursor"),
        "parents": dict(store.sessions.parents),
        "outbox": store.outbox_list(limit=50).queued,
    }


@pytest.fixture
def seeded(data_dir: Path, clock: FakeClock) -> Iterator[MemoryStore]:
    store = MemoryStore(data_dir, clock=clock)
    seed(store)
    view(store)  # materializes the default bank before any snapshot is taken
    yield store
    store.close()


# Every verb under every errno, except removals on a disk that only refuses data: those work
# (test_removal_works_on_a_full_disk).
CASES = [
    (verb, name)
    for verb in VERBS
    for name, (code, _) in ERRNOS.items()
    if not (verb in METADATA_ONLY and code in DATA_ERRNOS)
]


@pytest.mark.parametrize(("verb", "code_name"), CASES)
def test_a_failing_disk_refuses_every_write_verb_and_changes_nothing(
    seeded: MemoryStore,
    data_dir: Path,
    clock: FakeClock,
    failing_fs: Callable[[Path, int], Any],
    dir_bytes: SNAPSHOT,
    verb: str,
    code_name: str,
) -> None:
    # Given a seeded store and its files
    code, retryable = ERRNOS[code_name]
    before_files = dir_bytes(data_dir)
    before_view = view(seeded)
    # When the disk fails under one write verb
    fs = failing_fs(data_dir, code)
    with pytest.raises(SourceUnavailableError) as caught:
        VERBS[verb](seeded)
    fs.stop()
    # Then the error is typed, says whether a retry may pass, and nothing changed
    assert fs.failed >= 1
    assert caught.value.retryable is retryable, caught.value.message
    assert dir_bytes(data_dir) == before_files
    assert view(seeded) == before_view
    # and a reopen sees the same store, where the verb now works
    seeded.close()
    again = MemoryStore(data_dir, clock=clock)
    try:
        assert view(again) == before_view
        VERBS[verb](again)
    finally:
        again.close()


@pytest.mark.parametrize("verb", sorted(METADATA_ONLY))
def test_removal_works_on_a_full_disk(
    seeded: MemoryStore,
    data_dir: Path,
    clock: FakeClock,
    failing_fs: Callable[[Path, int], Any],
    verb: str,
) -> None:
    # Given a disk that takes no more data
    fs = failing_fs(data_dir, errno.ENOSPC)
    # When a verb that only removes or renames runs, Then it works (freeing room must)
    VERBS[verb](seeded)
    fs.stop()
    after = view(seeded)
    seeded.close()
    again = MemoryStore(data_dir, clock=clock)
    try:
        assert view(again) == after
    finally:
        again.close()


@pytest.mark.parametrize("code_name", ["ENOSPC", "EROFS"])
def test_a_failed_bank_creation_leaves_no_bank_after_reopen(
    data_dir: Path, clock: FakeClock, failing_fs: Callable[[Path, int], Any], code_name: str
) -> None:
    # Given a store
    store = MemoryStore(data_dir, clock=clock)
    store.bank_list()
    # When creating a bank fails, through each verb that creates one
    fs = failing_fs(data_dir, ERRNOS[code_name][0])
    for make in (
        lambda: store.bank_create("ghost"),
        lambda: store.save("x y z", bank="ghost"),
        lambda: store.rule_set("r", "text", bank="ghost"),
    ):
        with pytest.raises(SourceUnavailableError):
            make()
    fs.stop()
    store.close()
    # Then no folder (and no staging folder) is left, and a reopen knows no such bank
    assert sorted(p.name for p in data_dir.iterdir() if not p.name.startswith(".")) == ["main"]
    assert not list(data_dir.glob(".creating-*"))
    again = MemoryStore(data_dir, clock=clock)
    assert "ghost" not in again.banks
    again.close()


def test_a_killed_bank_creation_is_removed_at_open(data_dir: Path, clock: FakeClock) -> None:
    # Given a staging folder a killed creation left (bank.yaml written, rename never done)
    store = MemoryStore(data_dir, clock=clock)
    store.close()
    staging = data_dir / ".creating-ghost-12345"
    (staging / "rules").mkdir(parents=True)
    (staging / "bank.yaml").write_text("description: ''\ncreated_at: 1\n")
    # When the store opens, Then it is gone and no bank appeared
    again = MemoryStore(data_dir, clock=clock)
    assert not staging.exists()
    assert "ghost" not in again.banks
    again.close()


@pytest.mark.parametrize(
    "temp",
    [
        "main/.bank.yaml.k1.tmp",
        "main/.memories.jsonl.k2.tmp",
        "main/.index.snap.k3.tmp",
        "main/rules/.style.md.k4.tmp",
        "main/drafts/.d1.json.k5.tmp",
        ".state/sibling/.cursor.json.k6.tmp",
        ".outbox/queue/.01J0000000000000000000000.json.k7.tmp",
    ],
)
def test_a_temp_file_a_killed_write_left_is_removed_at_open(
    data_dir: Path, clock: FakeClock, dir_bytes: SNAPSHOT, temp: str
) -> None:
    """Every file is written through a temp renamed into place (``atomic_write``, the index
    snapshot): a kill before the rename leaves the temp, holding only what was never
    acknowledged; a store killed over and over (a boot that runs out of memory while it
    writes a 200 MB snapshot) must not pile them up."""
    # Given a data dir where a killed write left a temp file
    store = MemoryStore(data_dir, clock=clock)
    seed(store)
    store.close()
    before = dir_bytes(data_dir)
    left = data_dir / temp
    left.parent.mkdir(parents=True, exist_ok=True)
    left.write_bytes(b"never renamed into place")
    # When a store opens it, Then the temp is gone and nothing else changed
    again = MemoryStore(data_dir, clock=clock)
    again.close()
    assert not left.exists()
    after = dir_bytes(data_dir)
    assert {k: v for k, v in before.items() if k != ".lock"}.items() <= after.items()


def test_an_append_refused_on_a_full_disk_then_lands_on_its_own_line(
    seeded: MemoryStore, data_dir: Path, failing_fs: Callable[[Path, int], Any]
) -> None:
    # Given a refused append
    fs = failing_fs(data_dir, errno.ENOSPC)
    with pytest.raises(SourceUnavailableError):
        seeded.save("refused while the disk was full")
    fs.stop()
    # When the next one succeeds
    saved = seeded.save("accepted after space came back")
    # Then the log holds whole lines only, the refused text nowhere
    log = (data_dir / "main" / "memories.jsonl").read_bytes()
    assert b"refused while" not in log
    assert log.endswith(b"\n") and saved.memory.id.encode() in log.splitlines()[-1]


def test_a_full_disk_refuses_writes_never_reads(
    data_dir: Path, clock: FakeClock, failing_fs: Callable[[Path, int], Any]
) -> None:
    """A refused write reads its bank back from the files; with an embedder that read also
    rewrites the vector sidecar (a derived file) when a vector is missing from it, and a
    full disk refused that rewrite: the bank could not be read at all until space came back."""
    # Given a store with an embedder, and a vector whose append was lost (an earlier full disk)
    store = MemoryStore(data_dir, clock=clock, embedder=FakeEmbedder())
    kept = store.save("the kestrel nests under the bridge").memory
    (data_dir / "main" / "vectors.jsonl").write_bytes(b"")
    # When the disk is full and a save is refused
    fs = failing_fs(data_dir, errno.ENOSPC)
    with pytest.raises(SourceUnavailableError):
        store.save("refused on the full disk")
    # Then every read still answers from the files
    assert store.get(kept.id).memory == kept
    assert [m.id for m in store.list().memories] == [kept.id]
    assert store.recall("kestrel bridge").memories[0].memory.id == kept.id
    fs.stop()
    store.close()


# -- a real tmpfs, where this machine lets the test mount one ----------------------------------


def _mount(point: Path, *opts: str) -> bool:
    if shutil.which("mount") is None:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join(("size=512k", *opts)), "tmpfs", str(point)],
        capture_output=True,
        check=False,
    )
    return done.returncode == 0


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    point = tmp_path / "mnt"
    point.mkdir()
    if not _mount(point):
        pytest.skip(
            "cannot mount a tmpfs here (not root, or no mount): the injected layer covers it"
        )
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], capture_output=True, check=False)


def _fill(root: Path) -> None:
    """Take every free byte: big chunks, then smaller, down to one byte."""
    with open(root / "filler", "wb", buffering=0) as fh:
        chunk = 65536
        while chunk:
            try:
                fh.write(b"\0" * chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC
                chunk //= 2


# A write on a full tmpfs fails when it needs a new page: a new file, or more than the free
# tail of the last page (a short append into that tail succeeds, as on any full disk).
BIG = "the user keeps a long note " * 500
TMPFS_VERBS: dict[str, Callable[[MemoryStore], Any]] = {
    "save": lambda s: s.save(BIG[:15_000]),
    "save_into_new_bank": VERBS["save_into_new_bank"],
    "bank_create": VERBS["bank_create"],
    "rule_set": VERBS["rule_set"],
    "state_set": VERBS["state_set"],
    "turn_completed": VERBS["turn_completed"],
}


@pytest.mark.parametrize("verb", list(TMPFS_VERBS))
def test_real_tmpfs_full(tmpfs: Path, clock: FakeClock, dir_bytes: SNAPSHOT, verb: str) -> None:
    # Given a store on a tmpfs that is then filled up
    data = tmpfs / "data"
    store = MemoryStore(data, clock=clock)
    seed(store)
    before_view = view(store)
    _fill(tmpfs)
    before = dir_bytes(data)
    # When a write verb runs, Then it is refused, typed and retryable, and nothing changed
    with pytest.raises(SourceUnavailableError) as caught:
        TMPFS_VERBS[verb](store)
    assert caught.value.retryable is True
    assert dir_bytes(data) == before
    assert view(store) == before_view
    # and once there is room again, it works
    (tmpfs / "filler").unlink()
    TMPFS_VERBS[verb](store)
    store.close()


def test_real_tmpfs_full_at_restart_serves_reads(
    tmpfs: Path, clock: FakeClock, dir_bytes: SNAPSHOT
) -> None:
    """A store restarted on a full disk (Ray's restart after a crash, a one-shot
    ``--data-dir`` command) refused to open: no recall, injection or read until space was
    freed, where the store that ran before answered every read (fifth review of faults)."""
    # Given a store's data on a tmpfs that fills up while the store is down
    data = tmpfs / "data"
    store = MemoryStore(data, clock=clock)
    seed(store)
    seen = view(store)
    store.close()
    _fill(tmpfs)
    # When it opens again, Then it serves every read, and refuses writes, typed and retryable
    store = MemoryStore(data, clock=clock)
    before = dir_bytes(data)
    try:
        assert view(store) == seen
        assert store.recall("deploy").memories[0].memory.id == "beta"
        assert store.pre_generate("s1", messages=[{"role": "user", "content": "the build?"}])
        with pytest.raises(SourceUnavailableError) as caught:
            store.save(BIG[:15_000])
        assert caught.value.retryable is True
        assert dir_bytes(data) == before
        # And once there is room again, writes work
        (tmpfs / "filler").unlink()
        store.save(BIG[:15_000])
    finally:
        store.close()


def test_a_full_disk_at_open_is_no_refusal_but_a_read_only_one_is(
    data_dir: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a data dir whose file system then reports every sync of a new file as full
    store = MemoryStore(data_dir, clock=clock)
    seed(store)
    store.close()
    real = os.fsync
    code = errno.ENOSPC

    def fsync(fd: int) -> None:
        if ".write-probe-" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(code, os.strerror(code))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    # When the store opens, Then it opens (and leaves no probe file behind)
    store = MemoryStore(data_dir, clock=clock)
    assert store.get("alpha").memory.text == "alpha fact about the build"
    store.close()
    assert not list(data_dir.glob(".write-probe-*"))
    # While a data dir that cannot be written at all is still refused
    code = errno.EROFS
    with pytest.raises(DataDirUnwritableError):
        MemoryStore(data_dir, clock=clock)


def test_real_tmpfs_read_only_refuses_to_open(
    tmpfs: Path, clock: FakeClock, dir_bytes: SNAPSHOT
) -> None:
    """A read-only remount is refused while a store holds its lock file open for writing
    ("mount point is busy"), so the verbs under a read-only disk are covered by the injected
    layer above; a store opening a read-only data dir is refused, typed, and writes nothing."""
    data = tmpfs / "data"
    store = MemoryStore(data, clock=clock)
    seed(store)
    store.close()
    remount = ["mount", "-o", "remount,ro", str(tmpfs)]
    assert subprocess.run(remount, capture_output=True, check=False).returncode == 0
    before = dir_bytes(data)
    with pytest.raises(DataDirUnwritableError) as caught:
        MemoryStore(data, clock=clock)
    assert caught.value.category == "source_unavailable"
    assert dir_bytes(data) == before
