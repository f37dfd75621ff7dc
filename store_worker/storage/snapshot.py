"""A derived, rebuildable snapshot of one bank's index: ``<bank>/index.snap``.

Why: at 1M records a cold start spent ~35 s of its ~50 s tokenizing and bulk-building the
BM25 index (bench/, "cold start"). The snapshot holds that index as raw arrays — keys by slot,
every column, postings, the per-slot term lists, df, totals and the interned project/session
table — so a boot reads it back instead of rebuilding it, and replays only the log lines
appended after it through the normal per-record path.

The log stays the only source of truth (docs/ARCHITECTURE.md). A snapshot is trusted only
when all hold, else it is ignored and rebuilt:

* its ``derivation`` key matches: the format version, the source bytes of every module that
  shapes the index (tokenizer, model, index, bank, this file), the versions of PyStemmer,
  pydantic-core, Python and its Unicode tables. Any code change that could change a token or
  a column invalidates it, with no version number to forget to bump;
* the log is at least ``covered`` bytes long, byte ``covered - 1`` is a newline, and the
  SHA-256 of the first ``covered`` bytes equals the one recorded. A full hash, not a sample of
  the first and last megabytes: a hand edit in the middle of the file, even one that keeps its
  length, must be seen. SHA-256 runs at ~1.8 GB/s here (SHA-NI; 0.24 s for the 1M-record
  418 MB log, against 0.49 s for BLAKE2b) and ``hashlib`` releases the GIL, so the boot hashes
  on the second core while the first parses lines;
* its body's SHA-256 matches the header (a truncated or bit-flipped file), and its arrays have
  the sizes the header says.

It is written only at the end of a replay, when the index is exactly the log's replay (drafts
join RAM later and are not in the log; compaction at run time would capture them), atomically
(temp + rename) from a background thread so no caller waits on the disk. Nothing relies on a
shutdown flush: a store that never writes one just boots the slow way.

A boot with a tail ends with the same records, statistics, postings and fingerprint maps as
a rebuild; only the tail's slots sit at the end, as after live writes, so exact score ties may
rank in another order than after a rebuild (recall breaks ties by slot).

Measured (bench corpus, 1,019,612 lines, 418 MB log): boot 46-54 s before, 38-44 s when it
has to rebuild (and write the 236 MB snapshot, in ~2 s off the boot), 11 s from the snapshot;
100k records: 4.3-4.6 s, 3.5 s, 1.0 s.

For a lazy boot (``records.py``: a one-shot CLI or hook process) the snapshot also
holds, per slot, where the live record's line starts in the log, its fingerprint and its
dialog-turn facts (``entities.turn_of``), and in the header the replay's counts of the covered
lines (lines, corrupt ones and where): such a boot takes the fingerprint maps, the context
chains and what ``doctor`` reports from here and decodes a covered record only when it is
used (a 10k-record bank opens in ~65 ms instead of ~140).

File: ``MAGIC`` | u64 header length | JSON header | arrays, each at a 64-byte boundary.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import logging
import os
import struct
import sys
import tempfile
import threading
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from itertools import compress, pairwise
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from shared.contract.models import Memory
from store_worker.recall.entities import turn_of
from store_worker.recall.index import COLUMNS, BankIndex, _Column, _Postings
from store_worker.storage.files import fsync_dir

log = logging.getLogger(__name__)

SNAPSHOT = "index.snap"
MAGIC = b"MEMSNAP\x01"
FORMAT = 1
ALIGN = 64
TABLES = ("terms", "entities", "tags")
U16_TERMS = 1 << 16  # up to this many terms, a term id is stored in 2 bytes (44 MB less at 1M)
# The modules whose code decides what the index holds for a given log (``validate``: which
# lines are records at all, which a lazy boot relies on without checking them again).
SOURCES = (
    "shared.text",
    "shared.contract.models",
    "store_worker.recall.index",
    "store_worker.storage.bank",
    "store_worker.storage.replay",
    "store_worker.storage.validate",
    "store_worker.recall.entities",
    __name__,
)
DISTRIBUTIONS = ("PyStemmer", "pydantic_core")

Array = npt.NDArray[Any]


@cache
def derivation() -> str:
    """A key over everything that derives the index from the log (see the module doc)."""
    h = hashlib.sha256(f"format={FORMAT}".encode())
    for name in SOURCES:
        path = getattr(importlib.import_module(name), "__file__", None)
        h.update(name.encode() + b"\0" + (Path(path).read_bytes() if path else b"?"))
    for dist in DISTRIBUTIONS:
        try:
            h.update(f"{dist}={metadata.version(dist)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{dist}=?".encode())
    # casefolding, NFKC and the tokenizer's \w follow the interpreter's Unicode tables
    h.update(f"python={sys.version};unicode={unicodedata.unidata_version}".encode())
    return h.hexdigest()


# Taken once, when the code is imported: a source file edited under a running process must not
# lend its new key to an index the old, loaded code builds.
derivation()


# -- strings as arrays ---------------------------------------------------------------------


def _pack(strings: list[str]) -> tuple[Array, Array]:
    """A string list as a UTF-8 blob plus code-point offsets (a key may hold any character)."""
    blob = np.frombuffer("".join(strings).encode("utf-8"), dtype=np.uint8)
    ends = np.fromiter(map(len, strings), np.int64, len(strings))
    return blob, np.concatenate(([0], np.cumsum(ends))).astype(np.int64)


def _unpack(blob: Array, offsets: Array) -> list[str]:
    text = blob.tobytes().decode("utf-8")
    bounds = offsets.tolist()
    if bounds[-1] != len(text):
        raise ValueError("string table does not match its offsets")
    return [text[a:b] for a, b in pairwise(bounds)]


# -- capture (caller's thread) and encode (writer thread) ----------------------------------


@dataclass
class Capture:
    """A consistent, cheap copy of an index: what the writer thread encodes. Postings are
    taken as views of their first ``n`` entries, which no later write changes (``append``
    writes past ``n`` or into a resized copy); columns, which writes change in place, are
    copied."""

    covered: int
    log_sha256: str
    keys: list[str]
    cols: dict[str, Array]
    tables: dict[str, list[tuple[str, Array, Array]]]
    df: dict[str, int]
    doc_terms: list[tuple[str, ...] | None]
    bulk_ptr: Array
    bulk_tids: Array
    bulk_terms: list[str]
    interned: list[str]
    scalars: dict[str, float] = field(default_factory=dict)
    # For a lazy boot (``records.py``): where each live record's line starts, the records
    # themselves (immutable; their fingerprints and dialog-turn facts are read off them in
    # the writer thread, not on the boot's path) and the replay's counts of the covered lines.
    lines: Lines | None = None


def capture(
    index: BankIndex,
    *,
    covered: int,
    log_sha256: str,
    lines: Lines | None = None,
) -> Capture:
    """What ``write`` encodes; with ``lines``, what a lazy boot needs too."""
    return Capture(
        lines=lines,
        covered=covered,
        log_sha256=log_sha256,
        keys=list(index.keys),
        cols={name: index.col(name).copy() for name in index.cols},
        tables={
            name: [(label, *post.view()) for label, post in getattr(index, name).items()]
            for name in TABLES
        },
        df=dict(index.df),
        doc_terms=list(index.doc_terms),
        bulk_ptr=index._bulk_ptr,
        bulk_tids=index._bulk_tids,
        bulk_terms=list(index._bulk_terms),
        interned=list(index._interned),
        scalars={
            "n_counted": index.n_counted,
            "total_len": index.total_len,
            "dead": index.dead,
        },
    )


def _doc_terms_csr(cap: Capture, vocab: dict[str, int]) -> tuple[Array, Array]:
    """Every slot's distinct term ids as one CSR pair: bulk-built slots from the bulk CSR,
    slots written one by one since from their term tuples."""
    n = len(cap.keys)
    n_bulk = len(cap.bulk_ptr) - 1
    remap = np.fromiter((vocab[t] for t in cap.bulk_terms), np.int32, len(cap.bulk_terms))
    lengths = np.zeros(n, dtype=np.int64)
    lengths[:n_bulk] = np.diff(cap.bulk_ptr)
    own = [slot for slot, terms in enumerate(cap.doc_terms) if terms is not None]
    if not own:
        tids = remap[cap.bulk_tids] if len(cap.bulk_tids) else np.zeros(0, np.int32)
        return np.concatenate(([0], np.cumsum(lengths))).astype(np.int64), tids
    override = np.zeros(max(n_bulk, 1), dtype=bool)
    override[[s for s in own if s < n_bulk]] = True
    bulk_slot = np.repeat(np.arange(n_bulk), np.diff(cap.bulk_ptr))
    keep = ~override[bulk_slot] if n_bulk else np.zeros(0, dtype=bool)
    parts_slot = [bulk_slot[keep]]
    parts_tid = [remap[cap.bulk_tids[keep]]]
    for slot in own:
        terms = cap.doc_terms[slot] or ()
        lengths[slot] = len(terms)
        parts_slot.append(np.full(len(terms), slot, dtype=np.int64))
        parts_tid.append(np.fromiter((vocab[t] for t in terms), np.int32, len(terms)))
    slots = np.concatenate(parts_slot)
    order = np.argsort(slots, kind="stable")  # two sorted runs: timsort merges them in O(n)
    tids = np.concatenate(parts_tid)[order].astype(np.int32)
    return np.concatenate(([0], np.cumsum(lengths))).astype(np.int64), tids


def _encode(cap: Capture) -> tuple[dict[str, Any], dict[str, Array]]:
    arrays: dict[str, Array] = {}
    arrays["keys"], arrays["keys.off"] = _pack(cap.keys)
    for name, values in cap.cols.items():
        arrays[f"col.{name}"] = values
    vocab: dict[str, int] = {}
    for name in TABLES:
        rows = cap.tables[name]
        labels = [label for label, _, _ in rows]
        arrays[f"{name}.labels"], arrays[f"{name}.labels.off"] = _pack(labels)
        sizes = np.fromiter((len(s) for _, s, _ in rows), np.int64, len(rows))
        arrays[f"{name}.ptr"] = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        arrays[f"{name}.slots"] = _concat([s for _, s, _ in rows], np.int32)
        arrays[f"{name}.tfs"] = _narrow_counts(_concat([t for _, _, t in rows], np.float32))
        if name == "terms":
            vocab = {label: i for i, label in enumerate(labels)}
            arrays["terms.df"] = np.fromiter(
                (cap.df.get(label, 0) for label in labels), np.int64, len(labels)
            )
    arrays["doc.ptr"], tids = _doc_terms_csr(cap, vocab)
    arrays["doc.tids"] = tids.astype(np.uint16) if len(vocab) <= U16_TERMS else tids
    arrays["interned"], arrays["interned.off"] = _pack(cap.interned)
    lines = cap.lines
    if lines is not None:
        alive = cap.cols["alive"][: len(cap.keys)].tolist()
        slots = [
            (k, lines.records[k]) if a else (k, None) for k, a in zip(cap.keys, alive, strict=True)
        ]
        starts = lines.starts
        arrays["line.starts"] = np.array(
            [starts[k] if m is not None else -1 for k, m in slots], dtype=np.int64
        ).reshape(-1)
        arrays["fp"], arrays["fp.off"] = _pack([m.fingerprint if m else "" for _, m in slots])
        turns = [turn_of(m) if m is not None else None for _, m in slots]
        arrays["turn.session"], arrays["turn.session.off"] = _pack(
            [t[0] if t else "" for t in turns]
        )
        arrays["turn.speaker"], arrays["turn.speaker.off"] = _pack(
            [t[2] if t else "" for t in turns]
        )
        arrays["turn.asks"] = np.array([bool(t and t[1]) for t in turns], dtype=np.bool_)
    header = {
        "format": FORMAT,
        "derivation": derivation(),
        "covered": cap.covered,
        "log_sha256": cap.log_sha256,
        "n": len(cap.keys),
        "scalars": cap.scalars,
        "lazy": lines is not None,
        "covered_stats": lines.stats if lines is not None else None,
    }
    return header, arrays


def _narrow_counts(tfs: Array) -> Array:
    """Term frequencies as bytes when they all fit (they are counts; at 1M records this
    saves 66 MB of the file); ``restore`` widens them back to float32."""
    small = tfs.astype(np.uint8)
    return small if np.array_equal(small, tfs) else tfs


def _concat(parts: list[Array], dtype: npt.DTypeLike) -> Array:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _layout(header: dict[str, Any], arrays: dict[str, Array]) -> tuple[bytes, list[Array]]:
    """The header bytes (with each array's place) and the arrays in file order."""
    entries, blobs, offset = [], [], 0
    for name, arr in arrays.items():
        arr = np.ascontiguousarray(arr)
        entries.append(
            {
                "name": name,
                "dtype": arr.dtype.str,
                "shape": list(arr.shape),
                "offset": offset,
                "nbytes": arr.nbytes,
            }
        )
        blobs.append(arr)
        offset += -(-arr.nbytes // ALIGN) * ALIGN
    body = hashlib.sha256()
    for arr in blobs:
        body.update(arr.data.cast("B"))
        body.update(b"\0" * (-arr.nbytes % ALIGN))
    header = {**header, "arrays": entries, "body_size": offset, "body_sha256": body.hexdigest()}
    raw = json.dumps(header, sort_keys=True).encode("utf-8")
    raw += b" " * (-(len(MAGIC) + 8 + len(raw)) % ALIGN)
    return MAGIC + struct.pack("<Q", len(raw)) + raw, blobs


def write(path: Path, cap: Capture) -> None:
    """Encode and write atomically (temp, fsync, rename, fsync the folder). Best effort: a
    failure is logged and leaves any older snapshot, which its own checks still guard."""
    tmp: str | None = None
    try:
        head, blobs = _layout(*_encode(cap))
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(head)
            for arr in blobs:
                fh.write(arr.data.cast("B"))
                fh.write(b"\0" * (-arr.nbytes % ALIGN))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
        fsync_dir(path.parent)
    except Exception:  # a derived file: never let it fail a boot
        log.warning("could not write index snapshot %s", path, exc_info=True)
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_in_background(path: Path, cap: Capture) -> threading.Thread:
    """Write from a non-daemon thread: a process that exits right after boot still finishes
    the file (a few seconds at 1M records) rather than leaving a temp behind."""
    thread = threading.Thread(target=write, args=(path, cap), name=f"snapshot:{path.parent.name}")
    thread.start()
    return thread


# -- read ------------------------------------------------------------------------------------


@dataclass
class Loaded:
    """A snapshot whose own checks passed; ``valid_for`` still has to check the log."""

    header: dict[str, Any]
    arrays: dict[str, Array]

    @property
    def covered(self) -> int:
        return int(self.header["covered"])


def read_header(path: Path) -> dict[str, Any] | None:
    """The header, or None when there is no usable snapshot (missing, foreign, other code)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(MAGIC) + 8)
            if len(head) < len(MAGIC) + 8 or head[: len(MAGIC)] != MAGIC:
                return None
            (size,) = struct.unpack("<Q", head[len(MAGIC) :])
            if size > 1 << 24:
                return None
            header: dict[str, Any] = json.loads(fh.read(size))
    except (OSError, ValueError):
        return None
    if header.get("format") != FORMAT or header.get("derivation") != derivation():
        return None
    covered = header.get("covered")
    if not isinstance(covered, int) or isinstance(covered, bool) or covered < 0:
        return None
    header["_start"] = len(MAGIC) + 8 + size
    return header


def read_body(path: Path, header: dict[str, Any]) -> Loaded | None:
    """The arrays, checked against the header's sizes and SHA-256; None when they fail. Each
    array gets its own writable buffer (columns change in place after boot), so the ones only
    needed during ``restore`` (key strings, narrowed counts) are freed after it."""
    try:
        body = hashlib.sha256()
        arrays = {}
        with open(path, "rb") as fh:
            fh.seek(int(header["_start"]))
            offset = 0
            for e in header["arrays"]:
                if int(e["offset"]) != offset:
                    return None
                padded = -(-int(e["nbytes"]) // ALIGN) * ALIGN
                buf = bytearray(padded)
                if fh.readinto(buf) != padded:
                    return None
                body.update(buf)
                dtype = np.dtype(e["dtype"])
                count = int(np.prod(e["shape"], dtype=np.int64))
                arr = np.frombuffer(buf, dtype, count)
                arrays[e["name"]] = arr.reshape(e["shape"])
                offset += padded
            if fh.read(1) or offset != int(header["body_size"]):
                return None
        if body.hexdigest() != header["body_sha256"]:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return Loaded(header, arrays)


def prefix_ok(header: dict[str, Any], data: bytes, prefix_sha256: str) -> bool:
    covered = int(header["covered"])
    if covered > len(data) or (covered and data[covered - 1] != 0x0A):
        return False
    return bool(prefix_sha256 == header["log_sha256"])


# -- restore ---------------------------------------------------------------------------------


def restore(snap: Loaded, canonical: dict[str, str] | None) -> BankIndex:
    """Rebuild a ``BankIndex`` from the arrays. ``canonical`` maps each replayed id to its
    own string object, so the index shares the records' key strings (and proves every slot's
    key was replayed: a missing one raises ``KeyError``); ``None`` for a lazy boot, whose
    records take their keys from the index."""
    a, n = snap.arrays, int(snap.header["n"])
    index = BankIndex()
    keys = _unpack(a["keys"], a["keys.off"])
    index.keys = keys if canonical is None else list(map(canonical.__getitem__, keys))
    if len(index.keys) != n:
        raise ValueError("snapshot key count differs from its header")
    for name, (dtype, _) in COLUMNS.items():
        values = a[f"col.{name}"]
        if len(values) != n or values.dtype != np.dtype(dtype):
            raise ValueError(f"snapshot column {name} has the wrong shape")
        column = _Column.__new__(_Column)
        column.data = values
        index.cols[name] = column
    alive = index.cols["alive"].data
    live_keys = compress(index.keys, alive.tolist())
    index.slot_of = dict(zip(live_keys, np.flatnonzero(alive).tolist(), strict=True))
    vocab = [sys.intern(t) for t in _unpack(a["terms.labels"], a["terms.labels.off"])]
    for name in TABLES:
        labels = vocab if name == "terms" else _unpack(a[f"{name}.labels"], a[f"{name}.labels.off"])
        tfs = a[f"{name}.tfs"].astype(np.float32)
        table = _postings(labels, a[f"{name}.ptr"], a[f"{name}.slots"], tfs, n=n)
        setattr(index, name, table)
    df = a["terms.df"]
    nz = np.flatnonzero(df).tolist()
    index.df = Counter(dict(zip([vocab[t] for t in nz], df[nz].tolist(), strict=True)))
    index.doc_terms = [None] * n
    index._bulk_ptr, index._bulk_terms = a["doc.ptr"], vocab
    index._bulk_tids = a["doc.tids"].astype(np.int32, copy=False)
    if len(index._bulk_ptr) != n + 1 or int(index._bulk_ptr[-1]) != len(index._bulk_tids):
        raise ValueError("snapshot term lists do not match the slots")
    index._interned = {v: i for i, v in enumerate(_unpack(a["interned"], a["interned.off"]))}
    scalars = snap.header["scalars"]
    index.n_counted = int(scalars["n_counted"])
    index.total_len = float(scalars["total_len"])
    index.dead = int(scalars["dead"])
    return index


@dataclass
class Lines:
    """What ``capture`` needs for a lazy boot: where each live record's line starts, the
    records (a copy of the mapping: the writer thread reads their fingerprints and
    ``entities.turn_of``), and the replay's counts of the lines the snapshot covers."""

    starts: dict[str, int]
    records: dict[str, Memory]
    stats: dict[str, Any]


@dataclass
class LazyParts:
    """A lazy boot's view of a snapshot (``lazy_parts``)."""

    starts: Array  # per slot: where its line starts in the log, -1 for a dead slot
    fingerprints: list[str]  # per slot; "" for a dead one
    sessions: list[str]  # per slot: a dialog turn's source session, else ""
    speakers: list[str]  # per slot: a dialog turn's speaker, else ""
    asks: Array  # per slot: a dialog turn that asks
    stats: dict[str, Any]  # the covered lines' replay counts (lines, corrupt, corrupt_at)


def lazy_parts(snap: Loaded) -> LazyParts | None:
    """The per-slot line starts and fingerprints, when the snapshot has them and they fit."""
    a, n = snap.arrays, int(snap.header["n"])
    stats = snap.header.get("covered_stats")
    if not snap.header.get("lazy") or not isinstance(stats, dict) or "line.starts" not in a:
        return None
    starts = a["line.starts"]
    fps = _unpack(a["fp"], a["fp.off"])
    sessions = _unpack(a["turn.session"], a["turn.session.off"])
    speakers = _unpack(a["turn.speaker"], a["turn.speaker.off"])
    asks = a["turn.asks"]
    if len(starts) != n or starts.dtype != np.int64 or len(fps) != n:
        raise ValueError("snapshot line starts do not match the slots")
    if len(sessions) != n or len(speakers) != n or len(asks) != n:
        raise ValueError("snapshot dialog turns do not match the slots")
    return LazyParts(starts, fps, sessions, speakers, asks, stats)


def _postings(
    labels: list[str], ptr: Array, slots: Array, tfs: Array, *, n: int
) -> dict[str, _Postings]:
    bounds = ptr.tolist()
    if len(bounds) != len(labels) + 1 or bounds[-1] != len(slots) or len(tfs) != len(slots):
        raise ValueError("snapshot postings do not match their labels")
    if len(slots) and (int(slots.min()) < 0 or int(slots.max()) >= n):
        raise ValueError("snapshot postings name a slot that does not exist")
    table: dict[str, _Postings] = {}
    for label, (lo, hi) in zip(labels, pairwise(bounds), strict=True):
        post = _Postings.of(slots[lo:hi], tfs[lo:hi])
        table[label] = post
    return table
