"""Crash test: SIGKILL a saving process; every acknowledged id survives.

A child process saves in a loop and prints each id only after ``save`` returned (so after the
fsync). The parent reads a few hundred acknowledgements, kills the child with SIGKILL mid-stream,
and opens the store: every acknowledged id is there, boot succeeds and doctor is ok. Two rounds
on the same data dir, so the second child appends after the first one's possibly torn tail.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from shared.contract.clock import FakeClock
from shared.contract.errors import NotFoundError
from store_worker.core import MemoryStore

# Two child processes each pay the store's import (~3 s here): over the 5 s line.
pytestmark = pytest.mark.slow

CHILD = """
import sys
from store_worker.core import MemoryStore

store = MemoryStore(sys.argv[1])
start = int(sys.argv[2])
pad = " lorem ipsum dolor sit amet" * 60  # ~1.6 kB lines: a kill can land mid-write
i = start
while True:
    res = store.save(f"crash memory {i}{pad}", id=f"m{i:06d}", tags=["crash"])
    print(res.memory.id, flush=True)
    i += 1
"""


def run_and_kill(
    sigkill_child: Callable[..., None], data_dir: Path, start: int, acks: int
) -> list[str]:
    acked: list[str] = []

    def on_line(line: str, whole: bool) -> bool:
        # each id is printed in one write after save returned: even a line the kill cut
        # before its newline names an acknowledged save
        if line.strip():
            acked.append(line.strip())
        return bool(line.strip())

    sigkill_child(CHILD, [str(data_dir), str(start)], acks=acks, on_line=on_line)
    return acked


def has(store: MemoryStore, mem_id: str) -> bool:
    try:
        return store.get(mem_id).memory.invalid_at is None
    except NotFoundError:
        return False


def test_every_acknowledged_save_survives_sigkill(
    tmp_path: Path, sigkill_child: Callable[..., None]
) -> None:
    data_dir = tmp_path / "data"
    acked: list[str] = []
    for round_ in range(2):
        # Given a child that was saving when it got SIGKILL
        acked += run_and_kill(sigkill_child, data_dir, start=round_ * 100_000, acks=250)
        # When the store opens on what it left
        store = MemoryStore(data_dir, clock=FakeClock())
        # Then every acknowledged id is present, intact, and the store is healthy
        missing = [i for i in acked if not has(store, i)]
        assert store.list(tag="crash").total >= len(acked)
        assert not missing, f"{len(missing)} acknowledged saves lost, e.g. {missing[:3]}"
        for mem_id in acked[-5:]:
            assert store.get(mem_id).memory.text.startswith("crash memory")
        bank = store.banks["main"]
        assert bank.stats.corrupt == 0
        assert bank.stats.torn <= 1
        report = store.doctor()
        assert report.ok, report
        # and the store keeps working after the crash
        after = store.save(f"written after crash {round_}").memory
        store.close()
        reopened = MemoryStore(data_dir, clock=FakeClock())
        assert reopened.get(after.id).memory == after
        assert reopened.banks["main"].stats.torn == 0
        reopened.close()


# Eight threads saving at once: their lines share fsyncs (group commit), so a kill
# lands before, during or after a batch's fsync. An id is printed only after its save returned.
GROUP_CHILD = """
import sys, threading
from store_worker.core import MemoryStore

store = MemoryStore(sys.argv[1])
start = int(sys.argv[2])
pad = " lorem ipsum dolor sit amet" * 60
out = threading.Lock()

def writer(t):
    i = 0
    while True:
        n = start + t * 10_000 + i
        res = store.save(f"group memory {n}{pad}", id=f"g{n:07d}", tags=["crash"])
        with out:
            sys.stdout.write(res.memory.id + "\\n")
            sys.stdout.flush()
        i += 1

for t in range(8):
    threading.Thread(target=writer, args=(t,), daemon=True).start()
threading.Event().wait()
"""


def test_every_acknowledged_group_committed_save_survives_sigkill(
    tmp_path: Path, sigkill_child: Callable[..., None]
) -> None:
    data_dir = tmp_path / "data"
    acked: list[str] = []
    for round_ in range(3):
        # Given eight writers sharing fsyncs when the process got SIGKILL
        def on_line(line: str, whole: bool) -> bool:
            if whole and line.strip():  # a cut line may be a torn id: count only whole ones
                acked.append(line.strip())
            return bool(whole and line.strip())

        sigkill_child(
            GROUP_CHILD, [str(data_dir), str(round_ * 1_000_000)], acks=300, on_line=on_line
        )
        # When the store opens on what it left
        store = MemoryStore(data_dir, clock=FakeClock())
        # Then no acknowledged save is lost, the log replays cleanly, and the store works on
        missing = [i for i in acked if not has(store, i)]
        assert not missing, f"{len(missing)} acknowledged saves lost, e.g. {missing[:3]}"
        bank = store.banks["main"]
        assert bank.stats.corrupt == 0 and bank.stats.torn <= 1
        assert store.doctor().ok
        store.save(f"written after group crash {round_}")
        store.close()


# A SIGKILL at each boundary of a group commit: eight writers (seven saving one
# by one, one with save_many bursts) share fsyncs; after `after` groups, the next group of
# several lines dies just before its write, between its write and the end of its fsync, or
# right after its fsync (before anyone is answered). An id is printed only after the call
# that saved it returned. Before the kill the child prints the log's size, where the dying
# group begins.
POINT_CHILD = """
import os, signal, sys, threading
from store_worker.storage import log as applog
from store_worker.core import MemoryStore

data_dir, point, after = sys.argv[1], sys.argv[2], int(sys.argv[3])
store = MemoryStore(data_dir)
groups = [0]
out = threading.Lock()
append_many = applog.AppendLog.append_many

def die():
    os.kill(os.getpid(), signal.SIGKILL)

def dying_append(self, lines, **kw):
    if self.path.name != "memories.jsonl" or len(lines) < 2:
        return append_many(self, lines, **kw)
    groups[0] += 1
    if groups[0] <= after:
        return append_many(self, lines, **kw)
    with out:
        sys.stdout.write(f"group-at {self.path.stat().st_size}\\n")
        sys.stdout.flush()
    if point == "before-write":
        die()
    if point == "during-fsync":  # the lines reach the file; the fsync never returns
        applog.os.fsync = applog.os.fdatasync = lambda fd: die()
        return append_many(self, lines, **kw)
    append_many(self, lines, **kw)  # after-fsync: durable, but nobody was answered
    die()

applog.AppendLog.append_many = dying_append
pad = " lorem ipsum dolor sit amet" * 20

def ack(ids):
    with out:
        sys.stdout.write("".join(f"{i}\\n" for i in ids))
        sys.stdout.flush()

def single(t):
    for i in range(100_000):
        n = t * 1_000_000 + i
        ack([store.save(f"point memory {n}{pad}", id=f"p{n:08d}").memory.id])

def burst():
    for i in range(100_000):
        n = 9_000_000 + 3 * i
        items = [{"text": f"burst memory {n + k}{pad}", "id": f"b{n + k:08d}"} for k in range(3)]
        ack([r.memory.id for r in store.save_many(items).results])

threads = [threading.Thread(target=single, args=(t,)) for t in range(7)]
threads.append(threading.Thread(target=burst))
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def run_until_killed(data_dir: Path, point: str, after: int) -> tuple[list[str], int]:
    """(ids acknowledged before the kill, the log size where the dying group began)."""
    import subprocess
    import sys

    child = subprocess.run(
        [sys.executable, "-c", POINT_CHILD, str(data_dir), point, str(after)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == -9, child.stderr
    lines = child.stdout.splitlines()
    starts = [int(x.split()[1]) for x in lines if x.startswith("group-at ")]
    assert len(starts) == 1, child.stdout[-500:]
    return [x for x in lines if x and not x.startswith("group-at ")], starts[0]


@pytest.mark.parametrize("point", ["before-write", "during-fsync", "after-fsync"])
def test_a_kill_at_each_group_boundary_loses_no_acknowledged_write(
    tmp_path: Path, point: str
) -> None:
    data_dir = tmp_path / "data"
    # Given eight writers killed at one boundary of a group of several lines
    acked, group_at = run_until_killed(data_dir, point, after=30)
    log = data_dir / "main" / "memories.jsonl"
    size = log.stat().st_size
    # Then the dying group is on disk only when its write ran, and nobody was answered for it
    if point == "before-write":
        assert size == group_at
    else:
        assert size > group_at
    # When the store opens on what the kill left
    store = MemoryStore(data_dir, clock=FakeClock())
    # Then every acknowledged id is there, and nothing is corrupt or torn
    assert len(acked) > 30
    missing = [i for i in acked if not has(store, i)]
    assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:3]}"
    bank = store.banks["main"]
    assert bank.stats.corrupt == 0 and bank.stats.torn == 0
    assert store.doctor().ok
    store.close()


def test_a_torn_group_tail_is_cut_and_every_acknowledged_write_kept(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # Given a group whose write reached the file but whose fsync never returned, and a power
    # cut that kept only part of it (the disk may keep any prefix of unsynced bytes)
    acked, group_at = run_until_killed(data_dir, "during-fsync", after=20)
    log = data_dir / "main" / "memories.jsonl"
    data = log.read_bytes()
    second = data.index(b"\n", group_at) + 1  # the group's second line: cut it in half
    cut = second + (data.index(b"\n", second) - second) // 2
    log.write_bytes(data[:cut])
    # When the store opens on it
    store = MemoryStore(data_dir, clock=FakeClock())
    # Then the torn line is cut (set aside), the group's whole lines stay (never acknowledged,
    # harmless), and every acknowledged write is there
    bank = store.banks["main"]
    assert bank.stats.torn == 1 and bank.stats.corrupt == 0
    assert log.read_bytes().endswith(b"\n")
    missing = [i for i in acked if not has(store, i)]
    assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:3]}"
    assert store.doctor().ok
    after = store.save("written after the torn group").memory
    store.close()
    reopened = MemoryStore(data_dir, clock=FakeClock())
    assert reopened.get(after.id).memory == after
    assert reopened.banks["main"].stats.torn == 0
    reopened.close()
