"""The memory.v1 views of the store (docs/PROTOCOLS.md#memoryv1-the-provider-protocol), written over
the store's public API only.

Each RPC of ``MemoryService`` is one method here; each calls the public store methods any
caller has (``recall``, ``list``, ``get``, ``save``, ``update``, ``delete``, ``approve``,
``reject``, ``capabilities``), never the store's internals, so the same views run over an
embedded ``MemoryStore`` and over the ``memory-store`` actor through ``StoreClient``.

What the protocol asks beyond the store's own API:

- ``recall_context`` (Recall): the RecallRequest carries no query, so an empty query ranks every
  visible record by standing strength (``recall`` with ``query=""``: the one scorer, the same
  boosts and decay as a match), lifted by the words of ``files_touched``. ``tokens`` and the
  budget use ``model_target``'s tokenizer; the budget defaults to the capability's
  ``default_token_budget`` (recall competes for the context's pool, so it is never unbounded).
- A retired record, or an id that cannot exist, does not exist for the protocol: ``not_found`` (a
  silent no-op would hide the caller's mistake; docs/PROTOCOLS.md#record-and-the-reference-tools).
- ``status: pending`` is never returned while ``ratification_supported`` is false
  (docs/PROTOCOLS.md#ratification-and-pending-drafts):
  every read asks the store's capabilities and leaves drafts out when ratification is off.
  The store refuses to turn ratification off while drafts wait (``DraftsWaitingError``), so
  only drafts left on disk by a restart with ratification off are hidden this way; they come
  back when it is turned on again.
- Record always creates (the protocol's write side; a merge would lose a record): ``save(...,
  reinforce=False)``; the suggested id is used, and a collision gets a numeric suffix. A session or
  project record whose request names no session or directory (a plain memory.v1 client) is owned by
  the same caller's latest Recall context (``owners.py``), never refused as ``invalid_scope``: the
  scope is a supported one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ulid import ULID

from grpc_gateway.owners import Owners
from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.contract.models import (
    ListResponse,
    Memory,
    MemoryResponse,
    RecallResponse,
    SaveResponse,
)

MAX_FILES = 64
_PATH_SPLIT = re.compile(r"[/\\._\-\s]+")


class ProtocolViews:
    """memory.v1's MemoryService semantics over ``StoreAPI``."""

    def __init__(self, store: StoreAPI, *, owners: Owners | None = None) -> None:
        self.store = store
        self.owners = owners or Owners()

    def ratification_on(self) -> bool:
        return bool(self.store.capabilities()["ratification_supported"])

    # -- Recall --------------------------------------------------------------------------------

    def recall_context(
        self,
        *,
        bank: str | None = None,
        query: str | None = None,
        files_touched: Sequence[str] = (),
        session_id: str | None = None,
        turn_id: str | None = None,
        project: str | None = None,
        token_budget: int | None = None,
        model_target: str | None = None,
        type_filter: Iterable[str] | None = None,
        scope_filter: Iterable[str] | None = None,
        include_pending: bool = False,
        limit: int | None = None,
        min_relevance: float | None = None,
        caller: str | None = None,
    ) -> RecallResponse:
        """Recall for context assembly: the query if one is given, else standing strength;
        ``min_relevance`` keeps the records whose calibrated relevance is at or above it (the
        store's threshold); ``caller`` (the connection) is whose context a later ownerless
        Record takes."""
        check_turn_id(turn_id)  # memory.v1: RecallRequest.turn_id is a ULID
        caps = self.store.capabilities()
        explicit = (query or "").strip()
        found = self.store.recall(
            explicit,
            hint=None if explicit else " ".join(file_words(files_touched)),
            bank=bank,
            limit=limit,
            session_id=session_id,
            project=project or None,
            token_budget=caps["default_token_budget"] if token_budget is None else token_budget,
            model_target=model_target,
            type_filter=type_filter,
            scope_filter=scope_filter,
            include_pending=include_pending and bool(caps["ratification_supported"]),
            min_relevance=min_relevance,
        )
        self.owners.saw(session_id, project, caller=caller)  # only a context the store accepted
        return found

    # -- ListRecords / GetRecord / UpdateRecord / DeleteRecord ---------------------------------

    def list_records(
        self,
        *,
        bank: str | None = None,
        type_filter: Iterable[str] | None = None,
        scope_filter: Iterable[str] | None = None,
        status: str | None = None,
        page_size: int | None = None,
        page_token: str | None = None,
    ) -> ListResponse:
        """Live records newest first; drafts listable (no gate) while ratification is on."""
        on = self.ratification_on()
        page = self.store.list(
            bank=bank,
            type_filter=type_filter,
            scope_filter=scope_filter,
            status=status if on else (status or "canonical"),
            page_size=page_size,
            page_token=page_token,
        )
        if not on and status == "pending":  # the call was well-formed; no draft is shown
            return page.model_copy(update={"memories": (), "next_page_token": None, "total": 0})
        return page

    def get_record(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        return self.existing(id, bank=bank)

    def update_record(
        self, id: str, *, text: str, title: str | None = None, bank: str | None = None
    ) -> MemoryResponse:
        """UpdateRecord: the content is replaced wholesale; the title only when given."""
        self.existing(id, bank=bank)
        return self.store.update(id, bank=bank, text=text, title=title)

    def delete_record(
        self, id: str, *, bank: str | None = None, reason: str | None = "DeleteRecord"
    ) -> MemoryResponse:
        self.existing(id, bank=bank)
        return self.store.delete(id, bank=bank, reason=reason)

    def existing(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        """The live record ``id`` as the protocol sees it, else ``not_found``: an id that
        cannot exist, a retired record, and a draft while ratification is off."""
        try:
            found = self.store.get(id, bank=bank)
        except errors.InvalidArgumentError as e:  # a malformed id names no record
            raise errors.NotFoundError(f"no such record: {e.message}") from e  # it quotes the id
        mem = found.memory
        if mem.invalid_at is not None:
            raise errors.NotFoundError(f"no record {id!r} in bank {found.bank!r} (retired)")
        if mem.status == "pending" and not self.ratification_on():
            raise errors.NotFoundError(
                f"no record {id!r} in bank {found.bank!r} (a draft, and ratification is off)"
            )
        return found

    # -- ApproveRecord / RejectRecord ----------------------------------------------------------

    def approve(self, id: str, *, bank: str | None = None) -> MemoryResponse:
        self._draft(id, bank=bank)
        return self.store.approve(id, bank=bank)

    def reject(self, id: str, *, bank: str | None = None) -> Any:
        self._draft(id, bank=bank)
        return self.store.reject(id, bank=bank)

    def _draft(self, id: str, *, bank: str | None) -> Memory:
        """The pending draft ``id``; a canonical record is no draft: ``not_found``."""
        if not self.ratification_on():
            raise errors.RatificationUnsupportedError(
                "ratification is off (ratification_supported: false); nothing is pending"
            )
        mem = self.existing(id, bank=bank).memory
        if mem.status != "pending":
            raise errors.NotFoundError(f"no pending draft {id!r}: the record is canonical")
        return mem

    # -- Record --------------------------------------------------------------------------------

    def record(
        self,
        text: str,
        *,
        scope: str,
        session_id: str | None = None,
        project: str | None = None,
        caller: str | None = None,
        **fields: Any,
    ) -> SaveResponse:
        """Record creates a new record, never reinforcing one with the same content; a
        session or project record without its owner gets the one ``owners`` names for
        ``caller``."""
        session_id, project = self.owners.fill(
            scope, session_id=session_id, project=project, caller=caller
        )
        return self.store.save(
            text, reinforce=False, scope=scope, session_id=session_id, project=project, **fields
        )


def check_turn_id(value: str | None) -> None:
    if not value:
        return
    try:
        ULID.from_str(value)
    except ValueError as e:
        raise errors.InvalidArgumentError(f"turn_id {value!r} is not a ULID") from e


def file_words(files: Sequence[str]) -> list[str]:
    """Words of the touched files' paths: a relevance hint, never a filter."""
    if isinstance(files, str) or len(files) > MAX_FILES * 16:
        raise errors.InvalidArgumentError("files_touched must be a list of paths")
    out: dict[str, None] = {}
    for path in list(files)[:MAX_FILES]:
        if not isinstance(path, str):
            raise errors.InvalidArgumentError("files_touched must be strings")
        for word in _PATH_SPLIT.split(path.lower()):
            if len(word) > 2 and not word.isdigit():
                out.setdefault(word, None)
    return list(out)
