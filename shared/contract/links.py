"""A link that points at no live record (``dangling``), judged one way for the store's answer
(``store_worker.recall.links``) and for a scoped principal's view of it
(``shared.client.scoped``)."""

from __future__ import annotations

from shared.contract.models import DanglingLink, Memory


def dangling_link(source: str, target: str, found: Memory | None) -> DanglingLink | None:
    """``source``'s link to ``target`` when ``found`` (the target's record, None if there is
    none) is missing or retired; None for a live target."""
    if found is None:
        return DanglingLink(source=source, target=target, reason="missing")
    if found.invalid_at is not None:
        return DanglingLink(
            source=source, target=target, reason="retired", superseded_by=found.superseded_by
        )
    return None
