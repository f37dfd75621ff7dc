"""The shared pydantic models: the stored record and the store's responses.

All models are immutable values (``frozen=True, extra="forbid"``). ``Memory`` is exactly one
``memories.jsonl`` line; ``relevance_score`` never lives on it (it rides on ``ScoredMemory``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, StrictInt, ValidationError

from shared.contract.errors import InvalidArgumentError, UnknownError
from shared.contract.frozen import Frozen as Frozen

MemoryType = Literal["user", "feedback", "project", "reference"]
MemoryScope = Literal["session", "project", "global"]
Status = Literal["canonical", "pending"]
Confidence = Literal["stated", "extracted", "inferred"]
RecallMode = Literal["hybrid", "lexical", "semantic"]
MEMORY_TYPES: tuple[str, ...] = ("user", "feedback", "project", "reference")
MEMORY_SCOPES: tuple[str, ...] = ("session", "project", "global")
CONFIDENCES: tuple[str, ...] = ("stated", "extracted", "inferred")
# Enough for the turns that can replay at once: only unacknowledged extraction jobs replay.
CORROBORATED_BY_KEPT = 8
# The tag of a record an application addresses by its own key (the LangGraph store's items):
# its data, not a remembered fact, so no automatic path merges, retires, reinforces or
# promotes it (consolidation leaves it out; extraction neither shows nor corrects it).
KEYED = "keyed"


class Provenance(Frozen):
    """Where a record came from; set at creation, never changed (memory.v1 provenance:
    docs/PROTOCOLS.md#record-and-the-reference-tools)."""

    source_session_id: str | None = None
    source_turn_id: str | None = None
    recorded_by: str | None = None
    # An imported record (``import_records``): when it was imported, and where from outside
    # this store (``mem0:<id>``, ``markdown:<file>:<line>``); None for a record saved here.
    imported_at: int | None = None
    source: str | None = None


class Memory(Frozen):
    """One memory record: one full JSONL line. Replay keeps the highest ``revision`` per id."""

    id: str
    fingerprint: str
    type: MemoryType = "user"
    scope: MemoryScope = "global"
    project: str | None = None
    session_id: str | None = None
    title: str = ""
    text: str
    tags: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    links: tuple[str, ...] = ()
    pinned: bool = False
    status: Status = "canonical"
    confidence: Confidence = "stated"
    corroboration: int = 0
    # The turns behind the latest corroborations, newest last (at most ``CORROBORATED_BY_KEPT``):
    # a turn restating a fact it already corroborated (an extraction job replayed after a
    # crash) counts once. The creating turn is ``provenance.source_turn_id``, not repeated here.
    corroborated_by: tuple[str, ...] = ()
    provenance: Provenance = Field(default_factory=Provenance)
    created_at: int
    updated_at: int
    stated_at: int
    # When the remembered thing happened or was said (ms since epoch): a dialog
    # turn's session date, the date an event refers to. None: unknown (``stated_at`` stands in).
    occurred_at: int | None = None
    revision: int = 0
    invalid_at: int | None = None
    superseded_by: str | None = None
    tokens: int = 0

    @property
    def live(self) -> bool:
        return self.invalid_at is None

    def seen_from(self, project: str | None, sessions: Callable[[], Collection[str]]) -> bool:
        """Whether an agent working in ``project`` (an absolute folder, or None) whose session
        lineage is ``sessions()`` (asked only for a session memory) sees this memory, as recall
        shows it: a global one, one of its project, one of its session or an ancestor. The
        MCP tools, the memory tool and the extractor hold ids and listings to it."""
        if self.scope == "global":
            return True
        if self.scope == "project":
            return project is not None and self.project == project
        return (
            self.scope == "session"
            and self.session_id is not None
            and (self.session_id in sessions())
        )

    def to_line(self) -> str:
        return self.model_dump_json(exclude_defaults=True)

    @classmethod
    def from_line(cls, line: str | bytes) -> Memory:
        try:
            return cls.model_validate_json(line)
        except ValidationError as e:
            raise InvalidArgumentError(f"not a memory record: {e.errors()[0]['msg']}") from e


class Why(Frozen):
    """What made a recalled memory relevant (``store_worker/recall/relevance.py``)."""

    terms: tuple[str, ...] = ()  # query terms (stemmed) the memory holds
    context: tuple[str, ...] = ()  # query terms only its neighbouring dialog turns hold
    entities: tuple[str, ...] = ()  # entity handles the query names and the memory carries
    date: bool = False  # the memory falls in a time the query names
    semantic: float | None = None  # the model arm's cosine, when a model is on
    recency: float = 1.0  # the recency factor recall applied (1: none)
    pinned: bool = False
    ambient: bool = False  # brought by the ambient floor (pinned or always-on), not by the query


class ScoredMemory(Frozen):
    memory: Memory
    relevance_score: float = Field(ge=0.0, le=1.0)
    score: float
    why: Why | None = None


class BankInfo(Frozen):
    name: str
    description: str = ""
    created_at: int = 0
    memories: int = 0
    rules: int = 0
    pinned: int = 0


class BankCreateResponse(Frozen):
    bank: BankInfo
    created: bool
    redacted: tuple[str, ...] = ()  # what kinds of secret the description held


class BankListResponse(Frozen):
    banks: tuple[BankInfo, ...]


class BankDeleteResponse(Frozen):
    ok: bool
    trashed_to: str


class SaveResponse(Frozen):
    created: bool
    memory: Memory
    bank: str
    redacted: tuple[str, ...] = ()


MAX_SAVE_ITEMS = 1_000  # save_many's items per call (the store refuses more)


RequestT = TypeVar("RequestT", bound=Frozen)


def _request(cls: type[RequestT], value: object, where: str, verb: str) -> RequestT:
    """One item of a ``*_many`` call as its request model: the model itself, or a mapping of
    the verb's arguments; anything else, or a bad shape, is ``invalid_argument``."""
    if isinstance(value, cls):
        return value
    changed = getattr(value, "changed", None)  # an op (shared.contract.ops): its arguments
    if callable(changed):
        value = changed()
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"{where} must be a mapping of {verb} arguments")
    try:
        return cls.model_validate(value)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "item"
        raise InvalidArgumentError(f"{where}: {field}: {err['msg']}") from e


class SaveRequest(Frozen):
    """One ``save``'s arguments, as ``save_many`` takes them (the store validates each value
    exactly as ``save`` does; this model only checks the shape)."""

    text: str
    bank: str | None = None
    title: str | None = None
    id: str | None = None
    type: str = "user"
    scope: str = "global"
    project: str | None = None
    session_id: str | None = None
    turn_id: str | None = None
    recorded_by: str | None = None
    tags: tuple[str, ...] | None = None
    entities: tuple[str, ...] | None = None
    pinned: bool = False
    confidence: str = "stated"
    status: str | None = None
    occurred_at: StrictInt | None = None  # ms since epoch; "123", 1.5 and True are refused

    @classmethod
    def of(cls, value: object, where: str = "item") -> SaveRequest:
        """A request from a model or a mapping; anything else is ``invalid_argument``."""
        return _request(cls, value, where, "save")


class SaveManyResponse(Frozen):
    """``save_many``: one ``SaveResponse`` per item, in order (all were committed together)."""

    results: tuple[SaveResponse, ...]
    created: int


class MemoryResponse(Frozen):
    memory: Memory
    bank: str
    redacted: tuple[str, ...] = ()  # what kinds an update's fields or a reason held


class HistoryResponse(Frozen):
    """``history``: every stored revision of one memory, oldest first (its last is the memory
    as it stands), the memories it superseded, and the one that superseded it, if any."""

    bank: str
    id: str
    revisions: tuple[Memory, ...]
    supersedes: tuple[str, ...] = ()
    superseded_by: str | None = None


class SupersedeResponse(Frozen):
    memory: Memory
    survivor: Memory
    reinforced: bool
    bank: str
    redacted: tuple[str, ...] = ()  # what kinds the reason held


class SupersedeRequest(Frozen):
    """One ``supersede``'s arguments, as ``supersede_many`` takes them (the store validates
    each value exactly as ``supersede`` does; this model only checks the shape)."""

    id: str
    superseded_by: str
    bank: str | None = None
    reason: str | None = None
    reinforce: bool = False
    revision: int | None = None  # only while ``id`` is at this revision (``supersede``)

    @classmethod
    def of(cls, value: object, where: str = "item") -> SupersedeRequest:
        """A request from a model or a mapping; anything else is ``invalid_argument``."""
        return _request(cls, value, where, "supersede")


class SupersedeManyResponse(Frozen):
    """``supersede_many``: one ``SupersedeResponse`` per item, in order (all were committed
    together)."""

    results: tuple[SupersedeResponse, ...]


class ListResponse(Frozen):
    memories: tuple[Memory, ...]
    next_page_token: str | None = None
    total: int
    bank: str


class RecallResponse(Frozen):
    memories: tuple[ScoredMemory, ...]
    retrieval: RecallMode
    bank: str
    # The query as recall read it, when it read a misspelt word as a word the bank holds
    # ("Which torunament …" → "Which tournament …", store_worker/recall/spelling.py); None when it
    # was read as asked. A caller can show it ("read as …") or ask again as it was meant.
    read_as: str | None = None


class TagCount(Frozen):
    tag: str
    count: int


class TagsResponse(Frozen):
    bank: str
    tags: tuple[TagCount, ...]


class Rule(Frozen):
    name: str
    content: str
    chars: int = 0
    learned: bool = False


class RuleListResponse(Frozen):
    bank: str
    rules: tuple[Rule, ...]


class RuleSetResponse(Frozen):
    ok: bool
    exists: bool
    bank: str
    name: str
    redacted: tuple[str, ...] = ()


class DoctorCheck(Frozen):
    name: str
    ok: bool
    required: bool = True
    detail: str = ""


class DoctorResponse(Frozen):
    ok: bool
    checks: tuple[DoctorCheck, ...]


class ReloadResponse(Frozen):
    ok: bool
    banks: tuple[str, ...]
    corrupt_lines: int = 0


class Event(Frozen):
    """One ``item-changed`` / ``bank-changed`` event; ``seq`` is the pull cursor position."""

    seq: int
    kind: Literal["item-changed", "bank-changed"]
    event_type: str
    bank: str
    memory: Memory | None = None
    reason: str | None = None
    redacted: tuple[str, ...] = ()
    at: int = 0


class BankRescan(Frozen):
    """What ``redact_rescan`` did to one bank: how many memories (current records, drafts
    included) and rules held a secret today's catalogue knows, of which kinds, whether the
    description did, and whether the log was compacted without it (``purged``; with
    ``log_lines`` lines rewritten)."""

    bank: str
    memories: int = 0
    rules: int = 0
    description: bool = False
    kinds: tuple[str, ...] = ()
    purged: bool = False
    log_lines: int = 0


class RescanResponse(Frozen):
    """``redact_rescan``: one entry per bank scanned, every kind found in any of them, and
    how many extraction jobs (queued or dead-lettered turns) were rewritten."""

    banks: tuple[BankRescan, ...]
    kinds: tuple[str, ...] = ()
    outbox_jobs: int = 0


class PurgeResponse(Frozen):
    """``purge``: the memory ``id`` is gone from ``bank`` for good, with every revision
    (``revisions`` log lines, plus its draft file when it was pending)."""

    id: str
    bank: str
    revisions: int
    draft: bool = False


class EventsResponse(Frozen):
    events: tuple[Event, ...]
    cursor: int


def dump(model: BaseModel) -> dict[str, Any]:
    """JSON-ready dict of a model (the CLI's ``--json``)."""
    return model.model_dump(mode="json")


# -- ratification, links, injection ----------------------------------------------------------


class RejectResponse(Frozen):
    """RejectRecord's DeleteResult: the draft is gone from disk and RAM."""

    id: str
    bank: str
    deleted: bool


class InjectedMemory(Frozen):
    memory: Memory
    score: float  # the recall score; 0.0 for a memory added by the ambient floor
    relevance_score: float = 0.0  # the calibrated relevance (``ScoredMemory``'s)
    why: Why | None = None


class InjectResponse(Frozen):
    """``pre_generate``'s reply: never a denial, only optional additions (memory never blocks
    a harness's turn)."""

    decision: Literal["continue"] = "continue"
    bank: str | None
    system_prompt: str | None = None  # add to the system prompt; identical on every step
    append_messages: tuple[dict[str, str], ...] = ()
    memories: tuple[InjectedMemory, ...] = ()
    ambient: int = 0  # of ``memories``, how many the ambient floor brought
    retrieval: str = "none"
    rules: int = 0
    rules_truncated: bool = False
    notes: tuple[str, ...] = ()


class PreviewResponse(Frozen):
    """``preview``: what a new session would get for a hypothetical message."""

    bank: str
    system_prompt_section: str
    rules: int
    rules_truncated: bool
    memories: tuple[InjectedMemory, ...]
    message: str | None
    retrieval: str
    ambient: int = 0  # of ``memories``, how many the ambient floor brought
    tokens: int = 0  # what the recalled block costs the turn (the store's tokenizer)
    min_relevance: float = 0.0  # the threshold the recalled memories met


class DanglingLink(Frozen):
    """``source`` links to ``target``, which has no live record."""

    source: str
    target: str
    reason: Literal["missing", "retired"]
    superseded_by: str | None = None


class DanglingResponse(Frozen):
    bank: str
    links: tuple[DanglingLink, ...]


class BacklinksResponse(Frozen):
    bank: str
    id: str
    exists: bool
    memories: tuple[Memory, ...]


# -- the extraction outbox: the siblings' plumbing -----------------------------------------


class OutboxMessage(Frozen):
    role: Literal["user", "assistant"]
    content: str
    timestamp: (
        int  # ms since epoch: each message keeps its own date (relative dates resolve against it)
    )


class OutboxJob(Frozen):
    """One queued extraction pass over one finished turn."""

    job_id: str
    session_id: str
    turn_id: str | None = None
    bank: str | None = None  # the bank the turn was injected with
    skip: bool = False  # the turn ran without memory: the job only steps past it
    status: str = "completed"
    parent_session_id: str | None = None
    messages: tuple[OutboxMessage, ...] = ()
    enqueued_at: int
    attempts: int = 0
    next_attempt_at: int = 0
    errors: tuple[str, ...] = ()
    dead_at: int | None = None
    redacted: tuple[str, ...] = ()
    # The extractor's validated reply, recorded before it applied any of it: a re-run
    # applies this instead of asking the model again.
    reply: dict[str, Any] | None = None
    # The claim's token (only on a claimed copy, never on disk): ``outbox_note`` checks it.
    lease: str | None = Field(default=None, exclude=True)


class OutboxJobSummary(Frozen):
    job_id: str
    state: Literal["queued", "leased", "waiting", "dead"]
    session_id: str
    turn_id: str | None
    bank: str | None
    messages: int
    attempts: int
    enqueued_at: int
    next_attempt_at: int
    last_error: str | None = None


class OutboxListResponse(Frozen):
    queued: int
    leased: int
    dead: int
    jobs: tuple[OutboxJobSummary, ...] = Field(default_factory=tuple)


class TurnCompletedResponse(Frozen):
    ok: bool
    queued: bool
    job_id: str | None = None
    reason: str = ""
    redacted: tuple[str, ...] = ()


class OutboxAckResponse(Frozen):
    ok: bool
    job_id: str
    state: Literal["acked", "queued", "dead", "missing", "leased", "dropped"]
    attempts: int = 0
    next_attempt_at: int = 0


class OutboxPolicy(Frozen):
    """The outbox's one retry policy, as the store publishes it in ``capabilities()["outbox"]``
    (``StoreSettings.outbox_*``). The extractor reads it instead of configuring its own copy,
    so both sides agree on when a job is dead."""

    max_attempts: int = Field(ge=1)
    lease_ms: int = Field(ge=0)
    backoff_ms: int = Field(ge=0)
    backoff_max_ms: int = Field(ge=0)

    @classmethod
    def of(cls, capabilities: dict[str, Any]) -> OutboxPolicy:
        """The policy inside a ``capabilities()`` answer; a store without one is an error."""
        raw = capabilities.get("outbox")
        if not isinstance(raw, dict):
            raise UnknownError("the store publishes no outbox retry policy (an older store?)")
        try:
            return cls.model_validate(raw)
        except ValidationError as e:
            raise UnknownError(f"the store's outbox policy is malformed: {e}") from e

    def backoff(self, attempt: int) -> int:
        """The delay after failed try ``attempt`` (1-based): doubling, capped (the store's own
        formula in ``outbox_fail``)."""
        return int(min(self.backoff_ms * 2 ** max(attempt - 1, 0), self.backoff_max_ms))

    def is_last(self, attempt: int) -> bool:
        """Whether a failure of try ``attempt`` dead-letters the job (``outbox_fail``)."""
        return attempt >= self.max_attempts


class ImportProblem(Frozen):
    """An item ``import_records`` refused (with ``skip_bad``): its index in the call's items,
    and the typed error's category and message."""

    index: int
    category: str
    message: str


class ImportResponse(Frozen):
    """What ``import_records`` wrote (or with ``dry_run`` would write, and which): ``written``
    revisions, ``unchanged`` ones the bank already held (a re-import), the refused items, and
    the kinds of secret redacted."""

    bank: str
    written: int = 0
    unchanged: int = 0
    problems: tuple[ImportProblem, ...] = ()
    redacted: tuple[str, ...] = ()
    dry_run: bool = False
    # with ``dry_run``: the records that would be written, as they would be (redacted)
    records: tuple[Memory, ...] = ()


class ExportResponse(Frozen):
    """One page of a bank's records (``export``), and the token of the next page (None: the
    last)."""

    bank: str
    records: tuple[Memory, ...] = ()
    next_page_token: str | None = None


# the learned-rule review queue's answers (declared in their own module)
from shared.contract.review_models import RuleDecisionResponse as RuleDecisionResponse  # noqa: E402
from shared.contract.review_models import RulePendingResponse as RulePendingResponse  # noqa: E402
from shared.contract.review_models import RuleProposal as RuleProposal  # noqa: E402
from shared.contract.review_models import RuleProposeResponse as RuleProposeResponse  # noqa: E402
