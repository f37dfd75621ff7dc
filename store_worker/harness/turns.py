"""What a finished turn puts in the outbox: its conversation, redacted, cut, and only what is new.

A harness reports a turn as the messages it saw. Only the user's and the assistant's text is
kept (tool chatter and the store's own ``<memory>`` blocks are not the conversation), every
message is redacted before anything is written, and read together: a secret the user named is
redacted where the reply repeats it bare. A message is redacted first and cut after, so a cut
never leaves the head of a secret that no rule recognises any more. A caller that sends its
whole window every turn has the messages an earlier job of the session carried dropped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shared.contract import errors
from shared.contract.models import OutboxMessage
from shared.redact import Redaction, redact, redact_many
from shared.text import fingerprint
from store_worker.harness.messages import is_memory_block, message_text, message_time, session_key
from store_worker.storage import validate as v

if TYPE_CHECKING:
    from store_worker.storage.state import StateStore

MAX_TURN_MESSAGES = 200  # a turn is a handful of messages; a whole transcript is cut to its tail
MAX_MESSAGE_CHARS = 32_000
# Redaction sees this much past a cut, so a secret the cut would halve is whole when its rule
# looks (the longest bare value a rule takes is 2 KiB; a cut-off PEM block is caught by shape).
CUT_MARGIN = 4_096
ROLES = ("user", "assistant")
TURN_STATUSES = ("completed", "failed", "cancelled")
REMEMBERED_TAIL = 3


def turn_messages(
    messages: list[dict[str, Any]] | None, now: int
) -> tuple[list[OutboxMessage], tuple[str, ...]]:
    """User/assistant messages, redacted before anything is written (docs/ARCHITECTURE.md:
    redaction before the disk)."""
    if messages is None:
        return [], ()
    if not isinstance(messages, list | tuple):
        raise errors.InvalidArgumentError("messages must be a list of {role, content}")
    kept: list[tuple[str, str, int]] = []
    for raw in messages:
        if not isinstance(raw, dict):
            raise errors.InvalidArgumentError("each message must be a mapping")
        role = raw.get("role")
        text = message_text(raw.get("content"))
        if role not in ROLES or not text.strip() or is_memory_block(text):
            continue  # tool chatter and our own injected blocks are not the conversation
        text = v.utf8(text[: MAX_MESSAGE_CHARS + CUT_MARGIN], "message")
        kept.append((role, text, message_time(raw.get("timestamp"), default=now)))
    # read together: a secret the user named is redacted where the reply repeats it bare
    scrubbed = [_cut(r) for r in redact_many([text for _, text, _ in kept])]
    found = {label for r in scrubbed for label in r.labels}
    out = [
        OutboxMessage(role=role, content=r.text, timestamp=stamp)
        for (role, _, stamp), r in zip(kept, scrubbed, strict=True)
    ]
    return out[-MAX_TURN_MESSAGES:], tuple(sorted(found))


def new_messages(state: StateStore, session: str, msgs: list[OutboxMessage]) -> list[OutboxMessage]:
    """Drop what an earlier job of this session already carries (a whole-window caller).

    The last few queued messages are remembered by role and text; where that run appears
    in the window again, only what follows it is new.
    """
    tail = state.get("outbox", _state_key(session))
    if not isinstance(tail, list) or not tail:
        return msgs
    keys = [_message_key(m) for m in msgs]
    n = len(tail)
    for end in range(len(keys), n - 1, -1):
        if keys[end - n : end] == tail:
            return msgs[end:]
    return msgs


def remember_queued(state: StateStore, session: str, msgs: list[OutboxMessage]) -> None:
    tail = [_message_key(m) for m in msgs[-REMEMBERED_TAIL:]]
    state.set("outbox", _state_key(session), tail)


def _state_key(session: str) -> str:
    return session_key(session)


def _message_key(msg: OutboxMessage) -> str:
    # no timestamp: a harness that sends none gets "now", which differs on every call
    return f"{msg.role}:{fingerprint(msg.content)}"


def redact_then_cut(text: str, limit: int = MAX_MESSAGE_CHARS) -> Redaction:
    """``text`` redacted, then cut to ``limit`` characters: cutting first would leave the head
    of a secret no rule knows by its shape any more (20 of a GitHub token's 40 characters)."""
    return _cut(redact(text), limit)


def _cut(scrubbed: Redaction, limit: int = MAX_MESSAGE_CHARS) -> Redaction:
    if len(scrubbed.text) <= limit:
        return scrubbed
    return Redaction(scrubbed.text[:limit], scrubbed.labels)
