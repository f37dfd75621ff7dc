"""The lazy boot (``storage/records.py``): a one-shot store takes its index from
the snapshot and leaves the records it covers undecoded until used. Whatever it is asked, it
answers as a store that decoded every line would: records, fingerprint maps, the counts of
corrupt lines, dialog-turn chains, recall, and the writes that follow."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shared.contract.clock import FakeClock
from shared.contract.models import Memory
from store_worker.core import MemoryStore
from store_worker.recall import context
from store_worker.storage import bank as bank_mod
from store_worker.storage import snapshot
from store_worker.storage.bank import Bank
from store_worker.storage.records import Records
from tests.store_worker.test_snapshot import (
    assert_equivalent,
    log_of,
    make_records,
    revise,
    snap_of,
    write_log,
)

REPO = Path(__file__).resolve().parents[2]
STILL = 2_000_000_000_000  # stores compared read one fixed time: scores compare exactly


pytestmark = pytest.mark.usefixtures("snapshot_every_replay")


def history(seed: int, n: int) -> list[Memory]:
    """Records, then later revisions of a third of them (updates and retirements)."""
    rng = random.Random(seed)
    mems = make_records(seed, n)
    return mems + [revise(rng, m, 2) for m in rng.sample(mems, n // 3)]


def booted(root: Path, *, lazy: bool) -> Bank:
    bank = Bank(root, "main", lazy_records=lazy)
    bank.load()
    if bank.snapshot_writer is not None:
        bank.snapshot_writer.join()
    return bank


def pending(bank: Bank) -> int:
    return len(bank.records.pending) if isinstance(bank.records, Records) else 0


def test_a_lazy_boot_decodes_nothing_and_ends_like_an_eager_one(root: Path) -> None:
    write_log(root, history(1, 300))
    eager = booted(root, lazy=False)  # rebuilds and writes the snapshot a lazy boot reads
    lazy = booted(root, lazy=True)
    assert lazy.booted_from == "snapshot"
    assert pending(lazy) == len(lazy.records) == len(eager.records)
    # the fingerprint maps come from the snapshot, not from decoding the records
    assert (lazy.by_fp, lazy.fp_more) == (eager.by_fp, eager.fp_more)
    assert pending(lazy) == len(eager.records)
    some = sorted(eager.records)[::7]
    assert all(lazy.records[k] == eager.records[k] for k in some)
    assert pending(lazy) == len(eager.records) - len(some)  # only those were decoded
    assert_equivalent(lazy, eager)  # every record (this decodes the rest), the index
    assert pending(lazy) == 0 and lazy.records.data == b""


def test_a_tail_after_the_snapshot_is_replayed_over_undecoded_records(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mems = history(2, 300)
    write_log(root, mems)
    booted(root, lazy=False)
    rng = random.Random(3)
    tail = [revise(rng, m, 3) for m in rng.sample(mems[:300], 40)]
    tail += [m.model_copy(update={"id": f"n{i:04d}"}) for i, m in enumerate(make_records(5, 30))]
    write_log(root, tail, mode="a")
    monkeypatch.setattr(bank_mod, "SNAPSHOT_MIN_LINES", 10_000)  # the tail writes no snapshot
    lazy = booted(root, lazy=True)
    assert lazy.booted_from == "snapshot" and pending(lazy) > 200
    eager = booted(root, lazy=False)
    assert (lazy.by_fp, lazy.fp_more) == (eager.by_fp, eager.fp_more)
    assert lazy.stats == eager.stats
    assert_equivalent(lazy, eager)


def test_the_snapshot_a_lazy_boot_writes_serves_the_next_one(root: Path) -> None:
    mems = history(6, 200)
    write_log(root, mems)
    booted(root, lazy=False)
    write_log(root, [revise(random.Random(7), m, 3) for m in mems[:50]], mode="a")
    first = booted(root, lazy=True)  # replays the tail, then writes a snapshot of it all
    covered = snapshot.read_header(snap_of(root))
    assert covered is not None and covered["covered"] == log_of(root).stat().st_size
    second = booted(root, lazy=True)
    assert second.booted_from == "snapshot" and pending(second) == len(second.records)
    eager = booted(root, lazy=False)
    assert (second.by_fp, second.fp_more) == (eager.by_fp, eager.fp_more)
    assert_equivalent(second, eager)
    assert_equivalent(first, eager)


def test_corrupt_lines_the_snapshot_covers_are_still_counted(root: Path) -> None:
    mems = history(8, 120)
    write_log(root, mems[:60])
    with open(log_of(root), "a", encoding="utf-8") as fh:
        fh.write('{"id": "broken", "text": \n')  # unparseable
        fh.write(json.dumps({**json.loads(mems[0].to_line()), "id": "Not A Slug"}) + "\n")
    write_log(root, mems[60:], mode="a")
    eager = booted(root, lazy=False)
    assert eager.stats.corrupt == 2
    lazy = booted(root, lazy=True)
    assert lazy.booted_from == "snapshot" and pending(lazy) == len(lazy.records)
    assert lazy.stats == eager.stats  # lines, corrupt, corrupt_at: what doctor reports


def test_a_hand_edit_inside_the_covered_log_makes_the_lazy_boot_rebuild(root: Path) -> None:
    write_log(root, history(9, 100))
    booted(root, lazy=False)
    log = log_of(root)
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    edited = json.loads(lines[-1])  # the last line of its id: the revision that wins
    edited["text"] = "an edit by hand w3 w3"
    lines[-1] = json.dumps(edited) + "\n"
    log.write_text("".join(lines), encoding="utf-8")
    lazy = booted(root, lazy=True)
    assert lazy.booted_from == "rebuilt" and pending(lazy) == 0
    assert lazy.records[edited["id"]].text == "an edit by hand w3 w3"
    assert_equivalent(lazy, booted(root, lazy=False))


def test_an_old_snapshot_without_line_starts_boots_eagerly(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_log(root, history(10, 80))
    real = snapshot.capture
    monkeypatch.setattr(
        snapshot, "capture", lambda index, **kw: real(index, **{**kw, "lines": None})
    )
    booted(root, lazy=False)
    monkeypatch.setattr(snapshot, "capture", real)
    lazy = booted(root, lazy=True)
    assert lazy.booted_from == "snapshot" and pending(lazy) == 0  # the eager snapshot boot
    assert_equivalent(lazy, booted(root, lazy=False))
    again = booted(root, lazy=True)  # that boot wrote the snapshot again, with line starts
    assert again.booted_from == "snapshot" and pending(again) == len(again.records) > 0
    assert_equivalent(again, booted(root, lazy=False))


def dialog_store(root: Path, *, lazy: bool) -> MemoryStore:
    return MemoryStore(root, clock=FakeClock(start_ms=STILL, tick=0), lazy_records=lazy)


def test_recall_dialog_chains_and_writes_after_a_lazy_boot(root: Path) -> None:
    """Through the store: the same recall (dialog-turn context included) and the same chains,
    then writes that need the undecoded records (reinforce a duplicate, update, supersede)."""
    first = MemoryStore(root, clock=FakeClock(start_ms=1_900_000_000_000))
    rng = random.Random(11)
    speakers = ["Caroline", "Melanie"]
    for s in range(6):
        for t in range(12):
            said = " ".join(rng.choices(["turtles", "paint", "years", "camping", "w1", "w2"], k=5))
            text = f"{speakers[t % 2]}: {said}{'?' if t % 3 == 0 else '.'}"
            first.save(text, session_id=f"conv-{s}")
    first.save("The user prefers tabs over spaces.")
    first.close()
    dialog_store(root, lazy=False).close()  # rebuilds and writes the snapshot
    queries = ["how many years turtles", "What did Caroline paint?", "camping w1", "tabs"]

    def seen(
        store: MemoryStore,
    ) -> tuple[list[list[tuple[str, float]]], set[tuple[str, str]], set[str]]:
        ranked = [
            [(m.memory.id, round(m.score, 9)) for m in store.recall(q).memories] for q in queries
        ]
        bank = store.banks["main"]
        chains, keys = context.chains(bank), bank.index.keys
        links = {(keys[a], keys[b]) for a, b in enumerate(chains.next.tolist()) if b >= 0}
        return ranked, links, {keys[s] for s in np.flatnonzero(chains.asks).tolist()}

    lazy = dialog_store(root, lazy=True)
    bank = lazy.banks["main"]
    assert bank.booted_from == "snapshot" and pending(bank) == len(bank.records)
    got = seen(lazy)
    assert pending(bank) > len(bank.records) // 2  # recall decoded only what it returned
    lazy.close()
    eager = dialog_store(root, lazy=False)
    want = seen(eager)
    eager.close()
    assert got == want and got[1] and got[2]
    lazy = dialog_store(root, lazy=True)
    try:
        # writes: a duplicate reinforces the record that holds its print (from the snapshot)
        again = lazy.save("The user prefers tabs over spaces.")
        assert not again.created and again.memory.corroboration == 1
        turn = min(k for k in lazy.banks["main"].index.slot_of if k != again.memory.id)
        lazy.update(turn, text="Caroline: an update w9.")
        lazy.supersede(again.memory.id, lazy.save("The user prefers spaces now.").memory.id)
        assert lazy.recall("update w9").memories[0].memory.id == turn
    finally:
        lazy.close()
    reloaded = dialog_store(root, lazy=False)  # the log says the same after a reload
    try:
        assert reloaded.get(turn).memory.text == "Caroline: an update w9."
        assert reloaded.get(again.memory.id).memory.invalid_at is not None
    finally:
        reloaded.close()


# -- the mapping on its own ----------------------------------------------------------------


def lazy_records(n: int) -> tuple[Records, list[Memory]]:
    mems = make_records(12, n)
    lines = [m.to_line().encode() for m in mems]
    data = b"\n".join(lines) + b"\n"
    starts, at = {}, 0
    for m, raw in zip(mems, lines, strict=True):
        starts[m.id] = at
        at += len(raw) + 1
    return Records(data, starts, Memory.model_validate_json), mems


def test_records_decode_on_use_and_walk_in_log_order() -> None:
    records, mems = lazy_records(20)
    ids = [m.id for m in mems]
    assert len(records) == 20 and ids[5] in records and "nope" not in records
    assert records.get(ids[5]) == mems[5] and records[ids[7]] == mems[7]
    assert records.get("nope") is None and records.get("nope", 1) == 1
    with pytest.raises(KeyError):
        records["nope"]
    assert len(records.pending) == 18 and len(records) == 20
    records[ids[9]] = mems[0]  # a newer revision replaces an undecoded one
    assert records[ids[9]] == mems[0] and len(records) == 20
    assert records.pop(ids[11]) == mems[11] and ids[11] not in records and len(records) == 19
    del records[ids[12]]
    assert ids[12] not in records
    assert set(records) == set(ids) - {ids[11], ids[12]}
    assert not records.pending and records.data == b""
    # the ones decoded or replaced first, then the rest in log order
    assert list(records)[:3] == [ids[5], ids[7], ids[9]]
    assert list(records)[3:6] == [ids[0], ids[1], ids[2]]
    assert dict(records) == {k: v for k, v in records.items()}


def test_a_copy_or_a_comparison_sees_every_record() -> None:
    records, mems = lazy_records(6)
    assert records == {m.id: m for m in mems}
    again, _ = lazy_records(6)
    assert again.copy() == {m.id: m for m in mems} and type(again.copy()) is dict
    third, _ = lazy_records(6)
    assert dict(third) == {m.id: m for m in mems}


# -- the command line: one process per command ---------------------------------------------


def test_the_memory_command_boots_lazily_and_ends_after_its_snapshot(tmp_path: Path) -> None:
    """``memory --data-dir D recall`` on a bank past the snapshot threshold: the process
    (``shared.cli.console``: no teardown) writes the snapshot before it ends, and the next
    command boots from it and answers the same."""
    data = tmp_path / "d"
    mems = [
        m.model_copy(update={"id": f"m{i:05d}", "fingerprint": f"fp{i:016x}"})
        for i, m in enumerate(make_records(13, 100) * 101)
    ][:10_000]  # the real SNAPSHOT_MIN_LINES, in the child process
    write_log(data, mems)
    cmd = [sys.executable, "-c", "from shared.cli import console; console()"]
    argv = ["--data-dir", str(data), "recall", "w1 tabs", "--json"]
    first = subprocess.run([*cmd, *argv], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert first.returncode == 0, first.stderr
    header = snapshot.read_header(data / "main" / snapshot.SNAPSHOT)
    assert header is not None and header["lazy"]  # written in full before the process ended
    second = subprocess.run([*cmd, *argv], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert second.returncode == 0, second.stderr
    ids = [[m["memory"]["id"] for m in json.loads(r.stdout)["memories"]] for r in (first, second)]
    assert ids[0] == ids[1] and ids[0]
    bad = subprocess.run(
        [*cmd, "--data-dir", str(data), "get", "no-such-id"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "error: not_found:" in bad.stderr


# -- edges an adversarial review found ---------------------------------------------------


def test_rebuild_after_a_longer_hand_edit_writes_right_line_starts(root: Path) -> None:
    """A snapshot whose ``covered`` now falls inside a (lengthened) line: the rebuild replays
    the tail with ``pos=covered`` although that line starts earlier, so the new snapshot's
    line starts are off and the next lazy boot decodes a line fragment."""
    write_log(root, history(21, 60))
    booted(root, lazy=False)  # snapshot covering the whole log
    log = log_of(root)
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    edited = json.loads(lines[-1])
    edited["text"] = edited["text"] + " a much longer hand edit w3 w3 w3 w3 w3 w3 w3 w3"
    lines[-1] = json.dumps(edited) + "\n"
    log.write_text("".join(lines), encoding="utf-8")
    first = booted(root, lazy=True)  # the snapshot no longer matches: rebuilt, new snapshot
    assert first.booted_from == "rebuilt"
    eager = booted(root, lazy=False)
    second = booted(root, lazy=True)
    assert second.records[edited["id"]] == eager.records[edited["id"]]
    assert_equivalent(second, eager)


# -- the console script: shared.cli.console / _end ----------------------------------------

REPO = Path(__file__).resolve().parents[2]
CONSOLE = [sys.executable, "-c", "from shared.cli import console; console()"]
MAIN = [sys.executable, "-c", "import sys; from shared.cli import main; sys.exit(main())"]


def _closed_stderr(cmd: list[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` with file descriptor 2 closed (``2>&-``): Python then has no sys.stderr."""
    return subprocess.run(
        ["sh", "-c", 'exec "$@" 2>&-', "sh", *cmd],
        input=stdin,
        capture_output=False,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_a_successful_command_with_stderr_closed_exits_0(tmp_path: Path) -> None:
    """``_end`` flushes ``sys.stderr`` unconditionally; with fd 2 closed at start-up Python
    sets ``sys.stderr = None``, so ``None.flush()`` raises AttributeError (not caught), and a
    command that succeeded exits 1. ``main`` alone exits 0."""
    data = str(tmp_path / "d")
    saved = subprocess.run(
        [*CONSOLE, "--data-dir", data, "save", "hello w1"], capture_output=True, cwd=REPO
    )
    assert saved.returncode == 0, saved.stderr
    plain = _closed_stderr([*MAIN, "--data-dir", data, "list"])
    assert plain.returncode == 0 and "hello w1" in plain.stdout
    quick = _closed_stderr([*CONSOLE, "--data-dir", data, "list"])
    assert "hello w1" in quick.stdout
    assert quick.returncode == 0


def test_a_hook_with_stderr_closed_still_exits_0(tmp_path: Path) -> None:
    """``memory hook`` promises "never fails the agent: exit 0"; under ``console`` with fd 2
    closed the same hook exits 1 (``_end``: ``sys.stderr.flush()`` on None)."""
    data = str(tmp_path / "d")
    subprocess.run([*CONSOLE, "--data-dir", data, "save", "hello world w1"], cwd=REPO, check=True)
    event = json.dumps({"session_id": "s1", "prompt": "hello world", "cwd": str(tmp_path)})
    plain = _closed_stderr([*MAIN, "--data-dir", data, "hook", "UserPromptSubmit"], event)
    assert plain.returncode == 0 and "hello world w1" in plain.stdout
    quick = _closed_stderr([*CONSOLE, "--data-dir", data, "hook", "UserPromptSubmit"], event)
    assert "hello world w1" in quick.stdout
    assert quick.returncode == 0


# -- dialog-turn facts from the snapshot ----------------------------------------------------


def _links(bank: Bank) -> set[tuple[str, str]]:
    from store_worker.recall import context

    ch, keys = context.chains(bank), bank.index.keys
    return {(keys[a], keys[b]) for a, b in enumerate(ch.next.tolist()) if b >= 0}


def test_dialog_turns_with_an_empty_source_session_chain_alike(root: Path) -> None:
    """A ``source_session_id`` of ``""`` (a hand edit, an import, an older writer: replay
    accepts it) names no session: such turns chain in neither boot (``entities.turn_of``),
    so the snapshot's ``""`` for "no turn" means the same thing."""
    from shared.contract.models import Provenance

    turns = [
        Memory(
            id=f"t{i}",
            fingerprint=f"fp{i}",
            text=f"{['Caroline', 'Melanie'][i % 2]}: turn {i} about turtles.",
            created_at=10 + i,
            updated_at=10 + i,
            stated_at=10 + i,
            provenance=Provenance(source_session_id=""),
        )
        for i in range(4)
    ]
    write_log(root, turns)
    eager = booted(root, lazy=False)
    lazy = booted(root, lazy=True)
    assert lazy.booted_from == "snapshot"
    assert [lazy.turn_at(s) for s in range(4)] == [eager.turn_at(s) for s in range(4)]
    assert _links(lazy) == _links(eager) == set()


# -- the mapping's own API (latent: no store_worker code uses these today) -------------------


def _records(n: int) -> tuple[Records, list[Memory]]:
    return lazy_records(n)


def test_records_inequality_sees_the_pending_records() -> None:
    """``Records`` overrides ``__eq__`` but not ``__ne__``; ``!=`` resolves to ``dict.__ne__``
    (found before ``object.__ne__`` in the MRO), which compares only the decoded part."""
    records, mems = _records(4)
    plain = {m.id: m for m in mems}
    assert not (records != plain)


def test_records_union_and_reversed_see_the_pending_records() -> None:
    """``dict.__or__`` copies the C-level storage (``PyDict_Copy``) and ``dict.__reversed__``
    walks it: neither is overridden, so both miss every undecoded record."""
    records, mems = _records(4)
    assert len(records | {}) == 4
    again, _ = _records(4)
    assert list(reversed(again)) == [m.id for m in reversed(mems)]


def test_records_in_place_union_keeps_the_newer_value() -> None:
    """``records |= {id: newer}`` goes through ``dict.__ior__`` (C ``dict_update_arg``), not
    ``update``/``__setitem__``: the id stays in ``pending`` too, so ``len`` counts it twice
    and the next walk decodes the old line over the newer value."""
    records, mems = _records(4)
    newer = mems[0].model_copy(update={"text": "newer", "revision": 5})
    records |= {mems[0].id: newer}
    assert len(records) == 4
    assert dict(records.items())[mems[0].id].text == "newer"


def test_watch_follows_with_the_collector_on(tmp_path: Path) -> None:
    """``ONE_SHOT = STORE_VERBS | {"hook"}`` includes ``watch``, a ``tail -f`` follower that
    polls until killed: ``console`` turns the cyclic collector off for its whole life (and its
    embedded store boots lazily, although it does not "answer once and end"). Observed at the
    follower's first sleep (``time.sleep`` is the stdlib's, wrapped only to look)."""
    data = str(tmp_path / "d")
    subprocess.run([*CONSOLE, "--data-dir", data, "save", "hello w1"], cwd=REPO, check=True)
    probe = (
        "import gc, os, sys, time\n"
        "def look(_s):\n"
        "    print('gc-enabled', gc.isenabled(), flush=True)\n"
        "    os._exit(0)\n"
        "time.sleep = look\n"
        "sys.argv = ['memory', '--data-dir', sys.argv[1], 'watch', '--json']\n"
        "from shared.cli import console\n"
        "console()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, data], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert "gc-enabled" in out.stdout, out.stderr
    assert "gc-enabled True" in out.stdout


def test_the_fast_exit_stops_a_live_executor_as_the_interpreter_would() -> None:
    """``shared.cli._end`` runs threading's own exit hooks before it joins the threads: an
    executor nobody shut down (a library's) stops instead of hanging the command."""
    script = (
        "from concurrent.futures import ThreadPoolExecutor\n"
        "from shared import cli\n"
        "pool = ThreadPoolExecutor(2)\n"
        "pool.submit(print, 'ran', flush=True).result()\n"
        "cli._end(3)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout == "ran\n"
