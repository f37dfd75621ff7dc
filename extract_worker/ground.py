"""Whether a proposed rule is grounded in what the user said, checked in code.

The extraction model reads the whole turn, assistant replies included, and an assistant reply
may relay a web page or a tool's output. A rule found only there is not the user's, so it is
never learned: a proposed rule counts as grounded only when its content words appear in the
turn's user-role messages. Content words are the rule's words minus function words and the
vocabulary every instruction shares ("always", "never", "reply", "use"), compared on a crude
stem so "replies" matches "reply"; most of them (``MIN_SHARE``) must be there, and every
address-like token (a URL, an email address, a domain, a number) must be there verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MIN_SHARE = 0.6
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


def _stems(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower())}


def grounded(rule: str, user_texts: Iterable[str]) -> bool:
    """Whether ``rule``'s content words appear in ``user_texts`` (see the module docstring)."""
    said = "\n".join(user_texts)
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
    heard = _stems(said)
    found = sum(1 for w in words if w in heard)
    return found / len(words) >= MIN_SHARE
