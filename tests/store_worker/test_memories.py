"""Memories: slug ids, fingerprints, revisions, tombstones, stated_at, provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ulid import ULID

from shared.contract.clock import FakeClock
from shared.contract.errors import (
    ConflictError,
    InvalidArgumentError,
    InvalidScopeError,
    InvalidTypeError,
    NotFoundError,
)
from shared.contract.models import CORROBORATED_BY_KEPT, Memory
from shared.text import fingerprint
from store_worker.core import MemoryStore


def lines(data_dir: Path, bank: str = "main") -> list[dict[str, object]]:
    path = data_dir / bank / "memories.jsonl"
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


# -- save -----------------------------------------------------------------------------------------


def test_save_fills_every_field(store: MemoryStore, clock: FakeClock) -> None:
    turn = str(ULID())
    start = clock.ms
    res = store.save(
        "The user prefers [[tabs-vs-spaces]] tabs in Python.",
        title="Tabs",
        type="feedback",
        tags=["Style", "python", "style"],
        entities=["Python", "PEP 8"],
        session_id="s1",
        turn_id=turn,
        recorded_by="extractor",
        confidence="extracted",
    )
    m = res.memory
    assert res.created is True and res.bank == "main"
    assert m.id == "tabs"  # derived from the title
    assert m.fingerprint == fingerprint("The user prefers [[tabs-vs-spaces]] tabs in Python.")
    assert m.type == "feedback" and m.scope == "global"
    assert m.title == "Tabs"
    assert m.tags == ("style", "python")  # lowercased, unique, in order
    assert m.entities == ("python", "pep-8")
    assert m.links == ("tabs-vs-spaces",)
    assert m.pinned is False and m.status == "canonical" and m.confidence == "extracted"
    assert m.corroboration == 0 and m.revision == 0
    assert m.provenance.source_session_id == "s1"
    assert m.provenance.source_turn_id == turn
    assert m.provenance.recorded_by == "extractor"
    assert m.created_at == m.updated_at == m.stated_at >= start
    assert m.invalid_at is None and m.superseded_by is None
    assert m.tokens > 0
    assert m.session_id is None  # global scope: the session is provenance, not visibility


def test_save_is_on_disk_when_it_returns(store: MemoryStore, data_dir: Path) -> None:
    m = store.save("written before the call returns").memory
    (row,) = lines(data_dir)
    assert Memory.model_validate(row) == m


def test_derived_id_from_text(store: MemoryStore) -> None:
    assert store.save("The deploy command is make ship").memory.id == "deploy-command-make-ship"
    assert store.save("東京").memory.id == "dong-jing"  # transliterated (shared.text)
    assert store.save("!!!").memory.id == "memory"  # nothing to read: the fallback


def test_author_suggested_id(store: MemoryStore) -> None:
    assert store.save("hello world", id="greeting").memory.id == "greeting"


@pytest.mark.parametrize("bad", ["Bad", "-x", "a_b", "a" * 81, "", "../x", "a b"])
def test_invalid_suggested_id(store: MemoryStore, bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        store.save("hello", id=bad)


def test_collisions_get_numeric_suffixes_never_overwrite(store: MemoryStore) -> None:
    ids = [store.save(f"text number {i}", id="note").memory.id for i in range(4)]
    assert ids == ["note", "note-2", "note-3", "note-4"]
    assert store.get("note").memory.text == "text number 0"
    derived = [store.save(f"Deploy notes {w}", title="Deploy notes").memory.id for w in "abc"]
    assert derived == ["deploy-notes", "deploy-notes-2", "deploy-notes-3"]


def test_a_retired_id_is_never_reused(store: MemoryStore) -> None:
    store.save("first", id="note")
    store.delete("note")
    again = store.save("second", id="note").memory
    assert again.id == "note-2"
    assert store.get("note").memory.text == "first"
    assert store.get("note").memory.invalid_at is not None


def test_long_suggested_id_with_suffix_stays_valid(store: MemoryStore) -> None:
    long_id = "a" * 80
    first = store.save("one", id=long_id).memory
    second = store.save("two", id=long_id).memory
    assert first.id == long_id
    assert second.id != long_id and len(second.id) <= 80
    assert store.get(second.id).memory.text == "two"


# -- fingerprints: re-saving reinforces -----------------------------------------------------------


def test_resave_reinforces(store: MemoryStore, clock: FakeClock, data_dir: Path) -> None:
    # Given a saved, pinned memory
    first = store.save("The user likes tea.", tags=["drinks"], entities=["tea"], pinned=True)
    clock.advance(days=3)
    # When the same fact is saved again, differently spelt, unpinned, with more tags
    again = store.save("  the USER likes   tea ", tags=["food", "drinks"], entities=["green-tea"])
    # Then it reinforces the first record instead of creating one
    m = again.memory
    assert again.created is False
    assert m.id == first.memory.id
    assert m.text == "The user likes tea."  # the original wording stays
    assert m.corroboration == 1
    assert m.tags == ("drinks", "food")
    assert m.entities == ("tea", "green-tea")
    assert m.pinned is True  # re-saving never unpins
    assert m.revision == 1
    assert m.stated_at > first.memory.stated_at  # the fact was re-stated
    assert m.created_at == first.memory.created_at
    assert m.provenance == first.memory.provenance
    assert store.list().total == 1
    assert [row.get("revision", 0) for row in lines(data_dir)] == [0, 1]
    assert store.save("The user likes tea!").memory.corroboration == 2


def test_resave_with_pin_pins(store: MemoryStore) -> None:
    store.save("fact to pin")
    assert store.save("fact to pin", pinned=True).memory.pinned is True


def test_resave_keeps_the_first_provenance(store: MemoryStore) -> None:
    t1, t2 = str(ULID()), str(ULID())
    first = store.save("a fact", session_id="s1", turn_id=t1, recorded_by="human").memory
    again = store.save("a fact", session_id="s2", turn_id=t2, recorded_by="extractor").memory
    assert again.provenance == first.provenance
    assert again.provenance.source_turn_id == t1


def test_one_turn_corroborates_a_fact_once(store: MemoryStore, data_dir: Path) -> None:
    # Given a fact first stated in turn t1
    t1, t2 = str(ULID()), str(ULID())
    store.save("The user likes tea.", turn_id=t1)
    # When the same turn restates it (an extraction job replayed after a crash)
    again = store.save("the user likes tea", turn_id=t1, tags=["new"])
    # Then nothing changes: no revision, no event, the record as it is
    assert again.created is False
    assert (again.memory.corroboration, again.memory.revision, again.memory.tags) == (0, 0, ())
    assert [e.event_type for e in store.events_since(0).events][-1] == "created"
    # When another turn restates it, twice
    assert store.save("The user likes tea.", turn_id=t2).memory.corroboration == 1
    m = store.save("The user likes tea.", turn_id=t2).memory
    # Then it counted once more, and remembers which turn did
    assert (m.corroboration, m.revision, m.corroborated_by) == (1, 1, (t2,))
    assert [row.get("revision", 0) for row in lines(data_dir)] == [0, 1]
    # And a save without a turn id reinforces as always
    assert store.save("The user likes tea.").memory.corroboration == 2
    assert store.save("The user likes tea.").memory.corroboration == 3


def test_turn_idempotence_survives_a_reopen(data_dir: Path, clock: FakeClock) -> None:
    # Given a fact created in t1 and reinforced in t2, then a restart (replay from the log)
    t1, t2 = str(ULID()), str(ULID())
    first = MemoryStore(data_dir, clock=clock)
    first.save("uses poetry", turn_id=t1)
    first.save("uses poetry", turn_id=t2)
    first.close()
    store = MemoryStore(data_dir, clock=clock)
    # When both turns restate it again
    store.save("uses poetry", turn_id=t1)
    m = store.save("uses poetry", turn_id=t2).memory
    # Then neither counted twice
    assert (m.corroboration, m.revision, m.corroborated_by) == (1, 1, (t2,))
    # And the field is written only where it is set (older lines stay valid)
    assert ["corroborated_by" in row for row in lines(data_dir)] == [False, True]
    store.close()


def test_a_same_turn_resave_that_pins_still_pins(store: MemoryStore) -> None:
    turn = str(ULID())
    store.save("fact to pin", turn_id=turn)
    m = store.save("fact to pin", turn_id=turn, pinned=True).memory
    assert (m.pinned, m.corroboration, m.revision) == (True, 0, 1)


def test_only_the_latest_corroborating_turns_are_kept(store: MemoryStore) -> None:
    turns = [str(ULID()) for _ in range(CORROBORATED_BY_KEPT + 2)]
    for turn in turns:
        m = store.save("a fact", turn_id=turn).memory
    assert m.corroboration == len(turns) - 1  # the first turn created it
    assert m.corroborated_by == tuple(turns[-CORROBORATED_BY_KEPT:])


def test_resave_in_another_scope_is_a_new_record(store: MemoryStore) -> None:
    g = store.save("uses poetry").memory
    p = store.save("uses poetry", scope="project", project="/work/a").memory
    q = store.save("uses poetry", scope="project", project="/work/b").memory
    s = store.save("uses poetry", scope="session", session_id="s1").memory
    assert len({g.id, p.id, q.id, s.id}) == 4
    assert store.save("uses poetry", scope="project", project="/work/a/").memory.id == p.id


def test_resave_reinforces_after_a_same_text_record_elsewhere_retires(store: MemoryStore) -> None:
    g = store.save("uses poetry").memory
    s = store.save("uses poetry", scope="session", session_id="s1").memory
    store.delete(s.id)
    again = store.save("uses poetry")
    assert again.created is False and again.memory.id == g.id


def test_resave_after_a_text_edit_does_not_reinforce_the_edited_record(
    store: MemoryStore,
) -> None:
    # Given a memory whose text was edited away from "alpha"
    m = store.save("alpha fact one").memory
    store.update(m.id, text="beta fact two")
    # When the old text is saved again
    again = store.save("alpha fact one")
    # Then it is a new memory, and the edited one is untouched
    assert again.created is True
    assert again.memory.text == "alpha fact one"
    assert store.get(m.id).memory.text == "beta fact two"
    assert store.get(m.id).memory.corroboration == 0
    # and the edited record's new text reinforces it
    assert store.save("beta fact two").memory.id == m.id


def test_resave_after_delete_creates_a_new_record(store: MemoryStore) -> None:
    m = store.save("a fleeting fact").memory
    store.delete(m.id)
    again = store.save("a fleeting fact")
    assert again.created is True and again.memory.id != m.id


# -- update / pin / delete / get ------------------------------------------------------------------


def test_update_text_revises_in_place(store: MemoryStore, clock: FakeClock, data_dir: Path) -> None:
    m = store.save("old text [[a]]", tags=["t"]).memory
    clock.advance(days=1)
    u = store.update(m.id, text="new text [[b]] with more words").memory
    assert u.id == m.id and u.revision == 1
    assert u.text == "new text [[b]] with more words"
    assert u.fingerprint == fingerprint(u.text)
    assert u.links == ("b",)
    assert u.tokens > m.tokens
    assert u.stated_at > m.stated_at and u.updated_at == u.stated_at
    assert u.created_at == m.created_at and u.tags == ("t",)
    assert u.provenance == m.provenance
    assert Memory.model_validate(lines(data_dir)[-1]) == u


def test_update_fields(store: MemoryStore) -> None:
    m = store.save("some fact", tags=["a"], entities=["x"]).memory
    u = store.update(m.id, title="Title", tags=["b", "C"], entities=[]).memory
    assert (u.title, u.tags, u.entities, u.text) == ("Title", ("b", "c"), (), "some fact")
    assert u.revision == 1


def test_update_same_text_does_not_move_stated_at(store: MemoryStore) -> None:
    m = store.save("steady").memory
    assert store.update(m.id, text="steady").memory.stated_at == m.stated_at


def test_pin_and_tag_edits_never_move_stated_at(store: MemoryStore, clock: FakeClock) -> None:
    m = store.save("pin me").memory
    clock.advance(days=5)
    p = store.pin(m.id).memory
    assert p.pinned is True and p.stated_at == m.stated_at and p.updated_at > m.updated_at
    t = store.update(m.id, tags=["x"], title="T", entities=["e"]).memory
    assert t.stated_at == m.stated_at
    u = store.pin(m.id, False).memory
    assert u.pinned is False and u.stated_at == m.stated_at
    assert u.revision == 3


def test_type_and_scope_are_immutable(store: MemoryStore) -> None:
    m = store.save("a user fact").memory
    with pytest.raises(InvalidTypeError):
        store.update(m.id, type="project")
    with pytest.raises(InvalidScopeError):
        store.update(m.id, scope="session")
    assert store.update(m.id, type="user", scope="global").memory.revision == 1


def test_update_missing_and_retired(store: MemoryStore) -> None:
    with pytest.raises(NotFoundError):
        store.update("nope", text="x")
    m = store.save("gone soon").memory
    store.delete(m.id)
    with pytest.raises(ConflictError):
        store.update(m.id, text="x")
    with pytest.raises(ConflictError):
        store.pin(m.id)


def test_delete_writes_a_tombstone(store: MemoryStore, data_dir: Path, clock: FakeClock) -> None:
    m = store.save("to be deleted").memory
    d = store.delete(m.id).memory
    assert d.invalid_at is not None and d.superseded_by is None
    assert d.revision == 1 and d.text == m.text
    rows = lines(data_dir)
    assert len(rows) == 2 and rows[-1]["invalid_at"] == d.invalid_at
    # the record stays readable by id and in the history view, never in the live list
    assert store.get(m.id).memory == d
    assert store.list().total == 0
    assert [x.id for x in store.list(include_superseded=True).memories] == [m.id]
    with pytest.raises(ConflictError):
        store.delete(m.id)
    with pytest.raises(NotFoundError):
        store.delete("never-was")


def test_get_missing(store: MemoryStore) -> None:
    with pytest.raises(NotFoundError):
        store.get("nothing-here")
    with pytest.raises(InvalidArgumentError):
        store.get("Not An Id")


def test_get_in_another_bank(store: MemoryStore) -> None:
    m = store.save("work fact", bank="work").memory
    assert store.get(m.id, bank="work").memory == m
    with pytest.raises(NotFoundError):
        store.get(m.id)


# -- provenance -----------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["not-a-ulid", "01ARZ3NDEKTSV4RRFFQ69G5FA", "0" * 27, "U" * 26])
def test_malformed_turn_ulid_is_rejected_and_nothing_written(
    store: MemoryStore, data_dir: Path, bad: str
) -> None:
    store.save("first")
    before = (data_dir / "main" / "memories.jsonl").read_bytes()
    with pytest.raises(InvalidArgumentError):
        store.save("second", turn_id=bad)
    assert (data_dir / "main" / "memories.jsonl").read_bytes() == before


def test_turn_ulid_is_normalised(store: MemoryStore) -> None:
    turn = str(ULID())
    m = store.save("fact", turn_id=turn.lower()).memory
    assert m.provenance.source_turn_id == turn


def test_provenance_survives_every_edit(store: MemoryStore) -> None:
    turn = str(ULID())
    m = store.save("origin", session_id="s1", turn_id=turn, recorded_by="cli").memory
    store.update(m.id, text="changed", tags=["x"])
    store.pin(m.id)
    store.save("changed")  # reinforce
    assert store.get(m.id).memory.provenance == m.provenance


# -- scopes and types -----------------------------------------------------------------------------


def test_scope_needs_its_owner(store: MemoryStore) -> None:
    with pytest.raises(InvalidScopeError):
        store.save("x", scope="session")
    with pytest.raises(InvalidScopeError):
        store.save("x", scope="project")
    with pytest.raises(InvalidScopeError):
        store.save("x", scope="planet")
    with pytest.raises(InvalidTypeError):
        store.save("x", type="opinion")
    p = store.save("x", scope="project", project="/work/./repo/").memory
    assert p.project == "/work/repo" and p.session_id is None
    s = store.save("y", scope="session", session_id="s9").memory
    assert s.session_id == "s9" and s.project is None


@pytest.mark.parametrize("relative", [".", "src", "../a", "~", "~/work/a"])
def test_a_relative_project_is_refused_not_resolved_in_the_store(
    store: MemoryStore, relative: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It was resolved against the store's own folder and home: two agents' "." (one in
    # /work/a, one in /work/b, both through the gateway) named the same project
    monkeypatch.chdir(tmp_path)
    store.save("The deploy uses the kestrel pipeline", scope="project", project=str(tmp_path))
    with pytest.raises(InvalidArgumentError, match="absolute"):
        store.save("Another project's fact", scope="project", project=relative)
    with pytest.raises(InvalidArgumentError, match="absolute"):
        store.recall("kestrel pipeline", project=relative)
    assert [m.text for m in store.list().memories] == ["The deploy uses the kestrel pipeline"]


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("C:\\Users\\ana\\repo\\", "C:\\Users\\ana\\repo"),
        ("d:/src/./app", "d:\\src\\app"),
        ("\\\\fileserver\\team\\repo", "\\\\fileserver\\team\\repo"),
    ],
)
def test_a_windows_working_directory_is_absolute_wherever_the_store_runs(
    store: MemoryStore, given: str, kept: str
) -> None:
    # an agent on Windows talking to a store on Linux: its folder is absolute by its own rules
    m = store.save("The build uses msbuild", scope="project", project=given).memory
    assert m.project == kept
    assert [h.memory.id for h in store.recall("msbuild", project=kept).memories] == [m.id]
    assert store.recall("msbuild", project="C:\\Users\\bob\\repo").memories == ()


def test_project_is_not_kept_on_a_global_record(store: MemoryStore) -> None:
    m = store.save("global thing", project="/work/repo").memory
    assert m.project is None


# -- tags -----------------------------------------------------------------------------------------


def test_tags_counts_live_records_only(store: MemoryStore) -> None:
    store.save("one", tags=["a", "b"])
    store.save("two", tags=["b"])
    gone = store.save("three", tags=["b", "c"]).memory
    store.delete(gone.id)
    tags = store.tags().tags
    assert [(t.tag, t.count) for t in tags] == [("b", 2), ("a", 1)]


def test_at_most_eight_tags(store: MemoryStore) -> None:
    with pytest.raises(InvalidArgumentError):
        store.save("x", tags=[f"t{i}" for i in range(9)])
    assert len(store.save("x", tags=[f"t{i}" for i in range(8)]).memory.tags) == 8
    # duplicates collapse before counting
    assert store.save("y", tags=["A", "a", " a "] * 4).memory.tags == ("a",)


def test_reinforce_caps_merged_tags_at_eight(store: MemoryStore) -> None:
    store.save("capped", tags=[f"a{i}" for i in range(6)])
    m = store.save("capped", tags=[f"b{i}" for i in range(6)]).memory
    assert len(m.tags) == 8


# -- replay of the whole history ------------------------------------------------------------------


def test_reopen_sees_the_same_records(data_dir: Path) -> None:
    s = MemoryStore(data_dir, clock=FakeClock())
    a = s.save("alpha", tags=["x"], pinned=True).memory
    b = s.save("beta").memory
    s.update(b.id, text="beta two")
    s.save("alpha")
    c = s.save("gamma").memory
    s.delete(c.id)
    snapshot = {m.id: m for m in s.list(include_superseded=True).memories}
    s.close()
    s2 = MemoryStore(data_dir, clock=FakeClock())
    again = {m.id: m for m in s2.list(include_superseded=True).memories}
    assert again == snapshot
    assert again[a.id].corroboration == 1
    # and the fingerprint map was rebuilt: a re-save still reinforces
    assert s2.save("beta two").memory.id == b.id
    s2.close()


def test_save_without_reinforce_always_creates(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "data", clock=FakeClock())
    first = store.save("The user deploys on Fridays", id="deploys").memory
    again = store.save("The user deploys on Fridays", id="deploys", reinforce=False)
    assert again.created is True and again.memory.id == "deploys-2"
    assert store.get(first.id).memory.corroboration == first.corroboration
