"""Banks: create idempotent, list counts, delete to .trash, names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from shared.contract.clock import FakeClock
from shared.contract.config import StoreSettings
from shared.contract.errors import InvalidArgumentError, NotFoundError
from store_worker.core import MemoryStore

BAD_NAMES = ["../evil", "Bad", "-x", "", "x" * 65, "_x", "a b", "a/b", ".hidden", "ü"]


def test_create_is_idempotent(store: MemoryStore, data_dir: Path) -> None:
    # Given a new bank
    first = store.bank_create("work", "work notes")
    # When it is created again
    second = store.bank_create("work")
    # Then the second call changes nothing and says so
    assert first.created is True and second.created is False
    assert second.bank.created_at == first.bank.created_at
    assert second.bank.description == "work notes"
    meta = yaml.safe_load((data_dir / "work" / "bank.yaml").read_text())
    assert meta == {"description": "work notes", "created_at": first.bank.created_at}
    assert (data_dir / "work" / "rules").is_dir()


def test_create_again_with_a_new_description_updates_it(store: MemoryStore, data_dir: Path) -> None:
    store.bank_create("work", "old")
    again = store.bank_create("work", "new")
    assert again.created is False and again.bank.description == "new"
    assert yaml.safe_load((data_dir / "work" / "bank.yaml").read_text())["description"] == "new"


def test_list_counts_memories_rules_and_pinned(store: MemoryStore) -> None:
    # Given a bank with three memories (one pinned, one deleted) and two rules
    store.bank_create("work")
    store.save("alpha one", bank="work")
    store.save("beta two", bank="work", pinned=True)
    gone = store.save("gamma three", bank="work", pinned=True).memory
    store.delete(gone.id, bank="work")
    store.rule_set("style", "Be brief.", bank="work")
    store.rule_set("tone", "Be kind.", bank="work")
    # When banks are listed
    banks = {b.name: b for b in store.bank_list().banks}
    # Then only live memories count
    assert banks["work"].memories == 2
    assert banks["work"].pinned == 1
    assert banks["work"].rules == 2
    assert banks["main"].memories == 0  # the default bank materializes on first use


def test_list_is_sorted_by_name(store: MemoryStore) -> None:
    for name in ("zeta", "alpha", "mid"):
        store.bank_create(name)
    assert [b.name for b in store.bank_list().banks] == ["alpha", "main", "mid", "zeta"]


def test_default_bank_materializes_on_first_use(store: MemoryStore, data_dir: Path) -> None:
    assert not (data_dir / "main").exists()
    saved = store.save("the first memory")
    assert saved.bank == "main"
    assert (data_dir / "main" / "bank.yaml").is_file()
    assert (data_dir / "main" / "memories.jsonl").is_file()


def test_default_bank_materializes_on_a_read_too(store: MemoryStore, data_dir: Path) -> None:
    assert store.list().total == 0
    assert (data_dir / "main" / "bank.yaml").is_file()


def test_configured_default_bank(tmp_path: Path) -> None:
    settings = StoreSettings(data_dir=str(tmp_path / "d"), default_bank="notes")
    s = MemoryStore(settings=settings, clock=FakeClock())
    assert s.save("hello there").bank == "notes"
    assert [b.name for b in s.bank_list().banks] == ["notes"]
    s.close()


def test_other_banks_do_not_materialize_on_reads(store: MemoryStore, data_dir: Path) -> None:
    with pytest.raises(NotFoundError):
        store.list(bank="nowhere")
    with pytest.raises(NotFoundError):
        store.recall("anything", bank="nowhere")
    assert not (data_dir / "nowhere").exists()


def test_save_to_a_new_bank_creates_it(store: MemoryStore, data_dir: Path) -> None:
    store.save("hello", bank="fresh")
    assert (data_dir / "fresh" / "memories.jsonl").is_file()
    assert "fresh" in [b.name for b in store.bank_list().banks]


def test_delete_moves_to_trash_with_a_timestamp(
    store: MemoryStore, data_dir: Path, clock: FakeClock
) -> None:
    # Given a bank with a memory and a rule
    store.save("keep me safe", bank="old")
    store.rule_set("style", "Be brief.", bank="old")
    clock.ms = 1_800_000_000_000
    # When it is deleted
    result = store.bank_delete("old")
    # Then its folder moved whole to .trash/old-<ms>
    trashed = Path(result.trashed_to)
    assert result.ok is True
    assert trashed.parent == (data_dir / ".trash").resolve()
    assert re.fullmatch(r"old-\d+", trashed.name)
    assert int(trashed.name.split("-")[1]) >= 1_800_000_000_000
    assert "keep me safe" in (trashed / "memories.jsonl").read_text()
    assert (trashed / "rules" / "style.md").read_text() == "Be brief."
    assert not (data_dir / "old").exists()
    assert "old" not in [b.name for b in store.bank_list().banks]
    with pytest.raises(NotFoundError):
        store.list(bank="old")


def test_delete_twice_in_the_same_ms_never_collides(store: MemoryStore, clock: FakeClock) -> None:
    clock.tick = 0
    store.save("one", bank="dup")
    first = store.bank_delete("dup").trashed_to
    store.save("two", bank="dup")
    second = store.bank_delete("dup").trashed_to
    assert first != second
    assert Path(first).is_dir() and Path(second).is_dir()


def test_deleted_bank_stays_gone_after_reopen(data_dir: Path) -> None:
    s = MemoryStore(data_dir, clock=FakeClock())
    s.save("x", bank="old")
    s.bank_delete("old")
    s.close()
    s2 = MemoryStore(data_dir, clock=FakeClock())
    assert "old" not in s2.banks
    s2.close()


def test_recreated_bank_starts_empty(store: MemoryStore) -> None:
    store.save("x", bank="again")
    store.bank_delete("again")
    assert store.bank_create("again").created is True
    assert store.list(bank="again").total == 0


def test_delete_missing_bank_is_not_found(store: MemoryStore) -> None:
    with pytest.raises(NotFoundError):
        store.bank_delete("nope")


@pytest.mark.parametrize("name", BAD_NAMES)
def test_invalid_names_are_rejected_everywhere(
    store: MemoryStore, data_dir: Path, name: str
) -> None:
    store.bank_list()
    before = sorted(p.name for p in data_dir.iterdir())
    with pytest.raises(InvalidArgumentError):
        store.bank_create(name)
    with pytest.raises(InvalidArgumentError):
        store.bank_delete(name)
    if name == "":
        return  # elsewhere an empty bank means "omitted" (proto3's unset string): the default
    with pytest.raises(InvalidArgumentError):
        store.save("hello", bank=name)
    with pytest.raises(InvalidArgumentError):
        store.list(bank=name)
    with pytest.raises(InvalidArgumentError):
        store.rule_set("style", "x", bank=name)
    assert sorted(p.name for p in data_dir.iterdir()) == before
    assert not (data_dir.parent / "evil").exists()


def test_longest_valid_name_is_accepted(store: MemoryStore) -> None:
    assert store.bank_create("a" * 64).created is True


def test_reload_picks_up_a_bank_made_by_hand_and_ignores_bad_folders(
    store: MemoryStore, data_dir: Path
) -> None:
    store.bank_list()
    (data_dir / "handmade" / "rules").mkdir(parents=True)
    (data_dir / "handmade" / "rules" / "style.md").write_text("By hand.")
    (data_dir / "Not-A-Bank").mkdir()
    result = store.reload()
    assert "handmade" in result.banks
    assert "Not-A-Bank" not in result.banks
    assert store.rule_list(bank="handmade").rules[0].content == "By hand."


def test_bank_description_is_redacted(store: MemoryStore, data_dir: Path) -> None:
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    made = store.bank_create("ops", f"deploy token {secret}")
    assert secret not in made.bank.description
    assert "[REDACTED:github_token]" in made.bank.description
    assert secret not in (data_dir / "ops" / "bank.yaml").read_text()
