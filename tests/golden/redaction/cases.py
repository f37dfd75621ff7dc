"""Loads the redaction golden case tables (``tests/golden/redaction/*.json``).

Each file maps a case family (one table of cases) to a list of cases: objects whose keys name the
test's parameters (``text``, ``secret``, ``label``, ...), plus an optional ``note`` saying what
the case (and the ones after it, up to the next note) is about. A top-level key starting with
``_`` documents the file and is not a family.

Placeholders: a string may hold ``{NAME}`` for a constant the test module defines (a password,
a key) and passes to :func:`rows` by name; only the names passed are replaced, so every other
brace is literal. The file's ``_placeholders`` lists the names it uses. Regenerate only on
purpose.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def load(module: str) -> dict[str, Any]:
    """The case families of ``tests/golden/redaction/<module>.json``, as stored."""
    raw: dict[str, Any] = json.loads((HERE / f"{module}.json").read_text("utf-8"))
    return {k: v for k, v in raw.items() if not k.startswith("_")}


def _fill(value: Any, names: dict[str, str], pattern: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(lambda m: names[m.group(1)], value)
    if isinstance(value, list):
        return [_fill(v, names, pattern) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, names, pattern) for k, v in value.items()}
    return value


def rows(cases: list[Any], *fields: str, **names: str) -> list[Any]:
    """``cases`` as ``parametrize`` values, ``{NAME}`` filled from ``names``: each case's
    ``fields`` as a tuple in that order, or its one field's value when one is named."""
    if names:
        pattern = re.compile(r"\{(" + "|".join(map(re.escape, names)) + r")\}")
        cases = _fill(cases, names, pattern)
    if not fields:
        return list(cases)
    if len(fields) == 1:
        return [case[fields[0]] for case in cases]
    return [tuple(case[f] for f in fields) for case in cases]
