"""A query as the combined arm reads it: the time window it names, its text without the
question frame (``query.py``) and its content terms (``signals.content_tokens``).

Scoring (``scoring.score_bank``) and the calibration of its top k (``relevance.calibrate``)
read the same query at the same instant in one recall; ``parse`` keeps the last few, so a long
prompt is parsed once per recall rather than twice. The result is immutable and a pure
function of the text and the instant, so sharing it changes nothing but the time taken.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from shared.text import DateWindow, entity_norm, query_dates, words
from store_worker.recall.query import strip_question_frame
from store_worker.recall.signals import content_tokens

CACHED = 16  # parses kept: one recall needs one; a few callers may interleave


@dataclass(frozen=True)
class ParsedQuery:
    window: DateWindow | None  # the time the query names, relative to the instant
    text: str  # the query without its question frame
    terms: tuple[str, ...]  # content tokens, in order (repeats kept: BM25 counts them)

    @functools.cached_property
    def said(self) -> frozenset[str]:
        """The text's words as entity handles (``entity_norm``)."""
        return frozenset(entity_norm(w) for w in words(self.text))


@functools.lru_cache(maxsize=CACHED)
def parse(query: str, now_ms: int) -> ParsedQuery:
    """``query`` read at ``now_ms``; the same object for the same arguments while cached."""
    window = query_dates(query, now_ms)
    text = strip_question_frame(query)
    return ParsedQuery(window, text, tuple(content_tokens(text, window)))
