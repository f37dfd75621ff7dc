"""Which redaction rules can match a text (shared/redact/engine.py): the rules, compiled from
the catalogue (shared/redact/credentials.toml) and the context rules (shared/redact/context.py),
and the gate that names the few of them whose anchors occur in a text.

The plan (``shared/redact/plan.json``, shipped): deriving every rule's anchors and compiling
every pattern took ~0.2 s of the first redaction in a process — what a one-shot ``memory
--data-dir D save`` or an embedded hook pays every time, each being a new process. The plan
holds what that derivation gives (the catalogue's formats in rule order, every rule's anchor
sets and the fewest characters a match of it takes) under a key over its inputs (the
catalogue, the code of these modules, the Python version). When the key matches, ``engine``
takes the anchors from it and each rule compiles its pattern the first time the gate names
it; otherwise everything is derived as before. It is regenerated with ``python -m
shared.redact.gate``; ``tests/shared/test_redact_plan.py`` fails while the shipped plan is not
the derivation's.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from re import _parser as sre_parse  # type: ignore[attr-defined]  # its own width of a pattern
from typing import Any, Literal

import ahocorasick

from shared.redact.anchors import (
    Anchor,
    Probe,
    Strings,
    implies,
    is_word,
    minimal,
)
from shared.redact.anchors import anchors as derive_anchors
from shared.redact.anchors import folded as fold
from shared.redact.catalogue import CHECKS, Format, catalogue
from shared.redact.codes import CODES
from shared.redact.commands import COMMANDS
from shared.redact.context import AFTER_CATALOGUE, BEFORE_CATALOGUE, TEXT_ANCHORS
from shared.redact.encoded import ENCODED, ENCODED_TEXT_ANCHORS
from shared.redact.files import FILES, FILES_TEXT_ANCHORS
from shared.redact.lines import LINES
from shared.redact.pairs import PAIRS, PAIRS_TEXT_ANCHORS
from shared.redact.pivots import Pivot, pivot_gate
from shared.redact.rule import Judge, RuleSpec, Seek, find_all
from shared.redact.said import SAID, SAID_EXACT_ANCHORS, SAID_TEXT_ANCHORS
from shared.redact.sources import SOURCES

__all__ = ["Engine", "Rule", "candidates", "engine"]

# The rules after the catalogue, in order: the command lines of shared/redact/commands.py
# (each tied to its tool's name), the codes of shared/redact/codes.py (each after its own
# noun), the forms of source code (shared/redact/sources.py), of configuration lines
# (shared/redact/files.py), values whose context is on the line before or that no assignment
# reads (shared/redact/lines.py) and of credentials said in prose (shared/redact/said.py) before
# the context rules, whose generic flags, PINs and assignments would otherwise take them
# first; then base64 known or said to be secret (shared/redact/encoded.py: a Secret's values
# whose keys say nothing; a key that names a credential has given its label already); last,
# the bare pairs of shared/redact/pairs.py, the weakest context of all.
_AFTER: tuple[RuleSpec, ...] = (
    *COMMANDS,
    *CODES,
    *SOURCES,
    *FILES,
    *LINES,
    *SAID,
    *AFTER_CATALOGUE,
    *ENCODED,
    *PAIRS,
)


@dataclass(frozen=True)
class Rule:
    """A pattern (or its text, compiled on first use), the judge that names a match's label
    (or turns it down), and optionally a seek that names where a match can start."""

    source: re.Pattern[str] | str
    judge: Judge
    seek: Seek | None = None
    # the anchors the plan gives; False: derive them from the pattern
    known: tuple[Strings, ...] | Literal[False] | None = field(
        default=False, compare=False, repr=False
    )
    # A set one of which the *text* holds whenever the rule redacts anything, for a judge
    # that reads past its match (context.TEXT_ANCHORS); empty for the others.
    text_anchors: Strings = field(default=frozenset(), compare=False, repr=False)
    # Sets of strings such that every match holds one string of each set, the most selective
    # set first (shared/redact/anchors.py), after ``text_anchors`` when there are any; None
    # when none could be derived.
    anchors: tuple[Strings, ...] | None = field(init=False)
    probes: tuple[Probe, ...] = field(init=False)

    def __post_init__(self) -> None:
        anchors = derive_anchors(self.pattern) if self.known is False else self.known
        if self.known is False and anchors and self.text_anchors:
            # first: the gate finds a rule by its first set, and a "|" is no rarer in prose
            anchors = (self.text_anchors, *anchors)
        object.__setattr__(self, "anchors", anchors)
        sets = anchors or ()
        if self.text_anchors and sets and sets[0] == self.text_anchors:
            sets = (*sets[1:], sets[0])  # the gate found that one; the pattern's go first
        object.__setattr__(self, "probes", tuple(map(_probe, sets)))

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        source = self.source
        return source if isinstance(source, re.Pattern) else re.compile(source)

    def may_match(self, text: str, folded: str, seen: dict[int, bool] | None = None) -> bool:
        """False only when the text lacks every string of some anchor set. ``seen`` remembers
        each probe's answer for this text: rules share anchor sets (``=`` or ``:``)."""
        memo: dict[int, bool] = {} if seen is None else seen
        for probe in self.probes:
            key = id(probe)
            if key not in memo:
                memo[key] = probe.hit(text, folded)
            if not memo[key]:
                return False
        return True


@cache
def _probe(anchors: Strings) -> Probe:
    """One probe per distinct anchor set, shared by the rules that have it."""
    return Probe.build(anchors)


# --- the catalogue, compiled --------------------------------------------------------------------


def _token(body: str) -> str:
    """A token that is a whole word: nothing token-like glued to its end, and (checked by the
    judge, see ``_catalogue_judge``) nothing glued to its start."""
    return rf"(?:{body})(?![A-Za-z0-9_-])"


_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


# A literal prefix that ends in "_" or "-" and no word ends in ("ghp_", "sk_live_",
# "github_pat_", "glpat-"): such a token is a token even glued to a name before it.
_MARKED_PREFIX = re.compile(r"(?:\(\?:)?(?P<head>[A-Za-z0-9]{2,})(?P<more>(?:_[A-Za-z0-9]+)*)[_-]")
_PLAIN_HEADS = frozenset({"key", "access", "secret", "api", "pat", "token", "pass"})


def _marked(fmt: Format) -> bool:
    """Whether ``fmt`` is a token with a marked prefix (see ``_MARKED_PREFIX``)."""
    if fmt.kind not in ("prefix", "checksum") or fmt.has_context:
        return False
    found = _MARKED_PREFIX.match(fmt.pattern)
    if found is None or found.group("head").lower() in _PLAIN_HEADS:
        return False
    # "sk_" alone is too short to mark a token, "sk_live_" and "sk_(?:live|test)_" are not
    more = bool(found.group("more")) or fmt.pattern.startswith("(?:", found.end())
    return len(found.group("head")) >= 3 or more


def _catalogue_judge(fmt: Format, *, marked: bool) -> Judge:
    check = CHECKS[fmt.check] if fmt.check is not None else None
    whole_token = not fmt.has_context
    # "key-ghp_...", "old_sk_live_...": a separator before a marked prefix is no word of it
    glue = "-_" if marked else ""

    def judge(m: re.Match[str], secret: str) -> str | None:
        # The start boundary is checked here rather than by a lookbehind at the head of the
        # pattern, which would stop the regex engine from skipping ahead on the pattern's
        # literal prefix. Same matches: a match turned down here swallows nothing, so the
        # search still reaches the token's real start.
        start = m.start()
        if whole_token and start:
            before = m.string[start - 1]
            if before in _TOKEN_CHARS and before not in glue:
                return None
        return fmt.label if check is None or check(secret) else None

    return judge


def _catalogue_rule(fmt: Format, known: tuple[Strings, ...] | Literal[False] | None) -> Rule:
    marked = _marked(fmt)
    if fmt.has_context:
        pattern = fmt.pattern
    elif marked:  # "ghp_..._old": a separator after it is no part of a longer word
        pattern = rf"(?:{fmt.pattern})(?![A-Za-z0-9])"
    else:
        pattern = _token(fmt.pattern)
    return Rule(pattern, _catalogue_judge(fmt, marked=marked), known=known)


def _ordered_formats() -> tuple[Format, ...]:
    # A vendor named beside a value is the most specific evidence there is, so the entries
    # with context (a ``secret`` group) run first; the others keep the file's order, specific
    # prefixes before general ones (``sk-ant-`` before ``sk-``).
    return tuple(sorted(catalogue(), key=lambda f: not f.has_context))


def _build_rules(
    formats: tuple[Format, ...], known: list[tuple[Strings, ...] | None] | None = None
) -> tuple[Rule, ...]:
    """The rules in order; ``known``: every rule's anchors in that order, from the plan."""
    count = len(BEFORE_CATALOGUE) + len(formats) + len(_AFTER)
    sets: Iterator[Any] = iter(known if known is not None else [False] * count)
    return (  # each part takes its anchor sets from ``sets`` in turn, left to right
        *(Rule(p, judge, seek, known=next(sets)) for p, judge, seek in BEFORE_CATALOGUE),
        *(_catalogue_rule(f, next(sets)) for f in formats),
        *(
            Rule(p, judge, seek, known=next(sets), text_anchors=_text_anchors(p))
            for p, judge, seek in _AFTER
        ),
    )


_ALL_TEXT_ANCHORS = {
    **TEXT_ANCHORS,
    **ENCODED_TEXT_ANCHORS,
    **FILES_TEXT_ANCHORS,
    **SAID_TEXT_ANCHORS,
    **PAIRS_TEXT_ANCHORS,
}


def _text_anchors(pattern: re.Pattern[str]) -> Strings:
    """The words (in any case) one of which the text holds when ``pattern``'s rule redacts;
    for the rules of SAID_EXACT_ANCHORS, the words as written: a case-insensitive "log" would
    be a root standing for every rule of "login" (the gate then hands each of them every text
    with "blog" or "dialog" in it), an exact "log" stands for that rule alone."""
    exact = SAID_EXACT_ANCHORS.get(pattern, ())
    return frozenset((word, True) for word in _ALL_TEXT_ANCHORS.get(pattern, ())) | frozenset(
        (word, False) for word in exact
    )


# --- the plan: the derivation, shipped -----------------------------------------------------------

_PACKAGE = "shared.redact"  # where the plan and its inputs are
PLAN = "plan.json"
# What the plan is derived from: the catalogue and the code that turns it into rules and anchors.
_PLAN_INPUTS = (
    "credentials.toml",
    "anchors.py",
    "assignments.py",
    "catalogue.py",
    "codes.py",
    "commands.py",
    "context.py",
    "encoded.py",
    "files.py",
    "gate.py",
    "keywords.py",
    "languages.py",
    "lines.py",
    "markup.py",
    "pairs.py",
    "prose.py",
    "rule.py",
    "said.py",
    "shell.py",
    "sources.py",
    "tables.py",
    "web.py",
)


def plan_key() -> str:
    """A key over the plan's inputs as they are on disk now and the Python version (its regex
    parser)."""
    h = hashlib.sha256(f"python={sys.version_info[0]}.{sys.version_info[1]}".encode())
    folder = resources.files(_PACKAGE)
    for name in _PLAN_INPUTS:
        h.update(name.encode() + b"\0" + folder.joinpath(name).read_bytes())
    return h.hexdigest()


def _code_key() -> str | None:
    try:
        return plan_key()
    except OSError:  # a source not readable as a file: the plan is not used
        return None


def _encode_sets(sets: tuple[Strings, ...] | None) -> list[list[list[Any]]] | None:
    return None if sets is None else [sorted([text, icase] for text, icase in s) for s in sets]


def shortest_match(pattern: re.Pattern[str]) -> int:
    """The fewest characters any match of ``pattern`` takes (lookarounds take none): a text
    shorter than that cannot hold one, so the gate drops the rule for it (an 8-character id
    is no card number, whatever its digits)."""
    return int(sre_parse.parse(pattern.pattern, pattern.flags).getwidth()[0])


def _decode_sets(raw: Any) -> tuple[Strings, ...] | None:
    if raw is None:
        return None
    return tuple(frozenset((str(text), bool(icase)) for text, icase in s) for s in raw)


def build_plan() -> dict[str, Any]:
    """The derivation the plan ships (slow: every pattern parsed and compiled)."""
    formats = _ordered_formats()
    rules = _build_rules(formats)
    return {
        "key": plan_key(),
        "formats": [asdict(f) for f in formats],
        "anchors": [_encode_sets(r.anchors) for r in rules],
        "widths": [shortest_match(r.pattern) for r in rules],
    }


@cache
def _shipped() -> (
    tuple[tuple[Format, ...], list[tuple[Strings, ...] | None], tuple[int, ...]] | None
):
    """The shipped plan's formats, anchors and widths when its key is this code's; else None."""
    try:
        raw = json.loads(resources.files(_PACKAGE).joinpath(PLAN).read_text(encoding="utf-8"))
        if CODE_KEY is None or raw.get("key") != CODE_KEY:
            return None
        formats = tuple(
            Format(**{**f, "vendor_words": tuple(f["vendor_words"])}) for f in raw["formats"]
        )
        anchors = [_decode_sets(a) for a in raw["anchors"]]
        widths = tuple(int(w) for w in raw["widths"])
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    if not len(anchors) == len(widths) == len(BEFORE_CATALOGUE) + len(formats) + len(_AFTER):
        return None
    return formats, anchors, widths


def write_plan(path: Path | None = None) -> Path:
    """Write ``build_plan()`` where the package reads it (or to ``path``)."""
    target = path or Path(__file__).with_name(PLAN)
    plan = build_plan()

    def rows(items: list[Any]) -> str:  # one format or rule per line: readable diffs
        return ",\n".join(json.dumps(x, sort_keys=True, ensure_ascii=False) for x in items)

    text = (
        f'{{"key": {json.dumps(plan["key"])},\n"formats": [\n{rows(plan["formats"])}\n],\n'
        f'"anchors": [\n{rows(plan["anchors"])}\n],\n'
        f'"widths": {json.dumps(plan["widths"])}}}\n'
    )
    target.write_text(text, encoding="utf-8")
    return target


# --- the gate: which rules can match a text -------------------------------------------------------
#
# Trying all 265 rules on every text would cost milliseconds; the gate names the few that can
# match, from the first anchor set of each rule (shared/redact/anchors.py; a hit on an anchor
# stands for the rules whose first set holds that very anchor), in three parts:
#   * anchors with a rare character (a symbol, a digit, a capital): one regex whose
#     alternatives are grouped by that character, so a search skips ahead on a character set
#     and checks the rest of the anchor around it with lookarounds (shared/redact/pivots.py);
#     each hit is then resolved to its anchors by the characters around it;
#   * anchors that are plain words ("token", "curl"): one Aho-Corasick pass over the folded
#     text and one over the text as it is;
#   * vendor+value catalogue entries: tried only where one of the credential nouns of
#     VENDOR_PATTERN occurs with the first word of one of the entry's vendor names in the
#     stretch before it that the pattern can reach.
# Sound by construction: a rule is left out only when the text lacks every anchor of a set
# every match of the rule holds. tests/shared/test_redact.py compares the result with running
# every rule.


@dataclass(frozen=True)
class Engine:
    rules: tuple[Rule, ...]
    gate: re.Pattern[str]
    # pivot character -> the two characters around it (lowercase for a case-insensitive
    # anchor; "" for a one-character anchor) -> the anchors that have them.
    pivots: dict[str, dict[str, tuple[Pivot, ...]]]
    # Plain-word anchors, each under the shortest word it holds ("pass" for "password"):
    # that word stands for the rules of all of them (the anchor sets left sort them out),
    # with whether it is looked for in the folded text or in the text as it is.
    words: tuple[tuple[str, tuple[int, ...], bool], ...]
    vendors: dict[str, tuple[int, ...]]
    vendor_reach: int  # how far before its noun a vendor name can start
    one_set: frozenset[int]  # the rules with a single anchor set
    # Each rule, by identity, to its place in ``rules`` (``redact`` merges the rules a marker
    # brings in; comparing rules field by field cost ~0.7 ms a redacted text).
    rank: dict[int, int]
    widths: tuple[int, ...]  # each rule's shortest match (``shortest_match``), in rule order
    # ``words`` as two Aho-Corasick automata (pyahocorasick, C): every occurrence of any
    # of them in one pass over the text, folded or as it is, instead of a search per word
    # (~75 searches, ~10 µs of a 200-character text, 3 µs now; short ids and labels too).
    folded_finder: Any = field(compare=False, repr=False, default=None)
    exact_finder: Any = field(compare=False, repr=False, default=None)


_NOUNS = ("key", "token", "secret", "pat", "pw", "pass")  # VENDOR_PATTERN's, as folded text
_ALNUM = re.compile(r"[a-z0-9]+")
# What VENDOR_PATTERN needs after its noun (from the noun's third letter on, so that every
# noun fits): the rest of the noun and a few key characters, then "=", ":" or "is"/"was".
_AFTER_NOUN = re.compile(r"[a-z0-9_.-]{0,16}[\"']?(?:[ \t]*[:=]|[ \t]+(?:is|was))")


def _rules_by_anchor(
    rules: tuple[Rule, ...], skip: set[int]
) -> list[tuple[Anchor, tuple[int, ...]]]:
    firsts = {i: rule.anchors[0] for i, rule in enumerate(rules) if i not in skip and rule.anchors}
    missing = [r.pattern.pattern for i, r in enumerate(rules) if i not in skip and not r.anchors]
    if missing:  # every rule has anchors, or the gate would have to let everything through
        raise AssertionError(f"redaction rules without anchors: {missing}")
    every = frozenset().union(*firsts.values())
    return [(g, tuple(i for i, first in firsts.items() if g in first)) for g in sorted(every)]


_ENGINE_LOCK = threading.Lock()


def engine() -> Engine:
    """The rules and the gate, built once per process (the first caller builds them while
    any other waits: two engines' rules must never meet in one redaction)."""
    with _ENGINE_LOCK:
        return _engine()


@cache
def _engine() -> Engine:
    shipped = _shipped()
    if shipped is not None:
        formats, known, widths = shipped
        rules = _build_rules(formats, known)
    else:  # the catalogue or this code changed since the plan was written: derive it all
        formats = _ordered_formats()
        rules = _build_rules(formats)
        widths = tuple(shortest_match(rule.pattern) for rule in rules)
    first = len(BEFORE_CATALOGUE)
    vendors: dict[str, list[int]] = {}
    for i, fmt in enumerate(formats, start=first):
        for word in fmt.vendor_words:
            vendors.setdefault(word, []).append(i)
    by_vendor = {i for ids in vendors.values() for i in ids}
    anchored = _rules_by_anchor(rules, by_vendor)
    words = [(anchor, ids) for anchor, ids in anchored if is_word(anchor)]
    gate, pivots = pivot_gate([(anchor, ids) for anchor, ids in anchored if not is_word(anchor)])
    roots = minimal(frozenset(anchor for anchor, _ in words))
    rooted = tuple(
        (
            word,
            tuple(sorted({i for a, ids in words if implies(a, (word, icase)) for i in ids})),
            icase,
        )
        for word, icase in sorted(roots)
    )
    return Engine(
        rules=rules,
        gate=gate,
        pivots=pivots,
        words=rooted,
        vendors={word: tuple(ids) for word, ids in vendors.items()},
        # VENDOR_PATTERN allows 24 characters between the name and the noun.
        vendor_reach=24 + 1 + max((f.vendor_reach for f in formats), default=0),
        one_set=frozenset(i for i, rule in enumerate(rules) if len(rule.anchors or ()) == 1),
        rank={id(rule): i for i, rule in enumerate(rules)},
        widths=widths,
        folded_finder=_finder((word, ids) for word, ids, icase in rooted if icase),
        exact_finder=_finder((word, ids) for word, ids, icase in rooted if not icase),
    )


def _finder(words: Iterator[tuple[str, tuple[int, ...]]]) -> Any:
    """An automaton that yields ``(end, ids)`` for every occurrence of one of ``words``; None
    for no words (an empty automaton cannot search)."""
    found = ahocorasick.Automaton()
    for word, ids in words:
        found.add_word(word, ids)
    if not len(found):
        return None
    found.make_automaton()
    return found


def _pivot_hits(engine: Engine, text: str, hit: set[int]) -> None:
    """Adds the rules of every pivoted anchor found in ``text``: each found exactly."""
    for m in engine.gate.finditer(text):
        at = m.start()
        pairs = engine.pivots[m.group()]
        before, after = text[max(at - 1, 0) : at + 1], text[at : at + 2]
        keys = {"", before, after, before.lower(), after.lower()} if at else {"", after}
        for key in keys:
            for pivot in pairs.get(key, ()):
                word, icase = pivot.anchor
                start = at - pivot.offset
                if start < 0:
                    continue
                piece = text[start : start + len(word)]
                if (piece.lower() if icase else piece) == word:
                    hit.update(pivot.rules)


def _vendor_hits(engine: Engine, folded: str, hit: set[int]) -> None:
    for at in find_all(folded, _NOUNS):
        if _AFTER_NOUN.match(folded, at + 2) is None:
            continue  # no "=", ":" or "is" where the pattern needs one
        for word in _ALNUM.findall(folded, max(0, at - engine.vendor_reach), at):
            hit.update(engine.vendors.get(word, ()))


def candidates(text: str, room: int | None = None) -> tuple[Rule, ...]:
    """The rules that could match ``text``: those with an anchor of every set in it and no
    shorter match than ``room`` characters (by default the text's length; a match never
    spans more than the text the rules run over). Later passes look between markers, at
    pieces of this same text, but a marker can turn a glued word into a whole one, so
    ``redact`` asks again about the text a pass left (with the room of the text it redacts)."""
    current = engine()
    folded = fold(text)
    hit: set[int] = set()
    _pivot_hits(current, text, hit)
    # A rule with one anchor set, one of whose anchors was just found, needs no more proof.
    proven = hit & current.one_set
    # ``occurs`` of every root (the wide ones too: no ASCII text holds one), in one pass each
    if current.folded_finder is not None:
        for _, ids in current.folded_finder.iter(folded):
            hit.update(ids)
    if current.exact_finder is not None:
        for _, ids in current.exact_finder.iter(text):
            hit.update(ids)
    _vendor_hits(current, folded, hit)
    if not hit:
        return ()
    # A rule that seeks finds its own starts faster than its anchors can be checked.
    rules, widths, seen = current.rules, current.widths, dict[int, bool]()
    room = len(text) if room is None else room
    return tuple(
        rules[i]
        for i in sorted(hit)
        if widths[i] <= room
        and (i in proven or rules[i].seek is not None or rules[i].may_match(text, folded, seen))
    )


# The key of the code this process runs, taken when this module is imported (its inputs are
# imported just before): a release installed over a running process must not lend its plan to
# the rules already in memory. Reading its 22 files costs under 1 ms.
CODE_KEY = _code_key()


if __name__ == "__main__":
    print(f"wrote {write_plan()}")
