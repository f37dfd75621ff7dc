"""A rule file that cannot be read is never dropped from the prompt unseen.

One bad byte appended to ``rules/style.md`` used to drop the whole rule from every prompt
while doctor still said ok. Now the rule's last good text (RAM has it from before a reload)
is injected, or, with none (a fresh open), the rules section says the rule is missing; and
doctor's required ``rules_readable`` check fails, naming the file and the byte, until the
file is fixed.
"""

from __future__ import annotations

import io
from pathlib import Path

from shared.cli import run
from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore

STYLE = "Formal register. No em-dashes."


def section(store: MemoryStore) -> str:
    return store.preview("what is the style?").system_prompt_section


def rules_check(store: MemoryStore) -> tuple[bool, bool, str]:
    report = store.doctor()
    check = next(c for c in report.checks if c.name == "rules_readable")
    return report.ok, check.ok, check.detail


def spoil(data_dir: Path) -> Path:
    """Append one byte that is not UTF-8 to ``main/rules/style.md``."""
    path = data_dir / "main" / "rules" / "style.md"
    path.write_bytes(path.read_bytes() + b"\xff")
    return path


def test_a_bad_byte_keeps_the_last_good_text_after_reload(data_dir: Path, clock: FakeClock) -> None:
    # Given a bank with a good style rule, injected
    store = MemoryStore(data_dir, clock=clock)
    try:
        store.rule_set("style", STYLE)
        store.rule_set("tone", "Be brief.")
        assert f"## style\n{STYLE}" in section(store)
        assert rules_check(store)[:2] == (True, True)
        # When one bad byte is appended by hand and the store reloads
        path = spoil(data_dir)
        store.reload()
        # Then the prompt still carries the rule's last good text, and the other rule
        text = section(store)
        assert f"## style\n{STYLE}" in text and "## tone\nBe brief." in text
        # And doctor fails, naming the file and the byte
        ok, check_ok, detail = rules_check(store)
        assert not ok and not check_ok
        assert str(path) in detail and f"byte 0xff at {len(STYLE)}" in detail
        assert "last good text" in detail
        # And a second reload keeps it too (RAM carries it from reload to reload)
        store.reload()
        assert f"## style\n{STYLE}" in section(store)
        # When the file is fixed, Then the rule reads from it again and doctor is ok
        path.write_bytes(b"Casual register.")
        store.reload()
        assert "## style\nCasual register." in section(store)
        assert rules_check(store)[:2] == (True, True)
    finally:
        store.close()


def opened_spoiled(data_dir: Path, clock: FakeClock) -> MemoryStore:
    """A store opened on a bank whose ``style`` rule got a bad byte while it was closed."""
    store = MemoryStore(data_dir, clock=clock)
    store.rule_set("style", STYLE)
    store.close()
    spoil(data_dir)
    return MemoryStore(data_dir, clock=clock)


def test_a_bad_byte_on_a_fresh_open_says_the_rule_is_missing(
    data_dir: Path, clock: FakeClock
) -> None:
    store = opened_spoiled(data_dir, clock)
    try:
        text = section(store)
        assert STYLE not in text  # no good version on a fresh boot
        assert (
            "## style\n(rule file could not be read: rules/style.md: "
            f"not UTF-8 (byte 0xff at {len(STYLE)}))"
        ) in text
        assert rules_check(store)[:2] == (False, False)
        # When the rule is set again, Then it is injected as set and doctor is ok
        store.rule_set("style", "", bank="main")  # remove the unreadable file first
        assert "## style" not in section(store)
        store.rule_set("style", "Casual register.")
        assert "## style\nCasual register." in section(store)
        assert rules_check(store)[:2] == (True, True)
    finally:
        store.close()


def test_the_pre_generate_prompt_carries_the_missing_rule_line(
    data_dir: Path, clock: FakeClock
) -> None:
    store = opened_spoiled(data_dir, clock)
    try:
        got = store.pre_generate("s1", messages=[{"role": "user", "content": "hello"}])
        assert got.system_prompt is not None
        assert "## style\n(rule file could not be read: rules/style.md" in got.system_prompt
    finally:
        store.close()


def test_memory_doctor_exits_non_zero_naming_the_rule_file(
    data_dir: Path, clock: FakeClock
) -> None:
    store = MemoryStore(data_dir, clock=clock)
    store.rule_set("style", STYLE)
    store.close()

    def doctor() -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        code = run(["--data-dir", str(data_dir), "doctor"], out=out, err=err)
        return code, out.getvalue() + err.getvalue()

    code, _ = doctor()
    assert code == 0
    path = spoil(data_dir)
    code, said = doctor()
    assert code != 0
    assert "rules_readable" in said and str(path) in said and "0xff" in said
