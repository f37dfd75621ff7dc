"""memory import against crafted sources: deep JSON, credentials in the places a source keys
things by (file names, entity names, foreign ids, user ids), a bad bank among good ones."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from shared.cli import run

GITHUB = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
AWS = "AKIAIOSFODNN7EXAMPLE"
HEADER = json.dumps({"format": "agent-memory-export", "version": 1})


def cli_json(data: Path, *argv: str) -> Any:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--data-dir", str(data), *argv, "--json"], out=out, err=err)
    assert code == 0, err.getvalue()
    return json.loads(out.getvalue())


def holds(data: Path, *needles: str) -> list[str]:
    """The files under ``data`` that hold any of ``needles``, in any case."""
    found = []
    for f in data.rglob("*"):
        if f.is_file():
            body = f.read_bytes().decode("utf-8", "replace").casefold()
            found += [f"{f}: {n}" for n in needles if n.casefold() in body]
    return found


def texts(data: Path, bank: str) -> list[str]:
    got = cli_json(data, "list", "--bank", bank)
    return sorted(m["text"] for m in got["memories"])


def memory_line(mem_id: str, text: str, bank: str = "main") -> str:
    return json.dumps({"kind": "memory", "bank": bank, "record": {"id": mem_id, "text": text}})


@pytest.mark.parametrize("fmt", ["native", "mem0", "mcp-memory"])
def test_json_nested_too_deep_is_a_reported_line_not_a_crash(tmp_path: Path, fmt: str) -> None:
    good = {
        "native": memory_line("kept", "a line after the deep one"),
        "mem0": json.dumps({"id": "kept", "memory": "a line after the deep one"}),
        "mcp-memory": json.dumps(
            {"type": "entity", "name": "kept", "entityType": "x", "observations": ["a line"]}
        ),
    }[fmt]
    first = [HEADER] if fmt == "native" else []
    src = tmp_path / "deep.jsonl"
    src.write_text("\n".join([*first, "[" * 200_000, good]) + "\n")
    summary = cli_json(tmp_path / "data", "import", str(src), "--from", fmt, "--bank", "b")
    assert summary["written"] == 1
    assert [p["where"] for p in summary["problems"]] == [f"deep.jsonl:{len(first) + 1}"]


def test_a_credential_in_a_note_file_name_reaches_no_id_or_tag(tmp_path: Path) -> None:
    notes = tmp_path / "memories"
    notes.mkdir()
    (notes / f"{GITHUB}.md").write_text("- a harmless note\n")
    (notes / f"{AWS}.txt").write_text("another harmless note\n")
    data = tmp_path / "data"
    summary = cli_json(data, "import", str(notes), "--bank", "notes")
    assert summary["written"] == 2 and summary["problems"] == []
    assert texts(data, "notes") == ["a harmless note", "another harmless note"]
    md = tmp_path / "md"
    md.mkdir()
    (md / f"{GITHUB}.md").write_text("- a third note\n")
    assert cli_json(data, "import", str(md), "--bank", "md")["written"] == 1
    secret_tails = (GITHUB[4:], AWS[4:])  # any case, with or without the prefix
    assert holds(data, *secret_tails) == []


def test_a_credential_in_an_mcp_entity_name_reaches_no_id(tmp_path: Path) -> None:
    src = tmp_path / "memory.jsonl"
    rows = [
        {"type": "entity", "name": GITHUB, "entityType": "token", "observations": ["rotated"]},
        {"type": "relation", "from": GITHUB, "to": "ci", "relationType": "used_by"},
    ]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = tmp_path / "data"
    summary = cli_json(data, "import", str(src), "--bank", "mcp")
    assert summary["written"] == 2, summary["problems"]
    assert holds(data, GITHUB[4:]) == []


def test_a_credential_as_a_mem0_user_id_names_no_bank_and_the_rest_imports(
    tmp_path: Path,
) -> None:
    from integrations import mem0_compat

    src = tmp_path / "mem0.json"
    rows = [
        {"id": "m1", "memory": "likes tea", "user_id": GITHUB.lower()},
        {"id": "m2", "memory": "likes coffee", "user_id": "alex"},
        {"id": "m3", "memory": "likes water", "user_id": f"{AWS}@x.org"},
    ]
    src.write_text(json.dumps({"results": rows}))
    data = tmp_path / "data"
    summary = cli_json(data, "import", str(src))
    assert summary["written"] == 3 and summary["problems"] == []
    assert holds(data, GITHUB[4:], AWS[4:]) == []
    assert "alex" in summary["banks"]
    for user in (GITHUB.lower(), f"{AWS}@x.org"):
        assert mem0_compat.bank_of(user) in summary["banks"]  # the importer's bank
        assert mem0_compat.bank_of(user).startswith("mem0-user-")


def test_a_refused_bank_is_reported_and_the_other_banks_import(tmp_path: Path) -> None:
    src = tmp_path / "export.jsonl"
    lines = [
        HEADER,
        json.dumps({"kind": "bank", "bank": "../../evil", "description": ""}),
        memory_line("t1", "goes nowhere", "../../evil"),
        json.dumps({"kind": "bank", "bank": "good", "description": "a good bank"}),
        memory_line("t2", "goes in the good bank", "good"),
    ]
    src.write_text("\n".join(lines) + "\n")
    data = tmp_path / "data"
    summary = cli_json(data, "import", str(src))
    assert summary["written"] == 1
    assert [p["where"] for p in summary["problems"]] == ["export.jsonl:2", "export.jsonl:3"]
    assert all("invalid bank name" in p["message"] for p in summary["problems"])
    assert texts(data, "good") == ["goes in the good bank"]
    assert [p for p in tmp_path.rglob("*evil*")] == []


def test_the_report_of_a_skipped_line_holds_no_credential(tmp_path: Path) -> None:
    src = tmp_path / f"{GITHUB}.jsonl"
    src.write_text(HEADER + "\n" + json.dumps({"kind": AWS}) + "\n")
    summary = cli_json(tmp_path / "data", "import", str(src), "--from", "native")
    assert len(summary["problems"]) == 1
    shown = json.dumps(summary["problems"])
    assert GITHUB not in shown and AWS not in shown


@pytest.mark.parametrize("fmt", ["markdown", "anthropic-memories"])
def test_a_symlink_out_of_the_folder_is_reported_not_read(tmp_path: Path, fmt: str) -> None:
    folder = tmp_path / "memories"
    folder.mkdir()
    (folder / "kept.md").write_text("- a note in the folder\n")
    private = tmp_path / "private.md"
    private.write_text("- a private file outside the folder\n")
    (folder / "leak.md").symlink_to(private)
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "real.md").write_text("- a note linked within the folder\n")
    (folder / "inner.md").symlink_to(folder / ".hidden" / "real.md")  # inside: read
    data = tmp_path / "data"
    summary = cli_json(data, "import", str(folder), "--from", fmt, "--bank", "notes")
    assert texts(data, "notes") == ["a note in the folder", "a note linked within the folder"]
    assert [p["where"] for p in summary["problems"]] == ["memories/leak.md"]
    assert "outside" in summary["problems"][0]["message"]


def test_a_refused_rule_is_reported_and_not_counted(tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    (folder / "work" / "rules").mkdir(parents=True)
    (folder / "work" / "rules" / f"{GITHUB}.md").write_text("be short")
    (folder / "work" / "rules" / "tone.md").write_text("be kind")
    data = tmp_path / "data"
    summary = cli_json(data, "import", str(folder))
    assert summary["rules"] == 1
    assert len(summary["problems"]) == 1 and GITHUB not in json.dumps(summary["problems"])
    assert holds(data, GITHUB[4:]) == []


def test_a_line_too_long_is_reported_without_being_held_in_memory(tmp_path: Path) -> None:
    import tracemalloc

    from shared.cli import formats

    src = tmp_path / "huge.jsonl"
    with src.open("w") as f:
        f.write(HEADER + "\n")
        f.write('{"kind":"memory","bank":"main","record":{"id":"big","text":"')
        for _ in range(40):
            f.write("x" * 1_000_000)
        f.write('"}}\n')
        f.write(memory_line("kept", "the line after the huge one") + "\n")
    tracemalloc.start()
    try:
        items = list(formats.read(src, "native"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 24_000_000  # the line is 40 MB: never held whole
    assert [(type(i).__name__, i.where) for i in items] == [
        ("Problem", "huge.jsonl:2"),
        ("Entry", "huge.jsonl:3"),
    ]
    assert "longer than" in items[0].message  # type: ignore[union-attr]
    summary = cli_json(tmp_path / "data", "import", str(src))
    assert summary["written"] == 1 and [p["where"] for p in summary["problems"]] == ["huge.jsonl:2"]


def test_a_line_too_long_in_a_memory_tool_file_is_reported(tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    (folder / "work").mkdir(parents=True)
    huge = "x" * 5_000_000
    (folder / "work" / "memories.md").write_text(f"- [big] {huge}\n- [kept] a short one\n")
    data = tmp_path / "data"
    summary = cli_json(data, "import", str(folder))
    assert [p["where"] for p in summary["problems"]] == ["work/memories.md:1"]
    assert texts(data, "work") == ["a short one"]


def test_a_later_revision_of_another_memory_with_the_same_id_is_a_conflict(
    tmp_path: Path,
) -> None:
    from shared.contract.clock import FakeClock
    from store_worker.core import MemoryStore

    clock = FakeClock()
    theirs = MemoryStore(tmp_path / "theirs", clock=clock)
    try:
        theirs.save("their deploy note", id="note")
        theirs.update("note", text="their deploy note, amended")
    finally:
        theirs.close()
    clock.advance(days=1)
    ours = MemoryStore(tmp_path / "ours", clock=clock)
    try:
        ours.save("our own note", id="note")
    finally:
        ours.close()
    src = tmp_path / "theirs.jsonl"
    out = io.StringIO()
    assert run(["--data-dir", str(tmp_path / "theirs"), "export", "-o", str(src)], out=out) == 0
    summary = cli_json(tmp_path / "ours", "import", str(src))
    assert summary["written"] == 0
    assert len(summary["problems"]) == 1, summary["problems"]
    assert "another memory here" in summary["problems"][0]["message"]
    assert texts(tmp_path / "ours", "main") == ["our own note"]


@pytest.mark.parametrize("bank", ["../outside", GITHUB.lower()])
def test_a_bad_bank_given_on_the_command_line_is_a_typed_error(tmp_path: Path, bank: str) -> None:
    src = tmp_path / "export.jsonl"
    src.write_text(f"{HEADER}\n{memory_line('t1', 'a note')}\n")
    data = tmp_path / "data"
    out, err = io.StringIO(), io.StringIO()
    code = run(["--data-dir", str(data), "import", str(src), "--bank", bank], out=out, err=err)
    assert code == 2 and "invalid_argument" in err.getvalue()
    assert GITHUB.lower() not in err.getvalue() + out.getvalue()
    assert [p for p in tmp_path.rglob("*outside*")] == [] and holds(data, GITHUB[4:]) == []


def test_a_bank_line_with_a_bad_description_refuses_only_that_line(tmp_path: Path) -> None:
    src = tmp_path / "export.jsonl"
    lines = [
        HEADER,
        json.dumps({"kind": "bank", "bank": "work", "description": {"not": "text"}}),
        memory_line("t1", "still imported", "work"),
    ]
    src.write_text("\n".join(lines) + "\n")
    data = tmp_path / "data"
    summary = cli_json(data, "import", str(src))
    assert [p["where"] for p in summary["problems"]] == ["export.jsonl:2"]
    assert texts(data, "work") == ["still imported"]


@pytest.mark.parametrize("when", ["Infinity", "-Infinity", "NaN", "1e400", "[1]", '"soon"'])
def test_a_mem0_date_of_any_shape_is_a_reported_row(tmp_path: Path, when: str) -> None:
    src = tmp_path / "mem0.json"
    src.write_text(
        f'[{{"id": "a", "memory": "bad date", "created_at": {when}}},'
        ' {"id": "b", "memory": "good row"}]'
    )
    data = tmp_path / "data"
    summary = cli_json(data, "import", str(src), "--bank", "m")
    assert [p["where"] for p in summary["problems"]] == ["mem0.json:results[0]"]
    assert texts(data, "m") == ["good row"]


def test_a_record_superseded_by_itself_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "export.jsonl"
    record = {"id": "loop", "text": "a loop", "superseded_by": "loop", "revision": 1}
    lines = [HEADER, json.dumps({"kind": "memory", "bank": "main", "record": record})]
    src.write_text("\n".join([*lines, memory_line("kept", "kept")]) + "\n")
    summary = cli_json(tmp_path / "data", "import", str(src))
    assert summary["written"] == 1
    assert [p["where"] for p in summary["problems"]] == ["export.jsonl:2"]


def test_an_export_of_a_missing_bank_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "out.jsonl"
    out, err = io.StringIO(), io.StringIO()
    code = run(
        ["--data-dir", str(tmp_path / "data"), "export", "--bank", "nope", "-o", str(target)],
        out=out,
        err=err,
    )
    assert code != 0 and "not_found" in err.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_mem0_metadata_holding_a_secret_reads_back_through_the_mem0_class(
    tmp_path: Path,
) -> None:
    from integrations.mem0_compat import Memory
    from store_worker.core import MemoryStore

    quoted = 'say "password: hunter2xyz" now'  # redaction would cross the escaped quote
    rows = [
        {"id": "m-1", "memory": "likes tea", "user_id": "alice", "metadata": {"t": GITHUB}},
        {"id": "m-2", "memory": "likes tea", "user_id": "alice", "agent_id": "bot",
         "metadata": {"q": quoted, "n": 1}},
    ]  # fmt: skip
    src = tmp_path / "mem0.json"
    src.write_text(json.dumps(rows))
    data = tmp_path / "data"
    assert cli_json(data, "import", str(src))["written"] == 2
    assert holds(data, GITHUB[4:], "hunter2xyz") == []
    store = MemoryStore(data)
    try:
        mem0 = Memory(store)
        first, second = mem0.get("m-1"), mem0.get("m-2")
    finally:
        store.close()
    assert first is not None and first["metadata"] == {"t": "[REDACTED:github_token]"}
    assert second is not None and second["agent_id"] == "bot"
    assert second["metadata"] is None or second["metadata"]["n"] == 1
