"""Cross-reference link queries. The memory.v1 provider protocol lets a record link to one
that does not exist yet: a dangling ``[[name]]`` link must not be rejected at write time.

``[[slug]]`` references are parsed into ``links`` on every write (``shared.text.parse_links``);
a link to a record that does not exist yet is accepted, and stays queryable here:

- ``dangling()``: every link of a live record whose target has no live record (missing, or
  retired — then ``superseded_by`` says where the fact went);
- ``backlinks(id)``: the live records that link to ``id`` (which need not exist yet).

Pending drafts count as existing targets, and their own links are listed too (a reviewer wants
to see what a draft points at).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shared.contract.links import dangling_link
from shared.contract.models import BacklinksResponse, DanglingLink, DanglingResponse, Memory
from store_worker.storage import validate as v

if TYPE_CHECKING:
    from store_worker.storage.bank import Bank


def dangling(target: Bank) -> DanglingResponse:
    """Links of live records that point at no live record, ordered by source then target."""
    out: list[DanglingLink] = []
    for mem in sorted(_live(target), key=lambda m: m.id):
        for link in mem.links:
            gone = dangling_link(mem.id, link, target.records.get(link))
            if gone is not None:
                out.append(gone)
    return DanglingResponse(bank=target.name, links=tuple(out))


def backlinks(target: Bank, id: str) -> BacklinksResponse:
    """Live records whose links name ``id``, newest first."""
    slug = v.memory_id(id)
    found = [m for m in _live(target) if slug in m.links]
    found.sort(key=lambda m: (m.created_at, m.id), reverse=True)
    existing = target.records.get(slug)
    return BacklinksResponse(
        bank=target.name,
        id=slug,
        exists=existing is not None and existing.invalid_at is None,
        memories=tuple(found),
    )


def _live(bank: Bank) -> list[Memory]:
    return [m for m in bank.records.values() if m.invalid_at is None]
