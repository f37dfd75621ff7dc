"""What a redaction leaves behind (``[REDACTED:<label>]``, in any case) and the pieces of one,
which callers never derive an id, a slug, a tag or an entity from."""

from __future__ import annotations

import re

__all__ = ["PLACEHOLDER", "is_placeholder", "strip_placeholders"]


# ``[REDACTED:label]`` in any case, as redact writes it or as a fold left it.
PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]+\]", re.I)
# The tail of a placeholder cut at its colon (``openai_key]``), and the words of a slug.
_LABEL_TAIL = re.compile(r"\W*[a-z0-9_]+\]\W*", re.I)
_WORDS = re.compile(r"[a-z0-9]+")


def is_placeholder(token: str) -> bool:
    """Whether ``token`` is a placeholder or a piece of one: ``[REDACTED:jwt]`` in any case,
    a label's tail ``openai_key]``, or anything with the word ``redacted`` in it
    (``redacted``, ``redacted-openai-key``, ``openai-key-redacted-openai-key``). Never an id,
    a slug, a tag or an entity."""
    if PLACEHOLDER.search(token) or _LABEL_TAIL.fullmatch(token):
        return True
    return "redacted" in _WORDS.findall(token.lower())


def strip_placeholders(text: str) -> str:
    """``text`` with every placeholder blanked to one space: what ids, slugs, tags and
    entities may be derived from."""
    return PLACEHOLDER.sub(" ", text)
