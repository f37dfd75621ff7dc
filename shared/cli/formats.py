"""The files ``memory import`` reads, each mapped onto whole records (``import_records``).

Every reader yields ``Entry`` (a record, a rule or a bank, with where it came from: a file and
line) or ``Problem`` (a line that cannot be read: reported with its place, and skipped). None
of them redacts or validates: the store does both for every record, as for any save, and
reports a refused one by its place too.

Ids are made from the source's own keys (a mem0 id, an MCP entity's name, a file's path) and a
hash of the source key and text, never from the text's words (a secret in the text must not
reach an id before the store redacts it): the same source read again gives the same ids, so a
second import, or one resumed after a kill, finds every record already there.

- ``native``: ``memory export``'s JSON Lines (a header line, then bank, rule, memory lines);
- ``mem0``: mem0's ``get_all`` answer (``{"results": [...]}`` or a bare list) or an export
  of it, as JSON or JSON Lines, mapped as ``integrations.mem0_compat.Memory`` writes: the
  mem0 id kept, ``user_id`` → bank, ``run_id`` → the session it was said in and a tag,
  ``agent_id`` → the recorder and a tag, the ids and metadata → the title's JSON;
- ``mcp-memory``: the MCP reference memory server's ``memory.jsonl``: each observation of an
  entity one memory (titled with the entity's name, tagged with its type), each relation one;
- ``markdown``: a folder of notes (or one file): one memory per bullet or paragraph, headings
  as titles, front matter ``tags`` and inline ``#tags`` as tags, file and line as provenance.
  A ``CLAUDE.md`` holds a project's instructions: its memories are ``project`` memories of
  the folder it describes (absolute), except the user's own ``~/.claude/CLAUDE.md`` (global);
  a line of it that is only an ``@path`` import is no memory (``shared.cli.notes``);
- ``anthropic-memories``: the memory tool's ``/memories`` directory: each file read as notes
  (tagged with its name), except this store's own layout (``<bank>/memories.md`` of
  ``- [id] text`` lines and ``<bank>/rules/<name>.md``), read back as those banks.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.contract.errors import InvalidArgumentError

FORMAT = "agent-memory-export"
VERSION = 1
FORMATS = ("native", "mem0", "mcp-memory", "markdown", "anthropic-memories")
NOTE_SUFFIXES = (".md", ".markdown", ".txt", ".xml")


@dataclass(frozen=True)
class Entry:
    """One thing to import: ``kind`` memory (``data`` a record), rule (``name``, ``content``)
    or bank (``description``); ``bank`` None means the bank the import was given."""

    where: str
    kind: str
    data: dict[str, Any]
    bank: str | None = None


@dataclass(frozen=True)
class Problem:
    where: str
    message: str


Item = Entry | Problem


def short_hash(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:12]


_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def slug_of(value: str, most: int = 40) -> str:
    """A source key (a file name, an entity's name, a foreign id) as an id's readable part;
    ``x`` when the key holds a credential (folded to a slug, the store could no longer tell
    it is one)."""
    from shared.redact import find_credential, redact

    if find_credential(value) is not None or redact(value).labels:
        return "x"
    return _NOT_SLUG.sub("-", value.casefold()).strip("-")[:most].strip("-") or "x"


def loads(text: str) -> Any:
    """``json.loads``, with a value nested too deep for the parser a ``ValueError`` too."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deep") from None


def detect(path: Path) -> str:
    """The format of ``path``: a folder of notes, a memory-tool directory, or a file whose
    first line (or shape) says what it is."""
    if path.is_dir():
        from shared.cli.notes import tool_layout

        if path.name == "memories" or any(map(tool_layout, path.glob("*/memories.md"))):
            return "anthropic-memories"
        return "markdown"
    if path.suffix.lower() in (".md", ".markdown"):
        return "markdown"
    with path.open("rb") as f:
        head = f.read(4096).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    first = head.split("\n", 1)[0]
    if FORMAT in first:
        return "native"
    if '"type"' in first and ('"entity"' in first or '"relation"' in first):
        return "mcp-memory"
    if '"entityType"' in first or '"relationType"' in first:  # an older file: no "type"
        return "mcp-memory"
    if head.startswith(("{", "[")):
        return "mem0"
    raise ValueError(f"cannot tell the format of {path}; pass --from ({'|'.join(FORMATS[1:])})")


def read(path: Path, fmt: str) -> Iterator[Item]:
    readers = {
        "native": read_native,
        "mem0": read_mem0,
        "mcp-memory": read_mcp_memory,
    }
    if fmt in ("markdown", "anthropic-memories"):
        from shared.cli import notes

        return (
            notes.read_markdown(path) if fmt == "markdown" else notes.read_anthropic_memories(path)
        )
    return readers[fmt](path)


# A line longer than this is no record (a memory's text is at most 16k characters, a rule's
# 256k, six times that JSON-escaped): it is reported and skipped unread, never held whole.
MAX_LINE_CHARS = 4_000_000


class LineTooLong(str):
    """What ``_lines`` yields for a line over ``MAX_LINE_CHARS`` (its start only)."""


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open("r", encoding="utf-8-sig", errors="surrogateescape") as f:
        n = 0
        while line := f.readline(MAX_LINE_CHARS + 1):
            n += 1
            if len(line) > MAX_LINE_CHARS and not line.endswith("\n"):
                while (rest := f.readline(MAX_LINE_CHARS)) and not rest.endswith("\n"):
                    pass  # the rest of the line, read in bounded pieces and dropped
                yield n, LineTooLong(line[:80])
            elif line.strip():
                yield n, line


def _too_long(where: str) -> Problem:
    return Problem(where, f"a line longer than {MAX_LINE_CHARS:,} characters: not read")


def _json_lines(path: Path) -> Iterator[tuple[str, object] | Problem]:
    """Each line of a JSON Lines file as its place and value, or the ``Problem`` it is (too
    long to read, or not JSON)."""
    for n, line in _lines(path):
        where = f"{path.name}:{n}"
        if isinstance(line, LineTooLong):
            yield _too_long(where)
            continue
        try:
            row = loads(line)
        except ValueError as e:
            yield Problem(where, f"not JSON ({getattr(e, 'msg', e)})")
            continue
        yield where, row


# -- native: memory export's own file ----------------------------------------------------------


def read_native(path: Path) -> Iterator[Item]:
    header_seen = False
    for read in _json_lines(path):
        if isinstance(read, Problem):
            yield read
            continue
        where, row = read
        if not isinstance(row, dict):
            yield Problem(where, "not a JSON object")
            continue
        if not header_seen:
            if row.get("format") != FORMAT:
                yield Problem(where, f"not a {FORMAT} file (no header line)")
                return
            if row.get("version") != VERSION:
                yield Problem(where, f"format version {row.get('version')!r}; this reads {VERSION}")
                return
            header_seen = True
            continue
        kind, bank = row.get("kind"), row.get("bank")
        if kind == "memory" and isinstance(row.get("record"), dict):
            yield Entry(where, "memory", row["record"], bank)
        elif kind == "rule" and isinstance(row.get("name"), str):
            yield Entry(where, "rule", {"name": row["name"], "content": row.get("content")}, bank)
        elif kind == "bank" and isinstance(bank, str):
            yield Entry(where, "bank", {"description": row.get("description") or ""}, bank)
        else:
            yield Problem(where, f"unknown line kind {kind!r}")


def header(*, exported_at: int, history: bool) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "exported_at": exported_at, "history": history}


# -- mem0 --------------------------------------------------------------------------------------


def _iso_ms(value: object) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return int(value * 1000) if value < 10**11 else int(value)  # seconds or ms
    from shared.text import iso_ms

    return iso_ms(str(value))


def read_mem0(path: Path) -> Iterator[Item]:
    text = path.read_text(encoding="utf-8-sig", errors="surrogateescape")
    try:
        whole = loads(text)
    except ValueError as e:
        whole = None  # JSON Lines: its first or second line is JSON alone
        if not any(_is_json(line) for line in _first_lines(text, 2)):
            at, msg = getattr(e, "lineno", 1), getattr(e, "msg", str(e))
            yield Problem(f"{path.name}:{at}", f"not JSON ({msg}): nothing read")
            return  # one JSON document, cut off or broken: no part of it read
    if whole is not None:
        rows = whole
        if isinstance(whole, dict):
            rows = whole.get("results", whole.get("memories"))
            graph = whole.get("relations")
            if isinstance(graph, list) and graph:  # mem0's graph memory: no record here
                yield Problem(
                    f"{path.name}:relations",
                    f"{len(graph)} graph relation(s) not imported (only memories are)",
                )
        if not isinstance(rows, list):
            yield Problem(path.name, "neither a list of memories nor {'results': [...]}")
            return
        # one memory per element: the element's line in a pretty-printed file is unknown,
        # so the place is its position (results[3])
        for i, row in enumerate(rows):
            yield _mem0_row(row, f"{path.name}:results[{i}]")
        return
    for read in _json_lines(path):
        yield read if isinstance(read, Problem) else _mem0_row(read[1], read[0])


def _first_lines(text: str, most: int) -> list[str]:
    return [line for line in text.split("\n", 64)[:64] if line.strip()][:most]


def _is_json(line: str) -> bool:
    try:
        loads(line)
    except ValueError:
        return False
    return True


# mem0 is mapped as ``integrations.mem0_compat.Memory`` writes (that module's docstring), so
# an imported memory reads back through it as mem0 wrote it (the tests hold the two together):
MEM0_IDS = ("user_id", "agent_id", "run_id", "actor_id", "role")
MEM0_TITLE = 200  # characters of the {"mem0": {...}} title a memory keeps
_MEMORY_ID = re.compile(r"\A[a-z0-9][a-z0-9-]{0,79}\Z")


def _mem0_title(fields: dict[str, Any]) -> str:
    """mem0's ids and metadata as the title's JSON, each string redacted first (a redaction
    of the whole title could cross an escaped quote and leave JSON that no longer parses);
    the metadata left out when too long, or when the store would still change the title."""
    from shared.redact import redact, redact_json

    for kept in (fields, {k: v for k, v in fields.items() if k != "metadata"}):
        said = redact_json({"mem0": kept}, set())
        title = json.dumps(said, ensure_ascii=False, separators=(", ", ": "))
        if len(title) <= MEM0_TITLE and redact(title).text == title:
            return title
    return ""


def _mem0_row(row: object, where: str) -> Item:
    from shared.client import mem0  # redaction and the bank-name rule: loaded on a mem0 import

    if not isinstance(row, dict):
        return Problem(where, "a memory must be a JSON object")
    mem_id, body = row.get("id"), row.get("memory", row.get("text"))
    if not isinstance(mem_id, str) or not mem_id.strip():
        return Problem(where, "a mem0 memory needs its id")
    if not isinstance(body, str):
        return Problem(where, "a mem0 memory needs its text ('memory')")
    try:
        created = _iso_ms(row.get("created_at"))
        updated = _iso_ms(row.get("updated_at"))
    except (ValueError, TypeError, OverflowError, InvalidArgumentError) as e:  # a row's own
        return Problem(where, f"bad date: {e}")
    ids = {k: row[k] for k in MEM0_IDS if isinstance(row.get(k), str) and row[k]}
    fields: dict[str, Any] = dict(ids)
    metadata = row.get("metadata")
    if isinstance(metadata, dict) and metadata:
        fields["metadata"] = metadata
    tags = ["mem0"]
    if "agent_id" in ids:
        tags.append(mem0.tag("agent", ids["agent_id"]))
    if "run_id" in ids:
        tags.append(mem0.tag("run", ids["run_id"]))
    categories = row.get("categories") or (metadata or {}).get("categories") or []
    if isinstance(categories, list):
        tags += [c for c in categories if isinstance(c, str)]
    record: dict[str, Any] = {
        "id": mem_id
        if _MEMORY_ID.fullmatch(mem_id)
        else f"mem0-{slug_of(mem_id, 60)}-{short_hash('mem0', mem_id)[:8]}",
        "text": body,
        "title": _mem0_title(fields),
        "tags": tags[:8],
        "provenance": {
            "source": f"mem0:{mem_id}",
            "source_session_id": ids.get("run_id"),
            "recorded_by": ids.get("agent_id", "mem0"),
        },
    }
    if created is not None:
        record["created_at"] = record["stated_at"] = created
        record["updated_at"] = max(created, updated or created)
    bank = mem0.bank_of(ids["user_id"]) if "user_id" in ids else None
    return Entry(where, "memory", record, bank)


# -- the MCP reference memory server's memory.jsonl --------------------------------------------


def read_mcp_memory(path: Path) -> Iterator[Item]:
    for read in _json_lines(path):
        if isinstance(read, Problem):
            yield read
            continue
        where, row = read
        if not isinstance(row, dict):
            yield Problem(where, "not a JSON object")
        elif _mcp_type(row) == "entity":
            yield from _mcp_entity(row, where)
        elif _mcp_type(row) == "relation":
            yield _mcp_relation(row, where)
        else:
            yield Problem(where, f"unknown type {row.get('type')!r} (entity or relation)")


def _mcp_type(row: dict[str, Any]) -> object:
    """A line's ``type``; an older file's line has none: its keys tell."""
    if "type" in row:
        return row["type"]
    if "name" in row and ("entityType" in row or "observations" in row):
        return "entity"
    if "from" in row and "to" in row and "relationType" in row:
        return "relation"
    return None


def _mcp_entity(row: dict[str, Any], where: str) -> Iterator[Item]:
    name, kind, seen = row.get("name"), row.get("entityType"), row.get("observations")
    if not isinstance(name, str) or not name.strip():
        yield Problem(where, "an entity needs a name")
        return
    if not isinstance(seen, list) or not all(isinstance(o, str) for o in seen):
        yield Problem(where, "an entity's observations must be a list of strings")
        return
    tags = [kind] if isinstance(kind, str) and kind else []
    for obs in seen:
        if not obs.strip():
            continue
        yield Entry(
            where,
            "memory",
            {
                "id": f"mcp-{slug_of(name, 48)}-{short_hash('entity', name, obs)}",
                "title": name,
                "text": obs,
                "entities": [name],
                "tags": tags,
                "provenance": {"source": f"mcp-memory:{where}", "recorded_by": "mcp-memory"},
            },
        )


def _mcp_relation(row: dict[str, Any], where: str) -> Item:
    src, dst, rel = row.get("from"), row.get("to"), row.get("relationType")
    if not all(isinstance(x, str) and x.strip() for x in (src, dst, rel)):
        return Problem(where, "a relation needs from, to and relationType")
    assert isinstance(src, str) and isinstance(dst, str) and isinstance(rel, str)
    return Entry(
        where,
        "memory",
        {
            "id": f"mcp-rel-{slug_of(src, 32)}-{short_hash('relation', src, rel, dst)}",
            "text": f"{src} {rel.replace('_', ' ')} {dst}",
            "entities": [src, dst],
            "tags": ["relation"],
            "provenance": {"source": f"mcp-memory:{where}", "recorded_by": "mcp-memory"},
        },
    )
