"""memory export / memory import: the round trip, the foreign formats, and a killed import."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from shared.cli import run
from shared.cli.transfer import Progress
from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore

SAMPLES = Path(__file__).parent / "samples"
SECRET = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


def cli(data: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--data-dir", str(data), *argv], out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def cli_json(data: Path, *argv: str) -> Any:
    code, out, err = cli(data, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def comparable(path: Path) -> list[dict[str, Any]]:
    """An export's rows without what differs by design between two exports of equal stores:
    the header's ``exported_at`` and each record's ``provenance.imported_at``."""
    out = []
    for row in rows(path):
        row.pop("exported_at", None)
        record = row.get("record")
        if record is not None:
            prov = record.get("provenance", {})
            prov.pop("imported_at", None)
            if not prov:
                record.pop("provenance", None)
        out.append(row)
    return out


def a_store(data: Path) -> None:
    clock = FakeClock()
    store = MemoryStore(data, clock=clock)
    try:
        store.bank_create("work", "the work bank")
        store.save("deploys go out on Fridays", id="fridays", bank="work", tags=["deploy"])
        clock.advance(days=1)
        store.save("deploys go out on Tuesdays", id="tuesdays", bank="work")
        store.supersede("fridays", "tuesdays", bank="work", reason="moved")
        store.save(f"the CI token is {SECRET}", id="ci-token", bank="work", pinned=True)
        store.save("the user prefers tabs", id="tabs", occurred_at=1_700_000_000_000)
        store.save("the user prefers tabs")
        store.update("tabs", tags=["style"])
        store.save("app note", id="note", scope="project", project="/work/app", bank="work")
        store.delete("note", bank="work")
        store.rule_set("style", "Answer in short sentences.", bank="work")
    finally:
        store.close()


@pytest.mark.parametrize("history", [False, True])
def test_export_import_export_round_trips(tmp_path: Path, history: bool) -> None:
    # Given a store with two banks, a supersede, a pin, an edit, a tombstone, a rule, a secret
    source, copy = tmp_path / "source", tmp_path / "copy"
    a_store(source)
    first, second = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    flags = ["--include-history"] if history else []
    # When it is exported, imported into an empty data dir and exported again
    assert cli(source, "export", "-o", str(first), *flags)[0] == 0
    summary = cli_json(copy, "import", str(first))
    assert cli(copy, "export", "-o", str(second), *flags)[0] == 0
    # Then the two files are equal but for the documented fields
    assert comparable(second) == comparable(first)
    assert summary["problems"] == [] and summary["rules"] == 1
    assert SECRET not in first.read_text() and "[REDACTED:github_token]" in first.read_text()
    kinds = [r.get("kind") for r in rows(first)]
    assert kinds[0] is None and rows(first)[0]["format"] == "agent-memory-export"
    assert kinds.count("bank") == 2 and kinds.count("rule") == 1
    store = MemoryStore(copy)
    try:
        assert store.get("fridays", bank="work").memory.superseded_by == "tuesdays"
        assert store.get("ci-token", bank="work").memory.pinned
        assert store.get("tabs").memory.corroboration == 1
        assert store.get("tabs").memory.occurred_at == 1_700_000_000_000
        assert store.rule_get("style", bank="work").content == "Answer in short sentences."
        assert store.bank_list().banks[1].description == "the work bank"
        assert len(store.history("tabs").revisions) == (3 if history else 1)
    finally:
        store.close()
    # and importing it again changes nothing
    again = cli_json(copy, "import", str(first))
    assert again["written"] == 0 and again["unchanged"] == summary["written"]


def test_export_to_stdout_is_the_file_alone(tmp_path: Path) -> None:
    source = tmp_path / "source"
    a_store(source)
    file = tmp_path / "x.jsonl"
    cli(source, "export", "-o", str(file))
    code, out, _ = cli(source, "export", "--json")
    assert code == 0
    streamed = [json.loads(line) for line in out.splitlines()]
    assert [r.get("kind") for r in streamed] == [r.get("kind") for r in rows(file)]


def test_import_into_one_bank_and_dry_run(tmp_path: Path) -> None:
    source, copy = tmp_path / "source", tmp_path / "copy"
    a_store(source)
    file = tmp_path / "x.jsonl"
    cli(source, "export", "--bank", "work", "-o", str(file))
    assert {r["bank"] for r in rows(file)[1:]} == {"work"}
    dry = cli_json(copy, "import", str(file), "--bank", "elsewhere", "--dry-run")
    assert dry["dry_run"] and dry["written"] == 4
    assert not (copy / "elsewhere").exists()
    done = cli_json(copy, "import", str(file), "--bank", "elsewhere")
    assert done["written"] == 4 and done["banks"] == ["elsewhere"]


def test_a_bad_line_is_reported_by_number_and_skipped(tmp_path: Path) -> None:
    source, copy = tmp_path / "source", tmp_path / "copy"
    a_store(source)
    file = tmp_path / "x.jsonl"
    cli(source, "export", "-o", str(file))
    lines = file.read_text().splitlines()
    bad = json.loads(lines[-1])
    bad["record"]["id"] = "Not A Slug"
    lines[-1] = json.dumps(bad)
    lines.insert(3, "{not json")
    file.write_text("\n".join(lines) + "\n")
    code, out, _ = cli(copy, "import", str(file))
    assert code == 0
    assert "x.jsonl:4: not JSON" in out
    assert f"x.jsonl:{len(lines)}: invalid_argument: invalid memory id" in out
    summary = cli_json(copy, "import", str(file))
    assert len(summary["problems"]) == 2 and summary["written"] == 0


# -- foreign formats ---------------------------------------------------------------------------


def test_mem0_get_all(tmp_path: Path) -> None:
    data = tmp_path / "data"
    summary = cli_json(data, "import", str(SAMPLES / "mem0_get_all.json"))
    assert summary["format"] == "mem0"
    assert summary["written"] == 4 and summary["redacted"] == ["openai_key"]
    assert summary["problems"] == [
        {
            "where": "mem0_get_all.json:results[3]",
            "message": "a mem0 memory needs its text ('memory')",
        }
    ]
    assert sorted(summary["banks"]) == ["alex", "sam"]  # user_id → bank
    store = MemoryStore(data)
    try:
        veg = store.get("892db2ae-06d9-49e5-8b3e-585ef9b85b8e", bank="alex").memory  # id kept
        assert veg.text == "Is a vegetarian and allergic to nuts"
        assert veg.tags == ("mem0", "food", "health") and veg.scope == "global"
        assert json.loads(veg.title) == {"mem0": {"user_id": "alex", "metadata": {"food": "vegan"}}}
        assert veg.created_at == 1_721_977_020_108  # 2024-07-25T23:57:00.108-07:00
        assert veg.provenance.source == "mem0:892db2ae-06d9-49e5-8b3e-585ef9b85b8e"
        assert veg.provenance.recorded_by == "mem0" and veg.provenance.imported_at
        cricket = store.get("2a7b4f3c-1d9e-4b8a-9c6d-5e4f3a2b1c0d", bank="alex").memory
        assert cricket.provenance.recorded_by == "travel-assistant"  # agent_id: the recorder
        flight = store.get("6b1f7d2e-3c4a-4e5b-8f9a-0b1c2d3e4f5a", bank="alex").memory
        assert flight.provenance.source_session_id == "trip-planning-42"  # run_id: the session
        assert "sk-proj" not in flight.text
    finally:
        store.close()
    assert cli_json(data, "import", str(SAMPLES / "mem0_get_all.json"))["unchanged"] == 4


def test_imported_mem0_memories_read_back_through_the_mem0_class(tmp_path: Path) -> None:
    # the importer maps mem0's ids as integrations.mem0_compat.Memory writes them
    from integrations.mem0_compat import Memory

    data = tmp_path / "data"
    cli_json(data, "import", str(SAMPLES / "mem0_get_all.json"))
    store = MemoryStore(data)
    try:
        m = Memory(store)
        everything = m.get_all(user_id="alex")["results"]
        assert {r["id"] for r in everything} == {
            "892db2ae-06d9-49e5-8b3e-585ef9b85b8e",
            "2a7b4f3c-1d9e-4b8a-9c6d-5e4f3a2b1c0d",
            "6b1f7d2e-3c4a-4e5b-8f9a-0b1c2d3e4f5a",
        }
        agent = m.get_all(user_id="alex", agent_id="travel-assistant")["results"]
        assert [r["memory"] for r in agent] == ["Likes to play cricket on weekends"]
        run = m.get_all(user_id="alex", run_id="trip-planning-42")["results"]
        assert [r["run_id"] for r in run] == ["trip-planning-42"]
        veg = m.get("892db2ae-06d9-49e5-8b3e-585ef9b85b8e")
        assert veg["metadata"] == {"food": "vegan"} and veg["user_id"] == "alex"
        assert veg["created_at"].startswith("2024-07-26T06:57:00")
        assert [r["id"] for r in m.get_all(user_id="sam")["results"]] == [
            "9d3f0a4b-5e6c-4a7d-8b9c-0d1e2f3a4b5c"
        ]
    finally:
        store.close()


def test_mem0_banks_and_tags_agree_with_the_mem0_class() -> None:
    from integrations import mem0_compat
    from shared.cli import formats
    from shared.client import mem0

    for user in ("alex", "Alice@x.org", "a b c"):
        row = {"id": "m1", "memory": "likes tea", "user_id": user, "agent_id": "bot"}
        entry = formats._mem0_row(row, "sample:1")
        assert isinstance(entry, formats.Entry)
        assert entry.bank == mem0_compat.bank_of(user)
        assert mem0.tag("agent", "bot") in entry.data["tags"]


def test_mcp_memory_jsonl(tmp_path: Path) -> None:
    data = tmp_path / "data"
    summary = cli_json(data, "import", str(SAMPLES / "memory.jsonl"))
    assert summary["format"] == "mcp-memory" and summary["written"] == 5
    assert [p["where"] for p in summary["problems"]] == ["memory.jsonl:4", "memory.jsonl:5"]
    assert summary["redacted"] == ["password"]
    store = MemoryStore(data)
    try:
        mems = store.list().memories
        spanish = next(m for m in mems if m.text == "Speaks fluent Spanish")
        assert spanish.title == "John_Smith" and spanish.tags == ("person",)
        assert spanish.entities == ("john_smith",)
        assert spanish.provenance.source == "mcp-memory:memory.jsonl:1"
        relation = next(m for m in mems if "relation" in m.tags)
        assert relation.text == "John_Smith works at Anthropic"
        hits = store.recall("Where does John Smith work?").memories
        assert relation.id in [h.memory.id for h in hits]
    finally:
        store.close()


def test_markdown_notes_and_claude_md(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(SAMPLES / "notes", notes)
    data = tmp_path / "data"
    summary = cli_json(data, "import", str(notes))
    assert summary["format"] == "markdown" and summary["written"] == 7
    store = MemoryStore(data)
    try:
        by_text = {m.text: m for m in store.list().memories}
        tabs = by_text["Use tabs for indentation in every Python file."]  # a wrapped bullet
        assert (tabs.scope, tabs.project, tabs.type) == ("project", str(notes / "app"), "project")
        assert tabs.title == "Project conventions"
        assert tabs.provenance.source == "markdown:app/CLAUDE.md:4"
        para = by_text[
            "The store is the only process that touches the data dir. It replays the log at boot."
        ]
        assert para.title == "Architecture" and para.provenance.source == "markdown:app/CLAUDE.md:9"
        assert not any("make bench" in t for t in by_text)  # a code block is no memory
        pour = by_text["Pour over provides more clarity and highlights subtle flavors #clarity"]
        assert pour.tags == (
            "coffee",
            "brewing",
            "method",
            "clarity",
        )  # front matter, [category], #tag
        assert pour.type == "reference" and pour.title == "Observations"
    finally:
        store.close()
    assert cli_json(data, "import", str(notes))["unchanged"] == 7


def test_anthropic_memories_directory(tmp_path: Path) -> None:
    data = tmp_path / "data"
    summary = cli_json(data, "import", str(SAMPLES / "memories"))
    assert summary["format"] == "anthropic-memories"
    assert summary["written"] == 5 and summary["rules"] == 1
    assert summary["problems"] == [
        {"where": "main/memories.md:3", "message": "not a '- [id] text' line"}
    ]
    store = MemoryStore(data)
    try:
        assert store.get("user-prefers-dark-mode").memory.text == (
            "The user prefers dark mode in every editor"
        )
        assert store.rule_get("style").content == "Answer in short sentences.\n"
        texts = {m.text: m for m in store.list().memories}
        acme = texts["The customer Acme renews in March."]
        assert acme.tags == ("customer-notes",)
        assert acme.provenance.source == "anthropic-memories:customer_notes.xml:2"
        assert "Remaining: rewrite the retry policy" in texts
    finally:
        store.close()


def test_dry_run_shows_what_would_be_written_and_writes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    code, out, _ = cli(data, "import", str(SAMPLES / "memory.jsonl"), "--dry-run")
    assert code == 0 and out.startswith("mcp-memory: would write 5 records")
    assert "main/mcp-default-user-" in out and "password=[REDACTED:password]" in out
    assert "hunter2" not in out  # what would be written, as it would be: redacted
    assert not (data / "main" / "memories.jsonl").exists()


def test_an_unknown_format_is_a_typed_error(tmp_path: Path) -> None:
    odd = tmp_path / "odd.txt"
    odd.write_text("hello\n")
    code, _, err = cli(tmp_path / "data", "import", str(odd))
    assert code == 2 and "cannot tell the format" in err


# -- progress ----------------------------------------------------------------------------------


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_on_a_terminal_only() -> None:
    tty, pipe = Tty(), io.StringIO()
    for out in (tty, pipe):
        bar = Progress(10, out)
        bar.advance(4)
        bar.advance(6)
        bar.close()
    assert "10/10" in tty.getvalue() and "/s ETA" in tty.getvalue()
    assert pipe.getvalue() == ""


# -- a killed import ---------------------------------------------------------------------------

COUNT = 8_000
RUN = "import sys; from shared.cli import run; sys.exit(run([*sys.argv[1:], '--json']))"


def _big_mem0(path: Path) -> None:
    with path.open("w") as f:
        for i in range(COUNT):
            row = {
                "id": f"id-{i:06d}",
                "memory": f"fact {i}: the user visited city {i % 977} in {1990 + i % 30}",
                "created_at": 1_700_000_000 + i,
                "user_id": "alex",
            }
            f.write(json.dumps(row) + "\n")


def _import(data: Path, source: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            RUN,
            "--data-dir",
            str(data),
            "import",
            str(source),
            "--batch",
            "500",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
    )


def test_a_killed_import_resumed_twice_equals_a_clean_one(tmp_path: Path) -> None:
    source = tmp_path / "big.jsonl"
    _big_mem0(source)
    clean, killed = tmp_path / "clean", tmp_path / "killed"
    assert _import(clean, source).wait(timeout=600) == 0
    # Kill an import once some of its batches are on disk, and before it is done
    child = _import(killed, source)
    log = killed / "alex" / "memories.jsonl"
    while child.poll() is None and (not log.exists() or log.stat().st_size < 200_000):
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL, "the import finished before it could be killed"
    lines_then = len(log.read_bytes().splitlines())
    assert 0 < lines_then < COUNT
    for _ in range(2):
        resumed = _import(killed, source)
        out, err = resumed.communicate(timeout=600)
        assert resumed.returncode == 0, err
    assert json.loads(out)["written"] == 0 and json.loads(out)["unchanged"] == COUNT
    assert len(log.read_bytes().splitlines()) == COUNT  # no record twice in the log
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    cli(clean, "export", "-o", str(a))
    cli(killed, "export", "-o", str(b))
    assert comparable(a) == comparable(b)


def test_export_and_import_through_a_gateway(tmp_path: Path) -> None:
    # the CLI through memory.store.v1 reads answers as views (no models): the same files
    from grpc_gateway.server import build_server
    from shared.client.grpc import GrpcStoreClient

    source = tmp_path / "source"
    a_store(source)
    local = tmp_path / "local.jsonl"
    cli(source, "export", "--include-history", "-o", str(local))
    served = MemoryStore(tmp_path / "served")
    server, port = build_server(served, port=0)
    server.start()
    client = GrpcStoreClient(f"127.0.0.1:{port}", timeout=30, validate=False)
    try:

        def remote(*argv: str) -> tuple[int, str, str]:
            out, err = io.StringIO(), io.StringIO()
            return run(list(argv), store=client, out=out, err=err), out.getvalue(), err.getvalue()

        code, out, err = remote("import", str(local))
        assert code == 0, err
        assert "wrote 9 records" in out and "1 rules" in out
        remote_file = tmp_path / "remote.jsonl"
        assert remote("export", "--include-history", "-o", str(remote_file))[0] == 0
        assert comparable(remote_file) == comparable(local)
        code, out, _ = remote("import", str(SAMPLES / "memory.jsonl"))
        assert code == 0 and "memory.jsonl:4: not JSON" in out
    finally:
        client.close()
        server.stop(None)
        served.close()
