"""Validate the extraction model's reply with pydantic before anything of it is written.

Models are sloppy, so the reader is tolerant where the intent is clear and strict where it is
not: JSON inside prose or a code fence is found; a bare array is the memories list; one object
where a list belongs is a list of one; an invalid optional field (a bad type, a non-slug id)
falls back to its default; an item without usable text is dropped and counted. A reply with no
JSON value at all is a ``ReplyError`` (the job retries, then dead-letters).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from shared.contract import errors
from shared.contract.models import MEMORY_TYPES
from shared.redact import is_placeholder, redact
from shared.text import SLUG_RE, entity_norm

MAX_LABELS = 8
MAX_MEMORY_CHARS = 2_000
MAX_RULE_CHARS = 500
REDACTED = "[REDACTED:"
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)


class ReplyError(errors.InvalidArgumentError):
    """Raised when the model's reply holds no usable JSON; worth retrying (models vary)."""

    default_retryable = True


class ExtractedMemory(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    text: str
    type: Literal["user", "feedback", "project", "reference"] = "user"
    entities: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    confidence: Literal["extracted", "inferred"] = "extracted"
    reinforces: str | None = None
    supersedes: str | None = None

    @field_validator("text", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise ValueError("a memory needs non-empty text")
        text = " ".join(redact(value).text.split())[:MAX_MEMORY_CHARS]
        if REDACTED in text:
            raise ValueError("a memory about a secret is not kept")  # a secret is never stored
        return text

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, value: Any) -> str:
        return value if value in MEMORY_TYPES else "user"

    @field_validator("entities", "tags", mode="before")
    @classmethod
    def _labels(cls, value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple):
            return ()
        out: dict[str, None] = {}
        for raw in value:
            if isinstance(raw, str) and (norm := entity_norm(redact(raw).text)):
                if not is_placeholder(norm):  # a placeholder names no entity
                    out.setdefault(norm, None)
        return tuple(out)[:MAX_LABELS]

    @field_validator("confidence", mode="before")
    @classmethod
    def _confidence(cls, value: Any) -> str:
        return "inferred" if value == "inferred" else "extracted"

    @field_validator("reinforces", "supersedes", mode="before")
    @classmethod
    def _ref(cls, value: Any) -> str | None:
        return value if isinstance(value, str) and SLUG_RE.match(value) else None


class ExtractionReply(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    memories: tuple[ExtractedMemory, ...] = ()
    rules: tuple[str, ...] = ()
    dropped: int = Field(0, description="Items that could not be used.")


def parse_reply(text: str) -> ExtractionReply:
    """The memories and rules in a model reply; see the module docstring."""
    value = _find_json(text)
    if isinstance(value, list):
        value = {"memories": value}
    if not isinstance(value, dict):
        raise ReplyError("the reply's JSON is neither an object nor an array")
    if "memories" not in value and "rules" not in value and "text" in value:
        value = {"memories": [value]}  # one memory, bare
    memories, dropped = _memories(value.get("memories"))
    rules, dropped_rules = _rules(value.get("rules"))
    return ExtractionReply(memories=memories, rules=rules, dropped=dropped + dropped_rules)


def _find_json(text: str) -> Any:
    if not isinstance(text, str) or not text.strip():
        raise ReplyError("the reply is empty")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for chunk in candidates:
        chunk = chunk.strip()
        try:
            return json.loads(chunk)
        except ValueError:
            pass
        for start in (i for i, ch in enumerate(chunk) if ch in "{["):
            try:
                value, _ = decoder.raw_decode(chunk, start)
            except ValueError:
                continue
            if isinstance(value, dict | list):
                return value
    raise ReplyError("no JSON object or array in the reply")


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    return [value]  # one object where a list belongs


def _memories(value: Any) -> tuple[tuple[ExtractedMemory, ...], int]:
    out: list[ExtractedMemory] = []
    dropped = 0
    for item in _as_list(value):
        if isinstance(item, str):
            item = {"text": item}
        try:
            out.append(ExtractedMemory.model_validate(item))
        except ValidationError:
            dropped += 1
    return tuple(out), dropped


def _rules(value: Any) -> tuple[tuple[str, ...], int]:
    out: dict[str, None] = {}
    dropped = 0
    for item in _as_list(value):
        if isinstance(item, dict):
            item = item.get("text") or item.get("rule") or item.get("instruction")
        if not isinstance(item, str) or not item.strip():
            dropped += 1
            continue
        line = " ".join(redact(item).text.split()).lstrip("-*• ").strip()[:MAX_RULE_CHARS]
        if line and REDACTED not in line:
            out.setdefault(line, None)
        else:
            dropped += 1
    return tuple(out), dropped
