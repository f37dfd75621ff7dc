"""Per-turn injection: the harness seam ``pre_generate`` and its dry run ``preview`` (how the
store hooks into an agent harness).

What a step is given, for the bank resolved from turn metadata ``memory_bank`` → the session's
``memory_bank`` (``metadata["session"]["memory_bank"]``, remembered) → the parent session's bank
(walked up) → ``default_bank``:

* ``system_prompt``: the session's memory section (ambient header + ``## rule`` sections within
  ``max_rule_chars``). It is frozen at the session's first step and returned verbatim after that,
  so the prompt prefix stays append-only (cache-friendly);
* ``append_messages``: a rules change (or a bank switch, or injection turned off) arrives once
  as ``<memory update="rules">``; on step 0 of a turn, one ``<memory bank=... recalled=...>``
  block of dated recalled memories, skipping those the window still carries.

An invalid name or a deleted bank (other than the default) means no memory — never another
bank. Injection is fail-open (the pre-generate hook never denies a turn): a storage failure
after the input checks returns the section the session already has and nothing new.

Per-session state (the frozen section, the section in force, each turn's bank) is one JSON file
per session under ``<data_dir>/.state/inject/`` (atomic writes, not fsynced: see
``_save_session_state``), so a store restart neither re-sends nor drops a section; a window
that carries a newer rules update overrides it.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from dataclasses import KW_ONLY, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from shared.contract import errors
from shared.contract.config import NAME_RE
from shared.contract.models import (
    InjectedMemory,
    InjectResponse,
    Memory,
    PreviewResponse,
    RecallResponse,
)
from shared.contract.ops import Recall
from shared.redact import redact
from store_worker.harness import blocks, relevant
from store_worker.harness.messages import HIDDEN, is_memory_block, message_text, session_key
from store_worker.harness.rules import LEARNED, shown_rules
from store_worker.storage import validate as v

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from shared.contract.clock import Clock
    from shared.contract.config import StoreSettings
    from store_worker.harness.sessions import Sessions
    from store_worker.storage.banks import Banks
    from store_worker.storage.events import EventBus
    from store_worker.storage.state import StateStore

    # ``Reader.recall``'s shape, as the recalled block calls it
    RecallFn = Callable[..., RecallResponse]

log = logging.getLogger(__name__)

STATE_OWNER = "inject"
MAX_REMEMBERED_TURNS = 64
OFF_BANK = "none"
_UPDATE = re.compile(r'^<memory update="rules"(?: bank="([^"]*)")?>\n(.*)\n</memory>\s*$', re.S)
_SPACE = re.compile(r"\s+")
_UNSAFE = HIDDEN  # what a stored text may not bring into a prompt (``messages.HIDDEN``)
# Every other line break (a rule written on Windows, a form feed, U+2028) as a plain one: a
# recalled memory's line collapses it to a space, a rule keeps it as a line end.
_NEWLINES = re.compile("\r\n?|[\x0b\x0c\x1c-\x1f\x85\u2028\u2029]")
# A memory tag inside a rule or a recalled text would close (or forge) the block it sits in;
# also spaced out (``< /memory>``), split by a joiner, or with a full-width or small bracket.
_GAP = r"[\s\u200c\u200d]*"
_TAG = re.compile(rf"[<\uff1c\ufe64]{_GAP}(/?){_GAP}(memory)\b", re.I)
MAX_NAMED_OMITTED = 8  # rules named in the "omitted" marker; the rest are counted


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SessionState(BaseModel):
    """What the store remembers about one session's injection (persisted)."""

    model_config = ConfigDict(extra="ignore")

    started: bool = False
    session_bank: str | None = None  # the session metadata's memory_bank, remembered
    section: str | None = None  # the frozen section, exactly as first sent
    effective: str | None = None  # the section in force: the frozen one or the last update
    turns: dict[str, str | None] = Field(default_factory=dict)  # turn id → bank (None: no memory)


class RulesSection(Frozen):
    text: str
    rules: int
    truncated: bool


@dataclass(eq=False, repr=False)
class Injector:
    """``pre_generate``, ``preview`` and the bank a session or turn resolves to."""

    settings: StoreSettings
    _: KW_ONLY
    banks: Banks
    sessions: Sessions
    state: StateStore
    clock: Clock
    recall: RecallFn
    key: blocks.BlockKey  # signs the recalled blocks (``blocks.py``)
    events: EventBus | None = None
    count_tokens: Callable[[str], int] | None = None  # preview's cost of the block

    # -- the seam --------------------------------------------------------------------------

    def pre_generate(
        self,
        session_id: str,
        turn_id: str | None = None,
        step: int = 0,
        messages: list[dict[str, Any]] | None = None,
        metadata: dict[str, Any] | None = None,
        parent_session_id: str | None = None,
        *,
        visible_sessions: Iterable[str] | None = None,
    ) -> InjectResponse:
        """The memory a step is given; see the module docstring. ``visible_sessions``: the
        sessions of its lineage whose session records it may be given (``_recall_block``)."""
        self.sessions.prune(force=False)
        session = v.no_credential(v.optional_str(session_id, "session_id"), "session_id")
        if session is None:
            raise errors.InvalidArgumentError("session_id is required")
        turn = v.no_credential(v.turn_id(turn_id), "turn_id")
        if not isinstance(step, int) or isinstance(step, bool) or step < 0:
            raise errors.InvalidArgumentError("step must be a non-negative integer")
        window = _window(messages)
        meta = _metadata(metadata)
        parent = v.optional_str(parent_session_id, "parent_session_id")
        v.no_credential(parent, "parent_session_id")
        seen = v.session_ids(visible_sessions, "visible_sessions")
        st = self._session_state(session)
        try:
            return self._pre_generate(session, turn, step, window, meta, parent, seen, st)
        except (errors.MemoryServiceError, OSError) as e:
            # fail-open: the section the session already has stays; nothing new is injected
            log.warning("pre_generate for %s failed open: %s", session, e)
            return InjectResponse(bank=None, system_prompt=st.section, notes=(f"failed open: {e}",))

    def _pre_generate(
        self,
        session: str,
        turn: str | None,
        step: int,
        window: list[dict[str, Any]],
        meta: dict[str, Any],
        parent: str | None,
        seen: frozenset[str] | None,
        st: SessionState,
    ) -> InjectResponse:
        before = st.model_dump()
        self.sessions.link(session, parent)
        session_meta = meta.get("session")
        if isinstance(session_meta, dict) and "memory_bank" in session_meta:
            st.session_bank = _bank_value(session_meta["memory_bank"])
        bank, note = self._resolve_bank(session, meta.get("memory_bank"), st, serve=True)
        section = self._current_section(bank)
        appended: list[dict[str, str]] = []
        if not st.started:
            st.started = True
            st.section = st.effective = section.text if section else None
        else:
            update = self._rules_update(st, window, bank, section)
            if update is not None:
                appended.append({"role": "user", "content": update})
        if turn is not None and (turn not in st.turns or step == 0):
            st.turns[turn] = bank
            st.turns = dict(list(st.turns.items())[-MAX_REMEMBERED_TURNS:])
        memories: list[InjectedMemory] = []
        retrieval = "none"
        if step == 0 and bank is not None and self.settings.inject_memories:
            message, memories, retrieval = self._recall_block(
                bank,
                _newest_user_text(window),
                session=session,
                project=_project(meta),
                carried=self._carried(window, session, bank),
                seen=seen,
            )
            if message is not None:
                appended.append({"role": "user", "content": message})
            if memories and self.events is not None:  # what came and why (relevant.py)
                why = relevant.summary(memories)
                self.events.emit(
                    "bank-changed", "injected", bank, now=self.clock.now_ms(), reason=why
                )
        if st.model_dump() != before:
            self._save_session_state(session, st)
        return InjectResponse(
            bank=bank,
            system_prompt=st.section,
            append_messages=tuple(appended),
            memories=tuple(memories),
            ambient=_ambient_count(memories),
            retrieval=retrieval,
            rules=section.rules if section else 0,
            rules_truncated=section.truncated if section else False,
            notes=(note,) if note else (),
        )

    def _rules_update(
        self,
        st: SessionState,
        window: list[dict[str, Any]],
        bank: str | None,
        section: RulesSection | None,
    ) -> str | None:
        """One appended update when the section in force differs from the current one."""
        in_force = _newest_update(window)
        if in_force is None:
            in_force = st.effective or ""
        wanted = section.text if section else ""
        if wanted == in_force:
            return None
        st.effective = wanted
        if section is None:
            reason = "injection is off" if bank is not None else "this session's bank is unusable"
            body = f"No memory section applies to this session any more ({reason})."
            return f'<memory update="rules" bank="{OFF_BANK}">\n{body}\n</memory>'
        return f'<memory update="rules" bank="{bank}">\n{wanted}\n</memory>'

    def _current_section(self, bank: str | None) -> RulesSection | None:
        if bank is None or not (self.settings.inject_rules or self.settings.inject_memories):
            return None
        return self._rules_section(bank)

    # -- preview ---------------------------------------------------------------------------

    def preview(
        self,
        query: str,
        *,
        bank: str | None = None,
        session_id: str | None = None,
        visible_sessions: Iterable[str] | None = None,
    ) -> PreviewResponse:
        """Run the injection code for a hypothetical message in a new session."""
        if not isinstance(query, str):
            raise errors.InvalidArgumentError("query must be a string")
        seen = v.session_ids(visible_sessions, "visible_sessions")
        name = self.banks.resolve(bank).name  # an explicit unknown bank is not_found, never another
        section = self._rules_section(name)
        message: str | None = None
        memories: list[InjectedMemory] = []
        retrieval = "none"
        if self.settings.inject_memories:
            message, memories, retrieval = self._recall_block(
                name,
                query,
                session=v.optional_str(session_id, "session_id"),
                project=None,
                carried=set(),
                seen=seen,
            )
        return PreviewResponse(
            bank=name,
            system_prompt_section=section.text if self._injects_any() else "",
            rules=section.rules,
            rules_truncated=section.truncated,
            memories=tuple(memories),
            message=message,
            retrieval=retrieval,
            ambient=_ambient_count(memories),
            tokens=self.count_tokens(message) if message and self.count_tokens else 0,
            min_relevance=self.settings.min_relevance,
        )

    def _injects_any(self) -> bool:
        return self.settings.inject_rules or self.settings.inject_memories

    # -- bank resolution -------------------------------------------------------------------

    def _resolve_bank(
        self, session: str, turn_bank: object, st: SessionState, *, serve: bool = False
    ) -> tuple[str | None, str]:
        """One resolver for injection and extraction (and agent calls: one rule for which bank a
        turn uses). ``serve``: the bank is injected here, so this shard must own it
        (``_usable_bank``)."""
        if turn_bank is not None:
            return self._usable_bank(turn_bank, serve=serve)
        if st.session_bank is not None:
            return self._usable_bank(st.session_bank, serve=serve)
        for ancestor in self.sessions.lineage(session)[1:]:
            parent = self.state.get(STATE_OWNER, session_key(ancestor))
            if isinstance(parent, dict):  # a sub-agent works in its parent's bank
                known = SessionState.model_validate(parent)
                if known.session_bank is not None:
                    return self._usable_bank(known.session_bank, serve=serve)
                if known.turns:
                    last = list(known.turns.values())[-1]
                    return (last, "") if last is not None else (None, "parent has no memory")
        return self._usable_bank(self.settings.default_bank, serve=serve)

    def _usable_bank(self, name: object, *, serve: bool = False) -> tuple[str | None, str]:
        if not isinstance(name, str) or not NAME_RE.match(name):
            return None, f"invalid bank name {name!r}: no memory"
        if serve and self.banks.guard is not None:
            # another shard's bank (a moved one is trashed here): the caller's table is stale.
            # [moved] (retryable) fails this step open; the sharded client sees it in the
            # notes, re-reads the table and resends. A turn's job may name any bank: the
            # extractor writes through the client, which routes by bank.
            self.banks.guard.check(name)
        if name in self.banks or name == self.settings.default_bank:
            return name, ""
        if self.banks.trashed(name):
            return None, f"bank {name!r} was deleted: no memory"
        if not self._extraction_on():
            return None, f"bank {name!r} does not exist and extraction is off: no memory"
        return name, f"bank {name!r} is new: extraction creates it after a turn"

    def _extraction_on(self) -> bool:
        """What the extractor last reported through ``state_set("extractor", "status")``."""
        status = self.state.get("extractor", "status")
        return isinstance(status, dict) and bool(status.get("enabled"))

    def turn_bank(
        self, session_id: str, turn_id: str | None, parent_session_id: str | None
    ) -> tuple[str | None, bool]:
        """The bank a finished turn was injected with (else resolved now) and whether to skip."""
        st = self._session_state(session_id)
        if turn_id is not None and turn_id in st.turns:
            bank = st.turns[turn_id]
        else:
            self.sessions.link(session_id, parent_session_id)
            bank, _ = self._resolve_bank(session_id, None, st)
        return bank, bank is None

    # -- the rules section -----------------------------------------------------------------

    def _rules_section(self, name: str) -> RulesSection:
        """Ambient header + each rule as ``## name`` within ``max_rule_chars``.

        The budget counts rule headings and text; a cut rule ends in an explicit marker and a
        rule that no longer fits is named in one. Hand-written rules come first (by name) and
        ``learned`` last, so the rules a person wrote win the budget.
        """
        header = blocks.RULES_HEADER.format(bank=name)
        bank = self.banks.get(name)
        shown = shown_rules(bank) if bank is not None and self.settings.inject_rules else {}
        if not shown:
            return RulesSection(text=header, rules=0, truncated=False)
        ordered = sorted(shown.items(), key=lambda kv: (kv[0] == LEARNED, kv[0]))
        parts, count, truncated = _fit_rules(ordered, self.settings.max_rule_chars)
        return RulesSection(text="\n\n".join([header, *parts]), rules=count, truncated=truncated)

    # -- the recalled block ----------------------------------------------------------------

    def _recall_block(
        self,
        bank: str,
        query: str,
        *,
        session: str | None,
        project: str | None,
        carried: set[str],
        seen: frozenset[str] | None = None,
    ) -> tuple[str | None, list[InjectedMemory], str]:
        """Up to ``recall_limit`` memories at or above ``min_relevance`` (``relevant.py``) in
        ``recall_budget_tokens``, and the ambient floor's pinned and always-on memories; the
        session records of ``session``'s lineage only of its sessions in ``seen`` (``None``:
        every one), in both."""
        target = self.banks.get(bank)
        if target is None:
            return None, [], "none"
        limit = self.settings.recall_limit
        budget = self.settings.recall_budget_tokens
        retrieval = "hybrid"
        lineage = frozenset(s for s in self.sessions.lineage(session) if seen is None or s in seen)
        candidates: list[InjectedMemory] = []
        if query.strip():
            wanted = min(limit + len(carried), 500)
            found = self.recall(
                Recall(query, bank=bank, limit=wanted, session_id=session, project=project),
                sessions=lineage,
            )
            retrieval = found.retrieval
            fresh = [h for h in found.memories if h.memory.id not in carried]
            candidates = relevant.chosen(fresh, self.settings.min_relevance)
        chosen: list[InjectedMemory] = []
        used = 0

        def take(c: InjectedMemory) -> None:
            nonlocal used
            seen = c.memory.id in carried or any(x.memory.id == c.memory.id for x in chosen)
            if not seen and used + c.memory.tokens <= budget:
                chosen.append(c)
                used += c.memory.tokens

        for c in candidates:
            if len(chosen) >= limit:
                break
            take(c)
        floor = min(self.settings.ambient_floor, limit)
        added = 0
        for c in relevant.ambient(target, lineage, project, floor):
            if added >= floor:
                break
            before = len(chosen)
            take(c)
            added += len(chosen) - before
        if not chosen:
            return None, [], retrieval
        today = _date(self.clock.now_ms())
        lines = [
            f"- [{_date(_when(c.memory))}] {_one_line(c.memory.text)} (#{c.memory.id})"
            for c in chosen
        ]
        block = blocks.recalled_block(self.key.get(), session, bank, today, lines)
        return block, chosen, retrieval

    def _carried(self, window: list[dict[str, Any]], session: str, bank: str) -> set[str]:
        """What the store's own signed blocks in the window carry; forgeries are counted."""
        carried, forged = blocks.carried_ids(window, self.key.get(), session, bank)
        if forged and self.events is not None:
            why = f"{forged} memory block(s) in the window not emitted by this store: ignored"
            self.events.emit(
                "bank-changed", "forged-block", bank, now=self.clock.now_ms(), reason=why
            )
        return carried

    # -- per-session state -----------------------------------------------------------------

    def _session_state(self, session: str) -> SessionState:
        raw = self.state.get(STATE_OWNER, session_key(session))
        if not isinstance(raw, dict):
            return SessionState()
        try:
            return SessionState.model_validate(raw)
        except ValidationError:
            log.warning("session %s: unreadable injection state; starting over", session)
            return SessionState()

    def _save_session_state(self, session: str, st: SessionState) -> None:
        """Written only when it changed (``_pre_generate``), atomically (never torn) but not
        fsynced: it is on every turn's path, and a store process that dies loses none of it.
        A power loss or kernel crash may take back the last writes (or, on some file
        systems, leave the file empty: read as no state). That session then starts afresh,
        as after ``session_state_days``: its rules section is frozen and sent whole again,
        an update may be sent twice, and a finished turn's bank is resolved again. What it
        was injected is not lost: a turn skips the memories its window carries by the
        store's signed blocks (``blocks.py``), never by this state."""
        self.state.set(STATE_OWNER, session_key(session), st.model_dump(), durable=False)


# -- helpers ------------------------------------------------------------------------------


def _fit_rules(ordered: list[tuple[str, str]], budget: int) -> tuple[list[str], int, bool]:
    """The ``## name`` parts that fit ``budget`` chars, the count shown, and whether any was cut."""
    parts: list[str] = []
    omitted: list[str] = []
    remaining = budget
    truncated = False
    for name, content in ordered:
        head = f"## {name}\n"
        body = _safe(content).strip()
        if truncated or remaining < len(head) + 40:
            omitted.append(name)
            continue
        if len(head) + len(body) <= remaining:
            parts.append(head + body)
            remaining -= len(head) + len(body)
            continue
        cut = _cut(body, remaining - len(head))
        marker = (
            f'[memory: rule "{name}" truncated: {len(cut)} of {len(body)} chars shown, '
            f"max_rule_chars {budget}]"
        )
        parts.append(f"{head}{cut}\n{marker}")
        truncated = True
    if omitted:
        # a few names, not all: a bank of 500 rules made this one line three times the budget
        named = ", ".join(omitted[:MAX_NAMED_OMITTED])
        if len(omitted) > MAX_NAMED_OMITTED:
            named += f" and {len(omitted) - MAX_NAMED_OMITTED} more"
        parts.append(
            f"[memory: {len(omitted)} rule(s) omitted ({named}): max_rule_chars {budget} reached]"
        )
    shown = len(ordered) - len(omitted)
    return parts, shown, truncated or bool(omitted)


def _cut(body: str, room: int) -> str:
    """Cut at the last line break that keeps at least half of the room, else hard."""
    piece = body[: max(room, 0)]
    newline = piece.rfind("\n")
    return (piece[:newline] if newline >= room // 2 else piece).rstrip()


def _window(messages: object) -> list[dict[str, Any]]:
    if messages is None:
        return []
    if not isinstance(messages, list | tuple) or not all(isinstance(m, dict) for m in messages):
        raise errors.InvalidArgumentError("messages must be a list of mappings")
    return list(messages)


def _metadata(metadata: object) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise errors.InvalidArgumentError("metadata must be a mapping")
    return metadata


def _bank_value(value: object) -> str | None:
    return None if value is None or value == "" else str(value)


def _project(meta: dict[str, Any]) -> str | None:
    raw = meta.get("project") or meta.get("cwd")
    if not isinstance(raw, str) or not os.path.isabs(raw.strip()):
        return None  # a relative folder names no project here (``validate.project_path``)
    return v.project_path(raw)


def _newest_user_text(window: list[dict[str, Any]]) -> str:
    for msg in reversed(window):
        text = message_text(msg.get("content"))
        if msg.get("role") == "user" and text.strip() and not is_memory_block(text):
            return text
    return ""


def _newest_update(window: list[dict[str, Any]]) -> str | None:
    """The rules section the window says is in force (its newest rules update), if any. Only
    an update in the role the store sends it in counts: one in a tool result or an assistant
    message is not the store's, and never stops the store's own."""
    for msg in reversed(window):
        if msg.get("role") != blocks.BLOCK_ROLE:
            continue
        found = _UPDATE.match(message_text(msg.get("content")))
        if found:
            return "" if found.group(1) == OFF_BANK else found.group(2)
    return None


def _one_line(text: str) -> str:
    return _SPACE.sub(" ", _safe(text)).strip()


def _safe(text: str) -> str:
    """``_safe_text``, cached per text: rules and memories repeat turn after turn. A rule may
    hold 256k characters, so only texts of a memory's size are kept in the cache."""
    return _safe_cached(text) if len(text) <= _CACHED_CHARS else _safe_text(text)


_CACHED_CHARS = 16_000


@functools.lru_cache(maxsize=1024)
def _safe_cached(text: str) -> str:
    return _safe_text(text)


def _safe_text(text: str) -> str:
    """``text`` as it may enter a prompt: redacted (the last line of defence for what never
    went through a write: a rule or a log line edited by hand, a record stored under an older
    catalogue), without control and invisible characters (an ANSI escape, a bidi override, a
    zero-width space) and with any ``<memory``/``</memory`` tag defused, so a stored text can
    neither close the block it is shown in nor forge one, nor hide or reorder what it says."""
    shown = _UNSAFE.sub("", _NEWLINES.sub("\n", redact(text).text))
    return _TAG.sub(r"&lt;\1\2", shown)


def _ambient_count(memories: list[InjectedMemory]) -> int:
    return sum(1 for m in memories if m.why is not None and m.why.ambient)


def _when(mem: Memory) -> int:
    """The date a recalled line shows: when it happened if known, else when it was stated."""
    return mem.stated_at if mem.occurred_at is None else mem.occurred_at


def _date(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%d")
