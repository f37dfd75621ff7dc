"""Query-side handling of questions for the lexical arm.

A question's frame says what kind of answer is wanted ("what kind of", "how many times", "how
long", "did she mention"); its words are not what the answer is about, yet BM25 would score
memories that happen to say "kind" or "long". ``strip_question_frame`` drops those words when
they stand in that frame, before the query is tokenised; the question's subject stays.

A question that asks *when* ("When did Caroline go to the support group?", "What year did
…", "How long ago …": ``asks_when``) is answered by a memory that says when: "I went to a
support group yesterday", "…back in 2019" (``names_a_time``); ``context.prefer_timed`` ranks
them so. Measured in HISTORY.md §16.

Pseudo-relevance feedback was measured here too and lost on the golden set (HISTORY.md §12).
"""

from __future__ import annotations

import re

from shared.text import STOPWORDS

# -- question frames -------------------------------------------------------------------------

# The words of an English question's frame, which say what kind of answer is wanted rather
# than what it is about: "what kind of", "how many times", "how long", "did she mention".
# Dropped from the lexical query only when they stand in that frame.
_AFTER_WHAT = frozenset({"kind", "kinds", "type", "types", "sort", "sorts"})
_AFTER_HOW = frozenset({"many", "much", "long", "often", "far", "old"})
_TIMES = frozenset({"times", "time"})
_SAYING = frozenset({"mention", "mentioned", "say", "said", "describe", "described"})
_WORD = re.compile(r"\w+(?:['’]\w+)?")


_AUX = frozenset({"did", "does", "do", "has", "have", "had"})


def _in_frame(ws: list[str], i: int) -> bool:
    """Whether the ``i``-th (casefolded) word of a question belongs to its frame."""
    w, before = ws[i], ws[i - 1] if i else ""
    return (
        (w in _AFTER_WHAT and before in ("what", "which"))
        or (w in _AFTER_HOW and before == "how")
        or (w in _TIMES and before == "many" and i > 1 and ws[i - 2] == "how")
        or (w in _SAYING and any(x in _AUX for x in ws[:i]))
    )


def strip_question_frame(text: str) -> str:
    """``text`` without its question-frame words ("What kind of cake did Joanna mention?" →
    "What  of cake did Joanna ?"); a text that is not a question (no "?") comes back
    unchanged, and so does one that would be left with stopwords only."""
    if "?" not in text:
        return text
    spans = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    ws = [text[a:b].casefold() for a, b in spans]
    drop = [i for i in range(len(ws)) if _in_frame(ws, i)]
    if not drop or all(w in STOPWORDS for i, w in enumerate(ws) if i not in drop):
        return text
    out, last = [], 0
    for i in drop:
        out.append(text[last : spans[i][0]])
        last = spans[i][1]
    out.append(text[last:])
    return "".join(out)


# -- "when" questions ------------------------------------------------------------------------

_WHEN_Q = re.compile(
    r"^\W*(?:when\b|since\s+when\b|how\s+long\s+ago\b"
    r"|(?:in\s+)?(?:what|which)\s+(?:year|month|day|date|week|time\s+of\s+year)\b)"
    r"|\bwhen\s+(?:did|does|do|was|were|is|has|had|will)\b",
    re.IGNORECASE,
)
_MONTH_WORDS = (  # "may" and "march" are verbs too: months only beside a day number
    "january|february|april|june|july|august|september|october|november|december"
)
_TIME_WORDS = re.compile(
    rf"\b(?:{_MONTH_WORDS}|monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|yesterday|today|tonight|tomorrow|ago|weekend|(?:19|20)\d\d"
    r"|(?:last|next|this|past)\s+(?:week|month|year|summer|winter|spring|fall|autumn|night)"
    r"|\d+\s+(?:days?|weeks?|months?|years?)"
    r"|(?:may|march)\s+\d{1,2}(?:st|nd|rd|th)?|\d{1,2}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:may|march))\b",
    re.IGNORECASE,
)


def asks_when(query: str) -> bool:
    """Whether a question asks when something happened."""
    return _WHEN_Q.search(query) is not None


def names_a_time(text: str) -> bool:
    """Whether a memory's text says when: a weekday, a month, a year, "yesterday", "last
    week", "three years ago"."""
    return _TIME_WORDS.search(text) is not None
