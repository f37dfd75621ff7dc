"""The lazy boot's edges, found by an adversarial review (``store_worker/records.py``): a
rebuild after a hand edit moved the newlines, closed standard streams at the fast exit, turns
with an empty session, the mapping's rarer operators, and a follower verb."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from shared.models import Memory
from store_worker import bank as bank_mod
from store_worker.bank import Bank
from store_worker.records import Records
from tests.store_worker.test_lazy_records import booted, history
from tests.store_worker.test_snapshot import (
    assert_equivalent,
    log_of,
    write_log,
)


@pytest.fixture(autouse=True)
def small_banks_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bank_mod, "SNAPSHOT_MIN_LINES", 1)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "data"


def pending(bank: Bank) -> int:
    return len(bank.records.pending) if isinstance(bank.records, Records) else 0


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
    from store_worker import context

    ch, keys = context.chains(bank), bank.index.keys
    return {(keys[a], keys[b]) for a, b in enumerate(ch.next.tolist()) if b >= 0}


def test_dialog_turns_with_an_empty_source_session_chain_alike(root: Path) -> None:
    """A ``source_session_id`` of ``""`` (a hand edit, an import, an older writer: replay
    accepts it) names no session: such turns chain in neither boot (``entities.turn_of``),
    so the snapshot's ``""`` for "no turn" means the same thing."""
    from shared.models import Provenance

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
    from tests.store_worker.test_lazy_records import lazy_records

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
