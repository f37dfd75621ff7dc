"""One bank in RAM: its records (current revision per id), fingerprints, rules and index.

The log is the truth; this class is a cache of it. ``load`` replays ``memories.jsonl``
(last-wins by revision, a line later in the file wins a tie), ``apply`` appends a fsynced line
and only then changes RAM.
"""

from __future__ import annotations

import ctypes
import logging
from pathlib import Path

import numpy as np

from shared.models import MEMORY_SCOPES, MEMORY_TYPES, Memory, Provenance
from shared.text import tokenize
from store_worker.files import BankFiles, ReplayStats
from store_worker.index import BankIndex

log = logging.getLogger(__name__)

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


def searchable_text(mem: Memory) -> str:
    """What the lexical arm indexes: title, text and entities (DESIGN §4)."""
    return " ".join((mem.title, mem.text, " ".join(mem.entities)))


class Bank:
    def __init__(self, root: Path, name: str) -> None:
        self.name = name
        self.files = BankFiles(root, name)
        self.records: dict[str, Memory] = {}
        self.by_fp: dict[str, str] = {}
        self.rules: dict[str, str] = {}
        self.description = ""
        self.created_at = 0
        self.stats = ReplayStats()
        self.index = BankIndex()
        # id -> (fingerprint the vector was computed for, unit vector); sidecar-backed
        self.vectors: dict[str, tuple[str, list[float]]] = {}
        self.vector_model: str | None = None

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> None:
        self.description, self.created_at = self.files.read_meta()
        self.rules = self.files.read_rules()
        self.stats = ReplayStats()
        records: dict[str, Memory] = {}
        share = _Sharer()
        for no, raw, unterminated in self.files.log.read_lines():
            self.stats.lines += 1
            try:
                mem = Memory.from_line(raw)
            except Exception:
                if unterminated:
                    self.stats.torn += 1
                else:
                    self.stats.corrupt += 1
                    self.stats.corrupt_at.append(no)
                continue
            prev = records.get(mem.id)
            if prev is None or mem.revision >= prev.revision:
                records[mem.id] = share(mem)
        if self.stats.torn:
            log.warning("bank %s: skipped a torn final line", self.name)
            self.files.log.repair_tail()
        if self.stats.corrupt:
            log.warning("bank %s: skipped %d corrupt lines", self.name, self.stats.corrupt)
        self.records = records
        self.reindex()
        release_free_heap()

    def reindex(self) -> None:
        """Rebuild the index from ``records`` in one bulk pass (boot, reload, compaction):
        the same slots, in (created_at, id) order, as ``_index`` of each record in turn."""
        mems = sorted(self.records.values(), key=lambda m: (m.created_at, m.id))
        index = BankIndex()
        intern = index.intern
        ids: list[str] = []
        entities: list[tuple[str, ...]] = []
        tags: list[tuple[str, ...]] = []
        rows: list[tuple[float, ...]] = []
        by_fp: dict[str, str] = {}
        # one visit per record (at 1M records each visit is a cache miss, so passes are merged)
        for m in mems:
            counted = m.invalid_at is None and m.status == "canonical"
            if counted:  # last live canonical record per fingerprint wins, as in _index
                by_fp[m.fingerprint] = m.id
            ids.append(m.id)
            entities.append(m.entities)
            tags.append(m.tags)
            rows.append(  # ROW order; project then session interned as _index does
                (
                    counted,
                    m.invalid_at is not None,
                    m.status == "pending",
                    m.pinned,
                    m.corroboration,
                    m.stated_at,
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
        """Append revisions in one fsynced write, then reflect them in RAM."""
        self.files.log.append_many([m.to_line() for m in mems])
        for mem in mems:
            prev = self.records.get(mem.id)
            if prev is not None and self.by_fp.get(prev.fingerprint) == mem.id:
                del self.by_fp[prev.fingerprint]  # a text edit must not leave the old print
            self.records[mem.id] = mem
            self._index(mem)
            self.on_indexed(mem)
        if self.index.needs_compaction():
            self.reindex()

    def on_indexed(self, mem: Memory) -> None:
        """Re-attach a known embedding to the record's new slot."""
        known = self.vectors.get(mem.id)
        if known is not None and known[0] == mem.fingerprint:
            self.index.set_vector(self.index.slot_of[mem.id], known[1])

    def _index(self, mem: Memory) -> None:
        live = mem.invalid_at is None
        if live and mem.status == "canonical":
            self.by_fp[mem.fingerprint] = mem.id
        elif self.by_fp.get(mem.fingerprint) == mem.id:
            del self.by_fp[mem.fingerprint]
        index = self.index
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
                "created_at": float(mem.created_at),
                "type": TYPE_CODE[mem.type],
                "scope": SCOPE_CODE[mem.scope],
                "project": index.intern(mem.project),
                "session": index.intern(mem.session_id),
                "tokens": mem.tokens,
            },
        )

    # -- views -----------------------------------------------------------------------------

    def live(self) -> list[Memory]:
        return [m for m in self.records.values() if m.invalid_at is None]

    def counts(self) -> tuple[int, int]:
        live = [m for m in self.records.values() if m.invalid_at is None]
        return len(live), sum(1 for m in live if m.pinned)
