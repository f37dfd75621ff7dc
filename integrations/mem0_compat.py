"""``Memory``: mem0's open-source ``Memory`` class over this store, the one-line switch::

    from integrations.mem0_compat import Memory   # was: from mem0 import Memory

    m = Memory()                                   # the running store; or Memory("file:DIR")
    m.add(messages, user_id="alice", metadata={"category": "movies"})
    m.search("What do you know about me?", user_id="alice")

The methods and answers are mem0's (``{"results": [...]}`` with ``id``, ``memory``, ``hash``,
``metadata``, ``created_at``, ``updated_at``, ``user_id`` ...; ``event`` ADD / UPDATE / NONE /
DELETE from ``add``). How mem0's identifiers map onto the store:

- ``user_id`` → the **bank**: the id itself when it is a valid bank name (``alice``), else its
  slug and 8 hex characters of its SHA-256 (``Alice@x.org`` → ``alice-x-org-…``; one that holds
  a credential → ``mem0-user-…``); no user_id: the bank given to ``Memory(bank=...)``, else
  the store's default bank (a read or ``delete_all`` without one spans every bank, as mem0's
  spans every user).
- ``run_id`` → the **session** a memory was said in (its provenance, as the extractor records
  every memory's session); ``agent_id`` → the recorder of a message saved as it is
  (``recorded_by``); both are also tags (``mem0-agent-…``, ``mem0-run-…``) that ``search``
  and ``get_all`` filter on. The
  memories stay global in their bank, not session- or project-scoped: mem0 filters on any
  subset of the ids (``search(user_id=...)`` finds the memories of every run and agent), while
  a scoped memory is hidden from a recall outside its session or project.
- ``metadata``, ``actor_id``, ``role`` and the exact ids ride in the memory's title as JSON
  (``{"mem0": {...}}``, at most 200 characters: a larger ``metadata`` is refused); the memory
  itself is the text, redacted like any save (a credential comes back as
  ``[REDACTED:<kind>]``).
- ids are UUIDs, as mem0's: ``get``/``update``/``delete``/``history`` find a memory's bank
  from the banks this object has seen, else by asking each bank.
- bad input raises a ``ValueError`` as mem0 does, which is also this store's
  ``InvalidArgumentError`` (an unknown id's ``NotFoundError``): ``mem0_support``, with mem0's
  metadata filter operators and its ``llm`` providers' litellm names.

``add(..., infer=True)`` (mem0's default) runs the extractor now, one model call, and answers
the memories it wrote (``MEMORY_EXTRACTION_MODEL``, or ``Memory(model=...)``; without one it
raises ``InvalidArgumentError`` saying to configure one or pass ``infer=False``);
``infer=False`` saves each message as it is. ``history`` reads the store's ``history``;
``delete`` and ``reset`` retire memories with tombstones (``memory history`` still shows them).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from integrations.mem0_support import (
    Mem0InvalidError,
    Mem0NotFoundError,
    base_url,
    check_config,
    check_filters,
    ids_of,
    limit_of,
    litellm_model,
    matches,
    messages_of,
    plain,
)
from integrations.stored_json import stored_text
from shared.client import mem0
from shared.client.mem0 import bank_of
from shared.contract.api import StoreAPI
from shared.contract.errors import InvalidArgumentError, NotFoundError
from shared.contract.models import Memory as Record
from shared.llm import LLM
from shared.redact import redact

MARK = "mem0"  # the tag every memory this class writes carries
RECORDED_BY = "mem0"
PAGE = 500
MAX_TITLE = 200
IDS = ("user_id", "agent_id", "run_id")
UPDATED = {"message": "Memory updated successfully!"}
DELETED = {"message": "Memory deleted successfully!"}
ALL_DELETED = {"message": "Memories deleted successfully!"}


def __getattr__(name: str) -> Any:
    """``AsyncMemory`` (``integrations.mem0_async``), importable from here as from mem0."""
    if name == "AsyncMemory":
        from integrations.mem0_async import AsyncMemory

        return AsyncMemory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Memory:
    """mem0's ``Memory`` over ``store`` (a ``StoreAPI``, kept open by its owner) or a
    ``connect`` target (``"file:DIR"``, ``"grpc://HOST:PORT"``; None: the running store).
    ``model`` (a litellm model name) or ``llm`` (a ``shared.llm.LLM``) is what ``infer=True``
    extracts with; by default the extractor's settings (``MEMORY_EXTRACTION_MODEL``)."""

    def __init__(
        self,
        store: StoreAPI | str | None = None,
        *,
        bank: str | None = None,
        model: str | None = None,
        llm: LLM | None = None,
    ) -> None:
        if isinstance(store, StoreAPI):
            self._store, self._owned = store, False
        else:
            from shared.client import connect

            self._store, self._owned = connect(store), True
        self.bank, self.model, self.llm = bank, model, llm
        self._banks: dict[str, str | None] = {}  # memory id -> its bank, as seen

    @classmethod
    def from_config(cls, config_dict: dict[str, Any] | None = None, **kw: Any) -> Memory:
        """mem0's constructor from a config: its ``llm`` (``{"provider", "config":
        {"model", "api_key", "<provider>_base_url"}}``) names the extraction model as litellm
        does (``provider/model``) and the key and URL it is called with; the vector store,
        embedder and history settings have no meaning here and are ignored; custom prompts
        and a graph store are refused (``mem0_support.UNSUPPORTED``)."""
        check_config(config_dict or {})
        llm = (config_dict or {}).get("llm") or {}
        settings = llm.get("config") or {}
        model = litellm_model(llm.get("provider"), settings.get("model"))
        key, url = settings.get("api_key"), base_url(settings)
        if kw.get("llm") is None and (key or url):
            from shared.llm import LiteLLMBackend

            kw["llm"] = LiteLLMBackend(api_key=key or None, api_base=url)
        return cls(model=model, **kw)

    def close(self) -> None:
        if self._owned:
            self._store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes ----------------------------------------------------------------------------

    def add(
        self,
        messages: str | dict[str, Any] | list[dict[str, Any]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        memory_type: str | None = None,
        prompt: str | None = None,
    ) -> dict[str, Any]:
        """Remember a conversation: what the model extracts from it (``infer``), else each
        message as it is. ``{"results": [{"id", "memory", "event", "metadata" ...}]}``.
        mem0's ``memory_type`` (procedural memory) and custom ``prompt`` are refused: the
        store's extraction prompt is the one it runs."""
        if memory_type is not None or prompt is not None:
            raise Mem0InvalidError(
                "memory_type and prompt are not supported here: the store's extractor decides"
            )
        ids = ids_of(user_id, agent_id, run_id, needed=True)
        turn = messages_of(messages)
        if metadata is not None and not isinstance(metadata, dict):
            raise Mem0InvalidError("metadata must be a dict")
        if not turn:
            return {"results": []}  # nothing said, nothing to remember (as mem0)
        bank = self._bank(ids.get("user_id"))
        if infer:
            return {"results": self._infer(turn, ids, metadata, bank)}
        kept = []  # every message checked before any is saved: a refused turn writes nothing
        for message in turn:
            if message["role"] == "system":
                continue
            extra = {"role": message["role"], "actor_id": message.get("name")}
            kept.append((extra, *_stored(message["content"], _fields(ids, metadata, extra))))
        results = []
        for extra, text, title in kept:
            answer = self._store.save(
                text,
                bank=bank,
                id=str(uuid.uuid4()),
                title=title,
                tags=self._tags(ids),
                session_id=ids.get("run_id"),
                recorded_by=ids.get("agent_id") or RECORDED_BY,
                reinforce=False,  # mem0 keeps each raw message
            )
            self._banks[answer.memory.id] = bank
            results.append({**_short(answer.memory), "event": "ADD", **extra})
        return {"results": results}

    def _infer(
        self,
        turn: list[dict[str, str]],
        ids: dict[str, str],
        metadata: dict[str, Any] | None,
        bank: str | None,
    ) -> list[dict[str, Any]]:
        from shared.client.workers import extract_now

        fields = _fields(ids, metadata, {})
        _, title = _stored("-", fields)
        outcomes = extract_now(
            self._store,
            [{"role": m["role"], "content": m["content"]} for m in turn],
            bank=bank,
            session_id=ids.get("run_id"),
            tags=self._tags(ids),
            title=title,
            model=self.model,
            llm=self.llm,
            uuid_ids=True,  # mem0's ids are UUIDs
        )
        results = []
        for outcome in outcomes:
            self._banks[outcome.memory.id] = bank
            row = {**_short(outcome.memory), "event": outcome.event}
            if outcome.previous is not None:
                row["previous_memory"] = outcome.previous.text
            results.append(row)
        return results

    def update(self, memory_id: str, data: str, metadata: dict[str, Any] | None = None) -> Any:
        """Replace a memory's text (a new revision: ``history`` shows the old one); a
        ``metadata`` is merged into the memory's, as mem0 does."""
        if not isinstance(data, str) or not data.strip():
            raise Mem0InvalidError("data must be the memory's new text, a non-empty string")
        if metadata is not None and not isinstance(metadata, dict):
            raise Mem0InvalidError("metadata must be a dict")
        mem = self._record(memory_id)
        bank = self._banks.get(mem.id)
        title = None
        if metadata is not None:
            envelope = _envelope(mem)  # mem0 merges the new metadata into the old
            fields = {**envelope, "metadata": {**(envelope.get("metadata") or {}), **metadata}}
            data, title = _stored(data, {k: v for k, v in fields.items() if v is not None})
        self._store.update(mem.id, bank=bank, text=data, title=title)
        return UPDATED

    def delete(self, memory_id: str) -> dict[str, str]:
        mem = self._record(memory_id)
        self._store.delete(mem.id, bank=self._banks.get(mem.id), reason="deleted through mem0")
        return DELETED

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, str]:
        """Retire every memory of these ids (at least one is needed, as in mem0)."""
        ids = ids_of(user_id, agent_id, run_id, needed=True, purpose="delete all memories")
        for bank in self._scope(ids):
            for mem in list(self._matching(bank, ids, None)):
                self._store.delete(mem.id, bank=bank, reason="deleted through mem0")
        return ALL_DELETED

    def reset(self) -> None:
        """Retire every memory this class wrote, in every bank (tombstones: ``memory
        history`` and ``memory purge`` still reach them)."""
        for info in self._store.bank_list().banks:
            for mem in list(self._listing(info.name, MARK)):
                self._store.delete(mem.id, bank=info.name, reason="mem0 reset")

    # -- reads -----------------------------------------------------------------------------

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """One memory, or None when there is no such id."""
        try:
            mem = self._record(memory_id)
        except NotFoundError:
            return None
        return {**_full(mem, self._banks.get(mem.id)), "score": None}  # mem0's MemoryItem

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int | None = None,
        top_k: int | None = None,
    ) -> dict[str, Any]:
        """The memories of these ids, newest first: ``{"results": [...]}``; ``top_k`` is
        newer mem0's name for ``limit`` (100 by default)."""
        ids = ids_of(user_id, agent_id, run_id, filters=filters, needed=True)
        limit = limit_of(limit, top_k)
        check_filters(filters)
        found: list[tuple[Record, str | None]] = []
        scope = self._scope(ids)
        for bank in scope:
            for n, mem in enumerate(self._matching(bank, ids, filters), 1):
                found.append((mem, bank))
                if n >= limit:
                    break
        if len(scope) > 1:  # every user's: the newest first across them
            found.sort(key=lambda pair: pair[0].created_at, reverse=True)
        return {"results": [_full(mem, bank) for mem, bank in found[:limit]]}

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
        filters: dict[str, Any] | None = None,
        threshold: float | None = None,
        top_k: int | None = None,
        rerank: bool = False,
    ) -> dict[str, Any]:
        """The memories of these ids that answer ``query``, best first, each with its
        ``score`` (recall's relevance, 0..1): ``{"results": [...]}``; ``top_k`` is newer
        mem0's name for ``limit`` (100 by default). ``rerank`` is accepted and does nothing, as
        in mem0 without a reranker configured: recall ranks the hits itself."""
        if not isinstance(query, str) or not query.strip():
            raise Mem0InvalidError("Invalid query: must be a non-empty string")
        ids = ids_of(user_id, agent_id, run_id, filters=filters, needed=True)
        limit = limit_of(limit, top_k)
        check_filters(filters)
        if threshold is not None and (
            not isinstance(threshold, int | float) or isinstance(threshold, bool)
        ):
            raise Mem0InvalidError(f"threshold must be a number, not {threshold!r}")
        tag = self._tags(ids)[-1] if len(ids) > ("user_id" in ids) else None
        out: list[dict[str, Any]] = []
        scope = self._scope(ids)
        for bank in scope:
            try:
                hits = self._store.recall(query, bank=bank, tag=tag, limit=PAGE).memories
            except NotFoundError:
                continue  # a user with no bank yet has no memories
            kept = 0
            for hit in hits:
                if threshold is not None and hit.relevance_score < threshold:
                    continue
                if not _fits(hit.memory, ids, filters):
                    continue
                self._banks[hit.memory.id] = bank
                out.append({**_full(hit.memory, bank), "score": hit.relevance_score})
                kept += 1
                if kept >= limit:
                    break
        if len(scope) > 1:  # every user's: the best first across them
            out.sort(key=lambda row: row["score"], reverse=True)
        return {"results": out[:limit]}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """Each change of a memory, oldest first, as mem0's history rows (``event`` ADD,
        UPDATE, DELETE; ``old_memory``, ``new_memory``), a deleted memory's too."""
        try:
            mem = self._record(memory_id, live=False)
        except NotFoundError:
            return []  # mem0 has no history rows for an id it never saw
        bank = self._banks.get(mem.id)
        revisions = self._store.history(mem.id, bank=bank).revisions
        rows: list[dict[str, Any]] = []
        previous: Record | None = None
        for rev in revisions:
            if previous is None:
                event, old, new = "ADD", None, rev.text
            elif rev.invalid_at is not None and previous.invalid_at is None:
                event, old, new = "DELETE", previous.text, None
            elif rev.text != previous.text:
                event, old, new = "UPDATE", previous.text, rev.text
            else:
                previous = rev
                continue  # a pin, a tag, a reinforcement: no change mem0 would record
            envelope = _envelope(rev)
            rows.append(
                {
                    "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{rev.id}:{rev.revision}")),
                    "memory_id": rev.id,
                    "old_memory": old,
                    "new_memory": new,
                    "event": event,
                    "created_at": _iso(rev.created_at),
                    "updated_at": _iso(rev.updated_at),
                    "is_deleted": event == "DELETE",
                    "actor_id": envelope.get("actor_id"),
                    "role": envelope.get("role"),
                }
            )
            previous = rev
        return rows

    # -- plumbing --------------------------------------------------------------------------

    def _bank(self, user_id: str | None) -> str | None:
        return bank_of(user_id) if user_id else self.bank

    def _scope(self, ids: dict[str, str]) -> list[str | None]:
        """The banks a read or ``delete_all`` of these ids spans: the user's; without one, the
        bank given to ``Memory(bank=...)``, else every bank (mem0: every user's memories of
        that agent or run)."""
        if "user_id" in ids or self.bank is not None:
            return [self._bank(ids.get("user_id"))]
        return [info.name for info in self._store.bank_list().banks]

    def _tags(self, ids: dict[str, str]) -> list[str]:
        tags = [MARK]
        if "agent_id" in ids:
            tags.append(mem0.tag("agent", ids["agent_id"]))
        if "run_id" in ids:
            tags.append(mem0.tag("run", ids["run_id"]))
        return tags

    def _record(self, memory_id: str, *, live: bool = True) -> Record:
        """The memory ``memory_id`` (a live one unless ``live`` is False), from the bank it
        was seen in, else from each bank."""
        if not isinstance(memory_id, str) or not memory_id:
            raise Mem0InvalidError("memory_id must be a non-empty string")
        known = memory_id in self._banks
        banks = [self._banks[memory_id]] if known else [self.bank]
        if not known:
            banks += [b.name for b in self._store.bank_list().banks if b.name != self.bank]
        for bank in banks:
            try:
                mem = self._store.get(memory_id, bank=bank).memory
            except (NotFoundError, InvalidArgumentError):
                continue
            if mem.invalid_at is None or not live:
                self._banks[memory_id] = bank
                return mem
        raise Mem0NotFoundError(f"Memory with id {memory_id} not found")

    def _listing(self, bank: str | None, tag: str | None) -> Iterator[Record]:
        token: str | None = None
        try:
            while True:
                page = self._store.list(bank=bank, tag=tag, page_size=PAGE, page_token=token)
                yield from page.memories
                token = page.next_page_token
                if not token:
                    return
        except NotFoundError:
            return  # a user with no bank yet has no memories

    def _matching(
        self, bank: str | None, ids: dict[str, str], filters: dict[str, Any] | None
    ) -> Iterator[Record]:
        tag = self._tags(ids)[-1] if len(ids) > ("user_id" in ids) else None
        for mem in self._listing(bank, tag):
            if _fits(mem, ids, filters):
                self._banks[mem.id] = bank
                yield mem


def _fields(
    ids: dict[str, str], metadata: dict[str, Any] | None, extra: dict[str, Any]
) -> dict[str, Any]:
    fields: dict[str, Any] = {**ids, **{k: v for k, v in extra.items() if v}}
    if metadata:
        fields["metadata"] = metadata
    return fields


def _stored(text: str, fields: dict[str, Any]) -> tuple[str, str]:
    """The memory's text and its title (the mem0 fields as JSON), as the store will keep them:
    the text redacted, the fields redacted beside it (``stored_json``)."""
    clean = redact(text).text
    title, _ = stored_text({"mem0": fields}, clean)
    if len(title) > MAX_TITLE:
        raise Mem0InvalidError(
            f"ids and metadata are {len(title)} characters as JSON; this store keeps "
            f"{MAX_TITLE} beside a memory"
        )
    return clean, title


def _envelope(mem: Record) -> dict[str, Any]:
    try:
        fields = json.loads(mem.title).get("mem0") if mem.title.startswith("{") else None
    except ValueError:
        fields = None
    return fields if isinstance(fields, dict) else {}


def _fits(mem: Record, ids: dict[str, str], filters: dict[str, Any] | None) -> bool:
    """Whether a memory has these ids and metadata (a memory of the bank that no mem0 call
    wrote belongs to the bank's user and to no agent or run)."""
    fields = _envelope(mem)
    for key in ("agent_id", "run_id"):
        if key in ids and fields.get(key) != ids[key]:
            return False
    payload = {k: fields[k] for k in (*IDS, "actor_id", "role") if fields.get(k)}  # as mem0's
    if "user_id" in ids:
        payload["user_id"] = ids["user_id"]  # every memory of the bank is its user's
    rest = {k: v for k, v in (filters or {}).items() if not (k in IDS and plain(v))}
    return matches({**(fields.get("metadata") or {}), **payload}, rest)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat()


def _short(mem: Record) -> dict[str, Any]:
    fields = _envelope(mem)
    row: dict[str, Any] = {"id": mem.id, "memory": mem.text}
    if fields.get("metadata"):
        row["metadata"] = fields["metadata"]
    return row


def _full(mem: Record, bank: str | None) -> dict[str, Any]:
    """A memory as mem0's ``get`` and ``get_all`` answer it."""
    fields = _envelope(mem)
    row: dict[str, Any] = {
        "id": mem.id,
        "memory": mem.text,
        "hash": hashlib.md5(mem.text.encode(), usedforsecurity=False).hexdigest(),
        "metadata": fields.get("metadata"),
        "created_at": _iso(mem.created_at),
        "updated_at": _iso(mem.updated_at) if mem.revision else None,
    }
    for key in (*IDS, "actor_id", "role"):
        if fields.get(key):
            row[key] = fields[key]
    if "user_id" not in row and bank:
        row["user_id"] = bank  # a memory saved another way: the bank's user
    return row
