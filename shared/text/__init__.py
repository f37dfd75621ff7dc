"""Text normalisation shared by every worker: fingerprints, slugs, links and recall tokens.

Tokens (what recall's lexical index and its queries are made of): Unicode letter/digit runs,
casefolded; CJK as unigrams plus bigrams; Latin-script words reduced with the Snowball English
stemmer (PyStemmer, the C build of snowballstem.org) so "publishes" meets "publish". Queries
additionally drop English stopwords, and a first-person query (I, me, my, mine, myself) also
matches "user", because extraction writes facts about the speaker as "The user ..." (the form
``extract_worker/prompt.py`` asks for).
(Portuguese stopwords and first-person forms were measured and dropped: no gain on the eval,
tests/recall_quality/HISTORY.md.)

Dates (so that a question about last May reaches the memory dated then): ``tokenize`` adds
one ``ymYYYYMM`` token per explicit date a text mentions ("16 May 2026", "2025-03-18",
"agosto de 2025"), and ``query_dates`` turns a query's date phrase ("last May", "in March
2025", "this month", "o ano passado") into a time window plus those month tokens, relative to
the clock. Month names without a year are not indexed: "her birthday is 3 April" recurs.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from itertools import pairwise

import fnv_c  # type: ignore[import-untyped]
import Stemmer
from anyascii import anyascii

from shared.contract.errors import InvalidArgumentError

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK64 = 0xFFFFFFFFFFFFFFFF

_WS = re.compile(r"\s+")
_TRAILING_PUNCT = re.compile(r"[\s\.\!\?\,;:…。！？]+$")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SLUG_DROP = re.compile(r"[^a-z0-9]+")
_LINK = re.compile(r"\[\[([^\[\]\n]{1,200})\]\]")
# \A…\Z, not ^…$: "$" also matches before a trailing newline, so "main\n" would pass a
# .match() and a name could carry a newline into a path; these patterns match the whole
# string with .match() or .fullmatch().

SLUG_RE = re.compile(r"\A[a-z0-9][a-z0-9-]{0,79}\Z")

# A compact English stopword list (the NLTK/Lucene core set, minus the pronouns we map).
STOPWORDS = frozenset(
    """a an and are as at be been being but by can could did do does doing for from had has have
    having he her here hers herself him himself his how if in into is it its itself just let
    like more most no nor not of off on once only or other our ours ourselves out over own same
    she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves about above after again
    against all am any because before below between both down during each few further i me my
    mine myself s t don now ever also shall may might must tell know remember""".split()
)
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "i'm", "im"})
_STEMMER = Stemmer.Stemmer("english")


def normalize(text: str) -> str:
    """NFKC, casefold, collapse whitespace, strip trailing punctuation: the same fact typed
    twice (a ligature or full-width form, case, a final period) gets the same fingerprint."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = _WS.sub(" ", folded).strip()
    return _TRAILING_PUNCT.sub("", folded)


def fnv1a64(data: bytes) -> int:
    """FNV-1a-64 in plain Python: the reference ``fingerprint``'s C hash is tested against."""
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _MASK64
    return h


def fingerprint(text: str) -> str:
    """``fp`` + 16 hex of FNV-1a-64 over the normalised text: equal facts, equal prints.
    The hash is ``fnv_c``'s (C; the same values as ``fnv1a64``, ~20x faster per save)."""
    return f"fp{fnv_c.fnv1a_64(normalize(text).encode('utf-8')):016x}"


def rule_lines(content: str) -> list[str]:
    """A rule's instructions: its non-empty lines, list markers and headings stripped."""
    out = []
    for raw in content.splitlines():
        line = raw.strip().lstrip("-*•").strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def slugify(text: str, *, max_words: int = 6, max_len: int = 48) -> str:
    """A readable slug from text: ascii-folded words joined by '-', or 'memory' when none.
    Other scripts are transliterated (``_romanized``): "Пользователь любит чай" is
    ``polzovatel-lyubit-chay``, "用户喜欢喝茶" ``yong-hu-xi-huan-cha``, not ``memory``."""
    ascii_text = text if text.isascii() else _romanized(text)
    words = [w for w in _SLUG_DROP.split(ascii_text.lower()) if w]
    content = [w for w in words if w not in STOPWORDS] or words
    slug = "-".join(content[:max_words])[:max_len].strip("-")
    return slug or "memory"


def _romanized(text: str) -> str:
    """``text`` in ASCII: Latin letters folded ("café" → cafe), other scripts transliterated
    by ``anyascii`` (Cyrillic, Greek, Arabic, Hangul word by word; a Han ideograph or a kana
    one syllable apiece, as those scripts write no spaces; an emoji by its name); the
    apostrophes of a transliteration ("Pol'zovatel'") do not split its word."""
    out: list[str] = []
    for ch in unicodedata.normalize("NFKC", text):
        if ch.isascii():
            out.append(ch)
        elif _is_han_or_kana(ch):
            out.append(f" {anyascii(ch)} ")
        else:
            out.append(anyascii(ch).replace("'", "").replace("`", ""))
    return "".join(out)


def _is_han_or_kana(ch: str) -> bool:
    return _is_cjk(ch) and ord(ch) not in _HANGUL  # hangul writes spaces between words


def parse_links(text: str) -> list[str]:
    """Slugs named as ``[[slug]]`` in text (cross-references between memories, which ``Render``
    marks when they point nowhere), in order, unique."""
    seen: dict[str, None] = {}
    for raw in _LINK.findall(text):
        if not any(ch.isalnum() for ch in raw):
            continue  # ``[[ ]]``, ``[[--]]``: no name, so no record referenced
        slug = slugify(raw, max_words=20, max_len=80) if not SLUG_RE.match(raw) else raw
        seen.setdefault(slug, None)
    return list(seen)


_HANGUL = range(0xAC00, 0xD7B0)  # hangul syllables


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3040 <= code <= 0x30FF  # kana
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or code in _HANGUL
        or 0xF900 <= code <= 0xFAFF
        or 0x20000 <= code <= 0x2FA1F
    )


def _split_cjk(run: str) -> list[str]:
    """Split a run into CJK unigram+bigram tokens and non-CJK words."""
    out: list[str] = []
    buf: list[str] = []
    cjk: list[str] = []

    def flush_cjk() -> None:
        out.extend(cjk)
        out.extend(a + b for a, b in pairwise(cjk))
        cjk.clear()

    for ch in run:
        if _is_cjk(ch):
            if buf:
                out.append("".join(buf))
                buf.clear()
            cjk.append(ch)
        else:
            if cjk:
                flush_cjk()
            buf.append(ch)
    if buf:
        out.append("".join(buf))
    if cjk:
        flush_cjk()
    return out


# Irregular English past forms → base form before stemming: Snowball strips suffixes, so
# without this "ran" never meets "run" nor "sold" "sell". Ambiguous forms ("left", "lead",
# "saw" is kept: a tool is rarer than the verb in memories) are out.
IRREGULAR = {
    past: base
    for base, forms in {
        "be": "was were been",
        "begin": "began begun",
        "break": "broke broken",
        "bring": "brought",
        "build": "built",
        "buy": "bought",
        "catch": "caught",
        "choose": "chose chosen",
        "come": "came",
        "drink": "drank drunk",
        "drive": "drove driven",
        "eat": "ate eaten",
        "fall": "fell fallen",
        "feel": "felt",
        "fight": "fought",
        "find": "found",
        "fly": "flew flown",
        "forget": "forgot forgotten",
        "get": "got gotten",
        "give": "gave given",
        "go": "went gone",
        "grow": "grew grown",
        "hear": "heard",
        "hold": "held",
        "keep": "kept",
        "know": "knew known",
        "lose": "lost",
        "make": "made",
        "mean": "meant",
        "meet": "met",
        "pay": "paid",
        "ride": "rode ridden",
        "run": "ran",
        "say": "said",
        "see": "saw seen",
        "sell": "sold",
        "send": "sent",
        "sing": "sang sung",
        "sit": "sat",
        "sleep": "slept",
        "speak": "spoke spoken",
        "spend": "spent",
        "stand": "stood",
        "steal": "stole stolen",
        "swim": "swam swum",
        "take": "took taken",
        "teach": "taught",
        "tell": "told",
        "think": "thought",
        "throw": "threw thrown",
        "understand": "understood",
        "wake": "woke woken",
        "wear": "wore worn",
        "win": "won",
        "write": "wrote written",
    }.items()
    for past in forms.split()
}


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    if not (word.isascii() and word.isalpha()):
        return word
    # irregular past forms first (ran → run), then Snowball: both measured, HISTORY.md §1-2
    stem: str = _STEMMER.stemWord(IRREGULAR.get(word, word))
    return stem


def words(text: str) -> list[str]:
    """Casefolded letter/digit runs, CJK split into unigrams and bigrams, unstemmed."""
    folded = text.casefold()
    if folded.isascii():  # the common case, and the same result as the loop below
        return _WORD.findall(folded)
    out: list[str] = []
    for run in _WORD.findall(folded):
        if run.isascii():
            out.append(run)
        else:
            out.extend(_split_cjk(unicodedata.normalize("NFKC", run)))
    return out


def _stems(ws: list[str]) -> list[str]:
    return [_stem(w) for w in ws]


def tokenize(text: str) -> list[str]:
    """Index-side tokens: every word, stemmed, plus a ``ymYYYYMM`` token per explicit date.
    Stopwords stay (they cost little, and BM25's IDF already mutes them); queries drop them."""
    return _stems(words(text)) + date_tokens(text)


def query_tokens(text: str) -> list[str]:
    """Query-side tokens: stopwords dropped, first person also matches ``user``."""
    raw = words(text)
    toks = _stems([w for w in raw if w not in STOPWORDS])
    if any(w in FIRST_PERSON for w in raw):
        toks.append("user")
    if not toks:  # a query made only of stopwords still deserves an answer
        toks = _stems(raw)
    return toks


def entity_norm(value: str) -> str:
    """Entities and tags: lowercase, whitespace collapsed to '-', trimmed."""
    return _WS.sub("-", unicodedata.normalize("NFKC", value).casefold().strip())[:64]


# -- dates ---------------------------------------------------------------------------------

_MONTHS = {
    **{
        m: i + 1
        for i, m in enumerate(
            "january february march april may june july august september october november "
            "december".split()
        )
    },
    **{
        m: i + 1
        for i, m in enumerate(
            "janeiro fevereiro março abril maio junho julho agosto setembro outubro novembro "
            "dezembro".split()
        )
    },
    "jan": 1,
    "feb": 2,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
    "marco": 3,
}
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"((?:19|20)\d\d)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th|º)?"
# Mentions in stored text: only dates that name their year (a bare "3 April" recurs).
_ISO = re.compile(r"\b" + _YEAR + r"-(\d\d)(?:-\d\d)?\b")
_HAS_YEAR = re.compile(_YEAR)
_MONTH_YEAR = re.compile(rf"\b{_MONTH}(?:\s+{_DAY})?,?\s+(?:de\s+|of\s+)?{_YEAR}\b", re.IGNORECASE)

_DAY_MS = 86_400_000
_SEASONS = {
    "spring": (3, 3),
    "summer": (6, 3),
    "autumn": (9, 3),
    "fall": (9, 3),
    "winter": (12, 3),
    "primavera": (3, 3),
    "verão": (6, 3),
    "verao": (6, 3),
    "outono": (9, 3),
    "inverno": (12, 3),
}
_LAST = r"(?:last|past|previous|passad[oa])"
_THIS = r"(?:this|current|est[ea]|neste|nesta)"
# "may" and "march" are also verbs: they are months only next to a date word or a number.
_AMBIGUOUS = {"may", "march"}
_CONTEXT = re.compile(r"(?:in|last|this|next|early|late|mid|since|during|of|em|no|de)$")


def _month_key(year: int, month: int) -> str:
    return f"ym{year:04d}{month:02d}"


def date_tokens(text: str) -> list[str]:
    """One ``ymYYYYMM`` token per explicit dated mention (ISO dates, "May 2026",
    "16 May 2026", "15 de agosto de 2025", "May 12, 2025")."""
    out: list[str] = []
    if not _HAS_YEAR.search(text):  # both patterns need a year; this scan is ~10× cheaper
        return out
    for m in _ISO.finditer(text):
        month = int(m.group(2))
        if 1 <= month <= 12:
            out.append(_month_key(int(m.group(1)), month))
    for m in _MONTH_YEAR.finditer(text):
        out.append(_month_key(int(m.group(3)), _MONTHS[m.group(1).casefold()]))
    return out


@dataclass(frozen=True)
class DateWindow:
    """A query's time window ``[start_ms, end_ms)``, its month tokens, and the query text
    without the date phrase."""

    start_ms: int
    end_ms: int
    months: tuple[str, ...]
    rest: str


def _ms(d: datetime) -> int:
    return int(d.timestamp() * 1000)


def _month_span(year: int, month: int, count: int = 1) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    y, m = divmod(month - 1 + count, 12)
    return start, datetime(year + y, m + 1, 1, tzinfo=UTC)


def _window(start: datetime, end: datetime, rest: str) -> DateWindow:
    months: list[str] = []
    cur = datetime(start.year, start.month, 1, tzinfo=UTC)
    while cur < end and len(months) < 36:
        months.append(_month_key(cur.year, cur.month))
        cur = _month_span(cur.year, cur.month)[1]
    return DateWindow(_ms(start), _ms(end), tuple(months), rest)


def _recent_month(month: int, now: datetime, *, strictly_past: bool) -> int:
    """The year of the latest ``month`` not after now (before this month if strictly_past)."""
    if month < now.month or (month == now.month and not strictly_past):
        return now.year
    return now.year - 1


_RELATIVE = [
    (re.compile(rf"\b(?:{_THIS}\s+month|este\s+m[eê]s|neste\s+m[eê]s)\b"), "this-month"),
    (re.compile(rf"\b(?:{_LAST}\s+month|m[eê]s\s+passado)\b"), "last-month"),
    (re.compile(rf"\b(?:{_THIS}\s+year|este\s+ano|neste\s+ano)\b"), "this-year"),
    (re.compile(rf"\b(?:{_LAST}\s+year|ano\s+passado)\b"), "last-year"),
    (re.compile(rf"\b(?:{_LAST}\s+week|semana\s+passada)\b"), "last-week"),
    (re.compile(r"\b(?:yesterday|ontem)\b"), "yesterday"),
    (re.compile(r"\b(?:today|hoje)\b"), "today"),
]


def _relative(kind: str, now: datetime) -> tuple[datetime, datetime]:
    today = datetime(now.year, now.month, now.day, tzinfo=UTC)
    if kind == "this-month":
        return _month_span(now.year, now.month)
    if kind == "last-month":
        y, m = (now.year, now.month - 1) if now.month > 1 else (now.year - 1, 12)
        return _month_span(y, m)
    if kind == "this-year":
        return datetime(now.year, 1, 1, tzinfo=UTC), datetime(now.year + 1, 1, 1, tzinfo=UTC)
    if kind == "last-year":
        return datetime(now.year - 1, 1, 1, tzinfo=UTC), datetime(now.year, 1, 1, tzinfo=UTC)
    if kind == "last-week":
        return today - timedelta(days=7 + today.weekday()), today - timedelta(days=today.weekday())
    if kind == "yesterday":
        return today - timedelta(days=1), today
    return today, today + timedelta(days=1)


def _season(word: str, year: int | None, last: bool, now: datetime) -> tuple[datetime, datetime]:
    """A season's three months; without a year, the latest one already begun (already over,
    for "last summer")."""
    first, count = _SEASONS[word]
    if year is not None:
        return _month_span(year, first, count)
    start, end = _month_span(now.year, first, count)
    if start > now or (last and end > now):
        start, end = _month_span(now.year - 1, first, count)
    return start, end


_SEASON_RE = re.compile(
    rf"\b(?:({_LAST})\s+)?({'|'.join(_SEASONS)})(?:\s+({_LAST}))?(?:\s+(?:of\s+|de\s+)?{_YEAR})?\b"
)
_MONTH_NAMES = "|".join(sorted(_MONTHS, key=len, reverse=True))
_MONTH_Q = re.compile(
    rf"\b(?:(?P<last>{_LAST})\s+|(?P<this>{_THIS})\s+)?(?:(?:early|late|mid)[\s-]+)?"
    rf"(?:(?P<day>\d{{1,2}})(?:st|nd|rd|th|º)?\s+(?:de\s+|of\s+)?)?(?P<month>{_MONTH_NAMES})\.?"
    rf"(?:\s+(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\b)?(?:\s+(?P<after>passad[oa]))?"
    rf"(?:,?\s+(?:de\s+|of\s+)?(?P<year>(?:19|20)\d\d))?\b"
)
_YEAR_Q = re.compile(rf"\b(?:in|during|em|no|de)\s+{_YEAR}\b")


def _month_query(text: str, now: datetime) -> tuple[datetime, datetime, re.Match[str]] | None:
    for m in _MONTH_Q.finditer(text):
        name = m.group("month").casefold()
        day = m.group("day") or m.group("day2")
        year = m.group("year")
        if name in _AMBIGUOUS and not (year or day or m.group("last") or m.group("this")):
            before = text[: m.start()].rstrip().rsplit(" ", 1)[-1]
            if not _CONTEXT.search(before):
                continue
        month = _MONTHS[name]
        last = bool(m.group("last") or m.group("after"))
        y = int(year) if year else _recent_month(month, now, strictly_past=last)
        if day and year and 1 <= int(day) <= 31:
            try:
                start = datetime(y, month, int(day), tzinfo=UTC)
            except ValueError:
                start = None
            if start is not None:
                return start, start + timedelta(days=1), m
        start, end = _month_span(y, month)
        return start, end, m
    return None


def query_dates(text: str, now_ms: int) -> DateWindow | None:
    """The time window a query's date phrase names, relative to ``now_ms``, or None."""
    low = text.casefold()
    now = datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    for pattern, kind in _RELATIVE:
        m = pattern.search(low)
        if m:
            start, end = _relative(kind, now)
            return _window(start, end, low[: m.start()] + " " + low[m.end() :])
    found = _month_query(low, now)
    if found is not None:
        start, end, m = found
        return _window(start, end, low[: m.start()] + " " + low[m.end() :])
    sm = _SEASON_RE.search(low)
    if sm:
        last = bool(sm.group(1) or sm.group(3))
        start, end = _season(sm.group(2), int(sm.group(4)) if sm.group(4) else None, last, now)
        return _window(start, end, low[: sm.start()] + " " + low[sm.end() :])
    ym = _YEAR_Q.search(low)
    if ym:
        y = int(ym.group(1))
        start, end = datetime(y, 1, 1, tzinfo=UTC), datetime(y + 1, 1, 1, tzinfo=UTC)
        return _window(start, end, low[: ym.start()] + " " + low[ym.end() :])
    return None


def iso_ms(value: str) -> int:
    """An ISO-8601 date or date-time ("2023-05-07", "2023-05-07T13:56", "...Z", "+02:00") as
    ms since epoch; a value without a zone is UTC. Anything else is ``invalid_argument``."""
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except (ValueError, AttributeError) as e:
        raise InvalidArgumentError(f"{value!r} is not an ISO-8601 date or date-time") from e
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)
