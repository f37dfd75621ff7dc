"""Input checks for the store's public methods: every failure is typed and nothing is written.

Bad input gets ``InvalidArgumentError`` (names, ids, sizes, turn ids), ``InvalidTypeError``
or ``InvalidScopeError`` (seeds/002), before any file is touched.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from ulid import ULID

from shared.errors import InvalidArgumentError, InvalidScopeError, InvalidTypeError
from shared.models import CONFIDENCES, MEMORY_SCOPES, MEMORY_TYPES
from shared.text import NAME_RE, SLUG_RE, entity_norm

MAX_LABELS = 8
MAX_TITLE_CHARS = 200
MAX_RULE_CHARS = 256_000


def bank_name(name: object) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise InvalidArgumentError(f"invalid bank name {name!r}: use [a-z0-9][a-z0-9_-]{{0,63}}")
    return name


def rule_name(name: object) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise InvalidArgumentError(f"invalid rule name {name!r}: use [a-z0-9][a-z0-9_-]{{0,63}}")
    return name


def memory_id(value: object) -> str:
    if not isinstance(value, str) or not SLUG_RE.match(value):
        raise InvalidArgumentError(f"invalid memory id {value!r}: use [a-z0-9][a-z0-9-]{{0,79}}")
    return value


def utf8(value: str, what: str) -> str:
    """Refuse what cannot be stored: a lone surrogate has no UTF-8 form, so the append would
    fail with an untyped UnicodeEncodeError."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidArgumentError(f"{what} is not valid Unicode text ({e.reason})") from e
    return value


def text(value: object, *, max_chars: int, what: str = "text") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgumentError(f"{what} must be a non-empty string")
    if len(value) > max_chars:
        raise InvalidArgumentError(f"{what} is {len(value)} chars; the limit is {max_chars}")
    return utf8(value, what).strip()


def title(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_TITLE_CHARS:
        raise InvalidArgumentError(f"title must be a string of at most {MAX_TITLE_CHARS} chars")
    return utf8(value, "title").strip()


def labels(values: Iterable[object] | None, what: str) -> tuple[str, ...]:
    """Tags and entities: lowercase handles, unique, at most eight."""
    if values is None:
        return ()
    if isinstance(values, str):
        values = [values]
    out: dict[str, None] = {}
    for raw in values:
        if not isinstance(raw, str):
            raise InvalidArgumentError(f"{what} must be strings")
        norm = entity_norm(utf8(raw, what))
        if norm:
            out.setdefault(norm, None)
    if len(out) > MAX_LABELS:
        raise InvalidArgumentError(f"at most {MAX_LABELS} {what} per memory (got {len(out)})")
    return tuple(out)


def merge_labels(*groups: Iterable[str]) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for group in groups:
        for value in group:
            out.setdefault(value, None)
    return tuple(out)[:MAX_LABELS]


def memory_type(value: object) -> str:
    if value not in MEMORY_TYPES:
        raise InvalidTypeError(f"unsupported memory type {value!r}; use one of {MEMORY_TYPES}")
    return str(value)


def memory_scope(value: object) -> str:
    if value not in MEMORY_SCOPES:
        raise InvalidScopeError(f"unsupported scope {value!r}; use one of {MEMORY_SCOPES}")
    return str(value)


def confidence(value: object) -> str:
    if value not in CONFIDENCES:
        raise InvalidArgumentError(f"unknown confidence {value!r}; use one of {CONFIDENCES}")
    return str(value)


def project_path(value: object) -> str:
    """A working directory, normalised so the same project always compares equal."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidScopeError("scope 'project' needs a project (working directory)")
    return os.path.normpath(os.path.abspath(os.path.expanduser(value.strip())))


def turn_id(value: object) -> str | None:
    if value is None or value == "":
        return None
    try:
        return str(ULID.from_str(str(value)))
    except ValueError as e:
        raise InvalidArgumentError(f"turn_id {value!r} is not a ULID") from e


def optional_str(value: object, what: str, max_len: int = 200) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > max_len:
        raise InvalidArgumentError(f"{what} must be a string of at most {max_len} chars")
    return utf8(value, what)


def page_size(value: object) -> int:
    if value is None:
        return 50
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 500:
        raise InvalidArgumentError("page_size must be an integer from 1 to 500")
    return value


def limit(value: object, default: int) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 500:
        raise InvalidArgumentError("limit must be an integer from 1 to 500")
    return value
