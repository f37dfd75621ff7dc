"""A bank's records when some of them are still lines of its log (a lazy boot).

A one-shot command (``memory --data-dir D recall``) uses a handful of a bank's records: the
hits. Decoding every line of a 10k-record log costs it ~65 ms of a ~400 ms process, so a bank
opened with ``lazy_records`` takes its index from a valid snapshot (``snapshot.py``) that also
records where each live record's line starts, and keeps those records undecoded: ``Records``
is the ``dict`` the bank's code already uses, with the undecoded ids in ``pending`` (id ->
offset of the record's line in ``data``, the log's bytes as the boot read them). A record is
decoded the first time it is asked for; anything that walks them all (``values``, ``items``,
iteration) decodes the rest first, in log order.

The lines need no second check: the snapshot's SHA-256 of the covered log proves they are the
bytes that were checked (``stored_record_problem``) when the snapshot was written, and the
checking code is part of the snapshot's derivation key.

Not thread-safe when records are pending: the CLI's single thread is the only user; a store
shared between threads (the actor) boots eagerly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from shared.contract.models import Memory

if TYPE_CHECKING:
    from _collections_abc import dict_items, dict_keys, dict_values

_ABSENT: Any = object()


class Records(dict[str, Memory]):
    """``id -> Memory``; ids in ``pending`` decode from ``data`` on first use."""

    def __init__(
        self, data: bytes, pending: dict[str, int], decode: Callable[[bytes], Memory]
    ) -> None:
        super().__init__()
        self.data = data
        self.pending = pending
        self.decode = decode

    def _take(self, key: str) -> Memory | None:
        """Decode a pending record into the dict; ``None`` if ``key`` is not pending."""
        off = self.pending.pop(key, None)
        if off is None:
            return None
        mem = self.decode(self.data[off : self.data.index(b"\n", off)])
        dict.__setitem__(self, key, mem)
        if not self.pending:
            self.data = b""  # every record decoded: the log's bytes are not needed any more
        return mem

    def materialize(self) -> None:
        """Decode every pending record, in log order."""
        for key in sorted(self.pending, key=self.pending.__getitem__):
            self._take(key)

    def __missing__(self, key: str) -> Memory:
        mem = self._take(key)
        if mem is None:
            raise KeyError(key)
        return mem

    def get(self, key: str, default: Any = None) -> Any:
        mem = dict.get(self, key, _ABSENT)
        if mem is _ABSENT:
            mem = self._take(key)
            return default if mem is None else mem
        return mem

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self.pending

    def __len__(self) -> int:
        return dict.__len__(self) + len(self.pending)

    def __iter__(self) -> Iterator[str]:
        self.materialize()
        return dict.__iter__(self)

    def keys(self) -> dict_keys[str, Memory]:
        self.materialize()
        return dict.keys(self)

    def values(self) -> dict_values[str, Memory]:
        self.materialize()
        return dict.values(self)

    def items(self) -> dict_items[str, Memory]:
        self.materialize()
        return dict.items(self)

    def __setitem__(self, key: str, mem: Memory) -> None:
        self.pending.pop(key, None)
        dict.__setitem__(self, key, mem)

    def __delitem__(self, key: str) -> None:
        self._take(key)
        dict.__delitem__(self, key)

    def pop(self, key: str, *default: Any) -> Any:
        self._take(key)
        return dict.pop(self, key, *default)

    def setdefault(self, key: str, default: Memory) -> Memory:
        self._take(key)
        return dict.setdefault(self, key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self.materialize()
        dict.update(self, *args, **kwargs)

    def popitem(self) -> tuple[str, Memory]:
        self.materialize()
        return dict.popitem(self)

    def clear(self) -> None:
        self.pending.clear()
        self.data = b""
        dict.clear(self)

    def copy(self) -> dict[str, Memory]:
        self.materialize()
        return dict(dict.items(self))

    def __eq__(self, other: object) -> bool:
        self.materialize()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        self.materialize()
        return dict.__ne__(self, other)

    def __or__(self, other: Any) -> Any:
        self.materialize()
        return dict.__or__(self, other)

    def __ror__(self, other: Any) -> Any:
        self.materialize()
        return dict.__ror__(self, other)

    def __ior__(self, other: Any) -> Any:
        self.update(other)
        return self

    def __reversed__(self) -> Iterator[str]:
        self.materialize()
        return dict.__reversed__(self)

    __hash__ = None

    def __repr__(self) -> str:
        return f"Records({dict.__len__(self)} decoded, {len(self.pending)} pending)"

    def __reduce__(self) -> Any:  # a copy or a pickle is a plain dict of every record
        return (dict, (self.copy(),))
