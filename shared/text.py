"""Text normalisation shared by every worker: fingerprints, slugs, links and recall tokens.

Tokens (DESIGN §4): Unicode letter/digit runs, casefolded; CJK as unigrams plus bigrams;
Latin-script words reduced with the Snowball English stemmer (PyStemmer, the C build of
snowballstem.org) so "publishes" meets "publish". Queries additionally drop English stopwords,
and a first-person query (I, me, my, mine, myself) also matches "user", because extraction
writes facts about the speaker as "The user ..." (seeds/003 "One LLM call per turn").
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from itertools import pairwise

import Stemmer

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK64 = 0xFFFFFFFFFFFFFFFF

_WS = re.compile(r"\s+")
_TRAILING_PUNCT = re.compile(r"[\s\.\!\?\,;:…。！？]+$")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SLUG_DROP = re.compile(r"[^a-z0-9]+")
_LINK = re.compile(r"\[\[([^\[\]\n]{1,200})\]\]")
SLUG_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,79}$")
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")

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
    """NFKC, casefold, collapse whitespace, strip trailing punctuation (DESIGN §2)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = _WS.sub(" ", folded).strip()
    return _TRAILING_PUNCT.sub("", folded)


def fnv1a64(data: bytes) -> int:
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _MASK64
    return h


def fingerprint(text: str) -> str:
    """``fp`` + 16 hex of FNV-1a-64 over the normalised text: equal facts, equal prints."""
    return f"fp{fnv1a64(normalize(text).encode('utf-8')):016x}"


def slugify(text: str, *, max_words: int = 6, max_len: int = 48) -> str:
    """A readable slug from text: ascii-folded words joined by '-', or 'memory' when none."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode().lower()
    words = [w for w in _SLUG_DROP.split(ascii_text) if w]
    content = [w for w in words if w not in STOPWORDS] or words
    slug = "-".join(content[:max_words])[:max_len].strip("-")
    return slug or "memory"


def parse_links(text: str) -> list[str]:
    """Slugs named as ``[[slug]]`` in text (seeds/001 cross-references), in order, unique."""
    seen: dict[str, None] = {}
    for raw in _LINK.findall(text):
        slug = slugify(raw, max_words=20, max_len=80) if not SLUG_RE.match(raw) else raw
        seen.setdefault(slug, None)
    return list(seen)


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3040 <= code <= 0x30FF  # kana
        or 0x3400 <= code <= 0x4DBF
        or 0x4E00 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF  # hangul syllables
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


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _STEMMER.stemWord(word) if word.isascii() and word.isalpha() else word


def words(text: str) -> list[str]:
    """Casefolded letter/digit runs, CJK split into unigrams and bigrams, unstemmed."""
    out: list[str] = []
    for run in _WORD.findall(text.casefold()):
        if run.isascii():
            out.append(run)
        else:
            out.extend(_split_cjk(unicodedata.normalize("NFKC", run)))
    return out


def tokenize(text: str) -> list[str]:
    """Index-side tokens: every word, stemmed. Stopwords stay (they cost little, and BM25's
    IDF already mutes them); queries drop them."""
    return [_stem(w) for w in words(text)]


def query_tokens(text: str) -> list[str]:
    """Query-side tokens: stopwords dropped, first person also matches ``user``."""
    raw = words(text)
    toks = [_stem(w) for w in raw if w not in STOPWORDS]
    if any(w in FIRST_PERSON for w in raw):
        toks.append("user")
    if not toks:  # a query made only of stopwords still deserves an answer
        toks = [_stem(w) for w in raw]
    return toks


def entity_norm(value: str) -> str:
    """Entities and tags: lowercase, whitespace collapsed to '-', trimmed."""
    return _WS.sub("-", unicodedata.normalize("NFKC", value).casefold().strip())[:64]
