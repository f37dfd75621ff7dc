"""Every file the store reads, checked afresh: doctor's ``files_readable``.

Open never fails on one bad record or file: a bad ``bank.yaml`` value gets a safe default, an
unreadable rule, draft, state or outbox file is skipped, a bad log line is counted corrupt.
Each of those only logs a warning at open, so this scan is what keeps them visible: doctor
lists every problem (which file, which line, what) until the file is fixed or removed. It
also lists what a repair left beside the data: ``*.torn`` fragments and ``*.bad`` jobs.

It reads only; it never repairs. The constants name the layout (``files.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from pydantic import ValidationError

from shared.contract.errors import reason
from shared.contract.models import Memory, RuleProposal
from store_worker.storage.bankfiles import meta_problem, read_rule_files
from store_worker.storage.files import (
    BANK_META,
    CREATING_PREFIX,
    DRAFTS_DIR,
    LINKED,
    MEMORIES,
    REJECTED_DIR,
    REVIEW_DIR,
    RULES_DIR,
    STATE_DIR,
    TORN_SUFFIX,
)
from store_worker.storage.validate import is_name, stored_record_problem

OUTBOX_DIR = ".outbox"  # store_worker/harness/outbox.py
OUTBOX_SUBDIRS = ("queue", "dead")
MAX_LISTED = 50


def problems(root: Path, corrupt_lines: Mapping[str, Iterable[int]]) -> list[str]:
    """What is wrong with the files under ``root``; ``corrupt_lines`` maps a bank to the log
    lines its replay skipped (``ReplayStats.corrupt_at``), re-read here for the reason."""
    found: list[str] = []
    for path in _children(root):
        if path.name.startswith(CREATING_PREFIX):
            found.append(f"{path}: an unfinished bank creation (removed at the next open)")
        elif path.is_dir() and not path.name.startswith("."):
            if not is_name(path.name):
                found.append(f"{path}: not a valid bank name; the folder is ignored")
                continue
            if path.is_symlink():
                found.append(f"{path}: a link to a folder elsewhere; {LINKED}")
                continue
            found.extend(_bank_problems(path, corrupt_lines.get(path.name, ())))
    found.extend(_json_problems(root / STATE_DIR, "*/*.json", _json_ok))
    for sub in OUTBOX_SUBDIRS:
        folder = root / OUTBOX_DIR / sub
        found.extend(_json_problems(folder, "*.json", _json_ok))
        found.extend(f"{p}: an unreadable job set aside at open" for p in _glob(folder, "*.bad"))
    return found


def _bank_problems(folder: Path, corrupt_at: Iterable[int]) -> Iterator[str]:
    meta = folder / BANK_META
    if meta.exists():
        problem = meta_problem(meta)[2]
        if problem:
            yield problem
    for _, _, problem in read_rule_files(folder / RULES_DIR):
        if problem:
            yield problem
    yield from _log_problems(folder / MEMORIES, corrupt_at)
    for torn in _glob(folder, f"*{TORN_SUFFIX}"):
        yield f"{torn}: a torn tail cut from the log at open; read it, then delete the file"
    yield from _json_problems(folder / DRAFTS_DIR, "*.json", _draft_ok)
    yield from _json_problems(folder / REVIEW_DIR, "*.json", _proposal_ok)
    yield from _json_problems(folder / REJECTED_DIR, "*.json", _proposal_ok)


def _log_problems(path: Path, corrupt_at: Iterable[int]) -> Iterator[str]:
    wanted = sorted(set(corrupt_at))
    if not wanted:
        return
    try:
        lines = path.read_bytes().split(b"\n")
    except OSError as e:
        yield f"{path}: unreadable ({e.strerror or e})"
        return
    for no in wanted[:MAX_LISTED]:
        raw = lines[no - 1] if 0 < no <= len(lines) else b""
        yield f"{path}:{no}: {_line_problem(raw)}; the line is skipped"
    if len(wanted) > MAX_LISTED:
        yield f"{path}: {len(wanted) - MAX_LISTED} more skipped lines"


def _line_problem(raw: bytes) -> str:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not UTF-8 (byte {e.start})"
    try:
        mem = Memory.model_validate_json(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"not a memory record ({where + ': ' if where else ''}{first['msg']})"
    except ValueError as e:
        return f"not a memory record ({e})"
    return stored_record_problem(mem) or "changed since the store opened it"


def _json_ok(raw: bytes) -> str | None:
    try:
        json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        return f"not UTF-8 (byte {e.start})"
    except (ValueError, RecursionError) as e:
        return f"not JSON ({reason(e)})"
    return None


def _draft_ok(raw: bytes) -> str | None:
    try:
        mem = Memory.model_validate_json(raw)
    except ValidationError as e:
        return f"not a draft record ({e.errors()[0]['msg']})"
    return stored_record_problem(mem)


def _proposal_ok(raw: bytes) -> str | None:
    """A proposed rule waiting for review (``harness/review.py``), as its reader takes it."""
    try:
        RuleProposal.model_validate_json(raw)
    except ValidationError as e:
        return f"not a proposed rule ({e.errors()[0]['msg']})"
    return None


def _json_problems(
    folder: Path, pattern: str, check: Callable[[bytes], str | None]
) -> Iterator[str]:
    for path in _glob(folder, pattern):
        try:
            raw = path.read_bytes()
        except OSError as e:
            yield f"{path}: unreadable ({e.strerror or e})"
            continue
        problem = check(raw)
        if problem:
            yield f"{path}: {problem}; the file is skipped"


def _children(root: Path) -> list[Path]:
    try:
        return sorted(root.iterdir())
    except OSError:
        return []


def _glob(folder: Path, pattern: str) -> list[Path]:
    try:
        return sorted(folder.glob(pattern)) if folder.is_dir() else []
    except OSError:
        return []
