"""One bank in RAM: its records (current revision per id), fingerprints, rules and index.

The log is the truth; this class is a cache of it. ``load`` replays ``memories.jsonl``
(last-wins by revision, a line later in the file wins a tie), ``apply`` appends a fsynced line
and only then changes RAM.
"""

from __future__ import annotations

import logging
from pathlib import Path

from shared.models import MEMORY_SCOPES, MEMORY_TYPES, Memory
from shared.text import tokenize
from store_worker.files import BankFiles, ReplayStats
from store_worker.index import BankIndex

log = logging.getLogger(__name__)

TYPE_CODE = {name: i for i, name in enumerate(MEMORY_TYPES)}
SCOPE_CODE = {name: i for i, name in enumerate(MEMORY_SCOPES)}


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
                records[mem.id] = mem
        if self.stats.torn:
            log.warning("bank %s: skipped a torn final line", self.name)
            self.files.log.repair_tail()
        if self.stats.corrupt:
            log.warning("bank %s: skipped %d corrupt lines", self.name, self.stats.corrupt)
        self.records = records
        self.reindex()

    def reindex(self) -> None:
        self.index = BankIndex()
        self.by_fp = {}
        for mem in sorted(self.records.values(), key=lambda m: (m.created_at, m.id)):
            self._index(mem)
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
