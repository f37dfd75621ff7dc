"""One bank in RAM: its records (current revision per id), fingerprints, rules and index.

The log is the truth; this class is a cache of it. ``load`` replays ``memories.jsonl``
(last-wins by revision, a line later in the file wins a tie), ``apply`` appends a fsynced line
and only then changes RAM.

Inside a group commit (``commit.py``) a write's records and fingerprint maps change at once
(the next write of the batch reads them: ids stay unique, a re-save reinforces), while its
index update waits in ``_unindexed`` so the batch's leader can make it while the batch's
fsync is under way. ``index`` and ``unembedded`` bring it up to date before anyone reads
them, so no reader, in the batch or after it, sees an index behind the records.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import hashlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from shared.models import MEMORY_SCOPES, MEMORY_TYPES, Memory, Provenance
from shared.shards import frozen_error
from shared.text import fingerprint, tokenize
from store_worker import snapshot
from store_worker.entities import turn_of
from store_worker.files import BankFiles, ReplayStats
from store_worker.index import BankIndex
from store_worker.records import Records
from store_worker.validate import stored_record_problem

if TYPE_CHECKING:
    from store_worker.commit import Stage

log = logging.getLogger(__name__)

# Below this many log lines a boot takes well under a second without a snapshot, and the
# snapshot's own write is not worth its disk space.
SNAPSHOT_MIN_LINES = 10_000
# A replay this big leaves its objects to the collector's permanent generation (gc_paused).
FREEZE_MIN_LINES = 100_000
# ``Memory.model_validate_json`` minus its Python-level wrapper: the same pydantic-core
# validator, ~1 µs/line less at replay (bench/, "cold start").
_decode = Memory.__pydantic_validator__.validate_json

TYPE_CODE = {name: i for i, name in enumerate(MEMORY_TYPES)}
SCOPE_CODE = {name: i for i, name in enumerate(MEMORY_SCOPES)}
# The index columns reindex fills, in the order of its per-record rows.
ROW = (
    "counted",
    "retired",
    "pending",
    "pinned",
    "corroboration",
    "stated_at",
    "occurred_at",
    "created_at",
    "type",
    "scope",
    "project",
    "session",
    "tokens",
)


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
        self.provenances: dict[tuple[str | None, str | None, str | None], Provenance] = {}

    def __call__(self, mem: Memory) -> Memory:
        given = mem.__pydantic_fields_set__
        shared = self.fields_sets.setdefault(frozenset(given), given)
        if shared is not given:
            object.__setattr__(mem, "__pydantic_fields_set__", shared)
        p = mem.provenance
        canon = self.provenances.setdefault(
            (p.source_session_id, p.source_turn_id, p.recorded_by), p
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


def searchable_text(mem: Memory) -> str:
    """What the lexical arm indexes: title, text and entities (DESIGN §4)."""
    return " ".join((mem.title, mem.text, " ".join(mem.entities)))


def vector_key(mem: Memory) -> str:
    """What a record's stored vector must have been made from to be fresh: its
    ``searchable_text``. The text's fingerprint, and beside it one of the title and entities
    when the record has either: an update of the title or the entities alone leaves the text's
    fingerprint as it was, and its vector was kept, made for the old title."""
    if not mem.title and not mem.entities:
        return mem.fingerprint
    return f"{mem.fingerprint}+{fingerprint(' '.join((mem.title, *mem.entities)))}"


class Bank:
    def __init__(self, root: Path, name: str, *, lazy_records: bool = False) -> None:
        self.name = name
        # boot from a snapshot without decoding the lines it covers (records.py)
        self.lazy_records = lazy_records
        self.files = BankFiles(root, name)
        self.frozen = False  # its slot is moving to another shard: writes refused (shards.py)
        self.records: dict[str, Memory] = {}
        # fingerprint -> the live canonical id that save reinforces; the same text may live in
        # more than one scope, so the other live holders wait in fp_more to take over
        self.by_fp: dict[str, str] = {}
        self.fp_more: dict[str, set[str]] = {}
        self.rules: dict[str, str] = {}
        self.description = ""
        self.created_at = 0
        self.stats = ReplayStats()
        self._idx = BankIndex()
        # revisions in ``records`` whose index update a group commit has put off (``settle``)
        self._unindexed: list[Memory] = []
        # id -> (fingerprint the vector was computed for, unit vector); sidecar-backed
        self.vectors: dict[str, tuple[str, list[float]]] = {}
        self.vector_model: str | None = None
        # Live ids without a fresh vector, kept as records are indexed (once an embedder has
        # set vector_model), so a recall finds what to embed without a scan of every record.
        self._unembedded: set[str] = set()
        # how the last load got its index ("snapshot" or "rebuilt") and the snapshot it wrote
        self.booted_from = ""
        self.snapshot_min_lines = SNAPSHOT_MIN_LINES
        self.snapshot_writer: threading.Thread | None = None
        self.stage: Stage | None = None  # set while a group commit batch uses this bank
        # a lazy boot's dialog-turn facts per snapshot slot (turn_at); None otherwise
        self.turns: list[tuple[str, bool, str] | None] | None = None
        # a lazy boot's fingerprints per snapshot slot, until the replay's maps are made
        self.slot_fingerprints: list[str] | None = None
        # ids of draft files that are there but could not be read at load (``Drafts.load``):
        # never handed to a new memory, or the draft would lose its id to it
        self.unread_drafts: set[str] = set()

    @property
    def index(self) -> BankIndex:
        """The recall index, with every reflected revision in it (``settle``)."""
        if self._unindexed:
            self.settle()
        return self._idx

    @index.setter
    def index(self, index: BankIndex) -> None:
        self._idx = index

    @property
    def unembedded(self) -> set[str]:
        """Live ids without a fresh vector (kept as records are indexed, ``on_indexed``)."""
        if self._unindexed:
            self.settle()
        return self._unembedded

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> None:
        self.files.remove_stale_temps()  # what a killed write left (a purge, a snapshot ...)
        self.description, self.created_at = self.files.read_meta()
        self.rules = self.files.read_rules()
        self.stats = ReplayStats()
        with gc_paused(freeze=lambda: self.stats.lines >= FREEZE_MIN_LINES):
            self._replay()
        release_free_heap()

    def _replay(self) -> None:
        """Replay the log. With a valid snapshot (``store_worker/snapshot.py``) the lines it
        covers only fill ``records`` and the index comes from the snapshot; the lines after
        it go through the per-record path a live write takes. Either way ``records`` is the
        full replay: last wins by revision, a later line wins a tie. A lazy boot
        (``lazy_records``) leaves the covered lines undecoded until used (``records.py``)."""
        data = self.files.log.read_bytes()
        path = self.files.dir / snapshot.SNAPSHOT
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
        may_write = not lazy_ready or n_tail >= self.snapshot_min_lines
        enough = n_prefix + n_tail >= self.snapshot_min_lines
        starts: dict[str, int] | None = {} if may_write and enough else None
        restored = False
        if self.lazy_records and lazy_ready:
            loaded, end_sha = _check_snapshot(path, header, data, covered)
            restored = loaded is not None and self._restore_lazy(loaded, data, share, starts)
        if restored:
            lines = data[covered:].split(b"\n")
            tail = (lines, 0, len(lines), n_prefix)
        else:
            lines = data.split(b"\n")
            records: dict[str, Memory] = {}
            with ThreadPoolExecutor(max_workers=1) as pool:  # hashing releases the GIL
                checked = pool.submit(_check_snapshot, path, header, data, covered)
                self._replay_lines(lines, 0, n_prefix, records, share, starts=starts)
                loaded, end_sha = checked.result()
            self.records = records
            restored = loaded is not None and self._restore(loaded)
            tail = (lines, n_prefix, len(lines), 0)
            # where lines[n_prefix] starts: ``covered`` itself unless a hand edit moved the
            # newlines and the snapshot was refused
            covered = data.rfind(b"\n", 0, covered) + 1
        before = self.stats.lines if restored else 0
        lines, first, stop, skipped = tail
        self._replay_lines(
            lines,
            first,
            stop,
            self.records,
            share,
            reflect=restored,
            pos=covered,
            line_no=skipped,
            starts=starts,
        )
        del lines, tail
        self._repair()
        if restored:
            self.booted_from = "snapshot"
            self._fingerprints_as_reindex()
            if self.index.needs_compaction():
                self.reindex()
        else:
            self.booted_from = "rebuilt"
            self.reindex()
        # the log now ends at its last newline: the torn fragment was cut, or there was none
        ends = self.stats.torn > 0 or data.endswith(b"\n")
        # a snapshot a lazy boot cannot use is written again, once, with what it needs
        upgrade = restored and not lazy_ready and starts is not None
        fresh = self.stats.lines - before >= self.snapshot_min_lines
        if ends and self.records and (fresh or upgrade):
            self._write_snapshot(data.rfind(b"\n") + 1, end_sha, starts)

    def _restore_lazy(
        self,
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
            log.warning("bank %s: ignoring the index snapshot: %r", self.name, e)
            return False
        self.index = index
        self.turns = turns
        if starts is not None:
            starts.update(pending)
        self.records = Records(data, pending, lambda raw: share(_decode(raw)))
        self.slot_fingerprints = parts.fingerprints
        self.stats.lines += lines
        self.stats.corrupt += corrupt
        self.stats.corrupt_at.extend(corrupt_at)
        return True

    def _replay_lines(
        self,
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
        stats = self.stats
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
                    self._reflect(share(mem))
                else:
                    records[mem.id] = share(mem)

    def _repair(self) -> None:
        if self.stats.torn:
            log.warning("bank %s: skipped a torn final line", self.name)
            self.files.log.repair_tail()
        if self.stats.corrupt:
            log.warning("bank %s: skipped %d corrupt lines", self.name, self.stats.corrupt)

    def _restore(self, loaded: snapshot.Loaded) -> bool:
        """Take the index from the snapshot, checked against the replayed records: each
        slot's key was replayed and every replayed record has a live slot."""
        try:
            index = snapshot.restore(loaded, dict(zip(self.records, self.records, strict=True)))
            if int(np.count_nonzero(index.col("alive"))) != len(self.records):
                raise ValueError("live slots differ from the replayed records")
        except (KeyError, ValueError, TypeError, IndexError) as e:
            log.warning("bank %s: ignoring the index snapshot: %r", self.name, e)
            return False
        self.index = index
        return True

    def _fingerprints_as_reindex(self) -> None:
        """``by_fp``/``fp_more`` exactly as ``reindex`` leaves them, without its sort: there
        the last live canonical record in (created_at, id) order holds a print, so here the
        greatest (created_at, id) does and the others wait. A boot's maps then depend on the
        log alone, not on where the snapshot ended (the tail's own updates follow live-write
        order, which a rebuild does not). After a lazy boot the snapshot's slots answer from
        its fingerprints and the index's columns, so no record is decoded."""
        known = self.slot_fingerprints
        if known is None:
            best: dict[str, Memory] = {}
            fp_more: dict[str, set[str]] = {}
            claim = best.setdefault
            for m in self.records.values():
                if m.invalid_at is None and m.status == "canonical":
                    held = claim(m.fingerprint, m)
                    if held is not m:  # a second holder: the greater (created_at, id) holds
                        if (m.created_at, m.id) < (held.created_at, held.id):
                            held, m = m, held
                        fp_more.setdefault(m.fingerprint, set()).add(held.id)
                        best[m.fingerprint] = m
            self.by_fp = dict(zip(best, map(attrgetter("id"), best.values()), strict=True))
            self.fp_more = fp_more
            return
        self.slot_fingerprints = None
        index = self.index
        keys, created = index.keys, index.col("created_at").tolist()
        counted = np.flatnonzero(
            index.col("counted").astype(bool) & index.col("alive").astype(bool)
        ).tolist()
        n = len(known)
        self._hold_fingerprints(
            (created[s], keys[s], known[s] if s < n else self.records[keys[s]].fingerprint)
            for s in counted
        )

    def _hold_fingerprints(self, holders: Iterable[tuple[float, str, str]]) -> None:
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
        self.by_fp = {fp: held[1] for fp, held in best.items()}
        self.fp_more = fp_more

    def _write_snapshot(self, size: int, log_sha256: str, starts: dict[str, int] | None) -> None:
        """Capture the index as the replay left it (before drafts join it) and write it in
        the background (``store_worker/snapshot.py``); with where every live record's line
        starts (noted by the replay), the snapshot serves a lazy boot too."""
        lines = None
        if starts is not None:
            stats = self.stats  # every line up to ``size``: a torn fragment after it is cut
            lines = snapshot.Lines(
                starts=starts,
                records=dict(self.records),  # a copy: later writes change the bank's
                stats={
                    "lines": stats.lines - stats.torn,
                    "corrupt": stats.corrupt,
                    "corrupt_at": list(stats.corrupt_at),
                },
            )
        cap = snapshot.capture(self.index, covered=size, log_sha256=log_sha256, lines=lines)
        self.snapshot_writer = snapshot.write_in_background(self.files.dir / snapshot.SNAPSHOT, cap)

    def reindex(self) -> None:
        """Rebuild the index from ``records`` in one bulk pass (boot, reload, compaction):
        the same slots, in (created_at, id) order, as ``_index_one`` of each record in turn."""
        mems = sorted(self.records.values(), key=lambda m: (m.created_at, m.id))
        self._unindexed = []  # the rebuild covers them: it indexes ``records`` as they are now
        self.turns = None  # the slots change
        index = BankIndex()
        intern = index.intern
        ids: list[str] = []
        entities: list[tuple[str, ...]] = []
        tags: list[tuple[str, ...]] = []
        rows: list[tuple[float, ...]] = []
        by_fp: dict[str, str] = {}
        fp_more: dict[str, set[str]] = {}
        # one visit per record (at 1M records each visit is a cache miss, so passes are merged)
        for m in mems:
            counted = m.invalid_at is None and m.status == "canonical"
            if counted:  # last live canonical record per fingerprint wins, as in _hold_print
                held = by_fp.get(m.fingerprint)
                if held is not None:
                    fp_more.setdefault(m.fingerprint, set()).add(held)
                by_fp[m.fingerprint] = m.id
            ids.append(m.id)
            entities.append(m.entities)
            tags.append(m.tags)
            rows.append(  # ROW order; project then session interned as _index_one does
                (
                    counted,
                    m.invalid_at is not None,
                    m.status == "pending",
                    m.pinned,
                    m.corroboration,
                    m.stated_at,
                    -1 if m.occurred_at is None else m.occurred_at,
                    m.created_at,
                    TYPE_CODE[m.type],
                    SCOPE_CODE[m.scope],
                    intern(m.project),
                    intern(m.session_id),
                    m.tokens,
                )
            )
        # float64 is exact for every value here (integers below 2**53)
        table = np.array(rows, dtype=np.float64).reshape(len(mems), len(ROW))
        del rows
        self.by_fp = by_fp
        self.fp_more = fp_more
        index.bulk_load(
            ids,
            (tokenize(searchable_text(m)) for m in mems),
            entities=entities,
            tags=tags,
            counted=table[:, 0] > 0,
            attrs={name: table[:, i] for i, name in enumerate(ROW) if name != "counted"},
        )
        self.index = index
        if self.vectors:
            for mem in mems:
                self.on_indexed(mem)

    # -- writing ---------------------------------------------------------------------------

    def apply(self, mem: Memory) -> Memory:
        """Append one revision (fsynced), then reflect it in RAM."""
        self.apply_many([mem])
        return mem

    def apply_many(self, mems: list[Memory]) -> None:
        """Append revisions in one fsynced write, then reflect them in RAM. Inside a group
        commit (``commit.py``) the lines are staged instead and the batch appends them; the
        index update waits for the batch's leader (``settle``), which makes it during the
        batch's fsync."""
        self.refuse_if_frozen()
        lines = [m.to_line() for m in mems]
        if self.stage is not None:
            self.stage.add(self, lines)
            for mem in mems:
                self._reflect(mem, defer_index=True)
            return
        self.files.log.append_many(lines)
        for mem in mems:
            self._reflect(mem)
        self._compact_if_needed()

    def refuse_if_frozen(self) -> None:
        """Every write to this bank's files asks first (its log, a draft's file, its rules,
        its description, a rewrite): while its slot moves to another shard (``shards.py``)
        it is read, never written, so the copy the move takes is the whole bank."""
        if self.frozen:
            raise frozen_error(self.name)

    def settle(self) -> None:
        """Make the index updates a group commit put off, in write order (then compact, as
        ``apply_many`` does after its own). Only the thread that holds the store lock settles
        (the batch's leader, or its indexer while the leader waits for it).

        An update that fails leaves the index behind ``records``, which already hold every
        revision reflected so far (the ones put off included, acknowledged or about to be):
        the index is rebuilt from them, so a write whose update failed is still recalled,
        whoever's read ran the update (a later write of the batch reading the index).
        Only when the rebuild fails too does the error go on, with the updates put back."""
        todo, self._unindexed = self._unindexed, []
        try:
            for mem in todo:
                self._index_one(mem)
                self.on_indexed(mem)
        except Exception:
            log.exception("bank %s: an index update failed; rebuilding the index", self.name)
            try:
                self.reindex()
            except Exception:
                self._unindexed = todo + self._unindexed
                raise
            return
        self._compact_if_needed()

    @property
    def index_as_is(self) -> BankIndex:
        """The index without the updates a batch has put off: for lock-free gauges (a count
        at most one batch old). Reading ``index`` would run those updates on the reader's
        thread, beside the batch's leader."""
        return self._idx

    def _compact_if_needed(self) -> None:
        if self._idx.needs_compaction():
            self.reindex()

    def add_unlogged(self, mem: Memory) -> None:
        """Put a record that lives outside the log (a pending draft, ``drafts.py``) into RAM
        and the index, one by one: a reindex here would throw away a snapshot boot's index."""
        self.records[mem.id] = mem
        self._hold_print(mem)
        self._index_one(mem)
        self.on_indexed(mem)

    def _reflect(self, mem: Memory, *, defer_index: bool = False) -> None:
        """Put one appended revision into RAM: records, fingerprint maps, index (or, with
        ``defer_index``, into the updates ``settle`` makes)."""
        prev = self.records.get(mem.id)
        if prev is not None:  # a text edit must not leave the old print behind
            self.release_fp(prev.fingerprint, mem.id)
        self.records[mem.id] = mem
        self._hold_print(mem)
        if defer_index:
            self._unindexed.append(mem)
            return
        self._index_one(mem)
        self.on_indexed(mem)

    def hold_fp(self, fp: str, id: str) -> None:
        held = self.by_fp.get(fp)
        if held is not None and held != id:
            self.fp_more.setdefault(fp, set()).add(held)
        self._drop_more(fp, id)
        self.by_fp[fp] = id

    def release_fp(self, fp: str, id: str) -> None:
        """``id`` no longer holds ``fp`` live; another live holder, if any, takes over."""
        if self.by_fp.get(fp) != id:
            self._drop_more(fp, id)
            return
        others = self.fp_more.get(fp)
        if others:
            self.by_fp[fp] = min(others)  # deterministic successor
            self._drop_more(fp, self.by_fp[fp])
        else:
            del self.by_fp[fp]

    def _drop_more(self, fp: str, id: str) -> None:
        others = self.fp_more.get(fp)
        if others is not None:
            others.discard(id)
            if not others:
                del self.fp_more[fp]

    def fp_holders(self, fp: str) -> list[str]:
        """Every live canonical id with this fingerprint, the reinforce target first."""
        held = self.by_fp.get(fp)
        if held is None:
            return []
        return [held, *sorted(self.fp_more.get(fp, ()))]

    def on_indexed(self, mem: Memory) -> None:
        """Re-attach a known embedding to the record's new slot."""
        known = self.vectors.get(mem.id)
        if known is not None and known[0] == vector_key(mem):
            self.index.set_vector(self.index.slot_of[mem.id], known[1])
            self.unembedded.discard(mem.id)
        elif self.vector_model is not None and mem.invalid_at is None:
            self.unembedded.add(mem.id)
        else:
            self.unembedded.discard(mem.id)

    def _hold_print(self, mem: Memory) -> None:
        """The fingerprint maps for this revision: a live canonical record holds its print."""
        if mem.invalid_at is None and mem.status == "canonical":
            self.hold_fp(mem.fingerprint, mem.id)
        else:
            self.release_fp(mem.fingerprint, mem.id)

    def _index_one(self, mem: Memory) -> None:
        live = mem.invalid_at is None
        index = self.index  # after the updates put off before this one (``settle``)
        index.upsert(
            mem.id,
            tokenize(searchable_text(mem)),
            entities=mem.entities,
            tags=mem.tags,
            counted=live and mem.status == "canonical",
            attrs={
                "retired": not live,
                "pending": mem.status == "pending",
                "pinned": float(mem.pinned),
                "corroboration": float(mem.corroboration),
                "stated_at": float(mem.stated_at),
                "occurred_at": float(-1 if mem.occurred_at is None else mem.occurred_at),
                "created_at": float(mem.created_at),
                "type": TYPE_CODE[mem.type],
                "scope": SCOPE_CODE[mem.scope],
                "project": index.intern(mem.project),
                "session": index.intern(mem.session_id),
                "tokens": mem.tokens,
            },
        )

    # -- views -----------------------------------------------------------------------------

    def turn_at(self, slot: int) -> tuple[str, bool, str] | None:
        """(source session, asks, speaker) when the live record in ``slot`` is a dialog
        turn (``entities.turn_of``); a lazy boot answers for the snapshot's slots without
        decoding them (a slot never changes record: a new revision takes a new slot)."""
        turns = self.turns
        if turns is not None and slot < len(turns):
            return turns[slot]
        mem = self.records.get(self.index.keys[slot])
        return None if mem is None else turn_of(mem)

    def live(self) -> list[Memory]:
        return [m for m in self.records.values() if m.invalid_at is None]

    def counts(self) -> tuple[int, int]:
        live = [m for m in self.records.values() if m.invalid_at is None]
        return len(live), sum(1 for m in live if m.pinned)
