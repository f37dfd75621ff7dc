"""Durable writes side by side: the store against SQLite and a bare fsynced append.

Every writer makes each write durable before it returns, on the same disk (one temp folder),
with the same texts. Writers alternate in ``rounds`` blocks, so all see the same disk weather
on a shared machine; the figure is the median of the rounds' rates.

- the store, embedded: ``MemoryStore.save`` from 1 thread, and from 8 threads at once (group
  commit: concurrent saves share fsyncs);
- the store, embedded and through the actor, from 1 caller sending ``save_many`` calls of 8
  (a caller with many writes at hand: an extractor's reply, an import);
- the store through the Ray actor (``StoreClient``) from 1 caller and from 8 concurrent callers
  (threads sharing one client, whose concurrent saves go out together as ``save_many`` calls,
  ``shared/client/coalesce.py``), and the 8 callers again with coalescing off, when Ray is enabled;
- SQLite in WAL mode with ``synchronous=FULL``: an FTS5 table, one transaction per insert;
  1 thread, and 8 threads sharing one connection behind a lock;
- a bare ``os.write`` + ``os.fsync`` of each line: 1 thread, and 8 threads on one fd;
- the floor of a save that keeps the store's promises (``floor_redacted_1``): the text
  redacted (``shared.redact.redact``), its tokens counted, one JSON line appended and
  ``fdatasync``ed, from 1 thread. No validation, id, entities, index or model: what no store
  that redacts before the disk can go below, in this language, on this disk (the
  "embedded 1 caller vs SQLite" line is read against it).

``fsyncs_per_save`` is the store's log fsyncs per line appended (``describe()["commits"]``).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench import corpus
from bench.stats import in_threads, local_ray
from shared.redact import redact
from shared.text.tokens import TokenCounter
from store_worker.storage.log import _datasync

CALLERS = 8
Writer = Callable[[Sequence[str]], None]


def _threads(fn: Callable[[str], Any], texts: Sequence[str], n: int) -> None:
    """Run ``fn`` over ``texts`` from ``n`` threads (each takes every n-th text)."""

    def work(i: int) -> None:
        for t in texts[i::n]:
            fn(t)

    in_threads(n, work)


def _batches(
    save_many: Callable[[list[dict[str, str]]], Any], texts: Sequence[str], n: int
) -> None:
    """One caller sending ``texts`` as ``save_many`` calls of ``n`` saves each."""
    for i in range(0, len(texts), n):
        save_many([{"text": t} for t in texts[i : i + n]])


def _sqlite(path: Path) -> tuple[sqlite3.Connection, threading.Lock]:
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS mem USING fts5(id, text)")
    return db, threading.Lock()


def _sqlite_insert(db: sqlite3.Connection, lock: threading.Lock, text: str, n: list[int]) -> None:
    with lock:
        n[0] += 1
        db.execute("BEGIN")
        db.execute("INSERT INTO mem(id, text) VALUES (?, ?)", (f"m{n[0]}", text))
        db.execute("COMMIT")


def _bare(fd: int, lock: threading.Lock, text: str) -> None:
    line = (text + "\n").encode()
    os.write(fd, line)  # O_APPEND: each line lands whole
    with lock:  # one fsync at a time, as one process's log would
        os.fsync(fd)


def _floor(fd: int, count: Callable[[str], int], text: str) -> None:
    clean = redact(text).text
    line = json.dumps({"text": clean, "tokens": count(clean)}, ensure_ascii=False) + "\n"
    os.write(fd, line.encode())
    _datasync(fd)  # as the store syncs its log


def writers(root: Path, *, ray_handle: Any = None) -> dict[str, tuple[Writer, Callable[[], Any]]]:
    """Each writer as (write these texts, stats) on its own files under ``root``."""
    from store_worker.core import MemoryStore

    store = MemoryStore(root / "store")
    store.save("warm up the tokenizer and the bank")
    db, db_lock = _sqlite(root / "sqlite.db")
    counter = [0]
    fd = os.open(root / "bare.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    fd_lock = threading.Lock()
    floor_fd = os.open(root / "floor.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    tokens = TokenCounter()
    tokens.count("warm up the tokenizer")
    out: dict[str, tuple[Writer, Callable[[], Any]]] = {
        "store_embedded_1": (lambda ts: [store.save(t) for t in ts] and None, store.describe),
        "store_embedded_8": (lambda ts: _threads(store.save, ts, CALLERS), store.describe),
        # one caller with many writes at hand: save_many of 8 (the extractor's replies)
        "store_embedded_batch8": (
            lambda ts: _batches(store.save_many, ts, CALLERS),
            store.describe,
        ),
        "sqlite_full_1": (
            lambda ts: [_sqlite_insert(db, db_lock, t, counter) for t in ts] and None,
            lambda: None,
        ),
        "sqlite_full_8_shared": (
            lambda ts: _threads(lambda t: _sqlite_insert(db, db_lock, t, counter), ts, CALLERS),
            lambda: None,
        ),
        "bare_fsync_1": (lambda ts: [_bare(fd, fd_lock, t) for t in ts] and None, lambda: None),
        "bare_fsync_8": (
            lambda ts: _threads(lambda t: _bare(fd, fd_lock, t), ts, CALLERS),
            lambda: None,
        ),
        "floor_redacted_1": (
            lambda ts: [_floor(floor_fd, tokens.count, t) for t in ts] and None,
            lambda: None,
        ),
    }
    if ray_handle is not None:
        from shared.client.ray import StoreClient

        client = StoreClient(ray_handle, actor_name="memory-store-writes")
        plain = StoreClient(ray_handle, actor_name="memory-store-writes", coalesce=False)

        def actor_stats() -> Any:
            return client.describe()

        out["store_actor_1"] = (lambda ts: [client.save(t) for t in ts] and None, actor_stats)
        out["store_actor_8"] = (lambda ts: _threads(client.save, ts, CALLERS), actor_stats)
        out["store_actor_batch8"] = (
            lambda ts: _batches(client.save_many, ts, CALLERS),
            actor_stats,
        )
        # the same 8 callers, each save its own call (group commit in the actor only)
        out["store_actor_8_uncoalesced"] = (
            lambda ts: _threads(plain.save, ts, CALLERS),
            actor_stats,
        )
    return out


def _commits(stats: Any) -> tuple[int, int] | None:
    """(fsyncs of memory logs, lines they made durable) so far."""
    if isinstance(stats, dict) and isinstance(stats.get("commits"), dict):
        c = stats["commits"]
        return int(c["fsyncs"]), int(c["lines"])
    return None


def compare(n: int, workdir: Path, *, rounds: int = 5, use_ray: bool = False) -> dict[str, Any]:
    """Saves/s of every writer (median of ``rounds`` interleaved blocks of ``n`` writes)."""
    texts = [str(r["text"]) for r in corpus.records(n * rounds * 8, seed=corpus.SEED + 11)]
    root = Path(tempfile.mkdtemp(prefix="writes-", dir=workdir))
    try:
        with ExitStack() as actor:
            handle = _start_actor(actor, root) if use_ray else None
            ws = writers(root, ray_handle=handle)
            rates: dict[str, list[float]] = {name: [] for name in ws}
            fsyncs: dict[str, list[float]] = {}
            cursor = 0
            for _ in range(rounds):
                for name, (write, stats) in ws.items():
                    batch = texts[cursor : cursor + n]
                    cursor += n
                    before = _commits(stats())
                    t0 = time.perf_counter()
                    write(batch)
                    rates[name].append(n / (time.perf_counter() - t0))
                    after = _commits(stats())
                    if before and after and after[1] > before[1]:
                        per = (after[0] - before[0]) / (after[1] - before[1])
                        fsyncs.setdefault(name, []).append(per)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    row: dict[str, Any] = {"n_per_round": n, "rounds": rounds}
    for name, rs in rates.items():
        row[name] = {"per_s": round(statistics.median(rs), 1)}
        if name in fsyncs:
            row[name]["fsyncs_per_save"] = round(statistics.median(fsyncs[name]), 3)
        elif name.startswith(("bare", "sqlite", "floor")):
            row[name]["fsyncs_per_save"] = None if name.startswith("sqlite") else 1.0
    return row


def _start_actor(stack: ExitStack, root: Path) -> Any:
    """The store actor on ``root / "actor"``, on a throwaway cluster that ``stack`` shuts down
    (after killing the actor)."""
    ray = stack.enter_context(local_ray("memory-bench-writes"))
    from store_worker.actor import start

    handle = start({"MEMORY_DATA_DIR": str(root / "actor")}, name="memory-store-writes")
    stack.callback(ray.kill, handle, no_restart=True)
    return handle


def ratios(row: dict[str, Any]) -> dict[str, float | None]:
    """The ratios the targets are read on: embedded 1 caller vs SQLite FULL; actor 8 callers vs its
    1 and vs SQLite with 8 threads on one shared connection."""

    def rate(name: str) -> float | None:
        r = row.get(name)
        return None if r is None else float(r["per_s"])

    def div(a: float | None, b: float | None) -> float | None:
        return None if a is None or not b else round(a / b, 2)

    return {
        "embedded_1_vs_sqlite_1": div(rate("store_embedded_1"), rate("sqlite_full_1")),
        # the most any store that redacts before the disk reaches on this line (see _floor)
        "floor_1_vs_sqlite_1": div(rate("floor_redacted_1"), rate("sqlite_full_1")),
        "embedded_8_vs_sqlite_8": div(rate("store_embedded_8"), rate("sqlite_full_8_shared")),
        "actor_8_vs_actor_1": div(rate("store_actor_8"), rate("store_actor_1")),
        "actor_8_vs_sqlite_8": div(rate("store_actor_8"), rate("sqlite_full_8_shared")),
    }
