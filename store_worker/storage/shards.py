"""This store as one shard of several (routing is ``shared.client.shards``).

``ShardGuard`` holds the slot table this store was last given (``shard_routing``), durably in
its own state, and its own shard number (``StoreSettings.shard_index``). ``Banks.resolve``
asks it about every bank a call names:

- a bank whose slot another shard owns is refused with a retryable ``source_unavailable``
  marked ``[moved]`` (the caller's table is stale: it re-reads it and goes there);
- a bank whose slot is being moved away is *frozen*: it is read, but every write (a log line,
  a rule file, its description, its deletion) is refused, retryably, until the move is done.

The move itself (``shared.client.sharded.rebalance``) uses three admin calls, each refusing what
would lose data: ``export`` only a frozen or foreign bank (no write can follow the copy),
``import`` only a bank this shard does not own yet (never over a live one; a leftover copy of an
earlier attempt goes to ``.trash``), ``release`` only a bank this shard no longer owns.
Without a table (one store) every bank is owned and nothing is ever frozen.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from shared.client.shards import STATE_KEY, STATE_OWNER, Routing, frozen_error, moved_error
from shared.contract import errors
from store_worker.storage import validate as v
from store_worker.storage.files import (
    CREATING_PREFIX,
    MEMORIES,
    atomic_write,
    fsync_dir,
    synced_dirs,
)
from store_worker.storage.state import StateStore

if TYPE_CHECKING:
    from store_worker.storage.banks import Banks

MAX_IMPORT_FILES = 100_000


class ShardGuard:
    """Which banks this shard serves and which it only reads (see the module docstring)."""

    def __init__(self, state: StateStore, index: int) -> None:
        self.state = state
        self.index = index
        self.routing = _stored_routing(state)

    def owns(self, bank: str) -> bool:
        return self.routing.owner(bank) == self.index

    def check(self, bank: str) -> bool:
        """Refuse a bank served elsewhere; answer whether it is frozen for writes."""
        owner = self.routing.owner(bank)
        if owner != self.index:
            raise moved_error(bank, owner, self.routing.version)
        return self.routing.frozen(bank)

    def set(self, raw: object) -> Routing:
        """Take a newer table (durably first); an older version is refused, a same one kept."""
        table = Routing.parse(raw)
        if table.version < self.routing.version:
            raise errors.ConflictError(
                f"routing v{table.version} is older than this shard's v{self.routing.version}"
            )
        self.state.set(STATE_OWNER, STATE_KEY, table.dump())
        self.routing = table
        return table

    def can_copy(self, bank: str) -> None:
        if self.owns(bank) and not self.routing.frozen(bank):
            raise errors.ConflictError(
                f"bank {bank!r} is live on this shard: freeze its slot (start the move) first"
            )

    def can_place(self, bank: str) -> None:
        if self.owns(bank):
            raise errors.ConflictError(f"bank {bank!r} is owned by this shard: not replaced")

    def can_release(self, bank: str) -> None:
        if self.owns(bank):
            raise errors.ConflictError(f"bank {bank!r} is owned by this shard: not released")

    def describe(self) -> dict[str, Any]:
        return {"shard": self.index, "routing": self.routing.dump()}


def _stored_routing(state: StateStore) -> Routing:
    """The table this shard was last given. A table file that is there but cannot be read
    (an I/O error, garbage appended by hand) refuses the open: read as "no table", it would
    make shard 0 the owner of every bank and take acknowledged writes for banks another
    shard serves (where no client looks for them), and hand clients a table that hides
    them. Every shard keeps a copy of the last table it took: restore the file from one."""
    try:
        return Routing.parse(state.read(STATE_OWNER, STATE_KEY))
    except (OSError, ValueError, RecursionError) as e:
        path = state.path(STATE_OWNER, STATE_KEY)
        why = e.strerror if isinstance(e, OSError) and e.strerror else "not JSON"
        raise errors.SourceUnavailableError(
            f"the shard routing table {path} cannot be read ({why}); this store will not "
            "serve banks by a guessed table: restore the file from another shard's copy",
            retryable=isinstance(e, OSError) and e.errno in errors.TRANSIENT_ERRNOS,
        ) from e


def export_files(folder: Path) -> dict[str, bytes]:
    """Every file of a bank folder by its relative POSIX path."""
    out: dict[str, bytes] = {}
    try:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                out[path.relative_to(folder).as_posix()] = path.read_bytes()
    except OSError as e:
        raise errors.storage_error(f"cannot read bank folder {folder}", e) from e
    return out


def _safe_relative(raw: object) -> PurePosixPath:
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        raise errors.InvalidArgumentError(f"bad file name in a bank import: {raw!r}")
    rel = PurePosixPath(raw)
    if rel.is_absolute() or any(part in ("", ".", "..") for part in rel.parts):
        raise errors.InvalidArgumentError(f"file name outside the bank in an import: {raw!r}")
    return rel


def check_import(files: object) -> dict[PurePosixPath, bytes]:
    """The import's files, validated before anything is written."""
    if not isinstance(files, dict) or not files or len(files) > MAX_IMPORT_FILES:
        raise errors.InvalidArgumentError("an import is a non-empty mapping of path → bytes")
    out: dict[PurePosixPath, bytes] = {}
    for raw, data in files.items():
        if not isinstance(data, bytes):
            raise errors.InvalidArgumentError(f"import file {raw!r} is not bytes")
        out[_safe_relative(raw)] = data
    return out


def write_staged(root: Path, name: str, files: dict[PurePosixPath, bytes]) -> Path:
    """Write a bank's files under a ``.creating-`` folder (removed at boot if a kill leaves
    it), each fsynced; the caller renames it into place."""
    staging = root / f"{CREATING_PREFIX}import-{name}-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for rel, data in files.items():
            atomic_write(staging / Path(*rel.parts), data)
        fsync_dir(staging)
    except (OSError, errors.SourceUnavailableError) as e:
        shutil.rmtree(staging, ignore_errors=True)
        if isinstance(e, OSError):  # the folder's own sync: typed like every other refusal
            raise errors.storage_error(f"cannot write imported bank {name}", e) from e
        raise
    return staging


def place(staging: Path, target: Path) -> None:
    """Rename the staged folder into place (one atomic step the log replays from)."""
    try:
        with synced_dirs(target.parent):
            os.rename(staging, target)
    except OSError as e:
        with contextlib.suppress(OSError):
            shutil.rmtree(staging)
        raise errors.storage_error(f"cannot place imported bank {target.name}", e) from e


__all__ = ["ShardGuard", "check_import", "export_files", "frozen_error", "place", "write_staged"]


def copy_bank(shard: ShardGuard, banks: Banks, name: str) -> dict[str, bytes]:
    """A frozen or foreign bank's files, by relative path (a move's copy step)."""
    name = v.bank_name(name)
    shard.can_copy(name)
    bank = banks.get(name)
    if bank is None:
        raise errors.NotFoundError(f"no bank named {name!r} on this shard")
    exported = export_files(bank.files.dir)
    if MEMORIES in exported:  # as replay reads it: never a refused append left uncut
        exported[MEMORIES] = bank.files.log.read_bytes()  # (``AppendLog.good_size``)
    return exported


def place_bank(
    shard: ShardGuard, banks: Banks, root: Path, name: str, files: dict[str, bytes]
) -> str:
    """Place a bank's files (``copy_bank``) under ``root``, for the caller to load; the bank
    must not be owned by this shard yet, and an earlier copy of it goes to ``.trash``.
    Answers the bank's name, checked."""
    name = v.bank_name(name)
    shard.can_place(name)
    staged = check_import(files)
    staging = write_staged(root, name, staged)
    old = banks.get(name)
    if old is not None:
        banks.discard(old)
    elif (root / name).exists():  # a folder no bank was loaded from
        shutil.rmtree(staging, ignore_errors=True)
        raise errors.ConflictError(f"{root / name} exists and is not a bank")
    try:
        place(staging, root / name)
    except errors.MemoryServiceError:
        if (root / name).is_dir():  # past the rename (the folder's sync failed): a
            banks.reread(name)  # bank in place that RAM ignored refused the retry
        raise
    return name


def release_bank(shard: ShardGuard, banks: Banks, name: str) -> Path:
    """Trash this shard's copy of a bank another shard now owns (a move's last step)."""
    name = v.bank_name(name)
    shard.can_release(name)
    bank = banks.get(name)
    if bank is None:
        raise errors.NotFoundError(f"no bank named {name!r} on this shard")
    return banks.discard(bank)
