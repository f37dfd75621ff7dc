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

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from shared.client.shards import frozen_error
from shared.contract.models import MEMORY_SCOPES, MEMORY_TYPES, Memory
from shared.text import fingerprint, tokenize
from store_worker.recall.entities import turn_of
from store_worker.recall.index import BankIndex
from store_worker.storage import replay
from store_worker.storage.bankfiles import BankFiles
from store_worker.storage.log import ReplayStats

if TYPE_CHECKING:
    from store_worker.storage.commit import Stage

log = logging.getLogger(__name__)

# Below this many log lines a boot takes well under a second without a snapshot, and the
# snapshot's own write is not worth its disk space.
SNAPSHOT_MIN_LINES = 10_000

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


def searchable_text(mem: Memory) -> str:
    """What the lexical arm indexes: title, text and entities."""
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
        # rules whose file is there but could not be read at load: name -> why
        # (``rules/style.md: not UTF-8 (byte 0xff at 312)``), and the text each had in RAM
        # before (a reload): injection keeps that text, or says the rule is missing
        self.unread_rules: dict[str, str] = {}
        self.stale_rules: dict[str, str] = {}
        self.description = ""
        self.created_at = 0
        self.stats = ReplayStats()
        self._idx = BankIndex()
        # revisions in ``records`` whose index update a group commit has put off (``settle``)
        self._unindexed: list[Memory] = []
        # a bulk write (``import_records``) left the index to one rebuild on its next read
        self._reindex_due = False
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
        if self._reindex_due:
            self.reindex()
        if self._unindexed:
            self.settle()
        return self._idx

    @index.setter
    def index(self, index: BankIndex) -> None:
        self._idx = index

    @property
    def unembedded(self) -> set[str]:
        """Live ids without a fresh vector (kept as records are indexed, ``on_indexed``)."""
        if self._reindex_due:
            self.reindex()
        if self._unindexed:
            self.settle()
        return self._unembedded

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> None:
        """Read the bank's folder back into RAM: its meta, rules and log (``replay.load``)."""
        replay.load(self)

    def reindex(self) -> None:
        """Rebuild the index from ``records`` in one bulk pass (boot, reload, compaction):
        the same slots, in (created_at, id) order, as ``_index_one`` of each record in turn."""
        mems = sorted(self.records.values(), key=lambda m: (m.created_at, m.id))
        self._unindexed = []  # the rebuild covers them: it indexes ``records`` as they are now
        self._reindex_due = False
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

    def reflect_unindexed(self, mems: list[Memory]) -> None:
        """Put appended revisions into RAM (records, fingerprint maps) and leave the index to
        one rebuild on its next read: a bulk write (``import_records``) of thousands of
        records, batch after batch, builds the index once instead of record by record."""
        for mem in mems:
            prev = self.records.get(mem.id)
            if prev is not None:
                self.release_fp(prev.fingerprint, mem.id)
            self.records[mem.id] = mem
            self._hold_print(mem)
        self._reindex_due = True

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
