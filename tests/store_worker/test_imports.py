"""import_records and export: whole records in and out, checked as saves, keyed by id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shared.contract.clock import FakeClock
from shared.contract.errors import (
    ConflictError,
    InvalidArgumentError,
    InvalidScopeError,
    InvalidTypeError,
)
from shared.contract.models import Memory
from store_worker.core import MemoryStore

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
TURN = "01HZX3K9V8Q4R5S6T7V8W9X0YZ"


def records(store: MemoryStore, bank: str = "main", history: bool = False) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    token = None
    while True:
        page = store.export(bank=bank, history=history, page_size=2, page_token=token)
        out += [m.model_dump(mode="json", exclude_defaults=True) for m in page.records]
        token = page.next_page_token
        if token is None:
            return out


def a_store_with_everything(store: MemoryStore, clock: FakeClock) -> None:
    store.save(
        "deploys go out on Fridays", id="fridays", tags=["deploy"], turn_id=TURN, session_id="s-1"
    )
    clock.advance(days=1)
    store.save("deploys go out on Tuesdays", id="tuesdays", entities=["deploy"])
    store.supersede("fridays", "tuesdays", reason="moved")
    store.save("the user prefers tabs", id="tabs", pinned=True, occurred_at=1_700_000_000_000)
    store.save("the user prefers tabs")  # corroboration 1
    store.save("scratch note", id="scratch", scope="project", project="/work/app")
    store.update("scratch", text="scratch note, edited", tags=["edit"])
    store.save("a session fact", id="fact", scope="session", session_id="s-2", type="feedback")
    store.delete("fact")


def strip_import_marks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        row = dict(row)
        prov = dict(row.get("provenance", {}))
        prov.pop("imported_at", None)
        if prov:
            row["provenance"] = prov
        else:
            row.pop("provenance", None)
        out.append(row)
    return out


@pytest.mark.parametrize("history", [False, True])
def test_export_then_import_gives_an_equal_bank(
    fresh_store: Any, clock: FakeClock, history: bool
) -> None:
    # Given a bank with supersedes, pins, corroboration, an edit, a tombstone, a project
    source = fresh_store(clock=clock)
    a_store_with_everything(source, clock)
    exported = records(source, history=history)
    # When its records go into an empty store
    target = fresh_store(clock=FakeClock(start_ms=clock.ms + 10_000))
    res = target.import_records(exported)
    assert res.written == len(exported) and res.unchanged == 0 and not res.problems
    # Then the records are the same, marked imported (the one field a round trip adds)
    again = records(target, history=history)
    assert strip_import_marks(again) == exported
    assert all(r["provenance"]["imported_at"] == clock.ms + 10_000 for r in again)
    for a, b in zip(
        source.list(include_superseded=True).memories,
        target.list(include_superseded=True).memories,
        strict=True,
    ):
        assert a.model_copy(update={"provenance": b.provenance}) == b
    assert target.get("fridays").memory.superseded_by == "tuesdays"
    assert target.get("tabs").memory.corroboration == 1
    # the index was built once, on the first read after the import
    hits = target.recall("tabs").memories
    assert [h.memory.id for h in hits] == ["tabs"]
    if history:
        assert len(target.history("scratch").revisions) == 2


def test_reimport_changes_nothing_and_never_corroborates(
    fresh_store: Any, clock: FakeClock, data_dir: Path
) -> None:
    source = fresh_store(clock=clock)
    a_store_with_everything(source, clock)
    exported = records(source, history=True)
    target = fresh_store(data_dir=data_dir)
    target.import_records(exported)
    log = (data_dir / "main" / "memories.jsonl").read_bytes()
    res = target.import_records(exported)
    assert (res.written, res.unchanged) == (0, len(exported))
    assert (data_dir / "main" / "memories.jsonl").read_bytes() == log
    assert target.get("tabs").memory.corroboration == 1


def test_a_partial_history_is_completed_by_a_second_import(
    fresh_store: Any, clock: FakeClock
) -> None:
    source = fresh_store(clock=clock)
    a_store_with_everything(source, clock)
    exported = records(source, history=True)
    target = fresh_store()
    target.import_records(exported[:3])  # killed after its first batch
    res = target.import_records(exported)
    assert res.written == len(exported) - 3 and res.unchanged == 3
    assert strip_import_marks(records(target, history=True)) == exported


def test_every_field_is_redacted_and_the_source_kept(store: MemoryStore) -> None:
    res = store.import_records(
        [
            {
                "id": "keys",
                "text": f"the deploy key is {SECRET}",
                "title": f"key {SECRET}",
                "tags": ["ops", SECRET],
                "provenance": {"source": f"mem0:{SECRET}", "recorded_by": "mem0"},
            }
        ]
    )
    assert res.redacted == ("openai_key",)
    mem = store.get("keys").memory
    assert SECRET not in mem.model_dump_json()
    assert mem.tags == ("ops",)
    assert mem.provenance.recorded_by == "mem0"
    assert mem.provenance.source == "mem0:[REDACTED:openai_key]"


@pytest.mark.parametrize(
    ("item", "error"),
    [
        ({"id": "Not A Slug", "text": "x"}, InvalidArgumentError),
        ({"text": "no id"}, InvalidArgumentError),
        ({"id": "x", "text": ""}, InvalidArgumentError),
        ({"id": "x", "text": "t", "type": "gossip"}, InvalidTypeError),
        ({"id": "x", "text": "t", "scope": "session"}, InvalidScopeError),
        (
            {"id": "x", "text": "t", "scope": "project", "project": "relative/dir"},
            InvalidArgumentError,
        ),
        ({"id": "x", "text": "t", "pinned": "yes"}, InvalidArgumentError),
        ({"id": "x", "text": "t", "created_at": -5}, InvalidArgumentError),
        ({"id": "x", "text": "t", "colour": "red"}, InvalidArgumentError),
        ({"id": "x", "text": "t", "provenance": {"source_turn_id": "nope"}}, InvalidArgumentError),
        ({"id": "x", "text": "t", "session_id": SECRET, "scope": "session"}, InvalidArgumentError),
        ({"id": "x", "text": "t", "status": "pending", "invalid_at": 5}, InvalidArgumentError),
        ("just a string", InvalidArgumentError),
    ],
)
def test_a_bad_record_is_a_typed_error_and_writes_nothing(
    store: MemoryStore, data_dir: Path, item: Any, error: type[Exception]
) -> None:
    with pytest.raises(error, match="record 1"):
        store.import_records([{"id": "good", "text": "a good one"}, item])
    assert not (data_dir / "main" / "memories.jsonl").exists()
    res = store.import_records([{"id": "good", "text": "a good one"}, item], skip_bad=True)
    assert res.written == 1 and [p.index for p in res.problems] == [1]
    assert res.problems[0].category == error("x").category  # type: ignore[call-arg]


def test_an_id_held_by_another_memory_is_a_conflict(store: MemoryStore) -> None:
    store.save("the user likes tea", id="drinks")
    with pytest.raises(ConflictError, match="another memory"):
        store.import_records([{"id": "drinks", "text": "the user likes coffee"}])
    assert store.get("drinks").memory.text == "the user likes tea"


def test_dry_run_writes_nothing(store: MemoryStore, data_dir: Path) -> None:
    res = store.import_records(
        [{"id": "a", "text": "one"}, {"id": "b", "text": "two"}], dry_run=True
    )
    assert res.dry_run and res.written == 2
    assert [m.id for m in res.records] == ["a", "b"]
    assert store.list().memories == ()
    res = store.import_records([{"id": "a", "text": "one"}], bank="elsewhere", dry_run=True)
    assert res.bank == "elsewhere"
    assert "elsewhere" not in [b.name for b in store.bank_list().banks]


def test_imported_records_survive_a_reopen(fresh_store: Any, data_dir: Path) -> None:
    store = fresh_store(data_dir=data_dir)
    store.import_records(
        [{"id": f"m-{i}", "text": f"fact number {i} about llamas"} for i in range(50)]
    )
    before = records(store)
    store.close()
    again = fresh_store(data_dir=data_dir)
    assert records(again) == before
    assert len(again.recall("llamas", limit=100).memories) == 50


@pytest.mark.parametrize("history", [False, True])
def test_drafts_round_trip_as_drafts(fresh_store: Any, history: bool) -> None:
    source = fresh_store(ratification=True)
    for i in range(3):
        source.save(f"fact {i}", id=f"fact-{i}")
    source.save("maybe the user likes jazz", id="jazz", confidence="extracted")
    exported = records(source, history=history)  # pages of 2: the draft comes after the log
    assert [r["id"] for r in exported] == ["fact-0", "fact-1", "fact-2", "jazz"]
    assert exported[-1]["status"] == "pending"
    target = fresh_store(ratification=True)
    target.import_records(exported)
    assert [m.id for m in target.drafts()] == ["jazz"]
    assert isinstance(target.approve("jazz").memory, Memory)


def test_each_record_keeps_its_own_source_after_a_reopen(fresh_store: Any, data_dir: Path) -> None:
    # a replay shares equal provenances between records: an imported one names its own source
    store = fresh_store(data_dir=data_dir)
    items = [
        {"id": f"m-{i}", "text": f"fact {i}", "provenance": {"source": f"mem0:{i}"}}
        for i in range(3)
    ]
    store.import_records(items)
    store.close()
    again = fresh_store(data_dir=data_dir)
    assert [again.get(f"m-{i}").memory.provenance.source for i in range(3)] == [
        "mem0:0",
        "mem0:1",
        "mem0:2",
    ]


SLACK = "xoxb-1234567890123-1234567890123-abcdefghijklmnopqrstuvwx"  # fits a memory id


@pytest.mark.parametrize("where", [0, 1, 2999])
def test_an_id_holding_a_credential_is_refused_among_many(store: MemoryStore, where: int) -> None:
    # one id among thousands that holds a credential is found, and only it is refused
    items: list[Any] = [{"id": f"m-{i}", "text": f"fact {i}"} for i in range(3000)]
    for bad in (SLACK, f"note-{SLACK}"):
        items[where] = {"id": bad, "text": "a fact"}
        res = store.import_records(items, skip_bad=True, dry_run=True)
        assert [p.index for p in res.problems] == [where]
        assert "looks like a credential" in res.problems[0].message
        assert SLACK not in res.problems[0].message


def test_a_label_holding_a_secret_goes_in_every_record(store: MemoryStore) -> None:
    # redaction found in a label is remembered across the batch's records, never skipped
    items = [{"id": f"m-{i}", "text": f"fact {i}", "tags": ["ops", SECRET]} for i in range(3)]
    res = store.import_records(items)
    assert res.redacted == ("openai_key",)
    assert [store.get(f"m-{i}").memory.tags for i in range(3)] == [("ops",)] * 3


def test_the_id_of_a_draft_that_could_not_be_read_is_refused(
    fresh_store: Any, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    store = fresh_store(data_dir=data_dir, ratification=True)
    store.save("deploys on fridays are banned", id="fridays", status="pending")
    store.close()
    draft = data_dir / "main" / "drafts" / "fridays.json"
    real = Path.read_bytes

    def read_bytes(self: Path) -> bytes:
        if self == draft:
            raise OSError(errno.EIO, "Input/output error")
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    store = fresh_store(data_dir=data_dir, ratification=True)
    monkeypatch.setattr(Path, "read_bytes", real)
    # an import never gives the unread draft's id to another record (it would lose its id)
    with pytest.raises(ConflictError, match="draft file that could not be read"):
        store.import_records([{"id": "fridays", "text": "an unrelated fact"}])
    assert not (data_dir / "main" / "memories.jsonl").exists()


def test_refusals_come_in_the_items_order_whichever_check_refused(store: MemoryStore) -> None:
    # the fields are checked for every item before the records are made and compared with
    # the bank's: still, the problems come in the items' order, and the first one is raised
    store.save("the user likes tea", id="drinks")
    conflict = {"id": "drinks", "text": "the user likes coffee"}
    empty = {"id": "empty", "text": ""}
    good = [{"id": "a", "text": "fact a"}, {"id": "b", "text": "fact b"}]
    res = store.import_records([good[0], conflict, empty, good[1]], skip_bad=True, dry_run=True)
    assert [(p.index, p.message) for p in res.problems] == [
        (1, "drinks is already another memory here (revision 0)"),
        (2, "text must be a non-empty string"),
    ]
    assert [m.id for m in res.records] == ["a", "b"]
    with pytest.raises(ConflictError, match="record 1"):
        store.import_records([good[0], conflict, empty])
    with pytest.raises(InvalidArgumentError, match="record 1"):
        store.import_records([good[0], empty, conflict])
    assert store.get("drinks").memory.text == "the user likes tea"
    assert store.list().memories == (store.get("drinks").memory,)


def test_a_label_list_seen_before_is_not_trusted_beside_a_secret_it_repeats(
    store: MemoryStore,
) -> None:
    # the batch remembers each list of labels as cleaned, but not for a record whose text
    # names a secret: there the same label repeats it and goes
    items = [
        {"id": "one", "text": "a plain fact", "tags": ["ops", "hunter-pass-77"]},
        {"id": "two", "text": "my password is hunter-pass-77", "tags": ["ops", "hunter-pass-77"]},
        {"id": "three", "text": "another plain fact", "tags": ["ops", "hunter-pass-77"]},
    ]
    res = store.import_records(items)
    assert res.redacted == ("password",)
    assert [store.get(i).memory.tags for i in ("one", "two", "three")] == [
        ("ops", "hunter-pass-77"),
        ("ops",),
        ("ops", "hunter-pass-77"),
    ]
    assert "hunter-pass-77" not in store.get("two").memory.text


def test_what_derives_from_the_text_is_a_saves(store: MemoryStore) -> None:
    texts = [
        "Ana moved the Kestrel deploy to Fly.io, see [[deploy-notes]]",
        "the user prefers tabs",
        "Tokens: ünïcödé, full-width ＡＢＣ and a ﬁ ligature",
    ]
    for i, text in enumerate(texts):
        store.save(text, id=f"saved-{i}")
    store.import_records([{"id": f"imported-{i}", "text": t} for i, t in enumerate(texts)])
    for i in range(len(texts)):
        saved, imported = store.get(f"saved-{i}").memory, store.get(f"imported-{i}").memory
        derived = ("fingerprint", "entities", "links", "tokens", "text")
        assert [getattr(imported, f) for f in derived] == [getattr(saved, f) for f in derived]
