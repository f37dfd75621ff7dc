"""memory import of real users' files: the shapes each source's own documentation shows
(byte order marks, line endings, untyped MCP lines, mem0 graph relations, fences, comments,
front matter that is not YAML, CLAUDE.md imports, links inside the folder)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from shared.cli import run

BOM = b"\xef\xbb\xbf"


def dry(data: Path, src: Path, *argv: str) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    code = run(
        ["--data-dir", str(data), "import", str(src), "--dry-run", *argv, "--json"],
        out=out,
        err=err,
    )
    assert code == 0, err.getvalue()
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


def texts(result: dict[str, Any]) -> list[str]:
    return sorted(r["text"] for r in result["would_write"])


def test_a_mem0_file_with_a_byte_order_mark_is_detected_and_read(tmp_path: Path) -> None:
    src = tmp_path / "mem0.json"
    rows = {"results": [{"id": "m1", "memory": "Likes tea", "user_id": "alice"}]}
    src.write_bytes(BOM + json.dumps(rows).encode())
    got = dry(tmp_path / "data", src)
    assert got["format"] == "mem0" and texts(got) == ["Likes tea"] and got["problems"] == []


def test_a_jsonl_first_line_after_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    src = tmp_path / "memory.jsonl"
    line = {"type": "entity", "name": "Alice", "entityType": "person", "observations": ["tea"]}
    src.write_bytes(BOM + json.dumps(line).encode() + b"\r\n")
    got = dry(tmp_path / "data", src)
    assert got["format"] == "mcp-memory" and texts(got) == ["tea"] and got["problems"] == []


def test_markdown_front_matter_after_a_byte_order_mark_is_no_memory(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_bytes(BOM + b"---\r\ntags: [x]\r\n---\r\n- a bullet\r\n")
    got = dry(tmp_path / "data", notes)
    assert texts(got) == ["a bullet"]
    assert got["would_write"][0]["tags"] == ["x"]


def test_mcp_lines_without_a_type_are_read_by_their_keys(tmp_path: Path) -> None:
    src = tmp_path / "memory.jsonl"
    src.write_text(
        '{"name":"Alice","entityType":"person","observations":["likes tea"]}\n'
        '{"from":"Alice","to":"Bob","relationType":"knows"}\n'
        '{"what":"else"}\n'
    )
    got = dry(tmp_path / "data", src)
    assert got["format"] == "mcp-memory"
    assert texts(got) == ["Alice knows Bob", "likes tea"]
    assert [p["where"] for p in got["problems"]] == ["memory.jsonl:3"]


def test_mem0_graph_relations_are_reported_not_dropped_silently(tmp_path: Path) -> None:
    src = tmp_path / "mem0.json"
    src.write_text(
        json.dumps(
            {
                "results": [{"id": "m1", "memory": "Likes tea", "user_id": "alice"}],
                "relations": [{"source": "alice", "relationship": "likes", "target": "tea"}],
            }
        )
    )
    got = dry(tmp_path / "data", src)
    assert texts(got) == ["Likes tea"]
    assert [p["where"] for p in got["problems"]] == ["mem0.json:relations"]
    assert "1 graph relation" in got["problems"][0]["message"]


def test_a_fence_closes_only_on_its_own_marker(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text(
        "~~~markdown\n```\n- inside the tilde fence\n~~~\n- after the fence\n"
        "````\n```\n- inside four\n````\n- last\n"
    )
    assert texts(dry(tmp_path / "data", notes)) == ["after the fence", "last"]


def test_html_comments_are_no_memories(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text(
        "<!-- a note to myself -->\n- kept <!-- inline --> here\n"
        "<!--\n- commented out\n-->\n- last\n"
    )
    got = dry(tmp_path / "data", notes)
    assert texts(got) == ["kept here", "last"]
    lines = sorted(r["provenance"]["source"] for r in got["would_write"])
    assert lines == ["markdown:a.md:2", "markdown:a.md:6"]


def test_front_matter_that_is_not_yaml_is_reported_and_the_body_imports(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("---\ntags: [unclosed\n---\n- the body\n")
    got = dry(tmp_path / "data", notes)
    assert texts(got) == ["the body"]
    assert [p["where"] for p in got["problems"]] == ["a.md:1"]
    assert "front matter" in got["problems"][0]["message"]


def test_a_claude_md_import_line_is_no_memory_and_one_outside_is_reported(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "git.md").write_text("- rebase, never merge\n")
    (project / "CLAUDE.md").write_text(
        "# Project\n\nSee @README for an overview.\n\n- @docs/git.md\n"
        "- @~/.claude/my-instructions.md\n- use 2-space indent\n"
    )
    got = dry(tmp_path / "data", project)
    assert texts(got) == [
        "See @README for an overview.",
        "rebase, never merge",
        "use 2-space indent",
    ]
    assert [p["where"] for p in got["problems"]] == ["CLAUDE.md:6"]
    assert "not followed" in got["problems"][0]["message"]


def test_a_link_to_a_note_in_the_folder_is_read_once(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "b.md").write_text("- only once\n")
    (notes / "a.md").symlink_to(notes / "b.md")
    got = dry(tmp_path / "data", notes)
    assert texts(got) == ["only once"] and got["written"] == 1


def test_a_rule_file_that_is_not_utf8_is_reported_by_a_dry_run_too(tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    (folder / "work" / "rules").mkdir(parents=True)
    (folder / "work" / "memories.md").write_text("- [a1] fine\n")
    (folder / "work" / "rules" / "style.md").write_bytes(b"Be brief, caf\xe9.\n")
    got = dry(tmp_path / "data", folder)
    assert texts(got) == ["fine"] and got["rules"] == 0
    assert [p["where"] for p in got["problems"]] == ["work/rules/style.md"]


def test_a_table_is_one_memory_that_keeps_its_rows(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("| host | port |\n|---|---|\n| db | 5432 |\n")
    data = tmp_path / "data"
    assert texts(dry(data, notes)) == ["| host | port |\n|---|---|\n| db | 5432 |"]
    out, err = io.StringIO(), io.StringIO()
    assert run(["--data-dir", str(data), "import", str(notes)], out=out, err=err) == 0, err


def test_a_basic_memory_relation_reads_as_a_relation(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "coffee.md").write_text(
        "---\ntitle: Coffee Brewing\ntags:\n- coffee\n---\n# Coffee Brewing\n\n"
        "## Observations\n- [method] Pour over #brewing (best)\n\n"
        "## Relations\n- pairs_with [[Chocolate]]\n- part_of [[Morning Routine|routine]] (daily)\n"
    )
    got = {r["text"]: r for r in dry(tmp_path / "data", notes)["would_write"]}
    assert sorted(got) == [
        "Coffee Brewing pairs with Chocolate",
        "Coffee Brewing part of Morning Routine (daily)",
        "Pour over #brewing (best)",
    ]
    rel = got["Coffee Brewing pairs with Chocolate"]
    assert rel["tags"] == ["coffee", "relation"]
    assert rel["entities"] == ["coffee-brewing", "chocolate"]  # as the store keys entities
    assert got["Pour over #brewing (best)"]["tags"] == ["coffee", "method", "brewing"]


def test_obsidian_comments_are_no_memories(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / ".obsidian").mkdir(parents=True)
    (notes / ".obsidian" / "workspace.md").write_text("- settings, not a note\n")
    (notes / "a.md").write_text("- kept %%a private aside%% here\n%%\n- hidden\n%%\n- last\n")
    assert texts(dry(tmp_path / "data", notes)) == ["kept here", "last"]


def test_a_link_to_a_folder_is_reported_not_followed(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "b.md").write_text("- from elsewhere\n")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("- here\n")
    (notes / "more").symlink_to(tmp_path / "elsewhere")
    got = dry(tmp_path / "data", notes)
    assert texts(got) == ["here"]
    assert got["problems"] == [
        {"where": "notes/more", "message": "a link to a folder: not followed"}
    ]


def test_a_broken_link_or_a_fifo_is_reported_and_the_rest_imports(tmp_path: Path) -> None:
    import os

    folder = tmp_path / "memories"
    (folder / "work").mkdir(parents=True)
    (folder / "home").mkdir()
    (folder / "work" / "memories.md").symlink_to(folder / "work" / "gone.md")
    (folder / "home" / "memories.md").write_text("- [b1] kept\n")
    os.mkfifo(folder / "pipe.md")  # opened, it would wait for a writer forever
    got = dry(tmp_path / "data", folder)
    assert texts(got) == ["kept"]
    assert sorted(p["where"] for p in got["problems"]) == [
        "memories/pipe.md",
        "memories/work/memories.md",
    ]


def test_importing_a_folder_again_after_editing_a_note_adds_the_edited_bullet(
    tmp_path: Path,
) -> None:
    notes, data = tmp_path / "notes", tmp_path / "data"
    notes.mkdir()
    (notes / "a.md").write_text("- alpha\n- beta\n")
    (notes / "b.md").write_text("- other\n")

    def real() -> dict[str, Any]:
        out, err = io.StringIO(), io.StringIO()
        assert run(["--data-dir", str(data), "import", str(notes), "--json"], out=out, err=err) == 0
        result: dict[str, Any] = json.loads(out.getvalue())
        return result

    assert real()["written"] == 3
    (notes / "a.md").write_text("- alpha\n- beta, edited\n")
    again = real()
    assert (again["written"], again["unchanged"], again["problems"]) == (1, 2, [])
    out, err = io.StringIO(), io.StringIO()
    assert run(["--data-dir", str(data), "list", "--json"], out=out, err=err) == 0
    listed = json.loads(out.getvalue())
    found = sorted(m["text"] for m in listed.get("memories") or listed.get("records"))
    assert found == ["alpha", "beta", "beta, edited", "other"]  # the old bullet is kept


def test_a_setext_heading_is_a_title_not_a_memory(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text(
        "Deploys\n=======\n\n- on Tuesdays\n\nDatabase\n---\n\n- Postgres 16\n"
    )
    got = {r["text"]: r.get("title") for r in dry(tmp_path / "data", notes)["would_write"]}
    assert got == {"on Tuesdays": "Deploys", "Postgres 16": "Database"}


def test_front_matter_closed_by_dots_gives_its_tags(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("---\ntags: [ops]\n...\n- a bullet\n\n---\n\n- after a rule\n")
    (notes / "b.md").write_text("----\n\n- after a rule\n\n---\n")
    got = dry(tmp_path / "data", notes)
    assert sorted((r["text"], tuple(r.get("tags", ()))) for r in got["would_write"]) == [
        ("a bullet", ("ops",)),
        ("after a rule", ()),
        ("after a rule", ("ops",)),
    ]
    assert got["problems"] == []


def test_a_memory_tool_file_of_another_kind_is_reported_not_passed_over(tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    folder.mkdir()
    (folder / "prefs.md").write_text("- likes tea\n")
    (folder / "progress.json").write_text('{"step": 3}\n')
    got = dry(tmp_path / "data", folder)
    assert texts(got) == ["likes tea"]
    assert [p["where"] for p in got["problems"]] == ["memories/progress.json"]


def test_a_cut_off_mem0_json_file_is_one_problem_not_a_half_import(tmp_path: Path) -> None:
    rows = [{"id": f"m{i}", "memory": f"fact {i}", "user_id": "alice"} for i in range(3)]
    whole = json.dumps(rows, indent=None).replace("}, {", "},\n  {")  # one element a line
    src = tmp_path / "mem0.json"
    src.write_text(whole[:-1] + "\n")  # the closing bracket lost
    got = dry(tmp_path / "data", src)
    assert got["written"] == 0
    assert len(got["problems"]) == 1 and got["problems"][0]["where"].startswith("mem0.json:")
    assert "nothing read" in got["problems"][0]["message"]


def test_a_mem0_json_lines_file_with_a_bad_first_line_reads_the_rest(tmp_path: Path) -> None:
    src = tmp_path / "mem0.jsonl"
    src.write_text('{"id": "m1", "memory": \n{"id": "m2", "memory": "kept"}\n')
    got = dry(tmp_path / "data", src, "--from", "mem0")
    assert texts(got) == ["kept"]
    assert [p["where"] for p in got["problems"]] == ["mem0.jsonl:1"]


def test_claude_code_commands_and_agents_are_no_memories_its_rules_are(tmp_path: Path) -> None:
    project = tmp_path / "app"
    claude = project / ".claude"
    for sub in ("rules", "commands", "agents"):
        (claude / sub).mkdir(parents=True)
    (claude / "CLAUDE.md").write_text("- run the tests with make test\n")
    (claude / "rules" / "testing.md").write_text("- every fix starts with a failing test\n")
    (claude / "commands" / "deploy.md").write_text("- deploy $ARGUMENTS to staging\n")
    (claude / "agents" / "reviewer.md").write_text("---\nname: reviewer\n---\n- review diffs\n")
    (project / "notes.md").write_text("- a plain note\n")
    got = {r["text"]: r for r in dry(tmp_path / "data", project)["would_write"]}
    assert sorted(got) == [
        "a plain note",
        "every fix starts with a failing test",
        "run the tests with make test",
    ]
    for text in ("every fix starts with a failing test", "run the tests with make test"):
        assert (got[text]["type"], got[text]["project"]) == ("project", str(project.resolve()))
    assert got["a plain note"]["type"] == "reference"


def test_a_claude_commands_folder_asked_for_by_name_is_read(tmp_path: Path) -> None:
    commands = tmp_path / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "deploy.md").write_text("- deploy to staging first\n")
    assert texts(dry(tmp_path / "data", commands)) == ["deploy to staging first"]


def test_a_users_own_memories_md_and_rules_folder_are_read_as_notes(tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    (folder / "project" / "rules").mkdir(parents=True)
    (folder / "project" / "memories.md").write_text("# Project\n\n- deploys go out on Tuesdays\n")
    (folder / "project" / "rules" / "style.md").write_text("- answer in short sentences\n")
    got = dry(tmp_path / "data", folder)
    assert texts(got) == ["answer in short sentences", "deploys go out on Tuesdays"]
    assert (got["rules"], got["problems"], got["banks"]) == (0, [], ["main"])


def test_a_vault_with_a_memories_md_of_its_own_is_detected_as_notes(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "projects").mkdir(parents=True)
    (vault / "projects" / "memories.md").write_text("- the launch was in May\n")
    (vault / "projects" / "diagram.png").write_bytes(b"\x89PNG")
    got = dry(tmp_path / "data", vault)
    assert got["format"] == "markdown" and got["problems"] == []
    assert texts(got) == ["the launch was in May"]
