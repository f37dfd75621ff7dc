"""Secret redaction on every write path: the public API (``redact``, ``redact_many``,
``redact_json``, ``find_credential``, the placeholders). The engine is shared/redact/engine.py;
see its docstring for what is covered and how.

Importing the package costs nothing: each name is looked up in its module on first use (PEP
562), so a process that imports one rule family's module, or never redacts, pays for no more.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.redact.engine import (
        PLACEHOLDER,
        Redaction,
        contains_secret,
        find_credential,
        is_placeholder,
        redact,
        redact_json,
        redact_many,
        redact_text,
        repeats,
        strip_placeholders,
    )

__all__ = [
    "PLACEHOLDER",
    "Redaction",
    "contains_secret",
    "find_credential",
    "is_placeholder",
    "redact",
    "redact_json",
    "redact_many",
    "redact_text",
    "repeats",
    "strip_placeholders",
]

# Each public name, and the module that defines it.
_HOME = dict.fromkeys(__all__, "shared.redact.engine")


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for; any other name
    (a submodule an import statement looks for) is not here."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
