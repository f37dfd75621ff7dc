"""The folder readers of ``memory import`` (``shared.cli.formats``): markdown notes and the
Anthropic memory tool's ``/memories`` directory."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared.cli.formats import (
    NOTE_SUFFIXES,
    Entry,
    Item,
    LineTooLong,
    Problem,
    _lines,
    _too_long,
    short_hash,
    slug_of,
)

# -- markdown notes ----------------------------------------------------------------------------

_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_SETEXT = re.compile(r"=+|-{2,}")
_COMMENT = re.compile(r"[ \t]*(?:<!--.*?-->|%%.*?%%)", re.DOTALL)  # HTML's, Obsidian's
_RELATION = re.compile(
    r"([a-z][a-z0-9_-]*)\s+\[\[([^\[\]|#]+)(?:[|#][^\[\]]*)?\]\]\s*(\([^()]*\))?"
)
_IMPORT = re.compile(r"@(\S+)")  # a CLAUDE.md line that is only "@path/to/file"
_HASHTAG = re.compile(r"(?<![\w#&])#([A-Za-z][\w/-]{0,40})")
_CATEGORY = re.compile(r"^\[([^\]\n]{1,40})\]\s+")  # basic-memory: "- [fact] text"
_CHECKBOX = re.compile(r"^\[[ xX]\]\s+")
_TAG_LINE = re.compile(r"(?m)^[ \t]*</?[A-Za-z][\w.:-]*(?:\s[^<>]*)?/?>[ \t]*$")


@dataclass
class _Block:
    line: int
    lines: list[str] = field(default_factory=list)
    bullet: bool = False


def _body_start(lines: list[str]) -> int:
    """The first line after a YAML front matter block (0 when there is none)."""
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                return i + 1
    return 0


def _breaks(raw: str) -> tuple[bool, str | None]:
    """Whether a line ends the block before it (blank, heading, rule), and the heading."""
    stripped = raw.strip()
    h = _HEADING.match(raw)
    if h:
        return True, h.group(2).strip() or None
    return (not stripped or re.fullmatch(r"[-*_]{3,}", stripped) is not None), None


def note_blocks(text: str) -> Iterator[tuple[int, str | None, str]]:
    """(line, heading, text) of each bullet or paragraph of a markdown text: front matter,
    headings, code fences and horizontal rules are no memories; a bullet's indented
    continuation lines and nested bullets are its own."""
    lines = text.splitlines()
    start = _body_start(lines)
    body = "\n".join(lines[start:])  # a comment is no memory: its lines kept, empty
    lines = lines[:start] + _COMMENT.sub(lambda m: "\n" * m[0].count("\n"), body).split("\n")
    heading: str | None = None
    blocks: list[tuple[_Block, str | None]] = []
    block: _Block | None = None
    fence = ""  # the open fence's marker: only as long a run of its character closes it
    for i in range(start, len(lines)):
        raw = lines[i]
        opens = _FENCE.match(raw)
        if fence or opens:
            marker = opens[1] if opens else ""
            if not fence:
                fence = marker
            elif (
                marker[:1] == fence[0]
                and len(marker) >= len(fence)
                and not raw.strip(marker[0] + " \t")
            ):
                fence = ""
            block = None
            continue
        if block is not None and not block.bullet and _SETEXT.fullmatch(raw.strip()):
            blocks.pop()  # "Title" over "=====" or "---": a heading, no memory
            heading, block = " ".join(x.strip() for x in block.lines), None
            continue
        ends, title = _breaks(raw)
        if ends:
            block = None
            heading = title or heading
            continue
        b = _BULLET.match(raw)
        nested = b is not None and block is not None and block.bullet and len(b.group(1)) >= 2
        if block is None or (b is not None and not nested):
            block = _Block(i + 1, [b.group(2) if b else raw.strip()], bullet=b is not None)
            blocks.append((block, heading))
        else:
            block.lines.append(b.group(2) if b else raw.strip())
    for found, under in blocks:
        table = all(x.startswith("|") for x in found.lines)  # its rows kept as rows
        body = ("\n" if table else " ").join(x.strip() for x in found.lines).strip()
        if body:
            yield found.line, under, body


def _front_matter(text: str) -> dict[str, Any] | None:
    """The front matter's fields; None when it is there but no YAML mapping."""
    lines = text.splitlines()
    end = _body_start(lines)  # the block the notes' blocks start after, so no other one
    if end == 0:
        return {}
    try:
        import yaml

        data = yaml.safe_load("\n".join(lines[1 : end - 1]))
    except Exception:
        return None
    return data if isinstance(data, dict) else None if data is not None else {}


def _note_records(
    path: Path,
    rel: str,
    *,
    source: str,
    tags: Iterable[str] = (),
    scope: dict[str, Any],
    imports_from: Path | None = None,
) -> Iterator[Item]:
    """A note's memories; with ``imports_from`` (the folder read, for a CLAUDE.md) a line that
    is only ``@path`` is an import, no memory: reported unless the folder's walk reads it."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        yield Problem(rel, f"cannot read: {e}")
        return
    if path.suffix.lower() == ".xml":  # a tag alone on its line is markup, not a memory
        text = _TAG_LINE.sub("", text)
    meta = _front_matter(text)
    if meta is None:
        yield Problem(
            f"{rel}:1", "front matter that is no YAML mapping: its tags and title not read"
        )
        meta = {}
    file_tags = [*tags]
    given = meta.get("tags")
    if isinstance(given, str):
        given = [t.strip() for t in given.split(",")]
    if isinstance(given, list):
        file_tags += [str(t) for t in given if isinstance(t, str | int)]
    title = meta.get("title") if isinstance(meta.get("title"), str) else None
    when = int(path.stat().st_mtime * 1000)
    for line, heading, body in note_blocks(text):
        body = _CHECKBOX.sub("", body)
        item_tags = list(file_tags)
        category = _CATEGORY.match(body)
        if category:
            item_tags.append(category.group(1))
            body = body[category.end() :]
        entities: list[str] = []
        relation = None if category else _RELATION.fullmatch(body)
        if relation:  # basic-memory: "- relation_type [[Target]] (context)" of this note
            subject = title or path.stem
            kind, target, context = relation.groups()
            body = f"{subject} {kind.replace('_', ' ')} {target.strip()}"
            body += f" {context}" if context else ""
            item_tags.append("relation")
            entities = [subject, target.strip()]
        item_tags += _HASHTAG.findall(body)
        where = f"{rel}:{line}"
        imported = _IMPORT.fullmatch(body) if imports_from is not None else None
        if imported and imports_from is not None:
            if not _walked(path.parent, imported[1], imports_from):
                yield Problem(where, f"an @import of {imported[1]}: not followed (import it alone)")
            continue
        record: dict[str, Any] = {
            "id": f"md-{slug_of(Path(rel).stem, 40)}-{short_hash(source, rel, body)}",
            "text": body,
            "title": heading or title,
            "tags": list(dict.fromkeys(t.casefold() for t in item_tags))[:8],
            "created_at": when,
            **({"entities": entities} if entities else {}),
            "provenance": {"source": f"{source}:{where}", "recorded_by": source},
            **scope,
        }
        yield Entry(where, "memory", record)


def _walked(folder: Path, target: str, root: Path) -> bool:
    """Whether ``target`` (a CLAUDE.md import, from ``folder``) is a note the walk of
    ``root`` reads (``_note_files``): inside it, in no hidden folder but .claude."""
    if target.startswith("~") or not target.lower().endswith((".md", ".markdown")):
        return False
    found = (folder / target).resolve()
    inside = root.resolve()
    if not root.is_dir() or not found.is_file() or not found.is_relative_to(inside):
        return False
    return all(not p.startswith(".") or p == ".claude" for p in found.relative_to(inside).parts)


def _under_claude(path: Path) -> str | None:
    """The first part of ``path`` under a ``.claude`` folder (None when in none)."""
    parts = path.parts[:-1]
    if ".claude" not in parts:
        return None
    return path.parts[len(parts) - parts[::-1].index(".claude")]


def _claude_md_scope(path: Path) -> dict[str, Any]:
    """A CLAUDE.md's (or a ``.claude/rules`` file's) memories: the project it sits in, or
    global for the user's own ``~/.claude``."""
    folder = path.resolve().parent
    claude = next((p for p in (folder, *folder.parents) if p.name == ".claude"), None)
    if claude is not None:
        if claude == (Path.home() / ".claude").resolve():
            return {"type": "user"}
        folder = claude.parent
    return {"type": "project", "scope": "project", "project": str(folder)}


def _note_files(
    root: Path, suffixes: tuple[str, ...], *, others: bool = False
) -> Iterator[Path | Problem]:
    """The note files under ``root`` (folder links not followed); a file that links out of
    the folder is a ``Problem``, not read (a crafted folder must not pull in ``~/.ssh``)."""
    if root.is_file():
        yield root
        return
    inside = root.resolve()
    seen: set[Path] = set()  # a link to a note in the folder: the note read once
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") or d == ".claude")
        for d in dirs:
            if (Path(folder) / d).is_symlink():  # os.walk does not follow it: say so
                rel = (Path(folder) / d).relative_to(root.parent).as_posix()
                yield Problem(rel, "a link to a folder: not followed")
        for name in sorted(files):
            path = Path(folder) / name
            if not name.lower().endswith(suffixes):
                if others:  # the memory tool's folder: every file in it is a memory
                    rel = path.relative_to(root.parent).as_posix()
                    yield Problem(rel, f"not a note ({', '.join(suffixes)}): not read")
                continue
            if path.is_symlink() and not path.resolve().is_relative_to(inside):
                rel = path.relative_to(root.parent).as_posix()
                yield Problem(rel, "a link to a file outside the folder: not read")
                continue
            if not path.is_file():  # a broken link, a pipe (opened, it would never end)
                rel = path.relative_to(root.parent).as_posix()
                yield Problem(rel, "not a readable regular file: not read")
                continue
            if path.resolve() in seen:
                continue
            seen.add(path.resolve())
            yield path


def read_markdown(root: Path) -> Iterator[Item]:
    base = root.parent if root.is_file() else root
    for path in _note_files(root, (".md", ".markdown")):
        if isinstance(path, Problem):
            yield path
            continue
        rel = path.relative_to(base).as_posix()
        claude = _under_claude(Path(base.name) / rel)  # within what was asked for
        if claude is not None and claude not in ("CLAUDE.md", "CLAUDE.local.md", "rules"):
            continue  # Claude Code's commands, agents, skills: prompts, no memories
        if path.name in ("CLAUDE.md", "CLAUDE.local.md") or claude == "rules":
            scope, imports = _claude_md_scope(path), root
        else:
            scope, imports = {"type": "reference"}, None
        yield from _note_records(path, rel, source="markdown", scope=scope, imports_from=imports)


# -- the Anthropic memory tool's /memories directory -------------------------------------------

_TOOL_LINE = re.compile(r"^- \[([a-z0-9][a-z0-9-]{0,79})\] (.+)$")


def read_anthropic_memories(root: Path) -> Iterator[Item]:
    base = root.parent if root.is_file() else root
    for path in _note_files(root, NOTE_SUFFIXES, others=True):
        if isinstance(path, Problem):
            yield path
            continue
        rel = path.relative_to(base).as_posix()
        parts = Path(rel).parts
        own = len(parts) in (2, 3) and _own_layout(base / parts[0])
        if own and len(parts) == 2 and parts[1] == "memories.md":
            yield from _tool_memories(path, rel, parts[0])
        elif own and len(parts) == 3 and parts[1] == "rules" and path.suffix == ".md":
            try:
                content = path.read_text(encoding="utf-8-sig")
            except (OSError, UnicodeDecodeError) as e:
                yield Problem(rel, f"cannot read: {e}")
                continue
            yield Entry(rel, "rule", {"name": Path(parts[2]).stem, "content": content}, parts[0])
        else:
            tag = slug_of(Path(rel).with_suffix("").as_posix(), 60)
            yield from _note_records(
                path, rel, source="anthropic-memories", tags=[tag], scope={"type": "user"}
            )


def _own_layout(folder: Path) -> bool:
    """Whether ``folder`` is a bank as this store's memory tool lays it out: its
    ``memories.md`` (if any) of ``- [id] text`` lines. A user's own ``memories.md`` (and a
    ``rules`` folder beside it) is notes: no file of theirs sets a rule."""
    found = folder / "memories.md"
    if not found.is_file():
        return True
    lines = [line for _, line in _lines(found) if not isinstance(line, LineTooLong)]
    return not lines or any(_TOOL_LINE.match(line.rstrip("\n")) for line in lines)


def tool_layout(found: Path) -> bool:
    """Whether ``found`` (a ``<folder>/memories.md``) has a line of this store's layout."""
    if not found.is_file():
        return False
    return any(
        _TOOL_LINE.match(line.rstrip("\n"))
        for _, line in _lines(found)
        if not isinstance(line, LineTooLong)
    )


def _tool_memories(path: Path, rel: str, bank: str) -> Iterator[Item]:
    for n, line in _lines(path):
        m = _TOOL_LINE.match(line.rstrip("\n"))
        where = f"{rel}:{n}"
        if isinstance(line, LineTooLong):
            yield _too_long(where)
            continue
        if m is None:
            yield Problem(where, "not a '- [id] text' line")
            continue
        record = {
            "id": m.group(1),
            "text": m.group(2),
            "provenance": {"source": f"anthropic-memories:{where}"},
        }
        yield Entry(where, "memory", record, bank)
