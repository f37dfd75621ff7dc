"""proto ⇄ pydantic for memory.v1 (``shared/proto/memory/v1/memory.proto``).

Enums: ``*_UNSPECIFIED`` (or a number the proto does not know) never turns into a valid-looking
value — it is ``invalid_type`` / ``invalid_scope`` (a caller that forgets to set type or scope must
get a named error, not a default; docs/PROTOCOLS.md#types-and-scopes). Content is text-only in v1:
blocks are joined with a blank line on the way in and come back as one block. ``relevance_score`` is
set only on Recall/ListRecords results, and only when the store computed one (a fabricated score
would mislead the kernel).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from google.protobuf import json_format, struct_pb2, timestamp_pb2

from shared.contract import errors
from shared.contract.models import Memory, ScoredMemory
from shared.proto.memory.v1 import memory_pb2 as pb

TYPE_ENUM = {
    "user": pb.MEMORY_TYPE_USER,
    "feedback": pb.MEMORY_TYPE_FEEDBACK,
    "project": pb.MEMORY_TYPE_PROJECT,
    "reference": pb.MEMORY_TYPE_REFERENCE,
}
SCOPE_ENUM = {
    "session": pb.MEMORY_SCOPE_SESSION,
    "project": pb.MEMORY_SCOPE_PROJECT,
    "global": pb.MEMORY_SCOPE_GLOBAL,
}
STATUS_ENUM = {"canonical": pb.RECORD_STATUS_CANONICAL, "pending": pb.RECORD_STATUS_PENDING}
TYPES: dict[int, str] = {number: name for name, number in TYPE_ENUM.items()}
SCOPES: dict[int, str] = {number: name for name, number in SCOPE_ENUM.items()}
STATUSES: dict[int, str] = {number: name for name, number in STATUS_ENUM.items()}
CATEGORY_ENUM = {
    "not_found": pb.MEMORY_ERROR_CATEGORY_NOT_FOUND,
    "invalid_type": pb.MEMORY_ERROR_CATEGORY_INVALID_TYPE,
    "ratification_unsupported": pb.MEMORY_ERROR_CATEGORY_RATIFICATION_UNSUPPORTED,
    "budget_exceeded": pb.MEMORY_ERROR_CATEGORY_BUDGET_EXCEEDED,
    "source_unavailable": pb.MEMORY_ERROR_CATEGORY_SOURCE_UNAVAILABLE,
    "unknown": pb.MEMORY_ERROR_CATEGORY_UNKNOWN,
    "invalid_scope": pb.MEMORY_ERROR_CATEGORY_INVALID_SCOPE,
}
REMEMBER_ACTIONS = {
    "created": pb.REMEMBER_ACTION_CREATED,
    "reinforced": pb.REMEMBER_ACTION_REINFORCED,
    "updated": pb.REMEMBER_ACTION_UPDATED,
    "needs_confirmation": pb.REMEMBER_ACTION_NEEDS_CONFIRMATION,
}

# -- enums in ------------------------------------------------------------------------------


def memory_type(value: int) -> str:
    found = TYPES.get(value)
    if found is None:
        raise errors.InvalidTypeError(_enum_message("type", "MemoryType", value, TYPES.values()))
    return found


def memory_scope(value: int) -> str:
    found = SCOPES.get(value)
    if found is None:
        raise errors.InvalidScopeError(
            _enum_message("scope", "MemoryScope", value, SCOPES.values())
        )
    return found


def _enum_message(field: str, enum: str, value: int, names: Iterable[str]) -> str:
    state = "unspecified" if value == 0 else f"unknown value {value}"
    return f"{field} is {state}; set a {enum} ({', '.join(names)})"


def type_filter(values: Sequence[int]) -> list[str]:
    return [memory_type(v) for v in values]


def scope_filter(values: Sequence[int]) -> list[str]:
    return [memory_scope(v) for v in values]


def status(value: int) -> str | None:
    """A status filter: UNSPECIFIED means no filter."""
    if value == pb.RECORD_STATUS_UNSPECIFIED:
        return None
    found = STATUSES.get(value)
    if found is None:
        raise errors.InvalidArgumentError(f"unknown RecordStatus value {value}")
    return found


# The most records the store's ``list`` pages at once (store_worker.storage.validate.page_size).
MAX_PAGE_SIZE = 500


def page_size(value: int) -> int | None:
    """A page size: 0 is the provider's default; above the store's largest page, the largest
    (memory.v1 sets no maximum on ``page_size``, and a page is allowed to be shorter than
    asked: the token carries on). A negative size stays malformed."""
    if value == 0:
        return None
    return min(value, MAX_PAGE_SIZE)


def min_relevance(req: pb.RecallRequest) -> float | None:
    """RecallRequest's relevance threshold: unset is none; else a number from 0 to 1 (NaN and
    anything outside are malformed, refused before the store is asked)."""
    if not req.HasField("min_relevance"):
        return None
    value = req.min_relevance
    if not 0.0 <= value <= 1.0:  # false for NaN as well
        raise errors.InvalidArgumentError(
            f"min_relevance must be a number from 0 to 1, got {value!r}"
        )
    return value


def content_text(blocks: Sequence[pb.ContentBlock]) -> str:
    """ContentBlock list → the record's text (v1 blocks are text-only)."""
    return "\n\n".join(b.text for b in blocks if b.text.strip())


def optional(value: str) -> str | None:
    return value or None


# -- records out ---------------------------------------------------------------------------


def timestamp(ms: int) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromMilliseconds(ms)
    return ts


def record(mem: Memory, relevance: float | None = None) -> pb.MemoryRecord:
    """A stored Memory as a MemoryRecord; ``relevance`` only for Recall/ListRecords results."""
    prov = mem.provenance
    out = pb.MemoryRecord(
        id=mem.id,
        type=TYPE_ENUM[mem.type],
        scope=SCOPE_ENUM[mem.scope],
        title=mem.title,
        content=[pb.ContentBlock(text=mem.text)],
        tokens=mem.tokens,
        status=STATUS_ENUM[mem.status],
        links=list(mem.links),
        created_at=timestamp(mem.created_at),
        updated_at=timestamp(mem.updated_at),
        provenance=pb.Provenance(
            source_session_id=prov.source_session_id or "",
            recorded_by=prov.recorded_by or "",
        ),
    )
    if prov.source_turn_id:
        out.provenance.source_turn_id = prov.source_turn_id
    if relevance is not None:
        out.relevance_score = min(max(float(relevance), 0.0), 1.0)
    return out


def scored(hits: Sequence[ScoredMemory]) -> list[pb.MemoryRecord]:
    return [record(h.memory, h.relevance_score) for h in hits]


def result(mem: Memory) -> pb.RecordResult:
    return pb.RecordResult(id=mem.id, status=STATUS_ENUM[mem.status])


# -- capabilities, config, identity --------------------------------------------------------


def capabilities(caps: dict[str, Any]) -> pb.MemoryCapabilities:
    schema = caps.get("config_schema") or {}
    return pb.MemoryCapabilities(
        default_token_budget=int(caps["default_token_budget"]),
        supported_types=[TYPE_ENUM[t] for t in caps["supported_types"]],
        supported_scopes=[SCOPE_ENUM[s] for s in caps["supported_scopes"]],
        ratification_supported=bool(caps["ratification_supported"]),
        config_schema=pb.ConfigSchema(
            fields=_config_fields(schema), json_schema=json.dumps(schema, sort_keys=True)
        ),
        supported_hook_points=[
            f"HOOK_POINT_{h.upper().replace('-', '_')}"
            for h in caps.get("supported_hook_points") or ()
        ],
    )


def _config_fields(schema: dict[str, Any]) -> list[pb.ConfigField]:
    out = []
    for name, prop in sorted((schema.get("properties") or {}).items()):
        kinds = (
            [prop["type"]]
            if "type" in prop
            else [a.get("type", "?") for a in prop.get("anyOf", [])]
        )
        out.append(
            pb.ConfigField(
                name=name,
                type="|".join(str(k) for k in kinds),
                description=str(prop.get("description", "")),
                default_json=json.dumps(prop.get("default")),
            )
        )
    return out


def config_in(struct: struct_pb2.Struct) -> dict[str, Any]:
    """A Configure block → plain values; JSON numbers arrive as floats, whole ones become ints."""
    raw = json_format.MessageToDict(struct)
    return {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in raw.items()}


def config_out(values: dict[str, Any]) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(json.loads(json.dumps(values, default=str)))
    return out


def producer(desc: dict[str, Any]) -> pb.ProducerRef:
    return pb.ProducerRef(
        name=str(desc["name"]), version=str(desc["version"]), digest=str(desc["digest"])
    )


def memory_error(err: errors.MemoryServiceError) -> pb.MemoryError:
    return pb.MemoryError(
        category=CATEGORY_ENUM.get(err.category, pb.MEMORY_ERROR_CATEGORY_UNKNOWN),
        message=err.message,
        retryable=err.retryable,
    )
