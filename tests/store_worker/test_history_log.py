"""``history`` reads a memory's revisions from its bank's log by searching its bytes: what it
must skip as replay does (a torn last line, a corrupt line) and what it must not confuse (an id
that is a prefix of another, an id named inside another memory's text or fields)."""

from __future__ import annotations

from collections.abc import Callable

from store_worker.core import MemoryStore

Factory = Callable[..., MemoryStore]


def test_history_skips_torn_and_corrupt_lines_and_other_ids(fresh_store: Factory) -> None:
    store = fresh_store()
    a = store.save("The user likes tea", id="tea").memory
    store.save("The user likes green tea", id="tea-green")  # its id starts with "tea"
    store.save('A note that quotes "id":"tea" in its text', id="quote")
    store.update(a.id, text="The user likes black tea")
    log = store.root / "main" / "memories.jsonl"
    with open(log, "ab") as fh:
        fh.write(b'{"id":"tea", not json}\n')  # a corrupt line naming it
        fh.write(b'{"id":"tea","revision":9')  # a torn last line (no newline)
    revisions = store.history("tea").revisions
    assert [(m.id, m.revision, m.text) for m in revisions] == [
        ("tea", 0, "The user likes tea"),
        ("tea", 1, "The user likes black tea"),
    ]
