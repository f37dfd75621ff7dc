"""Tags and entities on their way into a record (``Writer.clean_fields``): validated, then
redacted as given, and what one bulk write's records share while they are cleaned."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from shared.redact import is_placeholder
from store_worker.storage import validate as v


@dataclass
class LabelMemo:
    """What the records of one bulk write share (``import_records``: they repeat the same
    few tags and entities): what redaction found in each label, and each list of labels as
    it was cleaned, with the kinds found in it."""

    found: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # each record id's credential check, made for the whole write in one loop
    ids: dict[str, str | None] = field(default_factory=dict)
    lists: dict[tuple[str, tuple[Any, ...]], tuple[tuple[str, ...], tuple[str, ...]]] = field(
        default_factory=dict
    )


def clean_labels(
    values: Iterable[Any] | None, what: str, scrub: Callable[[str], str]
) -> tuple[str, ...]:
    """Validate labels, then redact the values *as given*: normalising first would lowercase
    a secret (an AWS key) out of the shape the redactor knows, and store it."""
    raw = v.label_list(values, what)
    kept = v.labels(raw, what)  # types and count, before anything is redacted
    scrubbed = [scrub(x) for x in raw]
    if scrubbed != raw:  # a label went: the rest normalised again (most lists lose none)
        kept = v.labels(scrubbed, what)
    # a placeholder typed by hand, in any case or width, is no label either (after folding)
    return tuple(x for x in kept if not is_placeholder(x))
