"""``AgentMemoryStore``: LangGraph's ``BaseStore`` over this store (``pip install
'agent-memory[langgraph]'``).

::

    from integrations.langgraph_store import AgentMemoryStore

    store = AgentMemoryStore("file:/srv/memory", bank="langgraph")  # or None: the running store
    graph = builder.compile(store=store)

One LangGraph item is one memory of the store's ``bank`` (the store's default bank when none is
given):

- the **value** is the memory's text, as JSON (``integrations.stored_json``): recall reads it,
  ``memory list`` shows it, and a credential in it is stored, and read back, as
  ``[REDACTED:<kind>]``, like any save; it is at most the store's ``max_text_chars`` as JSON
  (16,000 characters unless configured), of JSON's types only (a datetime or bytes is
  refused; a tuple reads back as a list, a number key as a string);
- the **namespace and key** are its title, a JSON array (``["memories", "user-1", "food"]``),
  and reserved tags: ``lg-ns-<digest>`` for each prefix of the namespace (a search by prefix is
  one tag filter), ``lg-key-<digest>`` for the pair, and ``keyed`` (``models.KEYED``: an
  application's data, which consolidation never merges or retires and extraction never
  reinforces or corrects). A namespace is at most ``MAX_DEPTH`` labels deep (a memory holds
  eight tags), and no label or key may hold a credential (they are stored as given);
- the **key is an id**: the memory's id is ``lg-<digest of namespace and key>``; ``put`` on a
  key that exists updates that memory (a new revision, ``memory history`` shows the old value),
  a new key always creates (``reinforce=False``: two keys with equal values stay two items),
  ``delete`` retires it with a tombstone. A key put again after a delete gets a fresh memory
  (``lg-<digest>-2``), found by its key tag;
- ``search`` with a ``query`` is the store's recall within the namespace prefix (ranked,
  ``score`` its relevance in 0..1; only items that match the query come back); without one,
  the latest updated first (as LangGraph's database stores answer: every item under the
  prefix is read to order them). ``filter`` compares the value's fields as LangGraph's
  in-memory store does (equality, nested dicts, ``$eq $ne $gt $gte $lt $lte``).

The ``index`` argument of ``put`` is accepted and ignored (the store indexes every item); TTLs
are not supported (``supports_ttl`` is False, as in ``BaseStore``: a ``ttl`` raises
``NotImplementedError``, in ``put`` or in a ``PutOp`` handed to ``batch``). ``batch`` checks
every op before it runs one (LangGraph's label rules, keys, values): a bad op runs none. Puts
through one object are serialised, so threads putting one new key make one item (two processes
sharing a store through the gateway can still race on a new key).
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from integrations.stored_json import dumps, identifier, loads, stored_text
from shared.contract.api import StoreAPI
from shared.contract.errors import InvalidArgumentError, NotFoundError
from shared.contract.models import KEYED, Memory

MAX_DEPTH = 6  # a tag per namespace prefix, one for the key, ``keyed``: eight tags a memory
MAX_TITLE = 200  # the store's title limit: namespace and key, as JSON
RECORDED_BY = "langgraph"
PAGE = 500  # the store's largest list page and recall limit
NS_TAG, KEY_TAG, ID_PREFIX = "lg-ns-", "lg-key-", "lg-"


def _digest(*parts: str) -> str:
    return hashlib.sha256(dumps(list(parts)).encode()).hexdigest()


def namespace_tag(namespace: tuple[str, ...]) -> str:
    """The tag every item under ``namespace`` (a prefix of its own) carries."""
    return NS_TAG + _digest(*namespace)[:20]


def key_tag(namespace: tuple[str, ...], key: str) -> str:
    """The tag of one item (a namespace and a key)."""
    return KEY_TAG + _digest(*namespace, "", key)[:24]  # "" never is a label: no collision


def memory_id(namespace: tuple[str, ...], key: str) -> str:
    """The id an item's memory is created with."""
    return ID_PREFIX + _digest(*namespace, "", key)[:32]


class AgentMemoryStore(BaseStore):
    """LangGraph's store interface over ``store`` (a ``StoreAPI``, kept open by its owner) or
    a ``connect`` target (``"file:DIR"``, ``"grpc://HOST:PORT"``; None: the running store),
    which this object opens and ``close`` lets go of. The module docstring says how items
    map onto memories."""

    __slots__ = ("_owned", "_store", "_writing", "bank", "memory_type")

    def __init__(
        self,
        store: StoreAPI | str | None = None,
        *,
        bank: str | None = None,
        memory_type: str = "user",
    ) -> None:
        if isinstance(store, StoreAPI):
            self._store, self._owned = store, False
        else:
            from shared.client import connect

            self._store, self._owned = connect(store), True
        self.bank = bank
        self.memory_type = memory_type
        # a put finds an item's memory, then updates or creates it: two threads putting one
        # new key at once would otherwise both create (LangGraph runs a graph's nodes on threads)
        self._writing = threading.Lock()

    def close(self) -> None:
        """Close the store this object opened (a store handed in stays open)."""
        if self._owned:
            self._store.close()

    def __enter__(self) -> AgentMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- BaseStore -------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Each op in order (a later op sees an earlier put), one result each. Every op is
        checked first: a bad namespace (``InvalidNamespaceError``), a ``ttl``
        (``NotImplementedError``, as ``put`` says) or a bad key or value
        (``InvalidArgumentError``) anywhere in the batch runs none of it. The store's own
        limits (a value's size: ``max_text_chars``) are met as each put runs."""
        listed = list(ops)
        texts = [self._checked(op) for op in listed]
        return [self._one(op, text) for op, text in zip(listed, texts, strict=True)]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a worker thread: the store's clients are synchronous."""
        listed = list(ops)
        return await asyncio.get_running_loop().run_in_executor(None, self.batch, listed)

    def _checked(self, op: Op) -> str | None:
        """Refuse a bad op before any op runs; a put's value as the text it will store."""
        if not isinstance(op, GetOp | PutOp | SearchOp | ListNamespacesOp):
            raise InvalidArgumentError(f"unknown store operation {type(op).__name__}")
        validate_op_namespace(op)
        if isinstance(op, SearchOp) and op.filter:
            _check_filter(op.filter)
        if not isinstance(op, PutOp):
            return None
        if op.ttl is not None and not self.supports_ttl:
            raise NotImplementedError(
                f"TTL is not supported by {type(self).__name__}: put with ttl=None"
            )
        if op.value is None:
            return None  # a delete: of a key that could never have been put, a no-op
        title = _title(tuple(op.namespace), op.key)
        if not isinstance(op.value, dict):
            raise InvalidArgumentError("a LangGraph value must be a dict")
        return stored_text(dict(op.value), title)[0]

    def _one(self, op: Op, text: str | None) -> Result:
        if isinstance(op, GetOp):
            mem = self._find(tuple(op.namespace), op.key)
            return None if mem is None else _plain(_item(mem))
        if isinstance(op, PutOp):
            if text is None:
                self._delete(tuple(op.namespace), op.key)
            else:
                self._put(tuple(op.namespace), op.key, text)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise AssertionError(op)  # _checked let only the four kinds through

    # -- items -----------------------------------------------------------------------------

    def _find(self, namespace: tuple[str, ...], key: str) -> Memory | None:
        """The live memory of an item: the one with its id, else (put again after a delete)
        the newest live one with its key tag."""
        tag = key_tag(namespace, key)
        try:
            mem = self._store.get(memory_id(namespace, key), bank=self.bank).memory
        except NotFoundError:
            return None  # never created (or no such bank yet)
        if mem.invalid_at is None and tag in mem.tags:
            return mem
        found = self._store.list(bank=self.bank, tag=tag, page_size=1).memories
        return found[0] if found else None

    def _put(self, namespace: tuple[str, ...], key: str, text: str) -> None:
        with self._writing:
            self._write(namespace, key, text)

    def _write(self, namespace: tuple[str, ...], key: str, text: str) -> None:
        current = self._find(namespace, key)
        if current is not None:
            self._store.update(current.id, bank=self.bank, text=text)
            return
        tags = [namespace_tag(namespace[:n]) for n in range(1, len(namespace) + 1)]
        self._store.save(
            text,
            bank=self.bank,
            title=_title(namespace, key),
            id=memory_id(namespace, key),
            type=self.memory_type,
            tags=[*tags, key_tag(namespace, key), KEYED],
            recorded_by=RECORDED_BY,
            reinforce=False,  # an item per key: an equal value under another key stays apart
        )

    def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        with self._writing:
            current = self._find(namespace, key)
            if current is not None:
                self._store.delete(current.id, bank=self.bank, reason="deleted through LangGraph")

    # -- search ----------------------------------------------------------------------------

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if len(prefix) > MAX_DEPTH:
            return []
        tag = namespace_tag(prefix) if prefix else None
        wanted = op.offset + op.limit
        out: list[SearchItem] = []
        ranked = bool(op.query)  # recall's order; else every item, to order by updated_at
        for mem, score in self._candidates(op.query, tag, wanted if not op.filter else None):
            item = _item(mem, score)
            if item is None or item.namespace[: len(prefix)] != prefix:
                continue
            if op.filter and not _matches(item.value, op.filter):
                continue
            out.append(item)
            if ranked and len(out) >= wanted:
                break
        if not ranked:  # as LangGraph's database stores: the latest updated first
            out.sort(key=lambda i: (i.updated_at, i.created_at), reverse=True)
        return out[op.offset : wanted]

    def _candidates(
        self, query: str | None, tag: str | None, wanted: int | None
    ) -> Iterator[tuple[Memory, float | None]]:
        """Recall's hits for ``query`` (at most its largest limit), else every memory under
        ``tag``, newest first, page by page."""
        try:
            if query:
                limit = min(wanted or PAGE, PAGE)
                hits = self._store.recall(query, bank=self.bank, tag=tag, limit=limit).memories
                for hit in hits:
                    yield hit.memory, hit.relevance_score
                return
            token: str | None = None
            while True:
                page = self._store.list(bank=self.bank, tag=tag, page_size=PAGE, page_token=token)
                for mem in page.memories:
                    yield mem, None
                token = page.next_page_token
                if not token:
                    return
        except NotFoundError:
            return  # no such bank yet: nothing stored

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        exact = next(
            (
                c.path
                for c in conditions
                if c.match_type == "prefix" and "*" not in c.path and len(c.path) <= MAX_DEPTH
            ),
            None,
        )
        tag = namespace_tag(tuple(exact)) if exact else None
        found: set[tuple[str, ...]] = set()
        for mem, _ in self._candidates(None, tag, None):
            item = _item(mem)
            if item is not None and all(_does_match(c, item.namespace) for c in conditions):
                found.add(item.namespace)
        if op.max_depth is not None:
            found = {ns[: op.max_depth] for ns in found}
        return sorted(found)[op.offset : op.offset + op.limit]


def _title(namespace: tuple[str, ...], key: str) -> str:
    if not namespace:
        raise InvalidArgumentError("a namespace needs at least one label")
    if len(namespace) > MAX_DEPTH:
        raise InvalidArgumentError(
            f"a namespace is at most {MAX_DEPTH} labels deep here (got {len(namespace)})"
        )
    for label in namespace:
        identifier(label, "a namespace label")
    identifier(key, "a key")
    title = dumps([*namespace, key])
    if len(title) > MAX_TITLE:
        raise InvalidArgumentError(
            f"namespace and key are {len(title)} characters as JSON; the limit is {MAX_TITLE}"
        )
    return title


def _item(mem: Memory, score: float | None = None) -> SearchItem | None:
    """The LangGraph item a memory holds, or None for a memory no LangGraph put made."""
    path = loads(mem.title) if mem.title.startswith("[") else None
    if not isinstance(path, list) or len(path) < 2 or not all(isinstance(p, str) for p in path):
        return None
    namespace, key = tuple(path[:-1]), path[-1]
    if key_tag(namespace, key) not in mem.tags:
        return None
    value = loads(mem.text)
    return SearchItem(
        namespace=namespace,
        key=key,
        value=value if isinstance(value, dict) else {"text": value},
        created_at=_when(mem.created_at),
        updated_at=_when(mem.updated_at),
        score=score,
    )


def _plain(item: SearchItem | None) -> Item | None:
    """A search result as the plain ``Item`` a ``get`` answers (no ``score``)."""
    if item is None:
        return None
    return Item(
        value=item.value,
        key=item.key,
        namespace=item.namespace,
        created_at=item.created_at,
        updated_at=item.updated_at,
    )


def _when(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _does_match(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """A namespace against a prefix or suffix condition, ``*`` matching any one label."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    pairs = (
        zip(namespace, path, strict=False)
        if condition.match_type == "prefix"
        else zip(reversed(namespace), reversed(path), strict=False)
    )
    return all(p == "*" or n == p for n, p in pairs)


def _matches(value: Any, wanted: dict[str, Any]) -> bool:
    """LangGraph's filter: every key equal (nested dicts compared the same way), or a dict of
    operators (``$eq $ne $gt $gte $lt $lte``)."""
    if not isinstance(value, dict):
        return False
    return all(_compare(value.get(k), v) for k, v in wanted.items())


def _compare(have: Any, want: Any) -> bool:
    if isinstance(want, dict):
        if any(k.startswith("$") for k in want):
            return all(_operator(have, k, v) for k, v in want.items())
        return _matches(have, want)
    if isinstance(want, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(have) == len(want)
            and all(_compare(h, w) for h, w in zip(have, want, strict=True))
        )
    return bool(have == want)


OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})


def _check_filter(wanted: Any) -> None:
    """Refuse an operator ``_matches`` does not know, whether or not an item is there to try."""
    if not isinstance(wanted, dict):
        return
    for key, value in wanted.items():
        if isinstance(key, str) and key.startswith("$") and key not in OPERATORS:
            raise InvalidArgumentError(
                f"unknown filter operator {key!r}: use one of {' '.join(sorted(OPERATORS))}"
            )
        if isinstance(value, dict):
            _check_filter(value)


def _operator(have: Any, op: str, want: Any) -> bool:
    if op == "$eq":
        return bool(have == want)
    if op == "$ne":
        return bool(have != want)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(have), float(want)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise InvalidArgumentError(f"unknown filter operator {op!r}")
