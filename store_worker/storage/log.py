"""A bank's memory log: an append-only JSONL file, every append made durable before the caller
changes RAM.

A failed append (a full disk) cuts the file back to where it was, so a half-written line
never glues itself to the next one; a torn tail left by a crash is moved aside on open
(``torn_path``), and a line that does not parse is counted corrupt (``ReplayStats``).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from shared.contract.errors import SourceUnavailableError, storage_error
from store_worker.storage.files import (
    atomic_write,
    fsync_dir,
    make_dirs,
    names,
    remove_dirs,
    torn_path,
    write_all,
)

log = logging.getLogger(__name__)


@dataclass
class ReplayStats:
    lines: int = 0
    corrupt: int = 0
    torn: int = 0
    corrupt_at: list[int] = field(default_factory=list)


def _identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file ``path`` names, or None when there is none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _datasync(fd: int) -> None:
    """Make an append durable: ``fdatasync`` flushes the data and the metadata needed to read
    it back (the new file size), skipping timestamp-only inode writes, as SQLite does on Linux
    (measured: ~10 % more appends per second, interleaved); ``fsync`` where there is no
    ``fdatasync`` (macOS)."""
    sync = getattr(os, "fdatasync", None) or os.fsync
    sync(fd)


class AppendLog:
    """An append-only JSONL file with fsync per line and torn-tail repair on open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._name = os.fspath(path)  # what ``_still_named`` stats (no Path conversion)
        self._fh: int | None = None
        self._tail_ok = False  # the file is known to end with a newline (or be empty)
        self._created = False  # this object created the file and nothing is in it yet
        self._ident: tuple[int, int] | None = None  # (st_dev, st_ino) of the open file
        self._end = -1  # where the last append left the file's end (-1: not known)
        # Set when a refused append could not be cut back: the bytes past it are lines no
        # caller was acknowledged for (maybe only in the page cache after a failed sync), so
        # nothing reads them and nothing appends after them until they are cut (``_heal``).
        # It measures one file (``_marked``): a file put in its place since is read whole.
        self.good_size: int | None = None
        self._marked: tuple[int, int] | None = None
        # Told each time a descriptor is opened: the repository keeps a bounded number of
        # logs open (``Banks``), so many banks never run the process out of descriptors.
        self.on_open: Callable[[AppendLog], None] | None = None

    def read_bytes(self) -> bytes:
        """The whole file (empty when it does not exist yet); after a refused append that
        could not be cut back, only the bytes before it (``good_size``)."""
        mark = self._live_mark()
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return b""
        return data if mark is None else data[:mark]

    def read_lines(self) -> Iterator[tuple[int, bytes, bool]]:
        """Yield (line number, raw line, is_last_unterminated) for each non-empty line."""
        data = self.read_bytes()
        if not data:
            return
        lines = data.split(b"\n")
        last = len(lines) - 1
        for no, raw in enumerate(lines, start=1):
            if raw.strip():
                yield no, raw, (no - 1 == last)  # only an unterminated last chunk is torn

    def repair_tail(self) -> int:
        """Move an unterminated final fragment aside (``<file>.torn``) and cut it off.

        Safe only because the caller holds the data dir's lock (``lock.py``): no
        other process appends to this file, so the fragment is a torn write, never a line
        another writer is in the middle of. The sidecar is fsynced before the cut, so the
        bytes are never only in RAM; a failure cuts nothing (the next append starts a fresh
        line after the fragment, ``_unglue``)."""
        if self._live_mark() is not None:  # the next append cuts the file there first
            return 0
        try:
            with open(self.path, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            return 0
        except OSError as e:
            log.warning("cannot read %s to repair its tail: %s", self.path, e)
            return 0
        if not data or data.endswith(b"\n"):
            return 0
        cut = data.rfind(b"\n") + 1
        try:
            with open(torn_path(self.path), "ab") as side:
                side.write(data[cut:] + b"\n")
                side.flush()
                os.fsync(side.fileno())
            with open(self.path, "r+b") as fh:
                fh.truncate(cut)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as e:
            log.warning("cannot move the torn tail of %s aside: %s", self.path, e)
            return 0
        return 1

    def _open(self) -> int:
        if self._fh is not None and not self._still_named():
            self.close()  # replaced or removed by hand: append to what the path names now
        if self._fh is None:
            made = make_dirs(self.path.parent)
            existed = self.path.exists()
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            except OSError:
                remove_dirs(made)
                raise
            try:
                st = os.fstat(fd)
                for folder in made:  # a bank folder removed by hand, made again: its entry
                    fsync_dir(folder.parent)
            except OSError:
                os.close(fd)
                raise
            self._fh, self._ident = fd, (st.st_dev, st.st_ino)
            self._created = not existed
            if self.on_open is not None:
                self.on_open(self)
        return self._fh

    def _still_named(self) -> bool:
        """Whether the open descriptor is still the file the path names. An editor saves by
        writing a new file and renaming it over the log (and a purge or a restore may do the
        same): a descriptor kept on the old inode would append acknowledged lines to a file
        nobody reads again. One ``stat`` per append (~1 µs of a ~0.3 ms fsync)."""
        return names(self._name, self._ident)

    def _mark(self, start: int, ident: tuple[int, int] | None) -> None:
        """Hide, and cut before the next append, what lies past ``start`` in the file
        ``ident`` (``good_size``)."""
        mark = self._live_mark()
        self.good_size = start if mark is None else min(start, mark)
        self._marked = ident

    def _live_mark(self) -> int | None:
        """``good_size`` while the path still names the file it was measured on. A file put
        in its place since (a restore, an editor's save-by-rename, purge's rewrite) holds
        none of the refused lines: cut at the old length, it would lose lines it does hold."""
        if self.good_size is not None and not names(self._name, self._marked):
            self.good_size = None
        return self.good_size

    def append(self, line: str) -> None:
        """Append one line and fsync it; on failure cut back and raise source_unavailable."""
        self.append_many([line])

    def append_many(self, lines: list[str], *, on_written: Callable[[], None] | None = None) -> int:
        """Append lines in one write and one fsync (a supersede's retire + merge pair);
        returns where they begin (``take_back`` cuts them off again).

        ``on_written`` is called once the lines are written and just before the sync starts
        (a group commit's leader goes back to work then, ``commit.py``). A refused append
        leaves the file as it was: cut back to its old size, or removed when this append
        created it."""
        payload = "".join(line + "\n" for line in lines).encode("utf-8")
        try:
            fd = self._open()
            self._heal(fd)
        except OSError as e:
            raise storage_error(f"cannot open {self.path}", e) from e
        start: int | None = None
        try:
            start = os.lseek(fd, 0, os.SEEK_END)
            if start != self._end:  # changed since our last append (a hand edit in place)
                self._tail_ok = False
            if start and not self._tail_ok:
                payload = self._unglue(start) + payload
            write_all(fd, payload)
            if on_written is not None:
                on_written()
            _datasync(fd)
            if self._created:  # its name too: a synced file's entry is not (fsync(2))
                fsync_dir(self.path.parent)
            self._tail_ok = True
            self._created = False
            self._end = start + len(payload)
            return start
        except BaseException as e:  # an OSError, or a fault in ``on_written``: nothing stays
            if start is not None:  # else nothing was written (and 0 would cut the whole log)
                self._cut_back(fd, start)
            if isinstance(e, OSError):
                raise storage_error(f"cannot append to {self.path}", e) from e
            raise

    def rewrite(self, data: bytes) -> None:
        """Replace the whole log with ``data`` (``atomic_write``: purge's rewrite). ``data``
        was read through ``read_bytes``, so it holds nothing ``good_size`` hid; once the new
        file is in place (even when the folder's sync then failed) the mark, which measured
        the old file, no longer applies (``_live_mark``)."""
        self.close()  # its descriptor would keep appending to the old file
        atomic_write(self.path, data)

    def take_back(self, start: int) -> None:
        """Cut off what was appended since ``start`` (durable or not): a group commit takes
        back an all-or-nothing write whose lines in another bank were refused. Raises
        ``SourceUnavailableError`` when the cut cannot be made (``good_size`` then hides
        and later cuts those lines)."""
        try:
            fd = self._open()
        except OSError as e:
            self._mark(start, _identity(self.path))
            raise storage_error(f"cannot cut {self.path} back", e) from e
        self._created = False  # the file holds lines from before ``start``: never removed
        self._cut_back(fd, start)
        if self.good_size is not None:
            raise SourceUnavailableError(f"cannot cut {self.path} back to {start} bytes")

    def _cut_back(self, fd: int, start: int) -> None:
        """Take a refused append back: cut the file to ``start`` and sync the cut (a failed
        sync may have left the lines in the page cache only, where a later sync would not
        cover them and a reload would read them: fsyncgate). When the cut cannot be made,
        ``good_size`` hides and later cuts what lies past ``start``. The descriptor is
        closed either way: the next append opens the file afresh."""
        self._end = -1
        try:
            if self._created and start == 0:
                self.close()
                self.path.unlink()
            else:
                os.ftruncate(fd, start)
                _datasync(fd)
        except OSError as e:
            log.warning("cannot cut %s back to %d bytes: %s", self.path, start, e)
            self._mark(start, self._ident)
        self.close()

    def _heal(self, fd: int) -> None:
        """Cut what a refused append left past ``good_size`` before appending again; raises
        ``OSError`` (the append is refused) while the cut still cannot be made."""
        if self.good_size is None:
            return
        if self._marked == self._ident and os.fstat(fd).st_size > self.good_size:
            os.ftruncate(fd, self.good_size)  # never another file, never grow one cut since
            _datasync(fd)
        self.good_size = None
        self._end = -1

    def _unglue(self, size: int) -> bytes:
        """A newline first when the file ends mid-line (a hand edit saved without a final
        newline): a record glued onto that line would make both unreadable at replay."""
        with open(self.path, "rb") as fh:
            fh.seek(size - 1)
            return b"" if fh.read(1) == b"\n" else b"\n"

    def close(self) -> None:
        self._tail_ok = False  # the file may be edited by hand before the next append
        if self._fh is not None:
            with contextlib.suppress(OSError):
                os.close(self._fh)
            self._fh = None
