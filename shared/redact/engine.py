"""The engine behind the package's public API (shared/redact/__init__.py says what is covered
and how the ambiguous cases are decided).

Mechanics: the rules run in order, most specific first (PEM blocks, the catalogue with its
vendor-keyword entries first, then the context rules). A match never spans an existing marker,
so a marker is never re-redacted, though lookbehinds and judges see the whole text. A match a
judge turns down swallows nothing (the search resumes one character on), and a "value" that is
itself the next ``key=`` is left to that key. Passes repeat until nothing changes: a pass that
changes anything turns at least one character into part of a marker, so this ends, and the
result is a fixed point, which makes ``redact`` idempotent by construction. (A pass stops at
the last rule that changed the text in the pass before, when it has changed nothing so far:
the rules after it would see the text they already left alone.) Every rule has anchors
(literals read off its own pattern, one of which every match holds; see
shared/redact/anchors.py); the gate (shared/redact/gate.py) finds which anchors occur and only
their rules run, so most prose runs no rule at all; the answer is the same. The catalogue is
read and compiled on the first call, once per process.
"""

from __future__ import annotations

import bisect
import importlib
import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.redact.gate import Rule
    from shared.redact.rule import Scan

__all__ = [
    "Redaction",
    "contains_secret",
    "find_credential",
    "redact",
    "redact_json",
    "redact_many",
    "redact_text",
    "repeats",
]


@dataclass(frozen=True)
class Redaction:
    """The redacted text and the sorted, unique labels of what was redacted. ``values`` holds
    the secrets themselves with their labels (``redact_many`` redacts them wherever else they
    are repeated); it is never printed, so a logged ``Redaction`` shows no secret."""

    text: str
    labels: tuple[str, ...]
    values: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)


# A secret shorter than this is not looked for elsewhere (a 3-digit code would take every
# number of the text with it).
MIN_ECHO = 4


class _Found:
    """What a redaction found: the labels, and each secret (its first label)."""

    __slots__ = ("labels", "values")

    def __init__(self) -> None:
        self.labels: set[str] = set()
        self.values: dict[str, str] = {}

    def add(self, label: str, value: str) -> None:
        from shared.redact.placeholders import is_placeholder

        self.labels.add(label)
        value = value.strip()
        if len(value) >= MIN_ECHO and "[REDACTED:" not in value and not is_placeholder(value):
            self.values.setdefault(value, label)


# The rules' modules (their patterns, the contextual judges, the gate, and the normal form's and
# the placeholders' patterns) are imported on the first call: a process that never redacts (a
# CLI recall) does not compile ~40 patterns (~13 ms). Each function below imports what it
# uses; after the first call that is a lookup.
# Names tests/shared/test_redact.py reaches through this module, resolved on first use.
_LAZY = {
    "_FOLD": ("shared.redact.anchors", "FOLD"),
    "_anchors": ("shared.redact.anchors", "anchors"),
    "_folded": ("shared.redact.anchors", "folded"),
    "_occurs": ("shared.redact.anchors", "occurs"),
    "_candidates": ("shared.redact.gate", "candidates"),
}


def __getattr__(name: str) -> Any:
    """``_RULES`` and ``_GATE``, built on first use (PEP 562): importing this module reads no
    file and compiles no rule; the names in ``_LAZY`` import their module then. (Any other
    name, such as the ``__path__`` an import statement asks about, imports nothing.)"""
    if name in ("_RULES", "_GATE"):
        from shared.redact.gate import engine

        return engine().rules if name == "_RULES" else engine().gate
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- engine ---------------------------------------------------------------------------------------


def _secret_span(m: re.Match[str]) -> tuple[int, int]:
    """The part to replace: the ``secret`` or ``bare`` group when the rule has one, else all."""
    for name in ("secret", "bare"):
        if name in m.re.groupindex and m.group(name) is not None:
            return m.span(name)
    return m.span()


def _gaps(text: str) -> list[tuple[int, int]]:
    """The spans of ``text`` outside existing markers: the only places rules look."""
    from shared.redact.rule import MARKER

    bounds = [0]
    for marker in MARKER.finditer(text):
        bounds += marker.span()
    return list(zip(bounds[::2], [*bounds[1::2], len(text)], strict=True))


def _finder(rule: Rule, scan: Scan) -> Any:
    """``search(pos, endpos)`` for ``rule`` over the scanned text: the regex's own search, or
    for a rule that seeks, a match tried only at the starts it names (the same leftmost
    match); None when it names none."""
    text = scan.text
    if rule.seek is None:
        return lambda pos, endpos: rule.pattern.search(text, pos, endpos)
    starts = rule.seek(scan)
    if not starts:
        return None
    match = rule.pattern.match

    def search(pos: int, endpos: int) -> re.Match[str] | None:
        for start in starts[bisect.bisect_left(starts, pos) :]:
            if start >= endpos:
                return None
            if (m := match(text, start, endpos)) is not None:
                return m
        return None

    return search


def _apply_rule(rule: Rule, scan: Scan, gaps: list[tuple[int, int]], found: _Found) -> str:
    """Like ``pattern.sub`` outside markers, with two differences: a match never spans a
    marker, though lookbehinds and judges still see the whole text (a marker earlier on the
    line is still "earlier on the line"); and a match the judge turns down swallows nothing,
    the search resumes one character later (``PASSWORD: JWT_SECRET: 'x'``)."""
    out: list[str] = []
    kept_to, text = 0, scan.text
    search = _finder(rule, scan)
    if search is None:
        return text  # the rule names no place it could start
    for low, high in gaps:
        search_from = low
        while (m := search(search_from, high)) is not None:
            start, end = _secret_span(m)
            label = rule.judge(m, text[start:end])
            if label is None:
                search_from = m.start() + 1
                continue
            found.add(label, text[start:end])
            out += (text[kept_to:start], f"[REDACTED:{label}]")
            kept_to, search_from = end, max(m.end(), m.start() + 1)
    if not out:
        return text
    out.append(text[kept_to:])
    return "".join(out)


def _one_pass(text: str, found: _Found, rules: tuple[Rule, ...], until: int) -> tuple[str, int]:
    """Every rule once, in order; the text and the index of the last rule that changed it
    (-1 for none). Past ``until``, a pass that has changed nothing stops: those rules saw
    this very text in the previous pass and changed nothing, and they are pure."""
    from shared.redact.rule import Scan

    scan, gaps = Scan(text), _gaps(text)
    changed_at = -1
    for i, rule in enumerate(rules):
        if i > until and changed_at < 0:
            break
        redacted = _apply_rule(rule, scan, gaps, found)
        if redacted is not scan.text:
            scan, gaps, changed_at = Scan(redacted), _gaps(redacted), i
    return scan.text, changed_at


def _fixed_point(text: str, rules: tuple[Rule, ...], found: _Found) -> str:
    # Each pass that changes the text shrinks what lies outside markers, so len(text) + 1
    # passes always reach the fixed point; in practice it is two, the second one short.
    until = len(rules) - 1
    for _ in range(len(text) + 1 if rules else 0):
        text, until = _one_pass(text, found, rules, until)
        if until < 0:
            break
    return text


def _redact_with(text: str, rules: tuple[Rule, ...] | None = None) -> Redaction:
    """``rules`` (by default the candidates) over the NFKC form of ``text``: the redacted
    normal form when something was redacted, else ``text`` itself, untouched."""
    from shared.redact.gate import candidates, engine
    from shared.redact.normalize import normal_form

    normal = normal_form(text)
    gated = rules is None
    if rules is None:
        rules = candidates(normal)
        if not rules:  # nothing could match: the text as it came (most texts, most labels)
            return Redaction(text, ())
    found = _Found()
    redacted = _fixed_point(normal, rules, found) if rules else normal
    while gated and redacted is not normal:
        # A marker can make an anchor where the text had none: ``...qshodan api key: x`` has
        # no word "shodan" until the token glued before it is a marker. The gate is asked
        # again about what came out; a rule it adds reruns the whole, in catalogue order.
        have = {id(rule) for rule in rules}
        more = [rule for rule in candidates(redacted, len(normal)) if id(rule) not in have]
        if not more:
            break
        rank = engine().rank
        rules = tuple(sorted((*rules, *more), key=lambda rule: rank[id(rule)]))
        found = _Found()
        redacted = _fixed_point(normal, rules, found)
    if not found.labels:
        return Redaction(text, ())
    # a secret recognised once by its context ("my password is X") is redacted where the
    # text repeats it without one ("... and X again")
    if found.values:
        redacted = _echoes(found.values).sub(_marker(found.values), redacted)
    values = tuple(sorted(found.values.items()))
    return Redaction(text=redacted, labels=tuple(sorted(found.labels)), values=values)


def _echoes(values: dict[str, str]) -> re.Pattern[str]:
    """Any of ``values`` standing alone, in any case (a tag is casefolded, and a password
    in another case still gives most of it away): not inside a longer run of word
    characters at an end that is one ("1234" is not taken out of "12345"), longest first."""
    parts = []
    for value in sorted(values, key=lambda v: (-len(v), v)):
        part = re.escape(value)
        if value[0].isalnum() or value[0] == "_":
            part = r"(?<!\w)" + part
        if value[-1].isalnum() or value[-1] == "_":
            part += r"(?!\w)"
        parts.append(part)
    return re.compile("|".join(parts), re.IGNORECASE)


def _label_of(values: dict[str, str]) -> Callable[[str], str]:
    folded = {value.casefold(): label for value, label in values.items()}
    return lambda found: values.get(found) or folded.get(found.casefold(), "password")


def _marker(values: dict[str, str]) -> Callable[[re.Match[str]], str]:
    label = _label_of(values)
    return lambda m: f"[REDACTED:{label(m.group())}]"


# --- public API -----------------------------------------------------------------------------------


def redact(text: str) -> Redaction:
    """Replace every recognised secret in ``text`` with ``[REDACTED:<label>]``. Matching runs
    on the NFKC form; see "Unicode" in the package docstring for what comes back."""
    if not text:  # a save's absent title: no rule can match nothing (~25 µs of a save)
        return Redaction(text, ())
    return _redact_with(text)


def redact_many(texts: Sequence[str]) -> list[Redaction]:
    """Each text redacted, and every secret found in any of them redacted in all of them:
    the parts of one request (a turn's messages, a save's text and its tags) are read
    together, so a password recognised in the user's message ("my password is X") is
    redacted too where the assistant's reply repeats it bare ("I won't repeat X"), and a
    part that is only a value is read after the line before it ("the password is" then
    "X" as the next message)."""
    from shared.redact.normalize import normal_form

    results = [redact(text) for text in texts]
    values: dict[str, str] = {}
    for result in results:
        for value, kind in result.values:
            values.setdefault(value, kind)
    values.update({v: k for v, k in _across(texts).items() if v not in values})
    if not values:
        return results
    echoes, marker, label = _echoes(values), _marker(values), _label_of(values)
    out = []
    for text, result in zip(texts, results, strict=True):
        base = result.text if result.labels else normal_form(text)
        repeated = {m.group() for m in echoes.finditer(base)}
        if not repeated:
            out.append(result)
            continue
        labels = {*result.labels, *(label(v) for v in repeated)}
        found = {v: label(v) for v in repeated}
        found.update(result.values)
        out.append(
            Redaction(
                text=echoes.sub(marker, base),
                labels=tuple(sorted(labels)),
                values=tuple(sorted(found.items())),
            )
        )
    return out


def _across(texts: Sequence[str]) -> dict[str, str]:
    """Secrets split over two parts: a part that is one run of non-blanks, read after the
    last line of the part before it ("the db password is" then "<pw>" as the next message,
    "here is the token for prod" then "<token>"). Only such a one-word part costs a call."""
    found: dict[str, str] = {}
    for before, text in itertools.pairwise(texts):
        word = text.strip()
        if len(word) < MIN_ECHO or len(word) > 4096 or len(word.split()) != 1:
            continue
        tail = before.rstrip().rsplit("\n", 1)[-1].strip()
        if not tail:
            continue
        for value, label in redact(f"{tail}\n{word}").values:
            if value in word:
                found.setdefault(value, label)
    return found


def repeats(values: Sequence[tuple[str, str]], text: str) -> tuple[str, ...]:
    """The labels of those of ``values`` (a ``Redaction``'s) that ``text`` repeats."""
    from shared.redact.normalize import normal_form

    if not values or not text:
        return ()
    table = dict(values)
    label = _label_of(table)
    return tuple(sorted({label(m.group()) for m in _echoes(table).finditer(normal_form(text))}))


def redact_text(text: str) -> str:
    """``redact(text).text``."""
    return redact(text).text


def redact_json(value: Any, found: set[str] | None = None) -> Any:
    """``value`` with every string in it redacted (a dict's values, not its keys; a tuple
    comes back a list, as JSON has it), read together as ``redact_many`` reads a request's
    parts; the labels found go into ``found`` when one is given. A key that is not a string
    raises ``TypeError``: no JSON has one."""
    strings: list[str] = []
    _strings_of(value, strings)
    results = iter(redact_many(strings))

    def rebuilt(x: Any) -> Any:
        if isinstance(x, str):
            result = next(results)
            if found is not None:
                found.update(result.labels)
            return result.text
        if isinstance(x, dict):
            return {k: rebuilt(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [rebuilt(v) for v in x]
        return x

    return rebuilt(value)


def _strings_of(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("a JSON object's keys are strings")
        for x in value.values():
            _strings_of(x, out)
    elif isinstance(value, list | tuple):
        for x in value:
            _strings_of(x, out)


def contains_secret(text: str) -> bool:
    """Whether ``redact`` would replace anything in ``text``."""
    return bool(redact(text).labels)


_ID_SEPARATORS = "-_./:@+"


def find_credential(value: str) -> str | None:
    """A label of a credential in ``value`` (the whole of it or any part; the first in label
    order), or None. For identifier fields, which refuse a secret rather than rewrite it.
    A token glued to
    another word (``note-ghp_...``) is no token to ``redact``, so the value is also read with
    each separator in turn taken for a space; and a token whose own shape has that separator
    (``note-xoxb-123-456-abc``: a Slack token is hyphenated) is read from each place a
    separator starts a new part."""
    from shared.redact.gate import candidates
    from shared.redact.normalize import normal_form

    spaced = (value.replace(sep, " ") for sep in _ID_SEPARATORS if sep in value)
    # A tail's anchors are all in the whole value, so with no candidate rule for the whole
    # there is none for a tail: an ordinary id (a UUID session id) costs no extra calls. Nor
    # is the whole read again then: ``redact`` asks the same gate first, and with no
    # candidate it finds nothing (a ULID's check was two gate calls, now one).
    glued = bool(candidates(normal_form(value)))
    tails = (value[i + 1 :] for i, ch in enumerate(value) if glued and ch in _ID_SEPARATORS)
    for text in itertools.chain((value,) if glued else (), spaced, tails):
        labels = redact(text).labels
        if labels:
            return labels[0]
    return None
