"""Whether a proposed rule is grounded in what the user said, checked in code.

The extraction model reads the whole turn, assistant replies included, and an assistant reply
may relay a web page or a tool's output. A rule found only there is not the user's, so it is
never learned: a proposed rule counts as grounded only when its content words appear in the
turn's user-role messages. Content words are the rule's words minus function words and the
vocabulary every instruction shares ("always", "never", "reply", "use"), compared on a crude
stem so "replies" matches "reply"; most of them (``MIN_SHARE``), and all but one
(``MAX_UNHEARD``: a page's "praise Acme" folded into a stated rule is two), must be there,
and every address-like token (a URL, an email address, a domain, a number) verbatim.

Said together: the words must come from one user message, close together (within ``SPAN``
words, or four per content word for a long rule), so a rule is never assembled from words
scattered over several messages, or over a long paste. And said as an instruction: the same
span holds a word that gives one (``CUES``: "always", "never", "stop", "prefer" ..., or the
rule's own first word, its verb: "answer", "be", "use"), so a rule of common words is not
grounded by a user who only answered "yes" or asked about them.

Said, or only quoted: a user message may relay a page too ("the page says: ...", a quotation,
a block quote, a code block). A rule found only in such a span is ``QUOTED``: the extractor
proposes it with ``origin="quoted"``, and the store holds it for a person (``rule_review``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

MIN_SHARE = 0.6
MAX_UNHEARD = 1  # content words the user did not say: room for a paraphrase, not a payload
SPAN = 16
CUES = frozenset(
    """always never ever don't dont stop avoid prefer rather instead should must want like
    keep use remember anymore future forward onward onwards""".split()
)
SAID = "said"
QUOTED = "quoted"
_RELAYED = re.compile(
    r"```.*?(?:```|\Z)"  # a code block
    r"|^[ \t]*>[^\n]*"  # a block quote line
    r"|\b(?:says|said|reads|writes|wrote|states|claims|instructs)\s*:[^\n]*"  # reported
    r'|"(?:[^"\n]*?\s){3,}[^"\n]*?"'  # a quotation of four words or more
    r"|\u201c(?:[^\u201d\n]*?\s){3,}[^\u201d\n]*?\u201d"
    r"|(?<!\w)'(?:[^'\n]*?\s){3,}[^'\n]*?'(?!\w)"
    r"|\u2018(?:[^\u2019\n]*?\s){3,}[^\u2019\n]*?\u2019",
    re.S | re.M,
)
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_EXACT = re.compile(r"\S*(?:://|@|www\.)\S*|\b[\w-]+(?:\.[\w-]+)+(?:/\S*)?|\b\d[\d.,:/-]*\b", re.I)
_SUFFIXES = ("ing", "ies", "ed", "es", "ly", "s")
_STOP = frozenset(
    """a an the and or but if then than so to of in on at by for with from into onto as is are
    be been being was were do does did doing don't not no nor it its it's this that these those
    there here i me my mine we us our you your yours he him his she her they them their what
    which who whom when where why how all any each every some more most such only own same too
    very can will would should could may might must shall just also please always never ever
    from now on anymore use using used make sure keep stop start avoid prefer ensure user user's
    users assistant reply replies replying respond responds response responses answer answers
    answering write writes writing say says said tell told rule rules instruction instructions
    one ones thing things way time times word words""".split()
)


def stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def own_words(text: str) -> str:
    """``text`` without what it relays (quotations, block quotes, code, "the page says: ...")."""
    return _RELAYED.sub(" ", text)


def grounding(rule: str, user_texts: Iterable[str]) -> str | None:
    """``SAID`` when ``rule`` is in one user message's own words, ``QUOTED`` when only in what
    a user message relays, None when in neither (see the module docstring)."""
    texts = [t for t in user_texts if t.strip()]
    if any(_in(rule, own_words(t)) for t in texts):
        return SAID
    if any(_in(rule, t) for t in texts):
        return QUOTED
    return None


def grounded(rule: str, user_texts: Iterable[str]) -> bool:
    """Whether ``rule`` is in the user's own words (``grounding`` is ``SAID``)."""
    return grounding(rule, user_texts) == SAID


def _in(rule: str, said: str) -> bool:
    """Whether ``rule``'s exact tokens, and most of its content words close together, are in
    ``said``."""
    if not said.strip():
        return False
    lowered = said.lower()
    for token in _EXACT.findall(rule):
        token = token.strip(".,;:!?()[]{}'\"").lower()
        if token and token not in lowered:
            return False
    words = {stem(w) for w in _WORD.findall(rule.lower()) if w not in _STOP and len(w) >= 2}
    if not words:
        return False  # a rule saying nothing of its own is not worth a standing instruction
    need = max(1, math.ceil(MIN_SHARE * len(words) - 1e-9), len(words) - MAX_UNHEARD)
    cues = {stem(w) for w in CUES} | {stem(w) for w in _WORD.findall(rule.lower())[:1]}
    heard = [stem(w) for w in _WORD.findall(lowered)]
    width = max(SPAN, 4 * len(words))
    counts: dict[str, int] = {}
    cued = -width  # where the newest cue was heard
    for i, w in enumerate(heard):  # a window of ``width`` words: ``need`` of them and a cue
        if w in cues:
            cued = i
        if w in words:
            counts[w] = counts.get(w, 0) + 1
        if i >= width and heard[i - width] in words:
            gone = heard[i - width]
            counts[gone] -= 1
            if not counts[gone]:
                del counts[gone]
        if len(counts) >= need and cued > i - width:
            return True
    return False
