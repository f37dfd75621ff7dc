"""Input checks for the store's public methods: every failure is typed and nothing is written.

Bad input gets ``InvalidArgumentError`` (names, ids, sizes, turn ids), ``InvalidTypeError``
or ``InvalidScopeError`` (the memory.v1 provider protocol's errors), before any file is touched.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import ntpath
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import Any, TypeGuard

from ulid import ULID

from shared.contract.config import NAME_RE
from shared.contract.errors import InvalidArgumentError, InvalidScopeError, InvalidTypeError
from shared.contract.models import CONFIDENCES, MAX_SAVE_ITEMS, MEMORY_SCOPES, MEMORY_TYPES, Memory
from shared.redact import find_credential
from shared.text import SLUG_RE, entity_norm

MAX_LABELS = 8
MAX_SESSIONS_GIVEN = 256  # a lineage holds at most 64 (``harness/sessions.py``)
MAX_TITLE_CHARS = 200
MAX_RULE_CHARS = 256_000
MAX_EXACT = 2**53  # float64 (the index's columns) is exact up to here
# How far ahead of the store's clock an ``occurred_at`` may lie: a planned event ("the wedding
# is next June") is fine, a timestamp in seconds-vs-ms confusion or a typo'd year 20230 is not.
MAX_FUTURE_MS = 100 * 366 * 86_400_000


# Names and ids are matched whole (``fullmatch``): ``re.match`` with ``$`` also accepts a
# trailing newline, and ``bank create $'main\n'`` made a folder named "main\n".
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_STATE_DEPTH = 64
MAX_STATE_SIZE = 8_000_000  # characters of its strings plus its items (a judge memo: ~1M)
MAX_PATH_CHARS = 4_096  # PATH_MAX


def is_name(name: object) -> TypeGuard[str]:
    """Whether ``name`` is a valid bank, rule or state name (the whole string)."""
    return isinstance(name, str) and NAME_RE.fullmatch(name) is not None


def bank_name(name: object) -> str:
    if not is_name(name):
        raise InvalidArgumentError(
            f"invalid bank name {quoted(name)}: use [a-z0-9][a-z0-9_-]{{0,63}}"
        )
    return name


def rule_name(name: object) -> str:
    if not is_name(name):
        raise InvalidArgumentError(
            f"invalid rule name {quoted(name)}: use [a-z0-9][a-z0-9_-]{{0,63}}"
        )
    return name


def memory_id(value: object) -> str:
    if not isinstance(value, str) or SLUG_RE.fullmatch(value) is None:
        raise InvalidArgumentError(
            f"invalid memory id {quoted(value)}: use [a-z0-9][a-z0-9-]{{0,79}}"
        )
    return value


# The same few identifiers (a session, a bank, who records) come with write after write: the
# check of each is remembered (the catalogue is loaded once per process, so the answer for a
# value never changes).
_credential_in = functools.lru_cache(maxsize=4096)(find_credential)


def credentials_of(values: Iterable[object]) -> dict[str, str | None]:
    """``find_credential`` of each valid memory id among ``values``, in one loop: a bulk
    write's ids are all new, and checked one by one between a record's other checks each took
    twice as long (the gate's tables out of the CPU's caches). An invalid id is left out (its
    own check refuses it)."""
    out: dict[str, str | None] = {}
    for value in values:
        if isinstance(value, str) and value not in out and SLUG_RE.fullmatch(value) is not None:
            out[value] = find_credential(value)
    return out


QUOTED_MAX = 80  # characters of a long identifier an error quotes


def quoted(value: object) -> str:
    """An identifier as an error quotes it: ``repr``, unless it holds a credential (an agent
    that passes a token where an id goes). An error reaches terminals, an agent's transcript
    and gRPC metadata, none of which redacts; only the kind is named then."""
    if isinstance(value, str) and value:
        label = _credential_in(value)
        if label is not None:
            return f"<a value that looks like a credential ({label})>"
        if len(value) > QUOTED_MAX:  # a megabyte pasted where an id goes: its head will do
            return f"{value[:QUOTED_MAX]!r}… ({len(value):,} characters)"
    return repr(value)


def no_credential(
    value: str | None, what: str, checked: Mapping[str, str | None] | None = None
) -> str | None:
    """Refuse an identifier that holds a credential: an id, a session id, a bank,
    rule or state name is stored as given and shown everywhere, so a secret in one cannot be
    redacted, and silently rewriting a caller's id would be worse. Checked where a write
    takes a new identifier, not on reads (an id that was refused cannot be found anyway).
    ``checked``: answers already found for some values (``credentials_of``)."""
    if value:
        label = checked[value] if checked and value in checked else _credential_in(value)
        if label is not None:
            raise InvalidArgumentError(f"{what} looks like a credential ({label}); choose another")
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


MAX_LABELS_GIVEN = 1_000  # far above the 8 kept: only a runaway input hits it


def label_list(values: object, what: str) -> list[Any]:
    """Tags or entities as given: one string, or any iterable of them (the contract says
    ``Iterable[str]``); ``tags=5``, bytes or a mapping are refused, not iterated. At most
    ``MAX_LABELS_GIVEN`` are read, so an endless generator cannot hang the store."""
    if values is None:
        return []
    if isinstance(values, str):
        return [values]
    if isinstance(values, bytes | bytearray | Mapping) or not isinstance(values, Iterable):
        raise InvalidArgumentError(f"{what} must be a list of strings, not {type(values).__name__}")
    out = list(islice(values, MAX_LABELS_GIVEN + 1))
    if len(out) > MAX_LABELS_GIVEN:
        raise InvalidArgumentError(f"{what}: at most {MAX_LABELS_GIVEN} values may be given")
    return out


def labels(values: Iterable[object] | None, what: str) -> tuple[str, ...]:
    """Tags and entities: lowercase handles, unique, at most eight."""
    out: dict[str, None] = {}
    for raw in label_list(values, what):
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


def flag(value: object, what: str) -> bool:
    """A yes/no option: ``True`` or ``False`` only. ``bool("false")`` is True, so a JSON or
    YAML caller's string would silently pin a memory for good."""
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{what} must be true or false, not {value!r}")
    return value


def confidence(value: object) -> str:
    if value not in CONFIDENCES:
        raise InvalidArgumentError(f"unknown confidence {value!r}; use one of {CONFIDENCES}")
    return str(value)


# a Windows working directory, absolute: a drive ("C:\\work", "d:/src") or a share
# ("\\\\host\\share"); read by Windows' rules whatever the store runs on, so an agent on
# Windows that talks to a gateway on Linux files its project memories under its own folder
_WINDOWS_ABSOLUTE = re.compile(r"\A(?:[A-Za-z]:[\\/]|\\\\[^\\/]+[\\/])")
# a URL with a password in a path, as given (``postgres://user:pw@host``) or once
# normalisation has collapsed its ``//`` (``postgres:/user:pw@host``, ``redis:\\:pw@host``):
# a scheme, separators, then ``user:password@``
_CREDENTIAL_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[\\/]+[^\\/@\s]*:[^\\/@\s]*@")


def _no_credential_url(path: str) -> str:
    if _CREDENTIAL_URL.search(path):
        raise InvalidArgumentError(
            "project looks like a credential (a URL with a password); choose another"
        )
    return path


def project_path(value: object, *, catalogue: bool = False) -> str:
    """A working directory, normalised so the same project always compares equal.

    A URL with a password in it is refused, as given and once normalised (``normpath``
    collapses the ``//`` that makes it one); with ``catalogue`` (a write: the path is stored
    and shown everywhere) every credential kind is refused, before and after normalisation.
    A read checks the URL shape only: it loads no credential catalogue.

    Absolute only: a relative path or ``~`` would be resolved against the store's own working
    directory and home, not the caller's, so two callers' ``.`` (an agent in ``/work/a``, one
    in ``/work/b``, both through the gateway) would name the same project and see each
    other's project memories. Clients resolve them where they run (``shared.cli.output.folder``)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidScopeError("scope 'project' needs a project (working directory)")
    if len(value) > MAX_PATH_CHARS or _CONTROL.search(value):
        # every revision line repeats it: a path no file system allows is a mistake
        raise InvalidArgumentError(
            f"project must be a path of at most {MAX_PATH_CHARS} characters, one line"
        )
    path = _no_credential_url(value.strip())  # before ``//`` is collapsed
    if catalogue:
        no_credential(path, "project")
    if _WINDOWS_ABSOLUTE.match(path):  # an agent on Windows, a store elsewhere: its own rules
        normal = ntpath.normpath(path)
    elif posixpath.isabs(path):
        normal = posixpath.normpath(path)
    else:
        raise InvalidArgumentError(
            f"project must be an absolute path (a working directory), not {quoted(path)}: "
            "the store would resolve it against its own folder, not the caller's"
        )
    if catalogue:
        no_credential(normal, "project")
    return _no_credential_url(normal)


def turn_id(value: object) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) != 26:
        raise InvalidArgumentError(f"turn_id {value!r} is not a ULID")
    try:
        return str(ULID.from_str(value))
    except ValueError as e:
        raise InvalidArgumentError(f"turn_id {value!r} is not a ULID") from e


def optional_str(value: object, what: str, max_len: int = 200) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > max_len:
        raise InvalidArgumentError(f"{what} must be a string of at most {max_len} chars")
    if what.endswith("_id") and _CONTROL.search(value):
        # ids are free-form (a client's session id) but one line: a newline or NUL in one
        # would make two sessions look alike in logs and in every line-based tool
        raise InvalidArgumentError(f"{what} must not contain control characters")
    return utf8(value, what)


def session_ids(values: object, what: str) -> frozenset[str] | None:
    """Session ids (``visible_sessions``: a lineage's, at most ``MAX_SESSIONS_GIVEN``), or
    None for none given."""
    if values is None:
        return None
    if isinstance(values, str | bytes | bytearray | Mapping) or not isinstance(values, Iterable):
        raise InvalidArgumentError(f"{what} must be a list of session ids")
    given = list(islice(values, MAX_SESSIONS_GIVEN + 1))
    if len(given) > MAX_SESSIONS_GIVEN:
        raise InvalidArgumentError(f"{what}: at most {MAX_SESSIONS_GIVEN} sessions may be given")
    ids = (optional_str(x, f"{what} session_id") for x in given)
    return frozenset(s for s in ids if s is not None)


def occurred_at(value: object, now_ms: int) -> int | None:
    """When the remembered thing happened: None, or whole ms since epoch from 0 up to
    ``MAX_FUTURE_MS`` past the store's clock (not a bool, float, string or NaN)."""
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgumentError("occurred_at must be whole milliseconds since the epoch")
    if value < 0:
        raise InvalidArgumentError("occurred_at must not be negative (ms since 1970-01-01)")
    if value > now_ms + MAX_FUTURE_MS:
        raise InvalidArgumentError("occurred_at is more than 100 years ahead (seconds for ms?)")
    return value


def page_size(value: object) -> int:
    if value is None:
        return 50
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 500:
        raise InvalidArgumentError("page_size must be an integer from 1 to 500")
    return value


def cursor(value: object) -> int:
    """An event cursor: a non-negative whole number (not NaN, 1.5, "3" or True)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidArgumentError("cursor must be a non-negative integer")
    return value


def events_limit(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 10_000:
        raise InvalidArgumentError("limit must be an integer from 1 to 10000")
    return value


def optional_bank(value: object) -> str | None:
    return None if value is None else bank_name(value)


def json_value(value: object, what: str) -> object:
    """A JSON value of plain types, nested at most ``MAX_STATE_DEPTH`` deep, with finite
    numbers (``json.dumps`` would write NaN, which no JSON reader accepts back). Walked
    without recursion, so a 100k-deep value is refused rather than overflowing the stack."""
    stack: list[tuple[object, int]] = [(value, 1)]
    size = 0
    while stack:
        item, depth = stack.pop()
        size += len(item) if isinstance(item, str | dict | list | tuple) else 1
        if size > MAX_STATE_SIZE:
            raise InvalidArgumentError(
                f"{what} is larger than {MAX_STATE_SIZE:,} characters and items: state is a "
                "checkpoint, not storage"
            )
        if depth > MAX_STATE_DEPTH:
            raise InvalidArgumentError(f"{what} is nested deeper than {MAX_STATE_DEPTH} levels")
        if isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                raise InvalidArgumentError(f"{what} has a key that is not a string")
            stack.extend((x, depth + 1) for x in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((x, depth + 1) for x in item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise InvalidArgumentError(f"{what} holds a number that is not finite")
        elif isinstance(item, int) and not isinstance(item, bool) and abs(item) >= 2**63:
            raise InvalidArgumentError(f"{what} holds an integer beyond 64 bits")
        elif isinstance(item, str):
            utf8(item, what)
        elif item is not None and not isinstance(item, bool | int | float):
            raise InvalidArgumentError(f"{what} is not JSON: {type(item).__name__}")
    return value


def stored_record_problem(mem: Memory) -> str | None:
    """What makes a decoded record unusable, or ``None``: a hand edit can put any id or any
    JSON number in a line that still validates, and a 400-digit ``created_at`` then breaks the
    index's float64 columns (and gRPC's int64) for the whole bank."""
    if SLUG_RE.fullmatch(mem.id) is None:
        return f"id {mem.id[:40]!r} is not a valid memory id"
    # one min/max over the numbers: this runs once per replayed line (bench/, "cold start")
    numbers = (
        mem.created_at,
        mem.updated_at,
        mem.stated_at,
        mem.revision,
        mem.corroboration,
        mem.tokens,
        mem.invalid_at or 0,
        mem.occurred_at or 0,
    )
    if -MAX_EXACT <= min(numbers) and max(numbers) <= MAX_EXACT:
        return None
    names = ("created_at", "updated_at", "stated_at", "revision", "corroboration", "tokens")
    tail = ("invalid_at", "occurred_at")
    bad = [n for n, x in zip((*names, *tail), numbers, strict=True) if abs(x) > MAX_EXACT]
    return f"{bad[0]} is out of range"


def memory_types(values: object) -> tuple[str, ...]:
    """A type filter: a list (or one string) of supported types."""
    return tuple(memory_type(t) for t in label_list(values, "type_filter"))


def memory_scopes(values: object) -> tuple[str, ...]:
    """A scope filter: a list (or one string) of supported scopes."""
    return tuple(memory_scope(s) for s in label_list(values, "scope_filter"))


def fraction(value: object, what: str) -> float:
    """A number in (0, 1] (a similarity threshold); not NaN, a string or a bool."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentError(f"{what} must be a number in (0, 1]")
    if not 0.0 < value <= 1.0:  # False for NaN too
        raise InvalidArgumentError(f"{what} must be in (0, 1]")
    return float(value)


def count(value: object, what: str, *, most: int = 10_000) -> int:
    """A whole number from 0 to ``most`` (a listing's limit, where 0 means counts only)."""
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= most:
        raise InvalidArgumentError(f"{what} must be an integer from 0 to {most}")
    return value


def optional_text(value: object, what: str, *, max_chars: int | None = None) -> str:
    """Optional free text (a reason, an explicit query): ``None`` is empty."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{what} must be a string")
    if max_chars is not None and len(value) > max_chars:
        raise InvalidArgumentError(f"{what} must be at most {max_chars:,} characters")
    return utf8(value, what)


def finite_vector(values: object) -> list[float]:
    """A stored embedding: a list of finite numbers. A hand-edited ``1e400`` (infinity) or
    ``NaN`` would turn every cosine of the bank into NaN; raises ``ValueError`` (the sidecar
    reader skips the line and the record is embedded again)."""
    if not isinstance(values, list) or not values:
        raise ValueError("not a vector")
    out = [float(x) for x in values]
    if not all(math.isfinite(x) for x in out):
        raise ValueError("a vector component is not finite")
    return out


def page_token(token: object, *, tag: str | None = None) -> tuple[int, str]:
    """A list cursor this store issued: base64 of ``[created_at, id]`` (``[tag, created_at,
    id]`` when ``tag`` is given). A crafted one (``[1e400, "x"]``, a 400-digit number, a
    nested list) is ``InvalidArgumentError``, never an OverflowError."""
    bad = InvalidArgumentError("page_token is not one this store issued")
    if not isinstance(token, str) or len(token) > 1024:
        raise bad
    try:
        padded = token + "=" * (-len(token) % 4)
        row = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, binascii.Error, RecursionError) as e:
        raise bad from e
    if not isinstance(row, list) or len(row) != (3 if tag is not None else 2):
        raise bad
    if tag is not None and row.pop(0) != tag:
        raise bad
    created_at, mem_id = row
    if not isinstance(created_at, int) or isinstance(created_at, bool):
        raise bad
    if not -MAX_EXACT <= created_at <= MAX_EXACT or not isinstance(mem_id, str):
        raise bad
    if SLUG_RE.fullmatch(mem_id) is None:
        raise bad
    return created_at, mem_id


def limit(value: object, default: int) -> int:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 500:
        raise InvalidArgumentError("limit must be an integer from 1 to 500")
    return value


def many(items: object, verb: str) -> Sequence[object]:
    """A ``*_many`` call's items: a list or tuple of at most ``MAX_SAVE_ITEMS``."""
    if not isinstance(items, list | tuple) or len(items) > MAX_SAVE_ITEMS:
        raise InvalidArgumentError(
            f"items must be a list of at most {MAX_SAVE_ITEMS} {verb} requests"
        )
    return items
