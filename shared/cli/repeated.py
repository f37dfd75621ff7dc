"""Repeatable options (``--tag a --tag b ...``) gathered before argparse parses a verb.

argparse (3.11) looks through every remaining option string each time it reaches one, so a
command's parse grows with the square of its options: ``memory save`` with 10,000 ``--tag``
took 2-5 s in argparse alone, whatever the option's action. ``gathered`` takes the plain
``--tag VALUE`` and ``--tag=VALUE`` words out of the verb's words in one pass and appends
their values to what argparse parsed from the rest, in order: the same namespace as argparse's
``append`` action. When any use of such an option is not plain (a value starting with ``-``,
an abbreviation such as ``--ta``), that option is left to argparse untouched, so its answers
and errors are argparse's own.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

ParseKnown = Callable[..., tuple[argparse.Namespace, list[str]]]


def gathered(p: argparse.ArgumentParser, *flags: str) -> None:
    """Make ``p`` (a verb's parser) gather the values of the ``append`` options ``flags``."""
    dests = {}
    for action in p._actions:
        for flag in flags:
            if flag in action.option_strings:
                if not isinstance(action, argparse._AppendAction):
                    raise TypeError(f"{flag} is not an append option")
                dests[flag] = action.dest
    if set(dests) != set(flags):
        raise ValueError(f"{p.prog} lacks one of {flags}")
    p.parse_known_args = _gathering(p.parse_known_args, dests)  # type: ignore[method-assign]


def split(words: Sequence[str], dests: dict[str, str]) -> tuple[list[str], dict[str, list[str]]]:
    """(the words left for argparse, the values gathered per destination)."""
    found: dict[str, list[tuple[int, int, str]]] = {flag: [] for flag in dests}  # start, end, value
    untouched: set[str] = set()
    i = 0
    while i < len(words):
        word = words[i]
        if word == "--":  # what follows is positional
            break
        flag, eq, value = word.partition("=")
        if flag in dests and eq:
            found[flag].append((i, i + 1, value))
        elif word in dests:
            if i + 1 < len(words) and not words[i + 1].startswith("-"):
                found[word].append((i, i + 2, words[i + 1]))
                i += 1
            else:
                untouched.add(word)
        elif word.startswith("--") and len(flag) > 2:  # an abbreviation argparse would accept
            untouched.update(f for f in dests if f.startswith(flag) and f != flag)
        i += 1
    drop: set[int] = set()
    values: dict[str, list[str]] = {}
    for flag, uses in found.items():
        if flag in untouched or not uses:
            continue
        for start, end, value in uses:
            drop.update(range(start, end))
            values.setdefault(dests[flag], []).append(value)
    return [w for n, w in enumerate(words) if n not in drop], values


def _gathering(parse: ParseKnown, dests: dict[str, str]) -> Any:  # argparse's overloads
    def parse_known_args(
        args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        rest, values = split(sys.argv[1:] if args is None else list(args), dests)
        parsed, unknown = parse(rest, namespace)
        for dest, got in values.items():
            setattr(parsed, dest, [*(getattr(parsed, dest, None) or []), *got])
        return parsed, unknown

    return parse_known_args
