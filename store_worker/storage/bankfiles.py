"""One bank's folder on disk: its ``bank.yaml`` (description, creation time), its rule files,
its log (``log.AppendLog``), creating the folder atomically and moving it to ``.trash``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
from pathlib import Path
from typing import Any

from shared.contract.errors import SourceUnavailableError, reason, storage_error
from store_worker.storage.files import (
    BANK_META,
    CREATING_PREFIX,
    DRAFTS_DIR,
    MAX_EXACT,
    MEMORIES,
    PRIVATE_DIR,
    REJECTED_DIR,
    REVIEW_DIR,
    RULES_DIR,
    TRASH_DIR,
    VECTORS,
    atomic_write,
    fsync_dir,
    make_dirs,
    remove_dirs,
    remove_temps,
    synced_dirs,
)
from store_worker.storage.log import AppendLog
from store_worker.storage.validate import is_name

log = logging.getLogger(__name__)


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
        sidecar's rewrite, bank.yaml, a rule, a draft, a proposed rule, the index snapshot):
        each holds only content a rename would have put in place, and the file it was for is
        whole (old or new). Only the lock holder loads a bank, and no write of this bank is
        in progress (a reload waits for the snapshot writer of the bank it replaces,
        ``Banks``)."""
        return remove_temps(
            self.dir,
            self.rules_dir,
            self.dir / DRAFTS_DIR,
            self.dir / REVIEW_DIR,
            self.dir / REJECTED_DIR,
        )

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
        return self.read_rules_checked()[0]

    def read_rules_checked(self) -> tuple[dict[str, str], dict[str, str]]:
        """The readable rules, and each rule whose file is there but cannot be read, with
        why (``rules/style.md: not UTF-8 (byte 0xff at 312)``): injection says it is
        missing, never drops it unseen. A file whose name no call could reach is no rule."""
        rules: dict[str, str] = {}
        unread: dict[str, str] = {}
        for path, content, why in rule_files(self.rules_dir):
            if content is not None:
                rules[path.stem] = content
                continue
            log.warning("bank %s: %s: %s; the rule is skipped", self.name, path, why)
            if path != self.rules_dir and is_name(path.stem):
                unread[path.stem] = f"{RULES_DIR}/{path.name}: {why}"
        return rules, unread

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
    return [
        (path, content, None if why is None else f"{path}: {why}; the rule is skipped")
        if path != folder
        else (path, content, f"{path}: {why}")
        for path, content, why in rule_files(folder)
    ]


def rule_files(folder: Path) -> list[tuple[Path, str | None, str | None]]:
    """(path, content, why) per ``*.md`` file: why it has no content, in a few words."""
    try:
        paths = sorted(folder.glob("*.md")) if folder.is_dir() else []
    except OSError as e:
        return [(folder, None, f"unreadable ({e.strerror or e})")]
    out: list[tuple[Path, str | None, str | None]] = []
    for path in paths:
        if not is_name(path.stem):
            out.append((path, None, "not a valid rule name"))
            continue
        try:
            # bytes, not read_text: universal newlines would turn a "\r" into "\n"
            out.append((path, path.read_bytes().decode("utf-8"), None))
        except UnicodeDecodeError as e:
            bad = f"byte 0x{e.object[e.start]:02x} at {e.start}"
            out.append((path, None, f"not UTF-8 ({bad})"))
        except OSError as e:
            out.append((path, None, f"unreadable ({e.strerror or e})"))
    return out
