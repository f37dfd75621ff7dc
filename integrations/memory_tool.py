"""A backend for Anthropic's memory tool (``memory_20250818``) over ``StoreAPI``.

The model manages files under ``/memories`` with ``view``, ``create``, ``str_replace``,
``insert``, ``delete`` and ``rename``. Here those files are banks, so what the model writes is
durable, redacted and versioned like any rule or memory:

    /memories                         a directory: one folder per bank
    /memories/<bank>                  a directory: rules/ and memories.md
    /memories/<bank>/rules            a directory: one <name>.md per rule
    /memories/<bank>/rules/<name>.md  a rule: read-only unless ``allow_rule_edits`` (rule_get /
                                      rule_set; delete removes it; never ``learned.md``)
    /memories/<bank>/memories.md      the bank's live memories this agent may see (global ones,
                                      and its ``project``'s and ``session_id``'s when the backend
                                      is given them, as recall shows them), one "- [id] text"
                                      line each: read-mostly: ``insert`` saves the inserted text
                                      as a new memory; every other write is refused, and one
                                      that would touch a pinned memory's line says it is a
                                      person's (``shared.contract.pinned``: ``permission_denied``)

Paths never reach the file system: each is parsed into (bank, kind, name) and checked first.
Refused with ``PathOutsideMemoriesError`` (an ``invalid_argument``): anything not under
``/memories``, ``.``/``..``/empty segments, backslashes, ``%``-escapes, control or format
characters, text that is not NFC, and names outside the store's ``[a-z0-9][a-z0-9_-]{0,63}``.
With no file-system path there is nothing for a symlink to redirect.

``MemoryToolBackend(store).execute({"command": ..., ...})`` answers the text the tool result
carries (raising a typed error); ``tool_result(...)`` answers the ``content`` / ``is_error``
of the ``tool_result`` block. An edit (``str_replace``, ``insert``, ``rename``) writes only
while the rule still holds what it read (``rule_set(expect=...)``): a rule another writer
changed in between is a ``conflict`` (read it again), never a silent overwrite of that
change. A harness wires it as the handler of the ``memory`` tool
(README "Memory tool").
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.contract.models import Memory
from shared.contract.pinned import refusal

ROOT = "/memories"
MEMORIES_FILE = "memories.md"
RULES_DIR = "rules"
LEARNED_RULE = "learned"  # the extractor's rule (store_worker/harness/rules.py LEARNED)
MAX_PATH = 512
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
_LINES_SHOWN = 2000


class PathOutsideMemoriesError(errors.InvalidArgumentError):
    """Raised when a memory-tool path is not a well-formed path under ``/memories``."""


class MemoryFileError(errors.InvalidArgumentError):
    """Raised when a memory-tool command cannot apply to the file (read-only, text not found,
    a line out of range, a file that already exists)."""


Kind = Literal["root", "bank", "rules", "rule", "memories"]


@dataclass(frozen=True)
class MemoryPath:
    """A checked path: what it names in the store."""

    kind: Kind
    bank: str = ""
    rule: str = ""

    def __str__(self) -> str:
        parts = {
            "root": [ROOT],
            "bank": [ROOT, self.bank],
            "rules": [ROOT, self.bank, RULES_DIR],
            "rule": [ROOT, self.bank, RULES_DIR, f"{self.rule}.md"],
            "memories": [ROOT, self.bank, MEMORIES_FILE],
        }[self.kind]
        return "/".join(parts)


def parse_path(raw: object) -> MemoryPath:
    """``raw`` as a ``MemoryPath``, or ``PathOutsideMemoriesError`` (module docstring)."""
    if not isinstance(raw, str) or not raw:
        raise PathOutsideMemoriesError("path must be a non-empty string")
    _check_characters(raw)
    if raw != ROOT and not raw.startswith(ROOT + "/"):
        raise PathOutsideMemoriesError(f"path {raw!r} is outside {ROOT}")
    rest = raw[len(ROOT) :].removeprefix("/").removesuffix("/")
    parts = rest.split("/") if rest else []
    if any(p in ("", ".", "..") for p in parts):
        raise PathOutsideMemoriesError(f"path {raw!r} has an empty, '.' or '..' segment")
    return _shape(raw, parts)


def _check_characters(raw: str) -> None:
    if len(raw) > MAX_PATH:
        raise PathOutsideMemoriesError(f"path longer than {MAX_PATH} characters")
    if unicodedata.normalize("NFC", raw) != raw:
        raise PathOutsideMemoriesError("path is not in Unicode NFC form")
    for ch in raw:
        if ch in "\\%" or unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            raise PathOutsideMemoriesError(f"path {raw!r} holds a refused character {ch!r}")


def _shape(raw: str, parts: list[str]) -> MemoryPath:
    if not parts:
        return MemoryPath("root")
    bank = _name(raw, parts[0])
    if len(parts) == 1:
        return MemoryPath("bank", bank)
    if len(parts) == 2 and parts[1] == MEMORIES_FILE:
        return MemoryPath("memories", bank)
    if parts[1] == RULES_DIR and len(parts) == 2:
        return MemoryPath("rules", bank)
    if parts[1] == RULES_DIR and len(parts) == 3 and parts[2].endswith(".md"):
        return MemoryPath("rule", bank, _name(raw, parts[2].removesuffix(".md")))
    raise PathOutsideMemoriesError(
        f"path {raw!r} names nothing: use {ROOT}/<bank>/{RULES_DIR}/<name>.md or "
        f"{ROOT}/<bank>/{MEMORIES_FILE}"
    )


def _name(raw: str, part: str) -> str:
    if not _NAME.fullmatch(part):
        raise PathOutsideMemoriesError(
            f"path {raw!r}: {part!r} is not a name ([a-z0-9][a-z0-9_-]{{0,63}})"
        )
    return part


class MemoryToolBackend:
    """The six memory-tool commands over ``StoreAPI``.

    Rules are injected into every later session's system prompt, so they are human-owned, as
    on every other surface (``memory mcp --allow-rule-edits``): by default the model may read
    them and add memories, and a write to a rule is refused. ``allow_rule_edits=True`` lets
    it write rules too, except ``learned.md``, which only the extractor writes. ``token``: a
    scoped token (``memory token create``) whose principal the model acts as, on a store this
    process holds as the admin (embedded); over the gateway, ``MEMORY_TOKEN`` does the same.
    """

    def __init__(
        self,
        store: StoreAPI,
        *,
        allow_rule_edits: bool = False,
        project: str | None = None,
        session_id: str | None = None,
        token: str | None = None,
    ) -> None:
        if token:  # a scoped token: the model acts as its principal (README "Trust model")
            from shared.client.scoped import as_token

            store = as_token(store, token)
        self.store = store
        self.allow_rule_edits = allow_rule_edits
        # whose project and session memories ``memories.md`` shows (absolute: the agent's)
        self.project = os.path.normpath(project) if project else None
        self.session_id = session_id

    def execute(self, call: Mapping[str, Any]) -> str:
        """Run one tool call (the tool input the model sent) and answer its result text."""
        commands: dict[str, Callable[[Mapping[str, Any]], str]] = {
            "view": self._view,
            "create": self._create,
            "str_replace": self._str_replace,
            "insert": self._insert,
            "delete": self._delete,
            "rename": self._rename,
        }
        command = call.get("command")
        if not isinstance(command, str) or command not in commands:
            raise errors.InvalidArgumentError(f"unknown command {command!r}; use {list(commands)}")
        return commands[command](call)

    def tool_result(self, call: Mapping[str, Any]) -> dict[str, Any]:
        """``execute`` as the ``content`` / ``is_error`` of a ``tool_result`` block: a refused
        call answers its category and message (never a traceback), so the model can correct
        itself; only a failure outside the error tree propagates."""
        try:
            return {"content": self.execute(call), "is_error": False}
        except errors.MemoryServiceError as e:
            return {"content": f"{e.category}: {e.message}", "is_error": True}

    # -- commands ----------------------------------------------------------------------------

    def _view(self, call: Mapping[str, Any]) -> str:
        path = parse_path(call.get("path"))
        if path.kind in ("root", "bank", "rules"):
            return f"Directory: {path}\n" + "".join(f"- {e}\n" for e in self._listing(path))
        text = self._read(path)
        lines = text.splitlines()
        first, last = _range(call.get("view_range"), len(lines))
        shown = lines[first - 1 : last][:_LINES_SHOWN]
        return "".join(f"{n:6d}\t{line}\n" for n, line in enumerate(shown, start=first))

    def _create(self, call: Mapping[str, Any]) -> str:
        path = self._rule_path(call.get("path"), "create", touching="")
        text = _text(call, "file_text")
        if not text.strip():
            raise MemoryFileError(f"{path}: empty file_text (use delete to remove a rule)")
        existed = path.rule in self._rule_names(path.bank)
        self._ensure_bank(path.bank)
        self.store.rule_set(path.rule, text, bank=path.bank)
        verb = "overwritten" if existed else "created"
        return f"File {verb}: {path}"

    def _str_replace(self, call: Mapping[str, Any]) -> str:
        replaced = call.get("old_str")  # a pinned line it overlaps is named in the refusal
        touching = replaced if isinstance(replaced, str) and replaced else None
        path = self._rule_path(call.get("path"), "str_replace", touching=touching)
        old, new = _text(call, "old_str"), _text(call, "new_str")
        text = self._read(path)
        count = text.count(old) if old else 0
        if count != 1:
            found = "not found" if count == 0 else f"found {count} times"
            raise MemoryFileError(f"{path}: old_str {found}; it must occur exactly once")
        self.store.rule_set(path.rule, text.replace(old, new, 1), bank=path.bank, expect=text)
        return f"File edited: {path}"

    def _insert(self, call: Mapping[str, Any]) -> str:
        path = parse_path(call.get("path"))
        inserted = _text(call, "insert_text")
        if path.kind == "memories":
            if not inserted.strip():
                raise MemoryFileError("insert_text is empty: nothing to remember")
            saved = self.store.save(inserted.strip(), bank=path.bank, recorded_by="memory-tool")
            return f"Memory saved: [{saved.memory.id}] in {path}"
        path = self._rule_path(path, "insert", touching=None)
        text = self._read(path)
        lines = text.splitlines()
        at = call.get("insert_line")
        if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at <= len(lines):
            raise MemoryFileError(f"{path}: insert_line must be a line number 0-{len(lines)}")
        lines[at:at] = inserted.splitlines() or [""]
        self.store.rule_set(path.rule, "\n".join(lines) + "\n", bank=path.bank, expect=text)
        return f"Text inserted at line {at}: {path}"

    def _delete(self, call: Mapping[str, Any]) -> str:
        path = self._rule_path(call.get("path"), "delete", touching="")
        self.store.rule_get(path.rule, bank=path.bank)  # deleting nothing is not_found
        self.store.rule_set(path.rule, "", bank=path.bank)
        return f"File deleted: {path}"

    def _rename(self, call: Mapping[str, Any]) -> str:
        old = self._rule_path(call.get("old_path"), "rename", touching="")
        new = self._rule_path(call.get("new_path"), "rename", touching="")
        content = self._read(old)
        if new.rule in self._rule_names(new.bank):
            raise MemoryFileError(f"{new} already exists")
        self._ensure_bank(new.bank)
        self.store.rule_set(new.rule, content, bank=new.bank, expect="")
        try:
            self.store.rule_set(old.rule, "", bank=old.bank, expect=content)
        except errors.ConflictError:  # changed since read: the copy goes, the change stays
            self.store.rule_set(new.rule, "", bank=new.bank, expect=content)
            raise
        return f"File renamed: {old} -> {new}"

    # -- helpers -----------------------------------------------------------------------------

    def _rule_path(self, raw: object, command: str, *, touching: str | None) -> MemoryPath:
        """The rule a write names, once the write is allowed (every caller writes).
        ``touching``: what of ``memories.md`` the write would change, were it allowed: ``""``
        the whole file, else the text ``str_replace`` replaces (``None``: no line of it)."""
        path = raw if isinstance(raw, MemoryPath) else parse_path(raw)
        if path.kind == "memories" and touching is not None:
            self._refuse_pinned(path.bank, command, touching)
        if path.kind != "rule":
            what = "read-only (insert adds a memory)" if path.kind == "memories" else "a directory"
            raise MemoryFileError(
                f"{command}: {path} is {what}; rules are {ROOT}/<bank>/rules/*.md"
            )
        if not self.allow_rule_edits:
            raise MemoryFileError(
                f"{command}: {path} is read-only: rules are human-owned (insert into "
                f"{ROOT}/<bank>/{MEMORIES_FILE} to remember something)"
            )
        if path.rule == LEARNED_RULE:
            raise MemoryFileError(f"{command}: {path} is written by the extractor only")
        return path

    def _listing(self, path: MemoryPath) -> list[str]:
        if path.kind == "root":
            return [f"{b.name}/" for b in self.store.bank_list().banks]
        if path.kind == "bank":
            self._existing_bank(path.bank)
            return [f"{RULES_DIR}/", MEMORIES_FILE]
        return [f"{name}.md" for name in self._rule_names(path.bank)]

    def _read(self, path: MemoryPath) -> str:
        if path.kind == "rule":
            return self.store.rule_get(path.rule, bank=path.bank).content
        return self._memories_text(path.bank)

    def _memories_text(self, bank: str) -> str:
        rows = [_line(m) for m in self._visible(bank)]
        return "\n".join(rows) + ("\n" if rows else "")

    def _visible(self, bank: str) -> list[Memory]:
        """The live memories recall would show this agent: the listing is the whole bank's,
        so another project's or session's memories are left out here."""
        shown: list[Memory] = []
        token: str | None = None
        sessions = frozenset(self.store.session_lineage(self.session_id) if self.session_id else ())
        while True:
            page = self.store.list(bank=bank, page_size=500, page_token=token)
            shown += [m for m in page.memories if m.seen_from(self.project, lambda: sessions)]
            token = page.next_page_token
            if not token:
                return shown

    def _refuse_pinned(self, bank: str, command: str, touching: str) -> None:
        """The pinned refusal when a write to ``memories.md`` (refused anyway: it is
        read-only) would change a pinned memory's line: the whole file (``touching == ""``) or
        a line ``touching`` overlaps. Saying so keeps the model from looking for another way
        to change what a person pinned."""
        try:
            shown = self._visible(bank)
        except errors.NotFoundError:  # no such bank: nothing pinned in it
            return
        text, at = "", []
        for m in shown:
            at.append((len(text), m))
            text += _line(m) + "\n"
        hits = _occurrences(text, touching) if touching else None
        pinned = [
            m.id
            for start, m in at
            if m.pinned
            and (
                hits is None
                or any(i < start + len(_line(m)) and start < i + len(touching) for i in hits)
            )
        ]
        if pinned:
            verb = {"create": "overwrite", "str_replace": "rewrite", "rename": "move"}
            raise refusal(pinned, verb.get(command, command))

    def _rule_names(self, bank: str) -> list[str]:
        try:
            return [r.name for r in self.store.rule_list(bank=bank).rules]
        except errors.NotFoundError:
            return []

    def _existing_bank(self, bank: str) -> None:
        if bank not in {b.name for b in self.store.bank_list().banks}:
            raise errors.NotFoundError(f"no bank {bank!r} (no such directory {ROOT}/{bank})")

    def _ensure_bank(self, bank: str) -> None:
        self.store.bank_create(bank)  # idempotent: a new folder under /memories is a new bank


def _line(m: Memory) -> str:
    """A memory's line in ``memories.md``."""
    return f"- [{m.id}] {' '.join(m.text.split())}"


def _occurrences(text: str, part: str) -> list[int]:
    """Where ``part`` (not empty) starts in ``text``, overlapping ones too."""
    found, i = [], text.find(part)
    while i != -1:
        found.append(i)
        i = text.find(part, i + 1)
    return found


def _text(call: Mapping[str, Any], key: str) -> str:
    value = call.get(key)
    if not isinstance(value, str):
        raise errors.InvalidArgumentError(f"{key} must be a string")
    return value


def _range(raw: object, count: int) -> tuple[int, int]:
    if raw is None:
        return 1, count
    if (
        not isinstance(raw, list | tuple)
        or len(raw) != 2
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in raw)
    ):
        raise errors.InvalidArgumentError("view_range must be [first_line, last_line]")
    first, last = int(raw[0]), int(raw[1])
    last = count if last == -1 else last
    if not 1 <= first <= max(last, 1) or last > max(count, 1):
        raise MemoryFileError(f"view_range {list(raw)} is outside lines 1-{count}")
    return first, last
