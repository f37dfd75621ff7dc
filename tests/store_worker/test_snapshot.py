"""The index snapshot (``<bank>/index.snap``): a boot that loads it ends in the same state as
one that rebuilds the index from the log, and anything that makes it disagree with the log —
appended lines, a hand edit, a damaged snapshot file — is either replayed on top of it or
makes the boot ignore it and rebuild."""

from __future__ import annotations

import gc
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from shared.contract.clock import FakeClock
from shared.contract.models import Memory
from shared.text import query_tokens
from store_worker.core import MemoryStore
from store_worker.recall.index import BankIndex
from store_worker.storage import bank as bank_mod
from store_worker.storage import snapshot
from store_worker.storage.bank import Bank

SameIndex = Callable[[BankIndex, BankIndex], None]  # the conftest fixture assert_same_index
WORDS = [f"w{i}" for i in range(200)] + ["user", "prefers", "tabs", "café", "東京都"]
QUERIES = ["w0 w1", "w5", "user prefers tabs", "w199 w12 w12", "café", "東京", "nothing"]


def make_records(seed: int, n: int) -> list[Memory]:
    """Records with shared fingerprints, scopes, retired and pending ones, and revisions."""
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(len(WORDS))]
    out: list[Memory] = []
    for i in range(n):
        scope = rng.choice(["global", "global", "project", "session"])
        out.append(
            Memory(
                id=f"m{i:05d}",
                fingerprint=f"fp{rng.randrange(n // 3 + 1):016x}",
                type=rng.choice(["user", "feedback", "project", "reference"]),
                scope=scope,
                project=f"/p{rng.randrange(3)}" if scope == "project" else None,
                session_id=f"s{rng.randrange(4)}" if scope == "session" else None,
                title=rng.choice(["", "A title w1"]),
                text=" ".join(rng.choices(WORDS, weights, k=rng.randint(1, 25))),
                tags=tuple(rng.sample(["a", "b", "c"], rng.randint(0, 2))),
                entities=tuple(rng.sample(["kestrel", "ana", "w3"], rng.randint(0, 2))),
                pinned=rng.random() < 0.1,
                status="pending" if rng.random() < 0.1 else "canonical",
                corroboration=rng.randrange(4),
                created_at=rng.randrange(50),
                updated_at=100,
                stated_at=rng.randrange(1000),
                invalid_at=100 if rng.random() < 0.15 else None,
                tokens=rng.randrange(40),
            )
        )
    return out


def revise(rng: random.Random, mem: Memory, revision: int) -> Memory:
    if rng.random() < 0.5:
        return mem.model_copy(update={"invalid_at": 300, "revision": revision})
    return mem.model_copy(update={"text": mem.text + " w7 tabs", "revision": revision})


pytestmark = pytest.mark.usefixtures("snapshot_every_replay")


def log_of(root: Path) -> Path:
    return root / "main" / "memories.jsonl"


def snap_of(root: Path) -> Path:
    return root / "main" / snapshot.SNAPSHOT


def write_log(root: Path, mems: list[Memory], *, mode: str = "w") -> None:
    log_of(root).parent.mkdir(parents=True, exist_ok=True)
    with open(log_of(root), mode, encoding="utf-8") as fh:
        fh.writelines(m.to_line() + "\n" for m in mems)


def boot(root: Path, *, snapshots: bool = True) -> Bank:
    """Load the bank and wait for the snapshot it writes, if any (no sleeping)."""
    bank = Bank(root, "main")
    if not snapshots:
        bank.snapshot_min_lines = 1 << 62
        snap = snap_of(root)
        hidden = snap.with_name("hidden.snap")
        if snap.exists():
            snap.rename(hidden)
        try:
            bank.load()
        finally:
            if hidden.exists():
                hidden.rename(snap)
        return bank
    bank.load()
    if bank.snapshot_writer is not None:
        bank.snapshot_writer.join()
    return bank


def scores_by_key(index: BankIndex, query: str) -> dict[str, float]:
    scores = index.bm25(query_tokens(query))
    return {key: round(float(scores[slot]), 9) for key, slot in index.slot_of.items()}


def assert_equivalent(a: Bank, b: Bank) -> None:
    """Same records and fingerprint maps; an index that answers every query alike by key
    (slot order may differ after a tail replay, as it does after live writes)."""
    assert a.records == b.records
    assert (a.by_fp, a.fp_more) == (b.by_fp, b.fp_more)
    ia, ib = a.index, b.index
    assert set(ia.slot_of) == set(ib.slot_of) == set(a.records)
    assert (ia.n_counted, ia.total_len, dict(ia.df)) == (ib.n_counted, ib.total_len, dict(ib.df))
    for name in ia.cols:
        if name in ("project", "session"):  # interned codes: compare the values they stand for
            continue
        col_a, col_b = ia.col(name), ib.col(name)
        for key, slot in ia.slot_of.items():
            assert col_a[slot] == col_b[ib.slot_of[key]], (name, key)
    for key, slot in ia.slot_of.items():
        assert sorted(ia._terms_of(slot)) == sorted(ib._terms_of(ib.slot_of[key])) or (
            not ia.col("counted")[slot]
        )
    for q in QUERIES:
        assert scores_by_key(ia, q) == scores_by_key(ib, q), q


# -- a snapshot boot equals a rebuild ---------------------------------------------------------


def test_snapshot_boot_gives_the_index_a_rebuild_gives(
    root: Path, assert_same_index: SameIndex
) -> None:
    # Given a log with revisions, and a first boot that writes the snapshot
    mems = make_records(1, 500)
    rng = random.Random(1)
    write_log(root, mems + [revise(rng, m, 1) for m in rng.sample(mems, 80)])
    first = boot(root)
    assert first.booted_from == "rebuilt" and snap_of(root).exists()
    # When the bank boots again
    again = boot(root)
    # Then it used the snapshot and holds exactly what a rebuild holds
    assert again.booted_from == "snapshot"
    rebuilt = boot(root, snapshots=False)
    assert rebuilt.booted_from == "rebuilt"
    assert again.records == rebuilt.records
    assert (again.by_fp, again.fp_more) == (rebuilt.by_fp, rebuilt.fp_more)
    assert_same_index(again.index, rebuilt.index)
    assert again.stats == rebuilt.stats


def test_writes_after_a_snapshot_boot_match_writes_after_a_rebuild(
    root: Path, assert_same_index: SameIndex
) -> None:
    mems = make_records(2, 300)
    write_log(root, mems)
    boot(root)
    a, b = boot(root), boot(root, snapshots=False)
    assert a.booted_from == "snapshot"
    rng = random.Random(2)
    for mem in rng.sample(mems, 60):
        new = revise(rng, a.records[mem.id], a.records[mem.id].revision + 1)
        for bank in (a, b):
            bank._reflect(new)
    assert_same_index(a.index, b.index)
    assert (a.by_fp, a.fp_more) == (b.by_fp, b.fp_more)


def test_lines_appended_after_the_snapshot_are_replayed_on_top(root: Path) -> None:
    # Given a snapshot of the first 400 records
    mems = make_records(3, 400)
    write_log(root, mems)
    boot(root)
    snap_bytes = snap_of(root).read_bytes()
    # When more lines are appended: new records, revisions, and a stale revision that loses
    rng = random.Random(3)
    revised = [revise(rng, m, 2) for m in rng.sample(mems, 50)]
    stale = [revised[0].model_copy(update={"text": "stale w9", "revision": 1})]
    tie = [revised[1].model_copy(update={"text": "tie wins w8"})]  # same revision, later line
    write_log(root, make_records(4, 40)[:0] + revised + stale + tie, mode="a")
    extra = [m.model_copy(update={"id": f"x{m.id}"}) for m in make_records(5, 30)]
    write_log(root, extra, mode="a")
    # Then a boot with the snapshot ends where a full replay does
    bank = Bank(root, "main")
    bank.snapshot_min_lines = 1 << 62  # keep this snapshot: the tail must come from the log
    bank.load()
    assert bank.booted_from == "snapshot" and snap_of(root).read_bytes() == snap_bytes
    rebuilt = boot(root, snapshots=False)
    assert bank.records[revised[0].id] == revised[0]
    assert bank.records[tie[0].id] == tie[0]
    assert_equivalent(bank, rebuilt)


def test_a_long_tail_rewrites_the_snapshot(root: Path) -> None:
    write_log(root, make_records(6, 200))
    boot(root)
    old = snapshot.read_header(snap_of(root))
    write_log(
        root, [m.model_copy(update={"id": f"y{m.id}"}) for m in make_records(7, 50)], mode="a"
    )
    bank = boot(root)  # SNAPSHOT_MIN_LINES is 1 here: any tail is long
    new = snapshot.read_header(snap_of(root))
    assert bank.booted_from == "snapshot" and old is not None and new is not None
    assert new["covered"] == log_of(root).stat().st_size > old["covered"]
    again = boot(root)
    assert again.booted_from == "snapshot"
    assert_equivalent(again, boot(root, snapshots=False))


# -- anything that disagrees with the log is ignored -----------------------------------------


def edit_middle_same_length(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    at = raw.index(b'"text":"', len(raw) // 2) + len(b'"text":"')
    raw[at : at + 2] = b"w9" if bytes(raw[at : at + 2]) != b"w9" else b"w8"
    path.write_bytes(bytes(raw))


def drop_a_middle_line(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    del lines[len(lines) // 2]
    path.write_bytes(b"".join(lines))


def rewrite_longer(path: Path) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    first = json.loads(lines[0])
    first["text"] = first["text"] + " w11 w12 w13"
    path.write_bytes(json.dumps(first).encode() + b"\n" + b"".join(lines[1:]))


@pytest.mark.parametrize("edit", [edit_middle_same_length, drop_a_middle_line, rewrite_longer])
def test_a_log_edited_by_hand_invalidates_the_snapshot(
    root: Path, edit: object, assert_same_index: SameIndex
) -> None:
    write_log(root, make_records(8, 300))
    boot(root)
    size = log_of(root).stat().st_size
    edit(log_of(root))  # type: ignore[operator]
    if edit is edit_middle_same_length:
        assert log_of(root).stat().st_size == size
    bank = boot(root)
    assert bank.booted_from == "rebuilt"
    rebuilt = boot(root, snapshots=False)
    assert bank.records == rebuilt.records
    assert_same_index(bank.index, rebuilt.index)
    assert boot(root).booted_from == "snapshot"  # and the boot wrote a fresh one


def truncate_snapshot(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def flip_a_body_byte(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[-100] ^= 0xFF
    path.write_bytes(bytes(raw))


def garbage(path: Path) -> None:
    path.write_bytes(b"not a snapshot at all\n")


def other_code(path: Path) -> None:
    raw = path.read_bytes()
    header = snapshot.read_header(path)
    assert header is not None
    path.write_bytes(raw.replace(header["derivation"].encode(), b"0" * 64, 1))


def lying_header(path: Path) -> None:
    """A header that still passes its own checks but names a key the log never had."""
    header = snapshot.read_header(path)
    assert header is not None
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b'"n": ', b'"n": 1', 1))


@pytest.mark.parametrize(
    "damage", [truncate_snapshot, flip_a_body_byte, garbage, other_code, lying_header]
)
def test_a_damaged_snapshot_is_ignored_and_rebuilt(
    root: Path, damage: object, assert_same_index: SameIndex
) -> None:
    write_log(root, make_records(9, 300))
    boot(root)
    damage(snap_of(root))  # type: ignore[operator]
    bank = boot(root)
    assert bank.booted_from == "rebuilt"
    assert_same_index(bank.index, boot(root, snapshots=False).index)
    assert boot(root).booted_from == "snapshot"


def test_a_snapshot_covering_more_than_the_log_is_ignored(root: Path) -> None:
    write_log(root, make_records(10, 200))
    boot(root)
    lines = log_of(root).read_bytes().splitlines(keepends=True)
    log_of(root).write_bytes(b"".join(lines[:150]))  # the log was cut back by hand
    bank = boot(root)
    assert bank.booted_from == "rebuilt" and len(bank.records) == 150


# -- torn and corrupt lines are handled as before ---------------------------------------------


def test_torn_tail_and_corrupt_lines_with_a_snapshot(root: Path) -> None:
    # Given a snapshot over a log holding a corrupt line
    mems = make_records(11, 200)
    write_log(root, mems[:100])
    with open(log_of(root), "ab") as fh:
        fh.write(b'{"id": "broken"\n')
    write_log(root, mems[100:150], mode="a")
    boot(root)
    # When a corrupt line and a torn fragment follow it
    write_log(root, mems[150:], mode="a")
    with open(log_of(root), "ab") as fh:
        fh.write(b"{not json\n")
        fh.write(mems[0].model_copy(update={"revision": 5}).to_line().encode()[:40])
    size_before = log_of(root).stat().st_size
    # Then the boot uses the snapshot, counts both, and cuts the fragment off
    bank = Bank(root, "main")
    bank.snapshot_min_lines = 1 << 62
    bank.load()
    assert bank.booted_from == "snapshot"
    assert (bank.stats.torn, bank.stats.corrupt) == (1, 2)
    assert bank.stats.corrupt_at == [101, 202]
    assert log_of(root).stat().st_size < size_before
    assert log_of(root).read_bytes().endswith(b"\n")
    rebuilt = boot(root, snapshots=False)
    assert (rebuilt.stats.corrupt, rebuilt.stats.torn) == (2, 0)
    assert_equivalent(bank, rebuilt)


def test_a_torn_first_boot_writes_a_snapshot_of_the_repaired_log(root: Path) -> None:
    mems = make_records(12, 100)
    write_log(root, mems)
    with open(log_of(root), "ab") as fh:
        fh.write(b'{"id": "half')
    bank = boot(root)
    assert bank.stats.torn == 1 and bank.booted_from == "rebuilt"
    header = snapshot.read_header(snap_of(root))
    assert header is not None and header["covered"] == log_of(root).stat().st_size
    assert boot(root).booted_from == "snapshot"


def test_an_unterminated_valid_last_line_writes_no_snapshot(root: Path) -> None:
    write_log(root, make_records(13, 50))
    log_of(root).write_bytes(log_of(root).read_bytes().rstrip(b"\n"))
    bank = boot(root)
    assert len(bank.records) == 50 and bank.stats.torn == 0
    assert not snap_of(root).exists()


def test_small_banks_write_no_snapshot(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bank_mod, "SNAPSHOT_MIN_LINES", 1000)
    write_log(root, make_records(14, 100))
    assert boot(root).booted_from == "rebuilt"
    assert not snap_of(root).exists()


def test_load_leaves_the_collector_as_it_found_it(root: Path) -> None:
    write_log(root, make_records(15, 50))
    assert gc.isenabled()
    boot(root)
    assert gc.isenabled()
    gc.disable()
    try:
        boot(root)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_stale_temp_files_are_removed_when_a_snapshot_is_written(root: Path) -> None:
    write_log(root, make_records(16, 50))
    stale = root / "main" / f".{snapshot.SNAPSHOT}.abc.tmp"
    stale.write_bytes(b"left by a killed writer")
    boot(root)
    assert not stale.exists()


# -- through the store --------------------------------------------------------------------------


@pytest.fixture
def store_pair(root: Path) -> Iterator[tuple[MemoryStore, MemoryStore]]:
    clock = FakeClock(start_ms=1_900_000_000_000)
    first = MemoryStore(root, clock=clock)
    rng = random.Random(17)
    for mem in make_records(17, 120):
        if mem.status == "canonical" and mem.invalid_at is None:
            first.save(mem.text, tags=list(mem.tags), pinned=mem.pinned)
    for mem in rng.sample(list(first.banks["main"].records.values()), 10):
        first.update(mem.id, text=mem.text + " w42")
    first.close()
    still = 2_000_000_000_000  # both later stores read one fixed time: scores compare exactly
    cold = MemoryStore(root, clock=FakeClock(start_ms=still, tick=0))  # rebuilds, snapshots
    writer = cold.banks["main"].snapshot_writer
    assert writer is not None
    writer.join()
    cold.close()
    warm = MemoryStore(root, clock=FakeClock(start_ms=still, tick=0))
    assert warm.banks["main"].booted_from == "snapshot"
    yield warm, cold
    warm.close()


def test_recall_and_doctor_after_a_snapshot_boot(
    store_pair: tuple[MemoryStore, MemoryStore],
) -> None:
    warm, cold = store_pair
    for q in [*QUERIES, "w42", "tabs user"]:
        got = warm.recall(q, limit=10)
        want = cold.recall(q, limit=10)
        assert [(s.memory.id, round(s.score, 9)) for s in got.memories] == [
            (s.memory.id, round(s.score, 9)) for s in want.memories
        ], q
    doctor = warm.doctor()
    assert doctor.ok, [c for c in doctor.checks if not c.ok]
    saved = warm.save("a fresh fact about kestrel w1").memory
    assert warm.recall("kestrel fresh").memories[0].memory.id == saved.id


# -- the file format on its own ---------------------------------------------------------------


def roundtrip(index: BankIndex, folder: Path) -> BankIndex:
    path = folder / snapshot.SNAPSHOT
    snapshot.write(path, snapshot.capture(index, covered=0, log_sha256="-"))
    header = snapshot.read_header(path)
    assert header is not None
    loaded = snapshot.read_body(path, header)
    assert loaded is not None
    keys = {k: k for k in index.keys}
    return snapshot.restore(loaded, keys)


@pytest.mark.parametrize("u16_terms", [snapshot.U16_TERMS, 100])
def test_roundtrip_with_large_counts_live_writes_and_dead_slots(
    tmp_path: Path, assert_same_index: SameIndex, monkeypatch: pytest.MonkeyPatch, u16_terms: int
) -> None:
    # Given an index with a count past 255, later upserts and dead slots, and (with a lowered
    # bound) more terms than fit the 2-byte term ids
    monkeypatch.setattr(snapshot, "U16_TERMS", u16_terms)
    n = 2_000
    index = BankIndex()
    tokens = [[f"t{i}", "common", "common"] for i in range(n)]
    tokens[5] = ["common"] * 300
    index.bulk_load(
        [f"k{i}" for i in range(n)],
        tokens,
        entities=[("ana",) if i % 7 else () for i in range(n)],
        tags=[("a", "b") if i % 3 else () for i in range(n)],
        counted=np.arange(n) % 5 != 0,
        attrs={"project": np.full(n, index.intern("/p"), dtype=np.float64)},
    )
    for i in range(0, 40, 3):
        index.upsert(f"k{i}", ["fresh", f"t{i}", "fresh"], tags=["c"], counted=i % 2 == 0)
    index.upsert("new", ["brand", "new"], attrs={"session": index.intern("s1")})
    # When it goes through a snapshot file
    back = roundtrip(index, tmp_path)
    # Then nothing changed, and it keeps taking writes like the original
    assert_same_index(back, index)
    for idx in (back, index):
        idx.upsert("k6", ["again"], counted=True)
        idx.remove("k9")
    assert_same_index(back, index)


def test_roundtrip_of_an_empty_index(tmp_path: Path) -> None:
    back = roundtrip(BankIndex(), tmp_path)
    assert back.capacity == 0 and back.bm25(["x"]).shape == (0,)
