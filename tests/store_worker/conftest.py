"""Fixtures of the store tests.

- ``seen``: every event the test's ``store`` pushes, in order (a subscriber named ``recorder``).
- ``root``: ``tmp_path / "data"``, the data dir of the snapshot tests.
- ``snapshot_every_replay``: any replayed tail writes an index snapshot
  (``SNAPSHOT_MIN_LINES`` 1); a file asks for it with
  ``pytestmark = pytest.mark.usefixtures("snapshot_every_replay")``.
- ``dir_bytes(root)``: every file under ``root`` with its bytes and every folder, so a test can
  assert a refused call left the data dir byte-identical.
- ``failing_fs``: ``failing_fs(root, errno)`` makes the file layer under ``root`` fail the way
  a sick disk does, until ``.stop()``. ``EROFS``/``EACCES``/``EPERM``: every call that would
  change something (open for writing, mkdir, rename, unlink, write, truncate) fails.
  ``ENOSPC``/``EDQUOT``/``EIO``: metadata works but data does not (``write`` and a regular
  file's ``fsync`` fail: a full disk reports either, depending on the file system).
  ``EMFILE``: no descriptor can be opened.
"""

from __future__ import annotations

import errno as errno_mod
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from shared.contract.models import Event
    from store_worker.core import MemoryStore

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
READ_ONLY_ERRNOS = (errno_mod.EROFS, errno_mod.EACCES, errno_mod.EPERM)
DATA_ERRNOS = (errno_mod.ENOSPC, errno_mod.EDQUOT, errno_mod.EIO)


@pytest.fixture
def seen(store: MemoryStore) -> list[Event]:
    out: list[Event] = []
    store.subscribe("recorder", out.append)
    return out


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def snapshot_every_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    from store_worker.storage import bank as bank_mod

    monkeypatch.setattr(bank_mod, "SNAPSHOT_MIN_LINES", 1)


def snapshot_dir(root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        out[rel] = None if path.is_dir() else path.read_bytes()
    return out


@pytest.fixture
def dir_bytes() -> Callable[[Path], dict[str, bytes | None]]:
    return snapshot_dir


class FailingFS:
    """Patches ``os`` functions so calls on paths under ``root`` fail with ``code``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path, code: int) -> None:
        self.root = str(root.resolve())
        self.code = code
        self.failed = 0
        self._mp = monkeypatch
        self.active = True
        self._install()

    def stop(self) -> None:
        self.active = False

    def _under(self, path: Any) -> bool:
        try:
            text = os.fsdecode(path) if not isinstance(path, int) else ""
        except TypeError:
            return False
        if not text:
            return False
        full = os.path.abspath(text)
        return full == self.root or full.startswith(self.root + os.sep)

    def _fail(self, what: str) -> OSError:
        self.failed += 1
        return OSError(self.code, os.strerror(self.code), what)

    def _fd_under(self, fd: int) -> bool:
        try:
            return self._under(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return False

    def _install(self) -> None:
        names = (
            "open",
            "mkdir",
            "replace",
            "rename",
            "unlink",
            "rmdir",
            "write",
            "fsync",
            "fdatasync",
        )
        real = {n: getattr(os, n) for n in names}
        code = self.code
        read_only = code in READ_ONLY_ERRNOS
        data_only = code in DATA_ERRNOS

        def fake_open(path: Any, flags: int, mode: int = 0o777, *, dir_fd: Any = None) -> int:
            if self.active and self._under(path):
                if code == errno_mod.EMFILE or (read_only and flags & WRITE_FLAGS):
                    raise self._fail(f"open {path}")
            fd: int = real["open"](path, flags, mode, dir_fd=dir_fd)
            return fd

        def guarded(name: str) -> Callable[..., Any]:
            def call(*args: Any, **kw: Any) -> Any:
                if self.active and read_only and any(self._under(a) for a in args[:2]):
                    raise self._fail(f"{name} {args[0]}")
                return real[name](*args, **kw)

            return call

        def fd_data(name: str) -> Callable[..., Any]:
            # a write, or the fsync of a regular file (a full disk may report either)
            def call(fd: int, *args: Any) -> Any:
                if self.active and (read_only or data_only) and self._fd_under(fd):
                    if name == "write" or stat.S_ISREG(os.fstat(fd).st_mode):
                        raise self._fail(f"{name} fd {fd}")
                return real[name](fd, *args)

            return call

        self._mp.setattr(os, "open", fake_open)
        for name in ("mkdir", "replace", "rename", "unlink", "rmdir"):
            self._mp.setattr(os, name, guarded(name))
        for name in ("write", "fsync", "fdatasync"):
            self._mp.setattr(os, name, fd_data(name))


@pytest.fixture
def failing_fs(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Path, int], FailingFS]]:
    made: list[FailingFS] = []

    def make(root: Path, code: int) -> FailingFS:
        fs = FailingFS(monkeypatch, root, code)
        made.append(fs)
        return fs

    yield make
    for fs in made:
        fs.stop()
