"""The on-disk layout (DESIGN §2 "On disk"): the files are the source of truth.

    <data_dir>/<bank>/bank.yaml          description, created_at
    <data_dir>/<bank>/rules/<name>.md    always-injected markdown
    <data_dir>/<bank>/memories.jsonl     append-only, one full record per line, fsynced
    <data_dir>/<bank>/vectors.jsonl      derived embedding sidecar
    <data_dir>/.trash/<bank>-<ms>/       trashed banks
    <data_dir>/.state/<owner>/<key>.json sibling checkpoints

Every append is fsynced before the caller touches RAM. A failed append (a full disk) truncates
the file back to where it was, so a half-written line can never glue itself to the next one.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from shared.errors import DataDirUnwritableError, SourceUnavailableError

MEMORIES = "memories.jsonl"
VECTORS = "vectors.jsonl"
BANK_META = "bank.yaml"
RULES_DIR = "rules"
TRASH_DIR = ".trash"
STATE_DIR = ".state"


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write-to-temp, fsync, rename, fsync the folder: readers see old or new, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise SourceUnavailableError(f"cannot write {path}: {e.strerror or e}") from e


def check_writable(root: Path) -> None:
    """Boot-fatal check (DESIGN §2): create the root and prove a file can be written in it."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".write-probe-{os.getpid()}"
        with open(probe, "wb") as fh:
            fh.write(b"ok")
            fh.flush()
            os.fsync(fh.fileno())
        probe.unlink()
    except OSError as e:
        raise DataDirUnwritableError(
            f"data dir {root} is not writable ({e.strerror or e}); the store will not run in RAM"
        ) from e


@dataclass
class ReplayStats:
    lines: int = 0
    corrupt: int = 0
    torn: int = 0
    corrupt_at: list[int] = field(default_factory=list)


class AppendLog:
    """An append-only JSONL file with fsync per line and torn-tail repair on open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: int | None = None
        self._tail_ok = False  # the file is known to end with a newline (or be empty)

    def read_bytes(self) -> bytes:
        """The whole file (empty when it does not exist yet)."""
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return b""

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
        """Move an unterminated final fragment aside (``<file>.torn``) and cut it off."""
        if not self.path.exists():
            return 0
        size = self.path.stat().st_size
        if size == 0:
            return 0
        with open(self.path, "rb") as fh:
            data = fh.read()
        if data.endswith(b"\n"):
            return 0
        cut = data.rfind(b"\n") + 1
        with open(self.path.with_suffix(self.path.suffix + ".torn"), "ab") as side:
            side.write(data[cut:] + b"\n")
        with open(self.path, "r+b") as fh:
            fh.truncate(cut)
            fh.flush()
            os.fsync(fh.fileno())
        return 1

    def _open(self) -> int:
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return self._fh

    def append(self, line: str) -> None:
        """Append one line and fsync it; on failure cut back and raise source_unavailable."""
        self.append_many([line])

    def append_many(self, lines: list[str]) -> None:
        """Append lines in one write and one fsync (a supersede's retire + merge pair)."""
        payload = "".join(line + "\n" for line in lines).encode("utf-8")
        try:
            fd = self._open()
        except OSError as e:
            raise SourceUnavailableError(f"cannot open {self.path}: {e.strerror or e}") from e
        start = os.lseek(fd, 0, os.SEEK_END)
        try:
            if start and not self._tail_ok:
                payload = self._unglue(start) + payload
            written = os.write(fd, payload)
            while written < len(payload):
                written += os.write(fd, payload[written:])
            os.fsync(fd)
            self._tail_ok = True
        except OSError as e:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise SourceUnavailableError(f"cannot append to {self.path}: {e.strerror or e}") from e

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
        self.rules_dir.mkdir(parents=True, exist_ok=True)
        self.write_meta(description, created_at)
        fsync_dir(self.root)

    def read_meta(self) -> tuple[str, int]:
        path = self.dir / BANK_META
        try:
            meta = yaml.safe_load(path.read_text("utf-8")) or {}
        except (OSError, yaml.YAMLError):
            return "", 0
        if not isinstance(meta, dict):
            return "", 0
        return str(meta.get("description") or ""), int(meta.get("created_at") or 0)

    def write_meta(self, description: str, created_at: int) -> None:
        doc = yaml.safe_dump(
            {"description": description, "created_at": created_at}, allow_unicode=True
        )
        atomic_write(self.dir / BANK_META, doc.encode("utf-8"))

    def read_rules(self) -> dict[str, str]:
        if not self.rules_dir.is_dir():
            return {}
        out: dict[str, str] = {}
        for path in sorted(self.rules_dir.glob("*.md")):
            with contextlib.suppress(OSError, UnicodeDecodeError):
                # bytes, not read_text: universal newlines would turn a "\r" into "\n"
                out[path.stem] = path.read_bytes().decode("utf-8")
        return out

    def write_rule(self, name: str, content: str) -> None:
        atomic_write(self.rules_dir / f"{name}.md", content.encode("utf-8"))

    def remove_rule(self, name: str) -> bool:
        path = self.rules_dir / f"{name}.md"
        if not path.exists():
            return False
        try:
            path.unlink()
            fsync_dir(self.rules_dir)
        except OSError as e:
            raise SourceUnavailableError(f"cannot remove rule {name}: {e.strerror or e}") from e
        return True

    def trash(self, now_ms: int) -> Path:
        self.log.close()
        trash = self.root / TRASH_DIR
        trash.mkdir(parents=True, exist_ok=True)
        target = trash / f"{self.name}-{now_ms}"
        n = 1
        while target.exists():
            n += 1
            target = trash / f"{self.name}-{now_ms}-{n}"
        try:
            os.replace(self.dir, target)
            fsync_dir(self.root)
            fsync_dir(trash)
        except OSError as e:
            raise SourceUnavailableError(f"cannot trash bank {self.name}: {e.strerror or e}") from e
        return target


class StateStore:
    """Sibling key-value checkpoints under ``.state/<owner>/<key>.json`` (DESIGN §3)."""

    def __init__(self, root: Path) -> None:
        self.dir = root / STATE_DIR

    def _path(self, owner: str, key: str) -> Path:
        return self.dir / owner / f"{key}.json"

    def get(self, owner: str, key: str) -> object | None:
        path = self._path(owner, key)
        try:
            value: object = json.loads(path.read_text("utf-8"))
            return value
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return None

    def set(self, owner: str, key: str, value: object) -> None:
        atomic_write(self._path(owner, key), json.dumps(value, sort_keys=True).encode("utf-8"))

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
