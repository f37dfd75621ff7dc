"""One writer per data dir: an exclusive ``flock`` on ``<data_dir>/.lock``.

Two stores on one data dir each keep their own RAM and the last writer wins: a slug taken by
one is silently replaced by the other's, a pin is lost to a retag. So a store takes this lock
when it opens a data dir and holds it for its life; a second opener (another process, or a
second ``MemoryStore`` in this one) gets ``DataDirLockedError`` naming the holder.

Why ``fcntl.flock`` and not the ``filelock`` package: the refusal must name the holder (pid,
host, since), so the holder writes them into the lock file. ``filelock``'s Unix lock keeps no
holder record (its ``pid`` exists only for the soft fallback), and on a file system without
``flock`` it falls back to ``SoftFileLock``, whose staleness is a guess; here the kernel
releases the lock when the holder's last descriptor closes, so a crashed (SIGKILLed) holder
frees it at once and nothing ever decides a lock is stale. A file system without ``flock``
refuses to open (typed), rather than running unlocked.

The lock is taken on the data dir itself as well as on ``.lock``: a lock file removed or
replaced by hand (a cleanup of dot-files, a restore) would otherwise let a second opener lock
a new inode while the holder still locks the old one, and two stores would write one dir. The
folder cannot be swapped under a running store without moving its data too, so its ``flock``
is what decides; ``.lock`` carries the holder record the refusal names.

The folder is held, not its name: a data dir moved, removed or replaced while the store runs
(``mv data data.old; mkdir data``, a restore) leaves the path naming a folder nobody locked,
where a second store may open. ``DirLock.names_its_folder`` tells, and the store refuses every
write once the path names another folder (or none): its writes would land beside that store's.

The lock also keeps the torn-tail repair (``AppendLog.repair_tail``) safe: it cuts the log
only in the process holding the lock, so it can never cut another process's line.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from shared.contract.errors import DataDirLockedError, DataDirUnwritableError
from store_worker.storage.files import fsync_dir, make_dirs, names

LOCK_FILE = ".lock"
_BUSY = frozenset({errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES})


@dataclass
class DirLock:
    """A held lock: the open descriptors are the lock; closing them releases it."""

    root: Path
    fd: int  # ``.lock``, holding the holder record
    dir_fd: int = -1  # the data dir itself
    ident: tuple[int, int] = (-1, -1)  # (st_dev, st_ino) of the folder ``dir_fd`` locks

    def release(self) -> None:
        for fd in (self.fd, self.dir_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)  # closing the descriptor drops the flock
        self.fd = self.dir_fd = -1

    @property
    def held(self) -> bool:
        return self.fd >= 0

    def names_its_folder(self) -> bool:
        """Whether ``root`` still names the folder this lock holds (one ``stat``)."""
        return names(self.root, self.ident)


def holder(root: Path) -> dict[str, object] | None:
    """What the lock file says about its holder (``None`` when it says nothing readable)."""
    try:
        data = json.loads((root / LOCK_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def describe_holder(info: dict[str, object] | None) -> str:
    if not info:
        return "another process (it has not written its pid yet, or its .lock was removed)"
    since = info.get("since")
    when = (
        time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(since))
        if isinstance(since, int | float) and 0 <= since < 1e11
        else "an unknown time"
    )
    return f"pid {info.get('pid')} on host {info.get('host')} since {when}"


def acquire(root: Path) -> DirLock:
    """Take the data dir's lock or raise: ``DataDirLockedError`` when another store holds it
    (nothing in the data dir is changed), ``DataDirUnwritableError`` when it cannot be made."""
    try:
        for folder in make_dirs(root):  # a new data dir: its entry too, before any write
            fsync_dir(folder.parent)
        dir_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise DataDirUnwritableError(
            f"data dir {root} is not writable: cannot open it ({e.strerror or e})"
        ) from e
    st = os.fstat(dir_fd)
    taken = DirLock(root=root, fd=-1, dir_fd=dir_fd, ident=(st.st_dev, st.st_ino))
    try:
        _flock(root, dir_fd)  # first: decides even when ``.lock`` was removed by hand
        try:
            taken.fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as e:
            raise DataDirUnwritableError(
                f"data dir {root} is not writable: cannot open its lock file ({e.strerror or e})"
            ) from e
        _flock(root, taken.fd)  # what a store that locks only ``.lock`` checks
        try:
            _write_holder(taken.fd)
        except OSError as e:
            raise DataDirUnwritableError(
                f"cannot write the lock file of data dir {root} ({e.strerror or e})"
            ) from e
    except BaseException:
        taken.release()
        raise
    return taken


def _flock(root: Path, fd: int) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in _BUSY:
            raise DataDirLockedError(
                f"data dir {root} is in use by {describe_holder(holder(root))}"
            ) from e
        raise DataDirUnwritableError(
            f"cannot lock data dir {root} ({e.strerror or e}); the store will not run unlocked"
        ) from e


def _write_holder(fd: int) -> None:
    info = {"pid": os.getpid(), "host": socket.gethostname(), "since": round(time.time(), 3)}
    payload = json.dumps(info, sort_keys=True).encode() + b"\n"
    os.ftruncate(fd, 0)
    os.pwrite(fd, payload, 0)
    os.fsync(fd)


def hold(root: Path, current: DirLock | None) -> DirLock:
    """The lock of ``root``: ``current`` when it already is, else a newly taken one (and then
    ``current``, another dir's, is released; if taking fails, ``current`` is kept)."""
    if current is not None and current.held and current.root == root:
        return current
    taken = acquire(root)
    if current is not None:
        current.release()
    return taken


def release(current: DirLock | None) -> None:
    if current is not None:
        current.release()
