"""Bad input: a typed error, and not one byte of the data dir changes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from shared.contract import errors
from shared.contract.clock import FakeClock
from shared.contract.errors import (
    ConflictError,
    InvalidArgumentError,
    InvalidScopeError,
    InvalidTypeError,
    MemoryServiceError,
    NotFoundError,
)
from store_worker.core import MemoryStore

Call = Callable[[MemoryStore], Any]


@pytest.fixture
def store(data_dir: Path) -> Iterator[MemoryStore]:
    s = MemoryStore(data_dir, clock=FakeClock())
    s.save("an existing memory", id="existing", tags=["t"])
    s.save("a pinned memory", id="pinned", pinned=True)
    s.save("a retired memory", id="retired")
    s.delete("retired")
    s.bank_create("work", "work bank")
    s.rule_set("style", "Be brief.")
    yield s
    s.close()


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under the data dir with its bytes (None for folders)."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(root.rglob("*"))
    }


LONG = "x" * 16_001
SURROGATE = "bad \ud800 text"

CASES: list[tuple[str, type[MemoryServiceError], Call]] = [
    # save: text
    ("empty text", InvalidArgumentError, lambda s: s.save("")),
    ("blank text", InvalidArgumentError, lambda s: s.save(" \n\t ")),
    ("non-str text", InvalidArgumentError, lambda s: s.save(42)),  # type: ignore[arg-type]
    ("None text", InvalidArgumentError, lambda s: s.save(None)),  # type: ignore[arg-type]
    ("oversized text", InvalidArgumentError, lambda s: s.save(LONG)),
    ("oversized text new bank", InvalidArgumentError, lambda s: s.save(LONG, bank="fresh")),
    ("lone surrogate text", InvalidArgumentError, lambda s: s.save(SURROGATE)),
    ("lone surrogate title", InvalidArgumentError, lambda s: s.save("ok", title=SURROGATE)),
    ("lone surrogate tag", InvalidArgumentError, lambda s: s.save("ok", tags=[SURROGATE])),
    ("lone surrogate session", InvalidArgumentError, lambda s: s.save("ok", session_id=SURROGATE)),
    # save: other fields
    ("oversized title", InvalidArgumentError, lambda s: s.save("ok", title="t" * 201)),
    ("non-str title", InvalidArgumentError, lambda s: s.save("ok", title=3)),  # type: ignore[arg-type]
    ("nine tags", InvalidArgumentError, lambda s: s.save("ok", tags=[f"t{i}" for i in range(9)])),
    ("nine entities", InvalidArgumentError, lambda s: s.save("ok", entities=list("abcdefghi"))),
    ("non-str tag", InvalidArgumentError, lambda s: s.save("ok", tags=[1])),  # type: ignore[list-item]
    ("bad id", InvalidArgumentError, lambda s: s.save("ok", id="Not Valid")),
    ("81-char id", InvalidArgumentError, lambda s: s.save("ok", id="a" * 81)),
    ("bad turn ulid", InvalidArgumentError, lambda s: s.save("ok", turn_id="turn-1")),
    ("bad confidence", InvalidArgumentError, lambda s: s.save("ok", confidence="sure")),
    ("bad type", InvalidTypeError, lambda s: s.save("ok", type="opinion")),
    ("bad type new bank", InvalidTypeError, lambda s: s.save("ok", type="x", bank="fresh")),
    ("bad scope", InvalidScopeError, lambda s: s.save("ok", scope="planet")),
    ("session without id", InvalidScopeError, lambda s: s.save("ok", scope="session")),
    ("project without path", InvalidScopeError, lambda s: s.save("ok", scope="project")),
    ("bad bank", InvalidArgumentError, lambda s: s.save("ok", bank="../evil")),
    ("long recorded_by", InvalidArgumentError, lambda s: s.save("ok", recorded_by="r" * 201)),
    # update / pin / delete / get
    ("update missing", NotFoundError, lambda s: s.update("missing", text="x")),
    ("update bad id", InvalidArgumentError, lambda s: s.update("Bad Id", text="x")),
    ("update retired", ConflictError, lambda s: s.update("retired", text="x")),
    ("update blank text", InvalidArgumentError, lambda s: s.update("existing", text="  ")),
    ("update oversized", InvalidArgumentError, lambda s: s.update("existing", text=LONG)),
    (
        "update nine tags",
        InvalidArgumentError,
        lambda s: s.update("existing", tags=list("abcdefghi")),
    ),
    ("update type", InvalidTypeError, lambda s: s.update("existing", type="project")),
    ("update scope", InvalidScopeError, lambda s: s.update("existing", scope="session")),
    ("update other bank", NotFoundError, lambda s: s.update("existing", bank="work", text="x")),
    ("update missing bank", NotFoundError, lambda s: s.update("existing", bank="nope", text="x")),
    ("pin missing", NotFoundError, lambda s: s.pin("missing")),
    ("pin retired", ConflictError, lambda s: s.pin("retired")),
    ("delete missing", NotFoundError, lambda s: s.delete("missing")),
    ("delete retired", ConflictError, lambda s: s.delete("retired")),
    ("get missing", NotFoundError, lambda s: s.get("missing")),
    ("get bad id", InvalidArgumentError, lambda s: s.get("../x")),
    # supersede
    ("supersede self", ConflictError, lambda s: s.supersede("existing", "existing")),
    ("supersede missing survivor", NotFoundError, lambda s: s.supersede("existing", "nope")),
    ("supersede retired survivor", ConflictError, lambda s: s.supersede("existing", "retired")),
    ("supersede pinned", ConflictError, lambda s: s.supersede("pinned", "existing")),
    ("supersede retired target", ConflictError, lambda s: s.supersede("retired", "existing")),
    ("supersede missing target", NotFoundError, lambda s: s.supersede("nope", "existing")),
    # list / recall
    ("list page size", InvalidArgumentError, lambda s: s.list(page_size=0)),
    ("list token", InvalidArgumentError, lambda s: s.list(page_token="garbage!")),
    ("list status", InvalidArgumentError, lambda s: s.list(status="maybe")),
    ("list type", InvalidTypeError, lambda s: s.list(type="x")),
    ("recall non-str", InvalidArgumentError, lambda s: s.recall(None)),  # type: ignore[arg-type]
    ("recall mode", InvalidArgumentError, lambda s: s.recall("q", mode="fuzzy")),
    ("recall budget", InvalidArgumentError, lambda s: s.recall("q", token_budget=-1)),
    ("recall limit", InvalidArgumentError, lambda s: s.recall("q", limit=0)),
    ("recall type filter", InvalidTypeError, lambda s: s.recall("q", type_filter=["x"])),
    ("recall scope filter", InvalidScopeError, lambda s: s.recall("q", scope_filter=["x"])),
    ("recall missing bank", NotFoundError, lambda s: s.recall("q", bank="nope")),
    (
        "semantic without model",
        errors.SourceUnavailableError,
        lambda s: s.recall("q", mode="semantic"),
    ),
    # rules
    ("rule bad name", InvalidArgumentError, lambda s: s.rule_set("Bad Name", "x")),
    ("rule traversal", InvalidArgumentError, lambda s: s.rule_set("../x", "x")),
    ("rule non-str", InvalidArgumentError, lambda s: s.rule_set("style", 5)),  # type: ignore[arg-type]
    ("rule huge", InvalidArgumentError, lambda s: s.rule_set("style", "x" * 256_001)),
    ("rule surrogate", InvalidArgumentError, lambda s: s.rule_set("style", SURROGATE)),
    ("rule missing bank", InvalidArgumentError, lambda s: s.rule_set("x", "y", bank="Bad")),
    ("rule get missing", NotFoundError, lambda s: s.rule_get("nope")),
    # banks
    ("bank bad name", InvalidArgumentError, lambda s: s.bank_create("Bad")),
    ("bank traversal", InvalidArgumentError, lambda s: s.bank_create("../evil")),
    ("bank 65 chars", InvalidArgumentError, lambda s: s.bank_create("b" * 65)),
    ("bank non-str desc", InvalidArgumentError, lambda s: s.bank_create("new", 5)),  # type: ignore[arg-type]
    ("bank delete missing", NotFoundError, lambda s: s.bank_delete("nope")),
    # state / configure
    ("state non-json", InvalidArgumentError, lambda s: s.state_set("ext", "k", {1, 2})),
    ("state bad owner", InvalidArgumentError, lambda s: s.state_set("../x", "k", 1)),
    ("configure unknown", InvalidArgumentError, lambda s: s.configure({"nope": 1})),
    ("configure bad value", InvalidArgumentError, lambda s: s.configure({"recall_limit": 0})),
    ("configure non-dict", InvalidArgumentError, lambda s: s.configure([1])),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("what", "error", "call"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_typed_and_writes_nothing(
    store: MemoryStore, data_dir: Path, what: str, error: type[MemoryServiceError], call: Call
) -> None:
    # Given a snapshot of every byte under the data dir, RAM and the event cursor
    before = snapshot(data_dir)
    ram = store.list(include_superseded=True)
    cursor = store.events_since(0).cursor
    settings = store.settings
    # When a bad call is made
    with pytest.raises(error) as info:
        call(store)
    # Then the error is typed exactly, and nothing changed anywhere
    assert type(info.value) is error, f"{what}: got {type(info.value).__name__}"
    assert info.value.category in errors.CATEGORIES
    assert snapshot(data_dir) == before
    assert store.list(include_superseded=True) == ram
    assert store.events_since(0).cursor == cursor
    assert store.settings == settings
    assert "fresh" not in store.banks


def test_errors_carry_a_clear_message(store: MemoryStore) -> None:
    with pytest.raises(InvalidArgumentError, match="limit is 16000"):
        store.save(LONG)
    with pytest.raises(NotFoundError, match="missing"):
        store.get("missing")
    with pytest.raises(ConflictError, match="pinned"):
        store.supersede("pinned", "existing")
    with pytest.raises(InvalidArgumentError, match="not a ULID"):
        store.save("ok", turn_id=str(ULID())[:-1])


def test_a_long_identifier_is_quoted_by_its_head_only(store: MemoryStore) -> None:
    # a megabyte pasted where an id goes: the error names its head and its length
    long_id = "Not-An-Id " * 100_000
    with pytest.raises(InvalidArgumentError) as caught:
        store.get(long_id)
    message = caught.value.message
    assert len(message) < 300
    assert "'Not-An-Id Not-An-Id" in message and "1,000,000 characters" in message
    with pytest.raises(InvalidArgumentError) as short:
        store.get("Bad Id")
    assert "'Bad Id'" in short.value.message  # a short one is quoted whole, as before
