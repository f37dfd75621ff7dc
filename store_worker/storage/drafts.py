"""Ratification: the memory.v1 provider protocol's pending status, ApproveRecord, RejectRecord.

When ``ratification`` is on, automatic writes (extraction: ``confidence`` extracted or inferred,
or an explicit ``status="pending"``) land as *pending drafts*. Drafts live apart from the
append-only memory log, one file per draft::

    <data_dir>/<bank>/drafts/<id>.json     one pending record, written atomically

so that ``reject`` can discard a draft entirely — the file goes, no tombstone is left in
``memories.jsonl`` (the protocol: RejectRecord discards a pending draft entirely, it is not a
soft delete). ``approve`` appends the record to the log as canonical and only then removes the
draft file; a crash in between is healed at load (the log wins over a leftover draft).

In RAM a draft sits in ``bank.records`` and the index like any record, flagged ``pending``, so
``list``/``get`` show it and ``recall`` skips it unless ``include_pending``. With ratification
off nothing new is ever pending and ``approve``/``reject`` raise ``ratification_unsupported``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from shared.contract import errors
from shared.contract.models import Memory
from store_worker.storage import validate as v
from store_worker.storage.files import DRAFTS_DIR, atomic_write, fsync_dir

if TYPE_CHECKING:
    from shared.contract.config import StoreSettings
    from store_worker.storage.bank import Bank

log = logging.getLogger(__name__)

AUTOMATIC_CONFIDENCES = ("extracted", "inferred")


class Drafts:
    """Pending drafts: where a new record's status comes from, and the draft files."""

    def __init__(self, settings: StoreSettings) -> None:
        self.settings = settings

    def status_for(self, status: str | None, confidence: str) -> str:
        """The status of a new record: pending only for automatic writes under ratification."""
        if status is None:
            automatic = confidence in AUTOMATIC_CONFIDENCES
            return "pending" if self.settings.ratification and automatic else "canonical"
        if status not in ("canonical", "pending"):
            raise errors.InvalidArgumentError(f"unknown status {status!r}; use canonical|pending")
        if status == "pending" and not self.settings.ratification:
            raise errors.RatificationUnsupportedError(
                "ratification is off: nothing can be pending (configure ratification=true)"
            )
        return status

    @staticmethod
    def commit(bank: Bank, mem: Memory) -> Memory:
        """Write one revision where it belongs: canonical to the log, a draft to its file.

        Retiring a draft (``delete`` on a pending record) discards it like ``reject``: a draft
        was never part of the memory, so it leaves no tombstone."""
        if mem.status != "pending":
            return bank.apply(mem)
        bank.refuse_if_frozen()
        if mem.invalid_at is not None:
            discard(bank, mem.id)
            return mem
        path = draft_path(bank, mem.id)
        try:
            atomic_write(path, (mem.to_line() + "\n").encode("utf-8"))
        except errors.MemoryServiceError:
            # Refused past the rename (the folder's fsync): the file holds the new draft, the
            # next boot reads it, so RAM takes it too (the caller was told it failed).
            if _read_draft(path, quiet=True) == mem:
                bank.add_unlogged(mem)
            raise
        bank.add_unlogged(mem)
        return mem

    @staticmethod
    def refuse(*mems: Memory) -> None:
        """Supersede works on canonical records only: a draft is approved or rejected first."""
        for mem in mems:
            if mem.status == "pending":
                raise errors.ConflictError(
                    f"{mem.id!r} is a pending draft: approve or reject it first"
                )

    @staticmethod
    def load(bank: Bank) -> int:
        """Add the bank's drafts to RAM after the log replay; returns how many were loaded."""
        folder = _drafts_dir(bank)
        if not folder.is_dir():
            return 0
        added = 0
        for path in sorted(folder.glob("*.json")):
            mem = _read_draft(path)
            if mem is None:
                bank.unread_drafts.add(path.stem)  # its id stays its own (``_free_id``)
                continue
            logged = bank.records.get(mem.id)
            if logged is not None:
                if logged.created_at == mem.created_at:
                    # approve appended to the log, then crashed before removing the file
                    with contextlib.suppress(OSError):
                        path.unlink()
                else:  # another memory has its id: never delete a draft for it
                    log.warning("keeping draft %s: its id is a logged memory's", path)
                continue
            bank.add_unlogged(mem)
            added += 1
        return added

    def pending(self, bank: Bank, id: str) -> Memory:
        """The live draft ``id`` of ``bank``, for approve and reject."""
        if not self.settings.ratification:
            raise errors.RatificationUnsupportedError(
                "ratification is off (ratification_supported: false); nothing is pending"
            )
        mem = bank.records.get(v.memory_id(id))
        if mem is None or mem.invalid_at is not None:
            raise errors.NotFoundError(f"no record {v.quoted(id)} in bank {bank.name!r}")
        if mem.status != "pending":
            raise errors.ConflictError(f"{id!r} is already canonical; only drafts are ratified")
        return mem

    @staticmethod
    def approved(bank: Bank, mem: Memory) -> Memory:
        """Append the approved record to the log, then drop its draft file (a crash in
        between is healed at load: the log wins over a leftover draft). In a group commit
        the file goes only once the batch's fsync has made the line durable: a flush that
        fails (a full disk) leaves the draft pending, not lost."""
        bank.apply(mem)
        path = draft_path(bank, mem.id)
        if bank.stage is not None:
            bank.stage.after_flush(bank, lambda: _unlink(path))
        else:
            _unlink(path)
        return mem

    @staticmethod
    def of(bank: Bank) -> tuple[Memory, ...]:
        """Every pending draft of a bank, oldest first (the review inbox)."""
        found = [m for m in bank.records.values() if m.status == "pending"]
        return tuple(sorted(found, key=lambda m: (m.created_at, m.id)))


def discard(bank: Bank, id: str) -> None:
    """Remove a draft entirely: its file, its record, its vector, its index slot."""
    bank.refuse_if_frozen()
    path = draft_path(bank, id)
    try:
        _unlink(path)
    except errors.MemoryServiceError:
        if path.exists():
            raise
        _forget(bank, id)  # gone, but its removal may not be durable: RAM follows the file
        raise
    _forget(bank, id)


def _forget(bank: Bank, id: str) -> None:
    bank.records.pop(id, None)
    bank.vectors.pop(id, None)
    bank.index.remove(id)


def _drafts_dir(bank: Bank) -> Path:
    return bank.files.dir / DRAFTS_DIR


def draft_path(bank: Bank, id: str) -> Path:
    return _drafts_dir(bank) / f"{id}.json"


def _read_draft(path: Path, *, quiet: bool = False) -> Memory | None:
    try:
        mem = Memory.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as e:
        if not quiet:
            log.warning("skipping unreadable draft %s: %s", path, e)
        return None
    if mem.id != path.stem or mem.status != "pending" or v.stored_record_problem(mem):
        log.warning("skipping draft %s: id or status does not match its file", path)
        return None
    return mem


def _unlink(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
        fsync_dir(path.parent)
    except FileNotFoundError:
        return
    except OSError as e:
        raise errors.SourceUnavailableError(f"cannot remove draft {path}: {e.strerror or e}") from e


def draft_files(bank_dir: Path) -> list[Path]:
    """The draft files of a bank folder (for tests and doctor-style audits)."""
    folder = bank_dir / DRAFTS_DIR
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def refuse_stranding_drafts(banks: Iterable[Bank]) -> None:
    """Ratification goes off only with no draft waiting: with it off nothing may be pending
    (the memory.v1 provider protocol) and approve/reject refuse, so a draft left behind could
    never be resolved. Refusing, rather than approving or discarding them, leaves that choice
    to a reviewer."""
    waiting = {b.name: n for b in banks if (n := sum(m.status == "pending" for m in b.live()))}
    if waiting:
        where = ", ".join(f"{n} in {name!r}" for name, n in sorted(waiting.items()))
        raise errors.DraftsWaitingError(
            f"ratification cannot be turned off while {sum(waiting.values())} pending draft(s) "
            f"wait for review ({where}); approve or reject them first"
        )
