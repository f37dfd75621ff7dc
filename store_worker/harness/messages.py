"""Harness messages as the store reads them: content blocks to text, timestamps to ms, our own
``<memory>`` blocks recognised, and a file-safe key per session (used by the outbox and by
injection alike)."""

from __future__ import annotations

import hashlib
import math
import re
from datetime import UTC, datetime

from shared.contract import errors
from store_worker.storage.validate import MAX_FUTURE_MS

# What a stored text may not bring into a prompt, nor show a person reviewing it: C0/C1 controls
# but the line breaks and tab (an ANSI escape, a NUL), the bidi marks, embeddings, overrides and
# isolates, and the invisible characters (zero-width space, word joiner, BOM, soft hyphen) that
# hide text or split a tag so a pattern misses it (``<\u200b/memory>``). They are dropped, not
# shown as escapes: a text never grows past the tokens its budget charged. The zero-width
# (non-)joiners stay (emoji sequences, Persian and Indic text need them).
HIDDEN = re.compile(
    "[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\u00ad\u061c\u180e\u200b\u200e\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff]"
)


def session_key(session_id: str) -> str:
    """A file-safe key for per-session state (session ids are free-form strings)."""
    return "s" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]


def message_text(content: object) -> str:
    """The text of a message's content: a string, or OpenAI-style content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return ""


def is_memory_block(text: str) -> bool:
    """Our own injected ``<memory ...>`` messages, which must never be re-extracted."""
    return text.lstrip().startswith("<memory ")


def message_time(value: object, *, default: int) -> int:
    """A message timestamp as ms since epoch: ms, seconds, or an ISO-8601 string."""
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise errors.InvalidArgumentError("message timestamp must be a finite number")
        ms = int(value * 1000) if value < 100_000_000_000 else int(value)
    elif isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as e:
            raise errors.InvalidArgumentError(f"message timestamp {value!r} is not ISO-8601") from e
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=UTC)
        ms = int(parsed.timestamp() * 1000)
    else:
        raise errors.InvalidArgumentError("message timestamp must be ms, seconds or ISO-8601")
    # From 1970 to 100 years past the caller's clock (the bound occurred_at has): a job with a
    # date no calendar can print would fail every extraction attempt.
    if not 0 <= ms <= default + MAX_FUTURE_MS:
        raise errors.InvalidArgumentError(
            f"message timestamp {value!r} is out of range (1970 to 100 years from now)"
        )
    return ms
