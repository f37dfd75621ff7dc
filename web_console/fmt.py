"""Small formatting the templates share (registered as Jinja filters in ``web_console.app``)."""

from __future__ import annotations

from datetime import UTC, datetime


def when(ms: int | None) -> str:
    """A stored instant (ms since the epoch) as ``YYYY-MM-DD HH:MM UTC``; ``-`` for none."""
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
