"""The on-disk layout: the files are the source of truth (docs/ARCHITECTURE.md).

    <data_dir>/<bank>/bank.yaml          description, created_at
    <data_dir>/<bank>/rules/<name>.md    always-injected markdown
    <data_dir>/<bank>/drafts/<id>.json   pending drafts (store_worker/storage/drafts.py)
    <data_dir>/<bank>/memories.jsonl     append-only, one full record per line, fsynced
    <data_dir>/<bank>/vectors.jsonl      derived embedding sidecar
    <data_dir>/.trash/<bank>-<ms>/       trashed banks
    <data_dir>/.state/<owner>/<key>.json sibling checkpoints

Every append is fsynced before the caller touches RAM. A failed append (a full disk) truncates
the file back to where it was, so a half-written line can never glue itself to the next one.
Every other file is written to a temp (``.<name>.<random>.tmp``) renamed into place; a kill
before the rename leaves the temp, which the next load removes (``TEMPS``).
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from shared.contract.errors import DataDirUnwritableError, storage_error

MEMORIES = "memories.jsonl"
VECTORS = "vectors.jsonl"
# Memories are private: folders the store makes are 0700 and its files 0600, as every file
# written through a temporary file (mkstemp) already is; a shared host's other users read none.
PRIVATE_DIR = 0o700
BANK_META = "bank.yaml"
RULES_DIR = "rules"
DRAFTS_DIR = "drafts"
REVIEW_DIR = "review"  # proposed rules waiting for a person (harness/review.py)
REJECTED_DIR = "review/rejected"  # proposed rules a person rejected: never proposed again
TRASH_DIR = ".trash"
STATE_DIR = ".state"
TORN_SUFFIX = ".torn"
# A bank is built under this prefix and renamed into place (``BankFiles.create``); a crash
# leaves only a dot-folder, which open skips and removes.
CREATING_PREFIX = ".creating-"
# A bank folder that is a symbolic link is never loaded: the data dir's lock does not cover
# the folder it names, which may be another bank of this store (two banks, two RAMs, one
# log: a slug taken in one was silently replaced through the other) or a bank of another
# data dir, written by the store that holds it (each store's acknowledged writes lost under
# the other's). Nothing of it is read or written; doctor names it.
LINKED = (
    "the folder it names is not covered by this data dir's lock (another bank or another "
    "store may write it); not loaded: move the folder into the data dir instead of linking it"
)
TEMPS = ".*.tmp"  # what ``atomic_write`` (and the index snapshot) write before the rename
# Beyond this a hand-edited number cannot be a timestamp or a count, and float64 (the index's
# columns, gRPC's int64) stops being exact.
MAX_EXACT = 2**53

log = logging.getLogger(__name__)


def torn_path(path: Path) -> Path:
    return path.with_suffix(path.suffix + TORN_SUFFIX)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def synced_dirs(*paths: Path) -> Iterator[None]:
    """Open the folders first, change their entries in the body, then fsync them: every
    descriptor a rename or unlink needs to be durable is held before anything changes, so
    running out of descriptors (EMFILE) refuses the call instead of failing after it."""
    fds: list[int] = []
    try:
        for path in paths:
            fds.append(os.open(path, os.O_RDONLY | os.O_DIRECTORY))
        yield
        for fd in fds:
            os.fsync(fd)
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def make_dirs(path: Path) -> list[Path]:
    """``mkdir -p path``; returns the folders it made, outermost first, so a failed write can
    take them back (``remove_dirs``) and leave the data dir as it was. Raises ``OSError``."""
    missing: list[Path] = []
    at = path
    while not at.is_dir():
        missing.append(at)
        if at.parent == at:
            break
        at = at.parent
    made: list[Path] = []
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PRIVATE_DIR)
        except FileExistsError:
            continue
        except OSError:
            remove_dirs(made)
            raise
        made.append(folder)
    return made


def remove_dirs(made: list[Path]) -> None:
    """Remove folders ``make_dirs`` made (innermost first), if they are still empty."""
    for folder in reversed(made):
        with contextlib.suppress(OSError):
            folder.rmdir()


def atomic_write(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Write-to-temp, fsync, rename, fsync the folder: readers see old or new, never half.

    ``sync=False`` keeps the temp and the rename (a reader, or a killed writer's next open,
    still sees the old or the new file whole) but skips both fsyncs: a process crash loses
    nothing (the kernel has the file), a power loss or kernel crash may lose the write or,
    on some file systems, leave the file empty. Only for state whose loss costs a redo.

    Any ``OSError`` (its folder, its temp file, the write, the rename) is a typed
    ``SourceUnavailableError``, and a refused write leaves no temp file and no new folder."""
    made: list[Path] = []
    tmp: str | None = None
    try:
        made = make_dirs(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            write_all(fd, data)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
        synced = (path.parent, *(folder.parent for folder in made)) if sync else ()
        with synced_dirs(*synced):
            os.replace(tmp, path)  # and the folders made for it: each one's entry too
            tmp = None
    except OSError as e:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        remove_dirs(made)
        raise storage_error(f"cannot write {path}", e) from e


def write_all(fd: int, data: bytes) -> None:
    """``write`` until all of ``data`` is written: a nearly full disk takes part of a write
    and refuses the rest (``ENOSPC`` on the next call). Every durable write goes through
    here (the log's appends, ``atomic_write``), so one fault injected at ``os.write`` reaches
    them all (tests/store_worker/test_faults_each_call.py)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:  # no progress and no error: never spin on it
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[n:]


FULL = (errno.ENOSPC, errno.EDQUOT)  # a disk or quota that is full: writable once freed


def check_writable(root: Path, *, full_ok: bool = False) -> None:
    """Boot-fatal check (the store never runs from RAM alone): create the root and prove a
    file can be written in it.

    With ``full_ok`` (a boot) a data dir that exists but is full (``ENOSPC``, ``EDQUOT``) is
    no refusal: it is writable, and space may come back. A store restarted on a full disk
    (Ray's restart after a crash, a one-shot ``--data-dir`` command) refused to open, so no
    recall, injection or read answered until space was freed, where the store that had been
    running answered them all and refused only writes, typed, as this one then does."""
    probe = root / f".write-probe-{os.getpid()}"
    try:
        root.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        with open(probe, "wb") as fh:
            fh.write(b"ok")
            fh.flush()
            os.fsync(fh.fileno())
        probe.unlink()
    except OSError as e:
        if full_ok and e.errno in FULL and root.is_dir():
            with contextlib.suppress(OSError):
                probe.unlink()
            log.warning(
                "data dir %s is full: reads are served, writes refused until space is freed", root
            )
            return
        raise DataDirUnwritableError(
            f"data dir {root} is not writable ({e.strerror or e}); the store will not run in RAM"
        ) from e


def remove_temps(*folders: Path) -> int:
    """Remove the temp files (``TEMPS``) in these folders; returns how many went."""
    gone = 0
    for folder in folders:
        for path in folder.glob(TEMPS):
            with contextlib.suppress(OSError):
                path.unlink()
                gone += 1
    return gone


def remove_stale_staging(root: Path) -> int:
    """Remove what a killed bank creation left (``.creating-*``); only the lock holder calls
    this, so no other process is building one."""
    gone = 0
    for path in root.glob(f"{CREATING_PREFIX}*"):
        shutil.rmtree(path, ignore_errors=True)
        gone += 1
    return gone


def names(path: str | Path, ident: tuple[int, int] | None) -> bool:
    """Whether ``path`` still names the file or folder ``ident`` ((st_dev, st_ino)): one
    renamed over it, or its removal, says no; a ``stat`` that fails otherwise cannot tell and
    says yes (the write that follows reports the real fault)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return (st.st_dev, st.st_ino) == ident
