"""Deterministic entity derivation for saves that name none.

Extraction hands the store entities; an explicit ``save`` ("remember that Ana's husband Rui is
a nurse in Braga") usually does not, and would then miss recall's exact-match entity signal
(``recall/signals.py``). ``derive_entities`` picks the handles a reader would: proper names (runs of
capitalised words, "Sofia Almeida", "Campo de Ourique") and tool or project names by their
shape ("FastAPI", "Auth0", "pg_trgm", "Fly.io", "ADR-007"). It is a heuristic with no model
and no dictionary, so it is deliberately conservative:

- a capitalised word that opens a sentence counts only when it is not a function word and
  either the run has more than one word or the same word is capitalised elsewhere in the text
  ("Kestrel is ... moved Kestrel"), because English capitalises every sentence's first word;
- months, weekdays, titles ("Dr.", "Sr.") and the speaker ("I", "User") never count;
- handles are normalised like explicit entities (``entity_norm``) and capped at
  ``MAX_DERIVED`` in order of first appearance.
"""

from __future__ import annotations

import re

from shared.contract.models import Memory
from shared.text import STOPWORDS, entity_norm

MAX_DERIVED = 8

_SENTENCE = re.compile(r"(?<=[.!?;:])\s+|\n+")
_TOKEN = re.compile(r"[^\W_][\w.'’+-]*[^\W_]|[^\W_]", re.UNICODE)
# Lowercase joiners inside a name: "Campo de Ourique", "Clínica Veterinária do Rato".
_JOINERS = frozenset({"de", "do", "da", "dos", "das", "del", "van", "von", "der", "di", "du"})
_TITLES = frozenset({"dr", "dra", "mr", "mrs", "ms", "sr", "sra", "prof", "st"})
_NEVER = frozenset(
    """i user users january february march april may june july august september october
    november december monday tuesday wednesday thursday friday saturday sunday mondays
    tuesdays wednesdays thursdays fridays saturdays sundays mon tue wed thu fri sat sun jan feb
    mar apr jun jul aug sep sept oct nov dec ok""".split()
)
# Acronyms too generic to be a handle: every software text says API or CI.
_GENERIC = frozenset(
    """api apis ui ux ci cd gb mb kb tb ram cpu gpu sql json xml html css http https url urls
    utc get post put id ids am pm eta faq todo pdf pdfs sms rfc pr prs os db""".split()
)
# Possessive sentence openers that are no names ("Today's plan").
_NOT_NAMES = STOPWORDS | frozenset(
    """today tomorrow yesterday tonight everyone everybody someone somebody nobody anyone
    anybody week month year company team""".split()
)
# Greetings and interjections that open a sentence before a name: "Hey Mel!" names Mel.
_INTERJECTIONS = frozenset(
    """hey hi hello thanks thank yes yeah yep wow oh aw aww awww congrats congratulations
    sorry dear""".split()
)
# A transcript line's speaker label: "Caroline: ..." (up to three capitalised words).
_SPEAKER = re.compile(r"^\s*([A-Z][\w'’-]*(?: [A-Z][\w'’-]*){0,2}):\s")
# Labels that open notes rather than name a speaker ("Note: ...", "Decision: ...").
_LABELS = frozenset(
    """note notes nb ps update decision decisions reminder summary question answer q a fix bug
    warning error tip example context goal goals status result results reason problem solution
    idea action todo done fact facts preference rule why what how when where who""".split()
)
# Checked once per token, so built once.
_NOT_RUN = _NEVER | _TITLES | _GENERIC
_NOT_TOOL = _NEVER | _GENERIC
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
_MIXED_DIGIT = re.compile(r"^[A-Za-z](?=(?:.*[A-Za-z]){2})(?=.*\d)")  # Auth0, i18next
_DOTTED = re.compile(r"^[A-Za-z][\w-]*\.(?:io|ai|js|app|dev|com|net|org|py)$")


def _is_capitalised(tok: str) -> bool:
    return tok[:1].isupper()


def _is_tool(tok: str) -> bool:
    """Shapes that name software: camelCase, letters mixed with digits, snake_case,
    dotted product names, ALL-CAPS acronyms of two or more letters."""
    if tok.isalpha():  # most tokens: letters only, so only the ALL-CAPS and camel shapes
        return (tok.isupper() and len(tok) >= 2) or _CAMEL.search(tok) is not None
    if tok.isdigit() or not any(ch.isalpha() for ch in tok):
        return False
    return bool(
        _CAMEL.search(tok)
        or _MIXED_DIGIT.match(tok)
        or ("_" in tok and tok.strip("_") == tok)
        or _DOTTED.match(tok)
        or (len(tok) >= 2 and tok.isupper() and tok.isalpha())
    )


def _plain(tok: str) -> str:
    return _clean(tok).casefold()


def _clean(tok: str) -> str:
    """Without trailing dots and possessives: "Tidewater's" → "Tidewater"."""
    tok = tok.strip(".'’-")
    return tok[:-2] if tok.endswith(("'s", "’s")) else tok


def _leading_matches(sentence: str) -> list[re.Match[str]]:
    """The sentence's tokens, or only its first two when nothing from the second token on
    has an upper-case letter (most sentences: "The user prefers tabs ..."). ``_runs`` gets
    the same runs either way: a run starts only at a capitalised token, so after the second
    token there is none to start, extend or join (profiled: a fifth of a save's CPU went to
    entity derivation, most of it walking such sentences)."""
    found = _TOKEN.finditer(sentence)
    first = next(found, None)
    second = next(found, None)
    if second is None:
        return [] if first is None else [first]
    assert first is not None
    if sentence[second.start() :].islower():  # no upper-case letter (and some lower-case)
        return [first, second]
    return [first, second, *found]


def _runs(sentence: str) -> list[tuple[list[str], bool]]:
    """Runs of capitalised words (with joiners inside), and whether a run opens the sentence
    as a plain word (an opener in the possessive, "Ana's husband", reads as a name)."""
    matches = _leading_matches(sentence)
    toks = [m.group(0) for m in matches]
    runs: list[tuple[list[str], bool]] = []
    cur: list[str] = []
    start = False
    for i, tok in enumerate(toks):
        # punctuation between two words ends a run: "Campo de Ourique, Lisbon" is two names
        if cur and sentence[matches[i - 1].end() : matches[i].start()].strip():
            runs.append((cur, start))
            cur = []
        if tok[:1].isupper():  # _is_capitalised, inlined: this loop sees every word
            # not "Q3", "3D"; a word of letters only holds no digit
            named = tok.isalpha() or not any(ch.isdigit() for ch in tok) or _is_tool(tok)
            clean = _clean(tok)
            word = clean.casefold()
            if named and word not in _NOT_RUN:
                if not cur:
                    start = i == 0 or (i == 1 and _plain(toks[0]) in _TITLES)
                cur.append(clean)
                if clean != tok.strip(".'’-"):  # a possessive ends the name
                    runs.append((cur, start and word in _NOT_NAMES))
                    cur = []
                continue
        if not cur:
            continue
        word = _plain(tok)
        if word in _JOINERS and i + 1 < len(toks) and _is_capitalised(toks[i + 1]):
            cur.append(word)
        else:
            runs.append((cur, start))
            cur = []
    if cur:
        runs.append((cur, start))
    return runs


def _names(text: str) -> list[str]:
    sentences = [s for s in _SENTENCE.split(text) if s.strip()]
    runs = [run for s in sentences for run in _runs(s)]
    inner = {_plain(w) for run, opens in runs for w in (run[1:] if opens else run)}
    out: list[str] = []
    for run, opens in runs:
        if opens and not _is_tool(run[0]):
            first = _plain(run[0])
            lone = len(run) == 1 and first not in inner
            # "Prefer SQLAlchemy Core", "Public API": a capitalised opener before a tool name
            before_tool = any(_is_tool(w) for w in run[1:])
            if first in STOPWORDS or first in _INTERJECTIONS or lone or before_tool:
                run = run[1:]
        while run and _plain(run[-1]) in _JOINERS:
            run = run[:-1]
        if run:
            out.append(" ".join(run))
    return out


def speaker_of(text: str) -> str | None:
    """The speaker label a transcript line opens with ("Caroline: Hey Mel!" → "Caroline"),
    or None; months, weekdays, titles, generic acronyms and note labels ("Note:",
    "Decision:") are no speakers."""
    m = _SPEAKER.match(text)
    if m is None:
        return None
    first = _plain(m.group(1).split()[0])
    if first in _NOT_RUN or first in _LABELS or first in STOPWORDS:
        return None
    return m.group(1)


def derive_entities(text: str, *, limit: int = MAX_DERIVED) -> tuple[str, ...]:
    """Candidate entity handles of ``text``, normalised, unique, in order of appearance; a
    transcript line's speaker (``speaker_of``) comes first."""
    found: dict[str, None] = {}
    speaker = speaker_of(text)
    if speaker is not None:
        found[entity_norm(speaker)] = None
    for name in _names(text):
        found.setdefault(entity_norm(name), None)
    for raw in _TOKEN.findall(text):
        if raw.islower() and raw.isalpha():
            continue  # a lowercase word has none of the tool shapes (the common case)
        tok = _clean(raw)
        if _is_tool(tok) and _plain(tok) not in _NOT_TOOL:
            found.setdefault(entity_norm(tok), None)
    handles = [h for h in found if h and not h.isdigit() and len(h) <= 64]
    # A name already inside a longer handle ("ana" in "ana-lopes") adds nothing.
    kept = [h for h in handles if not any(h != o and h in o.split("-") for o in handles)]
    return tuple(kept[:limit])


def turn_of(mem: Memory) -> tuple[str, bool, str] | None:
    """(source session, whether it asks, speaker) of a live dialog turn: a memory with a
    source session whose text opens with a speaker label (``store_worker/recall/context.py``), or
    None for anything else."""
    session = mem.provenance.source_session_id
    if mem.invalid_at is not None or not session:  # "" names no session either
        return None
    speaker = speaker_of(mem.text)
    if speaker is None:  # not a dialog turn (an extracted fact, a note)
        return None
    return session, mem.text.rstrip().endswith("?"), speaker
