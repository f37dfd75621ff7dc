"""Fault suite: one writer per data dir.

Two processes on one data dir each kept their own RAM and the last writer won. Now the first
store to open a data dir holds its ``.lock`` (``storage/lock.py``) and every other opener
(an embedded store in another process or this one, ``memory --data-dir``) is refused with a
typed error naming the holder, without changing a byte of the data dir.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from shared.contract.clock import FakeClock
from shared.contract.errors import DataDirLockedError, InvalidArgumentError, SourceUnavailableError
from store_worker.core import MemoryStore

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = Callable[[Path], dict[str, bytes | None]]

# Opens a store, saves argv[2] memories (one acknowledged id per line), says "held", then
# waits: a line "list" prints the ids it sees, EOF closes it.
HOLDER = """
import sys
from shared.contract.errors import DataDirLockedError
from store_worker.core import MemoryStore
try:
    store = MemoryStore(sys.argv[1])
except DataDirLockedError as e:
    print("locked:", e.message, flush=True)
    raise SystemExit(3)
for i in range(int(sys.argv[2])):
    print(store.save(f"holder fact number {i} about lanterns").memory.id, flush=True)
print("held", flush=True)
for line in sys.stdin:
    if line.strip() == "list":
        print(" ".join(sorted(m.id for m in store.list(page_size=500).memories)), flush=True)
store.close()
"""


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}


class Holder:
    def __init__(self, data_dir: Path, saves: int = 3) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(data_dir), str(saves)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_child_env(),
            cwd=ROOT,
        )
        self.acked: list[str] = []
        self.first = self._readline()
        line = self.first
        while line not in ("held", "") and not line.startswith("locked:"):
            self.acked.append(line)
            line = self._readline()
        self.state = line

    def _readline(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().rstrip("\n")

    def ids(self) -> set[str]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("list\n")
        self.proc.stdin.flush()
        return set(self._readline().split())

    def stop(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for pipe in (self.proc.stdout, self.proc.stderr):
                if pipe is not None:
                    pipe.close()


@pytest.fixture
def holders() -> Iterator[Callable[..., Holder]]:
    made: list[Holder] = []

    def start(data_dir: Path, saves: int = 3) -> Holder:
        h = Holder(data_dir, saves)
        made.append(h)
        return h

    yield start
    for h in made:
        h.stop()


def test_a_second_process_is_refused_with_the_holder_named_and_nothing_changed(
    data_dir: Path, holders: Callable[..., Holder], dir_bytes: SNAPSHOT
) -> None:
    # Given a store held by another process, whose log ends in a line still being written
    holder = holders(data_dir)
    assert holder.state == "held"
    log = data_dir / "main" / "memories.jsonl"
    with open(log, "ab") as fh:
        fh.write(b'{"id": "being-writ')
    before = dir_bytes(data_dir)
    # When this process opens the same data dir
    with pytest.raises(DataDirLockedError) as caught:
        MemoryStore(data_dir)
    # Then the typed error names the holder, and not a byte changed (no torn-tail repair)
    err = caught.value
    assert err.category == "source_unavailable"
    assert f"pid {holder.proc.pid}" in err.message
    assert socket.gethostname() in err.message and "since" in err.message
    assert dir_bytes(data_dir) == before
    assert holder.ids() == set(holder.acked)


def test_two_embedded_stores_started_together_cannot_both_open(
    data_dir: Path, holders: Callable[..., Holder]
) -> None:
    # Given two processes opening one fresh data dir at once
    a = holders(data_dir, 2)
    b = holders(data_dir, 2)
    # Then exactly one holds it, and the other was refused naming it
    states = sorted([a.state, b.state])
    assert states[0] == "held" and states[1].startswith("locked:"), states
    winner, loser = (a, b) if a.state == "held" else (b, a)
    assert f"pid {winner.proc.pid}" in loser.state
    loser.stop()
    assert loser.proc.returncode == 3
    # and nothing the winner acknowledged is lost after it stops
    winner.stop()
    store = MemoryStore(data_dir)
    assert {m.id for m in store.list().memories} == set(winner.acked)
    store.close()


def test_cli_data_dir_against_a_held_dir_prints_what_to_do_and_exits_2(
    data_dir: Path, holders: Callable[..., Holder], dir_bytes: SNAPSHOT
) -> None:
    # Given a data dir held by a running store
    holder = holders(data_dir)
    before = dir_bytes(data_dir)
    # When `memory --data-dir <it> save ...` runs next to it
    cli = "from shared.cli import main; raise SystemExit(main())"
    done = subprocess.run(
        [sys.executable, "-c", cli, "save", "--data-dir", str(data_dir), "a sneaked-in fact"],
        capture_output=True,
        text=True,
        env=_child_env(),
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    # Then it is refused: one clean line, exit 2, telling the user what to do instead
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: source_unavailable: data dir")
    assert f"pid {holder.proc.pid}" in lines[0]
    assert "Drop --data-dir" in lines[0] and "memory down" in lines[0]
    assert "Traceback" not in done.stderr
    # and the running store and its files never saw it
    assert dir_bytes(data_dir) == before
    assert holder.ids() == set(holder.acked)


def test_a_killed_holder_frees_the_lock_and_loses_nothing_acknowledged(
    data_dir: Path, sigkill_child: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a holder SIGKILLed in the middle of its saves
    acked: list[str] = []

    def on_line(line: str, whole: bool) -> bool:
        if whole and line and line != "held":
            acked.append(line)
            return True
        return False

    script = HOLDER.replace("int(sys.argv[2])", "10**9")  # saves until killed
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    sigkill_child(script, [str(data_dir), "0"], acks=25, on_line=on_line)
    # When a new store opens at once, Then the kernel released the lock (no stale-lock guess)
    store = MemoryStore(data_dir)
    try:
        assert set(acked) <= {m.id for m in store.list(page_size=500).memories}
    finally:
        store.close()


# -- one process -------------------------------------------------------------------------------


def test_a_second_store_in_this_process_is_refused_until_the_first_closes(
    data_dir: Path, clock: FakeClock
) -> None:
    first = MemoryStore(data_dir, clock=clock)
    with pytest.raises(DataDirLockedError, match=f"pid {os.getpid()}"):
        MemoryStore(data_dir, clock=clock)
    first.close()
    second = MemoryStore(data_dir, clock=clock)
    second.close()


def test_a_store_that_fails_to_open_lets_go_of_the_data_dir(
    data_dir: Path, clock: FakeClock
) -> None:
    # Given a data dir whose open is refused (a routing table edited by hand)
    MemoryStore(data_dir, clock=clock).close()
    table = data_dir / ".state" / "shards" / "routing.json"
    table.parent.mkdir(parents=True)
    table.write_text('{"version": -1}')
    with pytest.raises(InvalidArgumentError, match="routing table"):
        MemoryStore(data_dir, clock=clock)
    # When the file is fixed and this process opens the data dir again, Then it opens (the
    # refused open kept the lock's descriptors: this process was locked out until it exited)
    table.unlink()
    store = MemoryStore(data_dir, clock=clock)
    store.save("opened after a refused open")
    store.close()


def test_a_closed_store_refuses_writes_and_writes_nothing(data_dir: Path, clock: FakeClock) -> None:
    first = MemoryStore(data_dir, clock=clock)
    kept = first.save("the deploy target is kestrel").memory
    first.close()
    second = MemoryStore(data_dir, clock=clock)  # the dir is free: another writer holds it now
    logs = {p: p.read_bytes() for p in data_dir.rglob("*") if p.is_file() and p.name != ".lock"}

    for write in (
        lambda: first.save("written past close"),
        lambda: first.rule_set("default", "no tabs"),
        lambda: first.bank_create("late"),
        lambda: first.doctor(),
    ):
        with pytest.raises(SourceUnavailableError, match="closed") as refused:
            write()
        assert not refused.value.retryable

    # Reads still answer from what it held; the files are as the second store found them.
    assert first.get(kept.id).memory.id == kept.id
    assert {p: p.read_bytes() for p in logs} == logs
    assert not (data_dir / "late").exists()
    assert second.recall("deploy target").memories[0].memory.id == kept.id
    first.close()  # twice is harmless
    second.close()


def test_reload_keeps_the_lock(data_dir: Path, clock: FakeClock) -> None:
    store = MemoryStore(data_dir, clock=clock)
    store.reload()
    with pytest.raises(DataDirLockedError):
        MemoryStore(data_dir, clock=clock)
    store.close()


def test_configure_moves_the_lock_and_a_refused_move_changes_nothing(
    tmp_path: Path, clock: FakeClock
) -> None:
    # Given a store on one dir and another store holding a second dir
    one, two, three = tmp_path / "one", tmp_path / "two", tmp_path / "three"
    store = MemoryStore(one, clock=clock)
    store.save("kept in dir one", id="one-fact")
    other = MemoryStore(two, clock=clock)
    # When the store is pointed at the held dir, Then it is refused and nothing changed
    with pytest.raises(DataDirLockedError):
        store.configure({"data_dir": str(two)})
    assert store.settings.data_path == one.resolve()
    assert store.get("one-fact").memory.text == "kept in dir one"
    store.save("still writable in dir one")
    # When it moves to a free dir, Then it holds that one and has let go of the first
    store.configure({"data_dir": str(three)})
    with pytest.raises(DataDirLockedError):
        MemoryStore(three, clock=clock)
    freed = MemoryStore(one, clock=clock)
    assert len(freed.list().memories) == 2
    for s in (freed, other, store):
        s.close()


def test_an_unlockable_data_dir_is_refused_not_run_unlocked(
    data_dir: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_flock(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    with pytest.raises(SourceUnavailableError, match="will not run unlocked"):
        MemoryStore(data_dir, clock=clock)


def test_the_holder_record_is_written_while_held(data_dir: Path, clock: FakeClock) -> None:
    store = MemoryStore(data_dir, clock=clock)
    info = json.loads((data_dir / ".lock").read_bytes())
    assert info["pid"] == os.getpid() and info["host"] == socket.gethostname()
    assert isinstance(info["since"], float)
    store.close()


def test_what_the_store_writes_only_its_user_can_read(data_dir: Path, clock: FakeClock) -> None:
    """Memories are private on a shared host: every file the store writes is 0600 and every
    folder it makes 0700, from the first save (not only after a purge rewrites the log)."""
    store = MemoryStore(data_dir, clock=clock)
    store.save("the user lives at 12 Elm Street")
    store.rule_set("style", "Be brief.")
    store.turn_completed("s1", None, [{"role": "user", "content": "hello there"}], "completed")
    store.close()

    made = [p for p in data_dir.rglob("*") if ".write-probe" not in p.name]
    assert any(p.name == "memories.jsonl" for p in made)
    loose = {str(p.relative_to(data_dir)): oct(p.stat().st_mode & 0o777) for p in made
             if p.stat().st_mode & 0o077}  # fmt: skip
    assert loose == {}


@pytest.mark.parametrize(
    "write",
    [
        lambda s: s.save("x y z", scope="project", project="/" + "a" * 200_000),
        lambda s: s.save("x y z", scope="project", project="/a\x00b"),
        lambda s: s.state_set("own", "key", "x" * 9_000_000),
        lambda s: s.state_set("own", "key", [[1]] * 5_000_000),
    ],
    ids=["long-project", "control-project", "big-state-string", "many-state-items"],
)
def test_oversized_fields_are_refused_and_write_nothing(
    data_dir: Path, clock: FakeClock, write: Callable[[MemoryStore], object]
) -> None:
    from shared.contract.errors import InvalidArgumentError

    store = MemoryStore(data_dir, clock=clock)
    before = sorted(p.name for p in data_dir.rglob("*") if p.is_file())
    with pytest.raises(InvalidArgumentError):
        write(store)
    assert sorted(p.name for p in data_dir.rglob("*") if p.is_file()) == before
    store.close()


@pytest.mark.parametrize("value", ["false", "no", 0, 1])
def test_a_flag_is_true_or_false_never_a_truthy_string(
    data_dir: Path, clock: FakeClock, value: object
) -> None:
    """``pin(id, "false")`` pinned the memory for good (``bool("false")`` is True)."""
    from shared.contract.errors import InvalidArgumentError

    store = MemoryStore(data_dir, clock=clock)
    mem = store.save("a plain fact").memory
    with pytest.raises(InvalidArgumentError, match="true or false"):
        store.pin(mem.id, value)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="true or false"):
        store.save("another fact", pinned=value)  # type: ignore[arg-type]
    assert not store.get(mem.id).memory.pinned
    assert [m.text for m in store.list().memories] == ["a plain fact"]
    store.close()


@given(st.text(max_size=60), st.integers(min_value=0, max_value=2**53))
@example("", 0)
@example("bench corpus", 1767225600000)
@example("Deploy notes (v2).", 1)
@example("yes", 1)
def test_bank_meta_read_without_yaml_is_what_yaml_reads(description: str, at: int) -> None:
    """``bank.yaml`` as the store writes it is read by a fast path when the description is
    plain words; whatever the fast path answers, the YAML parser answers the same."""
    import yaml

    from store_worker.storage.bankfiles import _meta_doc, _plain_meta

    raw = _meta_doc(description, at)
    fast = _plain_meta(raw)
    assert fast is None or fast == yaml.safe_load(raw.decode("utf-8"))
    if description in ("", "bench corpus", "Deploy notes (v2)."):
        assert fast == {"created_at": at, "description": description}


@pytest.mark.parametrize("edit", ["removed", "replaced"])
def test_a_lock_file_removed_or_replaced_by_hand_still_keeps_a_second_store_out(
    data_dir: Path, clock: FakeClock, edit: str
) -> None:
    # Given a running store, and its .lock removed or replaced by hand (a dot-file cleanup)
    first = MemoryStore(data_dir, clock=clock)
    kept = first.save("the boiler is serviced in october").memory
    lock = data_dir / ".lock"
    lock.unlink()
    if edit == "replaced":
        lock.write_text("{}\n")
    # When a second store opens the same data dir
    with pytest.raises(DataDirLockedError, match="in use"):
        MemoryStore(data_dir, clock=clock)
    # Then the first is still the only writer, and once it closes the dir opens again
    assert first.save("the chimney is swept in november").created
    first.close()
    second = MemoryStore(data_dir, clock=clock)
    assert kept.id in {m.id for m in second.list(page_size=50).memories}
    second.close()


@pytest.mark.parametrize("edit", ["moved", "replaced", "removed"])
def test_a_data_dir_moved_or_replaced_under_a_running_store_is_never_written(
    data_dir: Path, clock: FakeClock, dir_bytes: SNAPSHOT, edit: str
) -> None:
    """The lock holds the folder the store opened; a path that now names another folder (or
    none) must not take its writes: they would land where no lock keeps a second store out."""
    # Given a running store whose data dir is moved away (and, for "replaced", made again)
    store = MemoryStore(data_dir, clock=clock)
    kept = store.save("the spare key is under the blue pot").memory
    moved = data_dir.with_name("data-moved")
    if edit == "removed":
        shutil.rmtree(data_dir)
    else:
        data_dir.rename(moved)
    if edit == "replaced":
        data_dir.mkdir()
    before = dir_bytes(data_dir) if data_dir.exists() else None
    # When it is asked to write, Then it refuses, typed, and writes nothing anywhere
    for write in (
        lambda: store.save("written after the move"),
        lambda: store.save_many([{"text": "one of a burst after the move"}]),
        lambda: store.rule_set("style", "tabs"),
        lambda: store.bank_create("late"),
        lambda: store.turn_completed("s1", messages=[{"role": "user", "content": "hello"}]),
    ):
        with pytest.raises(SourceUnavailableError, match="no longer") as refused:
            write()
        assert not refused.value.retryable
    report = store.doctor()  # says so, and writes nothing either
    assert not report.ok
    assert "no longer" in next(c for c in report.checks if c.name == "data_dir_writable").detail
    assert (dir_bytes(data_dir) if data_dir.exists() else None) == before
    # and a store opened on the path meanwhile is the only writer there
    if edit != "removed":
        second = MemoryStore(data_dir, clock=clock)
        assert second.save("the second store's own fact").created
        second.close()
    store.close()
    if edit != "removed":
        again = MemoryStore(moved, clock=clock)
        assert [m.id for m in again.list().memories] == [kept.id]
        again.close()


def test_a_closed_stores_reads_write_nothing(
    data_dir: Path, clock: FakeClock, dir_bytes: SNAPSHOT
) -> None:
    """A read that would materialize the default bank (or take a routing table) writes:
    a store that no longer holds its data dir refuses it rather than write beside the
    store that does."""
    # Given a closed store whose default bank was never made, and another store holding
    # the data dir now
    first = MemoryStore(data_dir, clock=clock)
    first.save("a fact in the work bank", bank="work")
    first.close()
    second = MemoryStore(data_dir, clock=clock)
    before = dir_bytes(data_dir)
    # When the closed store is read, Then it answers or refuses, typed, and writes nothing
    for read in (
        lambda: first.bank_list(),
        lambda: first.list(),
        lambda: first.recall("work"),
        lambda: first.shard_routing({"version": 5}),
    ):
        with contextlib.suppress(SourceUnavailableError):
            read()
    assert dir_bytes(data_dir) == before
    second.close()


def test_a_move_to_another_data_dir_that_fails_half_way_keeps_the_old_one_held(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a store on one dir, pointed at another where its outbox folder cannot be made
    one, two = tmp_path / "one", tmp_path / "two"
    store = MemoryStore(one, clock=clock)
    store.save("kept in dir one", id="one-fact")
    real_mkdir = os.mkdir

    def mkdir(path: object, *args: object, **kw: object) -> None:
        if str(two) in str(path) and ".outbox" in str(path):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_mkdir(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "mkdir", mkdir)
    # When the move fails half way, Then it is refused, typed
    with pytest.raises(SourceUnavailableError):
        store.configure({"data_dir": str(two)})
    monkeypatch.undo()
    # and the store still holds the dir it writes: no second store opens it, the other is free
    assert store.settings.data_path == one.resolve()
    with pytest.raises(DataDirLockedError):
        MemoryStore(one, clock=clock)
    MemoryStore(two, clock=clock).close()
    store.save("still written in dir one", id="one-more")
    store.close()
    again = MemoryStore(one, clock=clock)
    assert {m.id for m in again.list().memories} == {"one-fact", "one-more"}
    again.close()
