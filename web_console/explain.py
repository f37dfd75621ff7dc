"""Why a hit was found: the one place a search hit's explanation is put into words.

Today a hit carries the store's scores (``ScoredMemory``: the fused ``score`` and the 0..1
``relevance_score``), the recall's ``retrieval`` mode and the memory's own boosts (pinned,
corroboration, age). When recall answers a fuller explanation (its signals, calibrated),
``explain`` is where it is read; the pages only show the rows it returns.
"""

from __future__ import annotations

from typing import NamedTuple

from shared.contract.models import Memory, ScoredMemory
from web_console.fmt import when


class Row(NamedTuple):
    label: str
    value: str


def explain(hit: ScoredMemory, retrieval: str) -> list[Row]:
    """The rows shown under a hit, in reading order."""
    m = hit.memory
    rows = [
        Row("relevance", f"{hit.relevance_score:.2f}"),
        Row("score", f"{hit.score:.3f}"),
        Row("retrieval", retrieval),
    ]
    rows += boosts(m)
    return rows


def boosts(m: Memory) -> list[Row]:
    """What the memory itself adds to a ranking: a pin, corroborations, how recent it is."""
    rows = []
    if m.pinned:
        rows.append(Row("pinned", "yes"))
    if m.corroboration:
        rows.append(Row("corroboration", str(m.corroboration)))
    rows.append(Row("stated", when(m.stated_at)))
    if m.occurred_at is not None:
        rows.append(Row("occurred", when(m.occurred_at)))
    return rows
