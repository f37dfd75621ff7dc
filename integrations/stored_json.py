"""A JSON value as a memory's text, redacted the way the store will redact it.

The framework adapters (``langgraph_store``, ``mem0_compat``) keep structured values in a
memory's text and their own fields in its title, both as JSON. The store redacts every free
text before it is written (``[REDACTED:<kind>]``), and a redaction across a JSON string's
escaped quote could leave text that no longer parses. So the adapter redacts first, here, with
the same engine: every string of the value (``redact_json``), then the text and the title
together as the store reads a save (``redact_many``), until the store would change nothing.
What the store then keeps is exactly the text this answers, and reading it back gives the
value with its credentials as placeholders.

A title the store would change (it repeats a secret of the value) is refused: the adapter's
fields must come back as they were given.
"""

from __future__ import annotations

import json
from typing import Any

from shared.contract.errors import InvalidArgumentError
from shared.redact import find_credential, redact_json, redact_many, repeats

ROUNDS = 4  # redaction reaches its fixed point in one or two; more means something is off


def dumps(value: Any) -> str:
    """The one spelling of a value as text: readable (unescaped Unicode), keys in order."""
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def stored_text(value: Any, title: str) -> tuple[str, tuple[str, ...]]:
    """``value`` as the text the store will keep unchanged beside ``title``, and the kinds of
    credential taken out of it. ``InvalidArgumentError`` when the value is not JSON or when
    ``title`` repeats one of its secrets."""
    found: set[str] = set()
    try:
        current = redact_json(json.loads(dumps(value)), found)  # a JSON copy: tuples, numbers
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"the value must be JSON-serialisable ({e})") from e
    for _ in range(ROUNDS):
        text = dumps(current)
        said = redact_many([text, title])
        if said[1].text != title:
            raise InvalidArgumentError(
                "the key or namespace repeats a secret held in the value; choose another"
            )
        if said[0].text == text:
            return text, tuple(sorted(found))
        found.update(said[0].labels)
        try:
            current = json.loads(said[0].text)
        except ValueError:  # the redaction crossed a string's edge: blank the strings it found
            current = _blanked(current, said[0].values, said[0].labels)
    raise InvalidArgumentError("the value could not be redacted to a stable text; simplify it")


def _blanked(value: Any, values: tuple[tuple[str, str], ...], labels: tuple[str, ...]) -> Any:
    """``value`` with each string that repeats one of ``values``, or whose JSON spelling the
    engine would still change (a quoted placeholder after ``password:`` reads as a password),
    replaced whole by a placeholder."""
    placeholder = f"[REDACTED:{labels[0] if labels else 'secret'}]"

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            spelt = dumps(x)
            changed = redact_many([spelt])[0].text != spelt
            return placeholder if changed or repeats(values, x) or repeats(values, spelt) else x
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x

    return walk(value)


def identifier(value: object, what: str, *, max_chars: int = 200) -> str:
    """An adapter's identifier (a key, a namespace label, a user id): a non-empty string of
    one line holding no credential (it is kept as given, never redacted)."""
    if not isinstance(value, str) or not value or len(value) > max_chars:
        raise InvalidArgumentError(f"{what} must be a non-empty string of at most {max_chars}")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InvalidArgumentError(f"{what} must not contain control characters")
    label = find_credential(value)
    if label is not None:
        raise InvalidArgumentError(f"{what} looks like a credential ({label}); choose another")
    return value


def loads(text: str) -> Any:
    """A stored text read back (one written by hand that is not JSON comes back as is)."""
    try:
        return json.loads(text)
    except ValueError:
        return text
