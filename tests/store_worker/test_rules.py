"""Rules: list, set, remove with empty content, atomic writes, hand edits on reload."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shared.contract.clock import FakeClock
from shared.contract.errors import NotFoundError, SourceUnavailableError
from shared.contract.models import Event
from store_worker.core import MemoryStore


def rule_file(data_dir: Path, name: str, bank: str = "main") -> Path:
    return data_dir / bank / "rules" / f"{name}.md"


def test_set_list_get(store: MemoryStore, data_dir: Path) -> None:
    res = store.rule_set("style", "# Style\n\nBe brief.\n")
    assert (res.ok, res.exists, res.bank, res.name, res.redacted) == (
        True,
        True,
        "main",
        "style",
        (),
    )
    store.rule_set("alpha", "First.")
    rules = store.rule_list().rules
    assert [r.name for r in rules] == ["alpha", "style"]  # sorted by name
    assert rules[1].content == "# Style\n\nBe brief.\n"
    assert rules[1].chars == len("# Style\n\nBe brief.\n")
    assert rule_file(data_dir, "style").read_text() == "# Style\n\nBe brief.\n"
    assert store.rule_get("style").content == "# Style\n\nBe brief.\n"


def test_replace(store: MemoryStore, data_dir: Path) -> None:
    store.rule_set("style", "v1")
    store.rule_set("style", "v2")
    assert rule_file(data_dir, "style").read_text() == "v2"
    assert [r.content for r in store.rule_list().rules] == ["v2"]


@pytest.mark.parametrize("empty", ["", "   ", "\n\n"])
def test_empty_content_removes(store: MemoryStore, data_dir: Path, empty: str) -> None:
    store.rule_set("style", "Be brief.")
    res = store.rule_set("style", empty)
    assert res.ok is True and res.exists is False
    assert not rule_file(data_dir, "style").exists()
    assert store.rule_list().rules == ()
    with pytest.raises(NotFoundError):
        store.rule_get("style")


def test_removing_a_missing_rule_is_fine_and_silent(store: MemoryStore) -> None:
    store.bank_list()
    cursor = store.events_since(0).cursor
    assert store.rule_set("never", "").exists is False
    assert store.events_since(cursor).events == ()


def test_removing_in_a_missing_bank_creates_nothing(store: MemoryStore, data_dir: Path) -> None:
    with pytest.raises(NotFoundError):
        store.rule_set("x", "", bank="ghost")
    assert not (data_dir / "ghost").exists()


def test_setting_in_a_new_bank_creates_it(store: MemoryStore, data_dir: Path) -> None:
    store.rule_set("style", "Be brief.", bank="work")
    assert rule_file(data_dir, "style", "work").read_text() == "Be brief."
    assert store.rule_list(bank="work").rules[0].name == "style"
    assert store.rule_list().rules == ()  # banks keep their own rules


def test_learned_is_flagged(store: MemoryStore) -> None:
    store.rule_set("learned", "- prefers tabs")
    store.rule_set("style", "x")
    flags = {r.name: r.learned for r in store.rule_list().rules}
    assert flags == {"learned": True, "style": False}


def test_writes_are_atomic_no_temp_files(store: MemoryStore, data_dir: Path) -> None:
    for i in range(5):
        store.rule_set("style", f"version {i}")
    assert sorted(p.name for p in (data_dir / "main" / "rules").iterdir()) == ["style.md"]


def test_a_failed_rename_keeps_the_old_rule(
    store: MemoryStore, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.rule_set("style", "Old.")

    def refuse(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(SourceUnavailableError):
        store.rule_set("style", "New.")
    monkeypatch.undo()
    assert rule_file(data_dir, "style").read_text() == "Old."
    assert store.rule_get("style").content == "Old."
    assert sorted(p.name for p in (data_dir / "main" / "rules").iterdir()) == ["style.md"]


def test_hand_edits_are_picked_up_by_reload(store: MemoryStore, data_dir: Path) -> None:
    # Given rules written through the API
    store.rule_set("style", "Be brief.")
    store.rule_set("gone", "Remove me by hand.")
    # When a human edits, adds and deletes files
    rule_file(data_dir, "style").write_text("Be very brief.", encoding="utf-8")
    rule_file(data_dir, "added").write_text("Added by hand.", encoding="utf-8")
    rule_file(data_dir, "gone").unlink()
    (data_dir / "main" / "rules" / "notes.txt").write_text("not a rule")
    assert store.rule_get("style").content == "Be brief."  # RAM until reload
    store.reload()
    # Then reload sees exactly the files
    assert {r.name: r.content for r in store.rule_list().rules} == {
        "added": "Added by hand.",
        "style": "Be very brief.",
    }


def test_rules_survive_reopen(data_dir: Path) -> None:
    s = MemoryStore(data_dir, clock=FakeClock())
    s.rule_set("style", "Ünïcødé 東京 rule\n")
    s.close()
    s2 = MemoryStore(data_dir, clock=FakeClock())
    assert s2.rule_get("style").content == "Ünïcødé 東京 rule\n"
    s2.close()


def test_rule_content_is_redacted(store: MemoryStore, data_dir: Path) -> None:
    seen: list[Event] = []
    store.subscribe("t", seen.append)
    secret = "sk-ant-api03-" + "Zx9" * 30
    res = store.rule_set("deploy", f"Use the key {secret} for deploys.\npassword=hunter2x!")
    assert set(res.redacted) == {"anthropic_key", "password"}
    text = rule_file(data_dir, "deploy").read_text()
    assert secret not in text and "hunter2x!" not in text
    assert "[REDACTED:anthropic_key]" in text and "password=[REDACTED:password]" in text
    assert secret not in store.rule_get("deploy").content
    assert seen[-1].event_type == "rules-changed"
    assert set(seen[-1].redacted) == {"anthropic_key", "password"}


def test_rule_events(store: MemoryStore) -> None:
    store.bank_list()
    cursor = store.events_since(0).cursor
    store.rule_set("style", "x")
    store.rule_set("style", "y")
    store.rule_set("style", "")
    events = store.events_since(cursor).events
    assert [(e.kind, e.event_type, e.bank) for e in events] == [
        ("bank-changed", "rules-changed", "main")
    ] * 3
