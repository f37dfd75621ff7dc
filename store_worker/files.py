"""The on-disk layout (DESIGN §2 "On disk"): the files are the source of truth.

    <data_dir>/<bank>/bank.yaml          description, created_at
    <data_dir>/<bank>/rules/<name>.md    always-injected markdown
    <data_dir>/<bank>/drafts/<id>.json   pending drafts (store_worker/drafts.py)
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
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared.errors import DataDirUnwritableError, SourceUnavailableError, reason, storage_error
from store_worker.validate import is_name

MEMORIES = "memories.jsonl"
VECTORS = "vectors.jsonl"
# Memories are private: folders the store makes are 0700 and its files 0600, as every file
# written through a temporary file (mkstemp) already is; a shared host's other users read none.
PRIVATE_DIR = 0o700
BANK_META = "bank.yaml"
RULES_DIR = "rules"
DRAFTS_DIR = "drafts"
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


def atomic_write(path: Path, data: bytes) -> None:
    """Write-to-temp, fsync, rename, fsync the folder: readers see old or new, never half.

    Any ``OSError`` (its folder, its temp file, the write, the rename) is a typed
    ``SourceUnavailableError``, and a refused write leaves no temp file and no new folder."""
    made: list[Path] = []
    tmp: str | None = None
    try:
        made = make_dirs(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        with synced_dirs(path.parent, *(folder.parent for folder in made)):
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
    """Boot-fatal check (DESIGN §2): create the root and prove a file can be written in it.

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


@dataclass
class ReplayStats:
    lines: int = 0
    corrupt: int = 0
    torn: int = 0
    corrupt_at: list[int] = field(default_factory=list)


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
    (issue 14: ~10 % more appends per second here, interleaved); ``fsync`` where there is no
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

        Safe only because the caller holds the data dir's lock (``store_worker/lock.py``): no
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


class BankFiles:
    """Paths and file operations of one bank folder."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.name = name
        self.dir = root / name
        self.log = AppendLog(self.dir / MEMORIES)

    @property
    def rules_dir(self) -> Path:
        return self.dir / RULES_DIR

    def exists(self) -> bool:
        return self.dir.is_dir()

    def create(self, description: str, created_at: int) -> None:
        """Build the folder under a dot-name, then rename it into place: a refused or killed
        creation leaves no bank behind (open skips and removes ``.creating-*`` folders)."""
        staging = self.root / f"{CREATING_PREFIX}{self.name}-{os.getpid()}"
        try:
            shutil.rmtree(staging, ignore_errors=True)
            staging.mkdir(mode=PRIVATE_DIR)
            (staging / RULES_DIR).mkdir(mode=PRIVATE_DIR)
            atomic_write(staging / BANK_META, _meta_doc(description, created_at))
            fsync_dir(staging)
            with synced_dirs(self.root):
                os.rename(staging, self.dir)  # refuses to replace a folder made meanwhile
        except (OSError, SourceUnavailableError) as e:
            _remove_staging(staging)
            if isinstance(e, SourceUnavailableError):
                raise
            raise storage_error(f"cannot create bank {self.name}", e) from e

    def remove_if_bare(self) -> bool:
        """Take back a bank folder a refused write created (``Banks.take_back``): only while
        it holds nothing but what ``create`` put there (``bank.yaml``, an empty ``rules/``),
        an empty log a refused first append left, or a derived vector sidecar. The folder is
        renamed to a staging name first (one synced step: a crash after it leaves a
        dot-folder the next open removes), then removed. Whether the path no longer names a
        bank: a refusal along the way (logged) that leaves it in place answers False."""
        try:
            entries = {p.name: p for p in self.dir.iterdir()}
            if set(entries) - {BANK_META, RULES_DIR, MEMORIES, VECTORS}:
                return False
            if MEMORIES in entries and entries[MEMORIES].stat().st_size:
                return False
            if RULES_DIR in entries and any(entries[RULES_DIR].iterdir()):
                return False
        except OSError:
            return False
        self.log.close()
        staging = self.root / f"{CREATING_PREFIX}{self.name}-{os.getpid()}"
        try:
            shutil.rmtree(staging, ignore_errors=True)
            with synced_dirs(self.root):
                os.rename(self.dir, staging)
        except OSError as e:
            log.warning("cannot take back the new bank %s: %s", self.name, e)
        if self.dir.is_dir():
            return False
        shutil.rmtree(staging, ignore_errors=True)  # what is left goes at the next open
        return True

    def remove_stale_temps(self) -> int:
        """Remove the temp files a killed write left in the bank's folders (the log's or the
        sidecar's rewrite, bank.yaml, a rule, a draft, the index snapshot): each holds only
        content a rename would have put in place, and the file it was for is whole (old or
        new). Only the lock holder loads a bank, and no write of this bank is in progress
        (a reload waits for the snapshot writer of the bank it replaces, ``Banks``)."""
        return remove_temps(self.dir, self.rules_dir, self.dir / DRAFTS_DIR)

    def read_meta(self) -> tuple[str, int]:
        """``bank.yaml``'s description and created_at; a value that cannot be read gets a safe
        default (``""``, 0) and a warning; ``problems`` (and doctor) say which and why."""
        description, created_at, problem = meta_problem(self.dir / BANK_META)
        if problem:
            log.warning("bank %s: %s", self.name, problem)
        return description, created_at

    def write_meta(self, description: str, created_at: int) -> None:
        atomic_write(self.dir / BANK_META, _meta_doc(description, created_at))

    def read_rules(self) -> dict[str, str]:
        """The readable rules; an unreadable one is skipped with a warning (and doctor lists
        it: ``rule_problems``)."""
        out: dict[str, str] = {}
        for path, content, problem in read_rule_files(self.rules_dir):
            if problem:
                log.warning("bank %s: %s", self.name, problem)
            elif content is not None:
                out[path.stem] = content
        return out

    def write_rule(self, name: str, content: str) -> None:
        atomic_write(self.rules_dir / f"{name}.md", content.encode("utf-8"))

    def remove_rule(self, name: str) -> bool:
        path = self.rules_dir / f"{name}.md"
        if not path.exists():
            return False
        try:
            with synced_dirs(self.rules_dir):
                path.unlink()
        except OSError as e:
            raise storage_error(f"cannot remove rule {name}", e) from e
        return True

    def trash(self, now_ms: int) -> Path:
        self.log.close()
        trash = self.root / TRASH_DIR
        made: list[Path] = []
        try:
            made = make_dirs(trash)
            target = trash / f"{self.name}-{now_ms}"
            n = 1
            while target.exists():
                n += 1
                target = trash / f"{self.name}-{now_ms}-{n}"
            with synced_dirs(self.root, trash):
                os.replace(self.dir, target)
        except OSError as e:
            if self.dir.is_dir():
                remove_dirs(made)
            raise storage_error(f"cannot trash bank {self.name}", e) from e
        return target


def _remove_staging(staging: Path) -> None:
    """Take back a refused creation by name, without new descriptors (``rmtree`` needs them,
    and the refusal may be EMFILE); whatever is left is removed at the next open."""
    with contextlib.suppress(OSError):
        (staging / BANK_META).unlink(missing_ok=True)
    remove_dirs([staging, staging / RULES_DIR])
    shutil.rmtree(staging, ignore_errors=True)


def _meta_doc(description: str, created_at: int) -> bytes:
    doc: str = _yaml().safe_dump(
        {"description": description, "created_at": created_at}, allow_unicode=True
    )
    return doc.encode("utf-8")


def _yaml() -> Any:
    """PyYAML, imported when a ``bank.yaml`` needs it (~10 ms a one-shot process skips)."""
    import yaml

    return yaml


# What ``safe_dump`` writes for a plain description: read without the YAML parser.
_PLAIN_META = re.compile(
    rb"created_at: (?P<at>[0-9]{1,16})\n"
    rb"description: (?:''|(?P<text>[A-Za-z][A-Za-z0-9 ,.()_-]*[A-Za-z0-9.)]|[A-Za-z]))\n"
)
# Plain words YAML 1.1 reads as a bool or null, not as the text.
_YAML_WORDS = frozenset("y n yes no true false on off null".split())


def _plain_meta(raw: bytes) -> dict[str, Any] | None:
    """``bank.yaml`` as the store writes it for a description of plain words (the common
    case), or None for anything else, which the YAML parser reads."""
    found = _PLAIN_META.fullmatch(raw)
    if found is None:
        return None
    text = found.group("text")
    if text is not None and text.lower() in _YAML_WORDS:
        return None
    return {"created_at": int(found.group("at")), "description": text.decode() if text else ""}


def meta_problem(path: Path) -> tuple[str, int, str | None]:
    """(description, created_at, what is wrong with ``bank.yaml`` or ``None``). Every value
    a hand edit can put there (``abc``, ``.inf``, ``[1,2]``, ``1e400``, a YAML error, bad
    UTF-8) gives the safe default for that field and a problem naming the file."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return "", 0, f"{path}: missing"
    except OSError as e:
        return "", 0, f"{path}: unreadable ({e.strerror or e})"
    try:
        meta = _plain_meta(raw) or _yaml().safe_load(raw.decode("utf-8")) or {}
    except UnicodeDecodeError as e:
        return "", 0, f"{path}: not UTF-8 (byte {e.start})"
    except (_yaml().YAMLError, RecursionError) as e:
        where = getattr(e, "problem_mark", None)
        line = f" line {where.line + 1}" if where is not None else ""
        why = getattr(e, "problem", None) or reason(e)  # "could not find expected ':'"
        return "", 0, f"{path}:{line} not YAML ({why})"
    if not isinstance(meta, dict):
        return "", 0, f"{path}: not a mapping of description and created_at"
    problems: list[str] = []
    description = meta.get("description")
    if description is None:
        description = ""
    elif not isinstance(description, str):
        problems.append(f"description is {type(description).__name__}, not text")
        description = ""
    created_at = meta.get("created_at")
    if created_at is None:
        created_at = 0
    elif (
        not isinstance(created_at, int)
        or isinstance(created_at, bool)
        or not 0 <= created_at <= MAX_EXACT
    ):
        problems.append(f"created_at {str(created_at)[:40]!r} is not a time in ms")
        created_at = 0
    return description, created_at, (f"{path}: " + "; ".join(problems)) if problems else None


def read_rule_files(folder: Path) -> list[tuple[Path, str | None, str | None]]:
    """(path, content, problem) per ``*.md`` file: a rule that is not UTF-8, cannot be read
    or whose name no call could reach has no content and a problem."""
    try:
        paths = sorted(folder.glob("*.md")) if folder.is_dir() else []
    except OSError as e:
        return [(folder, None, f"{folder}: unreadable ({e.strerror or e})")]
    out: list[tuple[Path, str | None, str | None]] = []
    for path in paths:
        if not is_name(path.stem):
            out.append((path, None, f"{path}: not a valid rule name; the rule is skipped"))
            continue
        try:
            # bytes, not read_text: universal newlines would turn a "\r" into "\n"
            out.append((path, path.read_bytes().decode("utf-8"), None))
        except UnicodeDecodeError as e:
            out.append((path, None, f"{path}: not UTF-8 (byte {e.start}); the rule is skipped"))
        except OSError as e:
            out.append((path, None, f"{path}: unreadable ({e.strerror or e}); skipped"))
    return out


class StateStore:
    """Sibling key-value checkpoints under ``.state/<owner>/<key>.json`` (DESIGN §3)."""

    def __init__(self, root: Path) -> None:
        self.dir = root / STATE_DIR

    def path(self, owner: str, key: str) -> Path:
        return self.dir / owner / f"{key}.json"

    def remove_stale_temps(self) -> int:
        """Remove what killed writes left (``TEMPS``); only the lock holder calls this."""
        return remove_temps(*(p for p in self.dir.glob("*") if p.is_dir()))

    def read(self, owner: str, key: str) -> object | None:
        """The value, or None when the key was never written. Raises ``OSError``,
        ``ValueError`` or ``RecursionError`` when the file is there but cannot be read (an
        I/O error, a hand edit): for a value the store must not guess (``ShardGuard``)."""
        try:
            value: object = json.loads(self.path(owner, key).read_text("utf-8"))
        except FileNotFoundError:
            return None
        return value

    def get(self, owner: str, key: str) -> object | None:
        path = self.path(owner, key)
        try:
            return self.read(owner, key)
        except (OSError, ValueError, RecursionError) as e:
            # a hand edit (bad UTF-8, not JSON, nested past the parser's depth): the owner
            # starts that key afresh; doctor's files_readable names the file until it is fixed
            log.warning("unreadable state %s: %s", path, type(e).__name__)
            return None

    def set(self, owner: str, key: str, value: object) -> None:
        atomic_write(self.path(owner, key), json.dumps(value, sort_keys=True).encode("utf-8"))

    def prune(self, owner: str, older_than: float) -> int:
        """Delete ``owner``'s keys last written before ``older_than`` (epoch seconds, file
        mtime); returns how many went. Only for state that is safe to forget."""
        gone = 0
        try:
            paths = list((self.dir / owner).glob("*.json"))
        except OSError:
            return 0
        for path in paths:
            try:
                if path.stat().st_mtime < older_than:
                    path.unlink()
                    gone += 1
            except OSError:
                continue  # raced with a writer or already gone: next prune sees it
        return gone
