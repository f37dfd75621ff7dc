"""Booting a bank from its folder: its meta, its rules, and the replay of its log.

The log is the truth and RAM a cache of it, so a boot is a replay: every line in file order,
the highest revision of each id wins (a line later in the file wins a tie), a line that does
not parse is counted corrupt and skipped, and a torn final line (a crash mid-append) is moved
aside. A valid index snapshot (``snapshot.py``) spares the rebuild of the index for the lines
it covers; a lazy boot (``records.py``) leaves those lines undecoded until a record is used.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from shared.contract.models import Memory, Provenance
from store_worker.storage import snapshot
from store_worker.storage.log import ReplayStats
from store_worker.storage.records import Records
from store_worker.storage.validate import stored_record_problem

if TYPE_CHECKING:
    from store_worker.storage.bank import Bank

log = logging.getLogger(__name__)

# A replay this big leaves its objects to the collector's permanent generation (gc_paused).
FREEZE_MIN_LINES = 100_000
# ``Memory.model_validate_json`` minus its Python-level wrapper: the same pydantic-core
# validator, ~1 µs/line less at replay (bench/, "cold start").
_decode = Memory.__pydantic_validator__.validate_json


class _Sharer:
    """Lets replayed records share their equal immutable parts: the set of explicitly given
    field names (pydantic's ``__pydantic_fields_set__``, ~730 bytes each) and the frozen
    ``Provenance`` (~480 bytes), together ~40 % of a record's RAM (bench/, "resident memory").

    Safe because ``Memory`` is frozen: pydantic mutates a fields-set in place only on
    attribute assignment (refused on a frozen model) and in ``model_copy``, which copies the
    set first; revisions made by ``model_copy`` already share their ``Provenance`` the same way.
    """

    def __init__(self) -> None:
        self.fields_sets: dict[frozenset[str], set[str]] = {}
        self.provenances: dict[tuple[str | int | None, ...], Provenance] = {}

    def __call__(self, mem: Memory) -> Memory:
        given = mem.__pydantic_fields_set__
        shared = self.fields_sets.setdefault(frozenset(given), given)
        if shared is not given:
            object.__setattr__(mem, "__pydantic_fields_set__", shared)
        p = mem.provenance
        canon = self.provenances.setdefault(  # every field: an imported one names its source
            (p.source_session_id, p.source_turn_id, p.recorded_by, p.imported_at, p.source), p
        )
        if canon is not p:
            mem.__dict__["provenance"] = canon
        return mem


def release_free_heap() -> None:
    """Give the replay's freed scratch memory (raw lines, token lists) back to the OS.

    glibc keeps freed heap pages for reuse, so without this a replay's peak stays resident:
    ~60 MB per 100k records (bench/, "cold start"). A no-op where there is no glibc.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        return


@contextlib.contextmanager
def gc_paused(*, freeze: Callable[[], bool]) -> Iterator[None]:
    """Pause the cyclic collector during a replay. Replay allocates millions of long-lived
    objects; each 700 allocations start a collection, and the older generations' collections
    walk every object alive, so validation measured 15.7 µs/line with it and 5.6 without
    (200k lines of the 1M bench corpus). Reference counting still frees everything acyclic,
    and the collector's previous state comes back afterwards.

    When ``freeze()`` says so (a big replay), the survivors are moved to the collector's
    permanent generation first (``gc.freeze``, the approach of Instagram's "Dismissing Python
    Garbage Collection"): otherwise the first collection after the pause walks all of them
    (0.95 s at 1M records) and every later full collection again, as a pause in some save or
    recall. The cost: a reference cycle among objects alive now is never collected; records,
    index arrays and their strings hold none."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if freeze():
            gc.freeze()
        if was:
            gc.enable()


def _check_snapshot(
    path: Path, header: dict[str, object] | None, data: bytes, covered: int
) -> tuple[snapshot.Loaded | None, str]:
    """(the snapshot if it is valid for ``data``, SHA-256 of ``data`` up to its last newline:
    what a new snapshot would cover). Runs beside the replay."""
    view = memoryview(data)
    end = data.rfind(b"\n") + 1
    h = hashlib.sha256(view[:covered])
    prefix_sha = h.hexdigest()
    if end >= covered:
        h.update(view[covered:end])
    else:
        h = hashlib.sha256(view[:end])
    loaded = None
    if header is not None and snapshot.prefix_ok(header, data, prefix_sha):
        loaded = snapshot.read_body(path, header)
    return loaded, h.hexdigest()


def load(bank: Bank) -> None:
    bank.files.remove_stale_temps()  # what a killed write left (a purge, a snapshot ...)
    bank.description, bank.created_at = bank.files.read_meta()
    bank.rules, bank.unread_rules = bank.files.read_rules_checked()
    bank.stats = ReplayStats()
    with gc_paused(freeze=lambda: bank.stats.lines >= FREEZE_MIN_LINES):
        _replay(bank)
    release_free_heap()


def _replay(bank: Bank) -> None:
    """Replay the log. With a valid snapshot (``store_worker/storage/snapshot.py``) the lines it
    covers only fill ``records`` and the index comes from the snapshot; the lines after
    it go through the per-record path a live write takes. Either way ``records`` is the
    full replay: last wins by revision, a later line wins a tie. A lazy boot
    (``lazy_records``) leaves the covered lines undecoded until used (``records.py``)."""
    data = bank.files.log.read_bytes()
    path = bank.files.dir / snapshot.SNAPSHOT
    header = snapshot.read_header(path) if data else None
    covered = int(header["covered"]) if header and header["covered"] <= len(data) else 0
    share = _Sharer()
    # Where each record's line starts, noted when this replay may write a snapshot: no
    # usable one (none, or one a lazy boot cannot use: it is written again), or a long
    # tail. Not for the common boot, a lazy-ready snapshot and a short tail: the notes
    # cost ~7 MB of RSS per 100k records that the heap keeps (bench/, "cold start").
    lazy_ready = bool(header and header.get("lazy"))
    n_prefix = data.count(b"\n", 0, covered)  # the lines before ``covered`` (one pass)
    n_tail = data.count(b"\n", covered)
    may_write = not lazy_ready or n_tail >= bank.snapshot_min_lines
    enough = n_prefix + n_tail >= bank.snapshot_min_lines
    starts: dict[str, int] | None = {} if may_write and enough else None
    restored = False
    if bank.lazy_records and lazy_ready:
        loaded, end_sha = _check_snapshot(path, header, data, covered)
        restored = loaded is not None and _restore_lazy(bank, loaded, data, share, starts)
    if restored:
        lines = data[covered:].split(b"\n")
        tail = (lines, 0, len(lines), n_prefix)
    else:
        lines = data.split(b"\n")
        records: dict[str, Memory] = {}
        with ThreadPoolExecutor(max_workers=1) as pool:  # hashing releases the GIL
            checked = pool.submit(_check_snapshot, path, header, data, covered)
            _replay_lines(bank, lines, 0, n_prefix, records, share, starts=starts)
            loaded, end_sha = checked.result()
        bank.records = records
        restored = loaded is not None and _restore(bank, loaded)
        tail = (lines, n_prefix, len(lines), 0)
        # where lines[n_prefix] starts: ``covered`` itself unless a hand edit moved the
        # newlines and the snapshot was refused
        covered = data.rfind(b"\n", 0, covered) + 1
    before = bank.stats.lines if restored else 0
    lines, first, stop, skipped = tail
    _replay_lines(
        bank,
        lines,
        first,
        stop,
        bank.records,
        share,
        reflect=restored,
        pos=covered,
        line_no=skipped,
        starts=starts,
    )
    del lines, tail
    _repair(bank)
    if restored:
        bank.booted_from = "snapshot"
        _fingerprints_as_reindex(bank)
        if bank.index.needs_compaction():
            bank.reindex()
    else:
        bank.booted_from = "rebuilt"
        bank.reindex()
    # the log now ends at its last newline: the torn fragment was cut, or there was none
    ends = bank.stats.torn > 0 or data.endswith(b"\n")
    # a snapshot a lazy boot cannot use is written again, once, with what it needs
    upgrade = restored and not lazy_ready and starts is not None
    fresh = bank.stats.lines - before >= bank.snapshot_min_lines
    if ends and bank.records and (fresh or upgrade):
        _write_snapshot(bank, data.rfind(b"\n") + 1, end_sha, starts)


def _restore_lazy(
    bank: Bank,
    loaded: snapshot.Loaded,
    data: bytes,
    share: _Sharer,
    starts: dict[str, int] | None,
) -> bool:
    """Take the index, the fingerprint maps and the counts of the covered lines from the
    snapshot; the live records stay lines of ``data`` until used (``records.py``).
    ``starts``, when given, learns where each of them starts."""
    try:
        parts = snapshot.lazy_parts(loaded)
        if parts is None:
            return False
        index = snapshot.restore(loaded, None)
        live = np.flatnonzero(index.col("alive"))
        at = parts.starts[live]
        covered = int(loaded.header["covered"])
        if len(at) and (int(at.min()) < 0 or int(at.max()) >= covered):
            raise ValueError("a live slot's line is outside the covered log")
        keys = [index.keys[i] for i in live.tolist()]
        pending = dict(zip(keys, at.tolist(), strict=True))
        if len(pending) != len(keys):
            raise ValueError("two live slots hold one id")
        turns: list[tuple[str, bool, str] | None] = [
            (session, bool(asks), speaker) if session else None
            for session, asks, speaker in zip(
                parts.sessions, parts.asks.tolist(), parts.speakers, strict=True
            )
        ]
        stats = parts.stats
        lines, corrupt = int(stats["lines"]), int(stats["corrupt"])
        corrupt_at = [int(x) for x in stats["corrupt_at"]]
    except (KeyError, ValueError, TypeError, IndexError) as e:
        log.warning("bank %s: ignoring the index snapshot: %r", bank.name, e)
        return False
    bank.index = index
    bank.turns = turns
    if starts is not None:
        starts.update(pending)
    bank.records = Records(data, pending, lambda raw: share(_decode(raw)))
    bank.slot_fingerprints = parts.fingerprints
    bank.stats.lines += lines
    bank.stats.corrupt += corrupt
    bank.stats.corrupt_at.extend(corrupt_at)
    return True


def _replay_lines(
    bank: Bank,
    lines: list[bytes],
    start: int,
    stop: int,
    records: dict[str, Memory],
    share: _Sharer,
    *,
    reflect: bool = False,
    pos: int = 0,
    line_no: int = 0,
    starts: dict[str, int] | None = None,
) -> None:
    """Replay ``lines[start:stop]`` into ``records``; with ``reflect``, each winner also
    goes into the index and the fingerprint maps, as a live write would. ``pos`` is where
    ``lines[start]`` starts in the log, ``line_no`` how many lines come before ``lines``;
    ``starts`` collects where each winner's line starts."""
    stats = bank.stats
    last = len(lines) - 1
    for i in range(start, stop):
        raw = lines[i]
        at = pos
        pos += len(raw) + 1
        if not raw or raw.isspace():
            continue
        stats.lines += 1
        try:
            mem = _decode(raw)
            problem = stored_record_problem(mem)
        except Exception:
            mem, problem = None, "unparseable"
        if mem is None or problem is not None:
            if i == last and mem is None:  # only an unterminated last chunk is torn
                stats.torn += 1
            else:
                stats.corrupt += 1
                stats.corrupt_at.append(line_no + i + 1)
            continue
        prev = records.get(mem.id)
        if prev is None or mem.revision >= prev.revision:
            if starts is not None:
                starts[mem.id] = at
            if reflect:
                bank._reflect(share(mem))
            else:
                records[mem.id] = share(mem)


def _repair(bank: Bank) -> None:
    if bank.stats.torn:
        log.warning("bank %s: skipped a torn final line", bank.name)
        bank.files.log.repair_tail()
    if bank.stats.corrupt:
        log.warning("bank %s: skipped %d corrupt lines", bank.name, bank.stats.corrupt)


def _restore(bank: Bank, loaded: snapshot.Loaded) -> bool:
    """Take the index from the snapshot, checked against the replayed records: each
    slot's key was replayed and every replayed record has a live slot."""
    try:
        index = snapshot.restore(loaded, dict(zip(bank.records, bank.records, strict=True)))
        if int(np.count_nonzero(index.col("alive"))) != len(bank.records):
            raise ValueError("live slots differ from the replayed records")
    except (KeyError, ValueError, TypeError, IndexError) as e:
        log.warning("bank %s: ignoring the index snapshot: %r", bank.name, e)
        return False
    bank.index = index
    return True


def _fingerprints_as_reindex(bank: Bank) -> None:
    """``by_fp``/``fp_more`` exactly as ``reindex`` leaves them, without its sort: there
    the last live canonical record in (created_at, id) order holds a print, so here the
    greatest (created_at, id) does and the others wait. A boot's maps then depend on the
    log alone, not on where the snapshot ended (the tail's own updates follow live-write
    order, which a rebuild does not). After a lazy boot the snapshot's slots answer from
    its fingerprints and the index's columns, so no record is decoded."""
    known = bank.slot_fingerprints
    if known is None:
        best: dict[str, Memory] = {}
        fp_more: dict[str, set[str]] = {}
        claim = best.setdefault
        for m in bank.records.values():
            if m.invalid_at is None and m.status == "canonical":
                held = claim(m.fingerprint, m)
                if held is not m:  # a second holder: the greater (created_at, id) holds
                    if (m.created_at, m.id) < (held.created_at, held.id):
                        held, m = m, held
                    fp_more.setdefault(m.fingerprint, set()).add(held.id)
                    best[m.fingerprint] = m
        bank.by_fp = dict(zip(best, map(attrgetter("id"), best.values()), strict=True))
        bank.fp_more = fp_more
        return
    bank.slot_fingerprints = None
    index = bank.index
    keys, created = index.keys, index.col("created_at").tolist()
    counted = np.flatnonzero(
        index.col("counted").astype(bool) & index.col("alive").astype(bool)
    ).tolist()
    n = len(known)
    _hold_fingerprints(
        bank,
        (
            (created[s], keys[s], known[s] if s < n else bank.records[keys[s]].fingerprint)
            for s in counted
        ),
    )


def _hold_fingerprints(bank: Bank, holders: Iterable[tuple[float, str, str]]) -> None:
    """The maps for these live canonical (created_at, id, fingerprint) holders (the same
    rule as the loop over records above, on a lazy boot's slots)."""
    best: dict[str, tuple[float, str]] = {}
    fp_more: dict[str, set[str]] = {}
    claim = best.setdefault
    for created, id, fp in holders:
        mine = (created, id)
        held = claim(fp, mine)
        if held is not mine:  # a second holder: the greater (created_at, id) holds
            if mine < held:
                held, mine = mine, held
            fp_more.setdefault(fp, set()).add(held[1])
            best[fp] = mine
    bank.by_fp = {fp: held[1] for fp, held in best.items()}
    bank.fp_more = fp_more


def _write_snapshot(bank: Bank, size: int, log_sha256: str, starts: dict[str, int] | None) -> None:
    """Capture the index as the replay left it (before drafts join it) and write it in
    the background (``store_worker/storage/snapshot.py``); with where every live record's line
    starts (noted by the replay), the snapshot serves a lazy boot too."""
    lines = None
    if starts is not None:
        stats = bank.stats  # every line up to ``size``: a torn fragment after it is cut
        lines = snapshot.Lines(
            starts=starts,
            records=dict(bank.records),  # a copy: later writes change the bank's
            stats={
                "lines": stats.lines - stats.torn,
                "corrupt": stats.corrupt,
                "corrupt_at": list(stats.corrupt_at),
            },
        )
    cap = snapshot.capture(bank.index, covered=size, log_sha256=log_sha256, lines=lines)
    bank.snapshot_writer = snapshot.write_in_background(bank.files.dir / snapshot.SNAPSHOT, cap)
