"""Plain formatting every front end shares: counts, dates, folders, one-line text, what a
terminal may show, and answers as JSON values (the CLI, the MCP tools, the actors' reprs)."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from typing import Any

# C0 and C1 controls but tab and newline, DEL, and the bidi embeddings, overrides and isolates:
# a stored text that holds them could retitle the terminal, clear it, write the clipboard
# (OSC 52) or reorder what a line shows.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def counted(n: int, noun: str) -> str:
    """``1 memory``, ``2 memories``, ``0 rules``."""
    if n == 1:
        return f"1 {noun}"
    return f"{n} {noun[:-1]}ies" if noun.endswith("y") else f"{n} {noun}s"


def folder(path: str | None, base: str | None = None) -> str | None:
    """A project folder as its caller means it, made absolute in the caller's process: ``~``
    and a relative path resolved here (against ``base``, else this process's working
    directory). The store refuses both: it would resolve them against its own folder and
    home, so two callers' ``.`` would name one project. ``None`` and blanks pass through."""
    if path is None or not path.strip():
        return path
    return os.path.normpath(os.path.join(base or os.getcwd(), os.path.expanduser(path.strip())))


def terminal_safe(text: str) -> str:
    """``text`` as a terminal may show it: each control character as a visible escape
    (``\\x1b``, ``\\u202e``), so a memory's text can never drive the terminal."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def jsonable(value: Any) -> Any:
    if hasattr(value, "model_dump"):  # a model (a view from the wire is a dict already)
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def date(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def one_line(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
