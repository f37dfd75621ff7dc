"""The store's operations as data: one frozen request per operation.

Each operation is declared here once, as a dataclass whose fields are the operation's
arguments (positional where the store takes them so, keyword-only after ``_: KW_ONLY``). The
class says everything a transport needs to carry it:

- its **response type** (``Op[Response]``; ``response_type()`` resolves it lazily, so a
  process that builds ops never imports pydantic or the models);
- whether it is a **read** (``Read``: changes nothing, safe to re-send after a lost answer) or a
  **write** (``Write``: sent at most once; a re-run could count an observation twice);
- its **route** for a sharded store: ``bank`` (the op's ``bank``, else the default bank),
  ``name`` (the op's ``name`` is a bank), ``items`` (every item on one bank), ``session`` (the
  session's bank), ``job`` (the outbox job's shard), ``all`` (fans out and merges), ``first``
  (shard 0, the holder of shared state) or ``local`` (never crosses a process boundary).

``StoreAPI`` (``shared.api``) writes the typed methods once over ``call(op)``; every way of
reaching a store is a transport implementing only ``call`` (``docs/ARCHITECTURE.md``).

Ops are plain frozen dataclasses, not pydantic models, on purpose: building one costs a CLI
process nothing to import, pickles small over Ray, and the side that receives an op from the
wire validates it once (``decode``). Label options (tags, filters) accept any iterable and are
frozen into a tuple, so an op can be re-sent (a spent generator cannot).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

if TYPE_CHECKING:  # the answers' types, named in strings (no pydantic at run time)
    from shared.models import (  # noqa: F401
        BacklinksResponse,
        BankCreateResponse,
        BankDeleteResponse,
        BankInfo,
        BankListResponse,
        DanglingResponse,
        DoctorResponse,
        EventsResponse,
        InjectResponse,
        ListResponse,
        Memory,
        MemoryResponse,
        OutboxAckResponse,
        OutboxJob,
        OutboxListResponse,
        PreviewResponse,
        PurgeResponse,
        RecallResponse,
        RejectResponse,
        ReloadResponse,
        RescanResponse,
        Rule,
        RuleListResponse,
        RuleSetResponse,
        SaveManyResponse,
        SaveResponse,
        SupersedeManyResponse,
        SupersedeResponse,
        TagsResponse,
        TurnCompletedResponse,
    )

R = TypeVar("R", covariant=True)
Route = Literal["bank", "name", "items", "session", "job", "all", "first", "local"]
Labels = Iterable[str] | None
Message = dict[str, Any]
"""One chat message as a harness sends it: ``role``, ``content``, optional ``timestamp``."""

REGISTRY: dict[str, type[Op[Any]]] = {}
"""Every operation by its method name (``save``, ``bank_create``...)."""


class Op(Generic[R]):
    """An operation whose answer is an ``R``. Subclass ``Read`` or ``Write``, never this."""

    method: ClassVar[str]  # the StoreAPI method: the class name in snake case
    retry: ClassVar[bool]  # True: safe to re-send after a lost answer
    route: ClassVar[Route] = "bank"
    wire: ClassVar[bool] = True  # False: its arguments only make sense in the caller's process

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__name__ in ("Read", "Write"):
            return
        if "method" not in cls.__dict__:
            cls.method = _snake(cls.__name__)
        REGISTRY[cls.method] = cls

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.type == "Labels" and value is not None and not isinstance(value, str | tuple):
                object.__setattr__(self, f.name, tuple(value))

    def args(self) -> dict[str, Any]:
        """Every argument by name."""
        return {f.name: getattr(self, f.name) for f in _fields(type(self))}

    def changed(self) -> dict[str, Any]:
        """The arguments that differ from their defaults (what a wire needs to carry)."""
        out: dict[str, Any] = {}
        for f in _fields(type(self)):
            value = getattr(self, f.name)
            if f.default is dataclasses.MISSING or value != f.default:
                out[f.name] = value
        return out

    @classmethod
    def response_type(cls) -> Any:
        """The declared answer type (``SaveResponse``, ``tuple[Memory, ...]``, ``None``...)."""
        return _response_type(cls)


class Read(Op[R]):
    """Changes nothing: a transport may re-send it after a lost answer."""

    retry = True


class Write(Op[R]):
    """Changes the store: sent at most once."""

    retry = False


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


_FIELDS: dict[type, tuple[dataclasses.Field[Any], ...]] = {}
_RESPONSES: dict[type, Any] = {}


def _fields(cls: type[Op[Any]]) -> tuple[dataclasses.Field[Any], ...]:
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = tuple(dataclasses.fields(cls))  # type: ignore[arg-type]
    return found


def response_name(cls: type[Op[Any]]) -> Any:
    """The declared answer as written in ``Op[...]``: a string, or a type (``str``, ``None``)."""
    for base in getattr(cls, "__orig_bases__", ()):
        args = getattr(base, "__args__", ())
        if args:
            return getattr(args[0], "__forward_arg__", args[0])
    raise TypeError(f"{cls.__name__} declares no response type")


def _response_type(cls: type[Op[Any]]) -> Any:
    if cls in _RESPONSES:
        return _RESPONSES[cls]
    import builtins

    from shared import models

    text = response_name(cls)
    if not isinstance(text, str):
        found = type(None) if text is None else text
    else:
        namespace = {**vars(builtins), **vars(models), "Any": Any}
        found = eval(text, namespace)  # a type expression of our own, never input
    _RESPONSES[cls] = found
    return found


def op_named(method: str) -> type[Op[Any]]:
    """The operation called ``method``; ``InvalidArgumentError`` when there is none."""
    cls = REGISTRY.get(method)
    if cls is None:
        from shared.errors import InvalidArgumentError

        raise InvalidArgumentError(f"{method!r} is not a store operation")
    return cls


# -- liveness ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ping(Read[str]):
    """``"pong"`` once the store answers (its boot error otherwise)."""

    route: ClassVar[Route] = "first"


# -- banks -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BankCreate(Write["BankCreateResponse"]):
    """Create a bank (or describe an existing one anew)."""

    route: ClassVar[Route] = "name"
    name: str
    description: str | None = None


@dataclass(frozen=True)
class BankList(Read["BankListResponse"]):
    """Every bank, with its counts."""

    route: ClassVar[Route] = "all"


@dataclass(frozen=True)
class BankDelete(Write["BankDeleteResponse"]):
    """Move a bank to the trash (recoverable by hand)."""

    route: ClassVar[Route] = "name"
    name: str


# -- memories: writes --------------------------------------------------------------------------


@dataclass(frozen=True)
class Save(Write["SaveResponse"]):
    """Save one memory; the same normalised text re-saved reinforces instead, unless
    ``reinforce`` is False (memory.v1 Record always creates)."""

    text: str
    _: KW_ONLY
    bank: str | None = None
    title: str | None = None
    id: str | None = None
    type: str = "user"
    scope: str = "global"
    project: str | None = None
    session_id: str | None = None
    turn_id: str | None = None
    recorded_by: str | None = None
    tags: Labels = None
    entities: Labels = None
    pinned: bool = False
    confidence: str = "stated"
    status: str | None = None
    reinforce: bool = True
    occurred_at: int | None = None


@dataclass(frozen=True)
class SaveMany(Write["SaveManyResponse"]):
    """Several saves committed together, all or nothing (one fsync per bank). Each item is a
    ``Save`` (its ``reinforce`` left as it is: a batch always reinforces) or a mapping of its
    arguments."""

    route: ClassVar[Route] = "items"
    items: Sequence[object]


@dataclass(frozen=True)
class Update(Write["MemoryResponse"]):
    """Edit a memory's text, title, labels, pin or date (a new revision)."""

    id: str
    _: KW_ONLY
    bank: str | None = None
    text: str | None = None
    title: str | None = None
    tags: Labels = None
    entities: Labels = None
    pinned: bool | None = None
    type: str | None = None
    scope: str | None = None
    occurred_at: int | None = None


@dataclass(frozen=True)
class Pin(Write["MemoryResponse"]):
    """Pin (or unpin) a memory: no automatic path touches a pinned one."""

    id: str
    pinned: bool = True
    _: KW_ONLY
    bank: str | None = None


@dataclass(frozen=True)
class Delete(Write["MemoryResponse"]):
    """Retire a memory with a tombstone (never erased)."""

    id: str
    _: KW_ONLY
    bank: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Supersede(Write["SupersedeResponse"]):
    """Retire ``id`` in favour of ``superseded_by``."""

    id: str
    superseded_by: str
    _: KW_ONLY
    bank: str | None = None
    reason: str | None = None
    reinforce: bool = False
    revision: int | None = None


@dataclass(frozen=True)
class SupersedeMany(Write["SupersedeManyResponse"]):
    """Several supersedes committed together, all or nothing (one fsync per bank)."""

    route: ClassVar[Route] = "items"
    items: Sequence[object]  # each a Supersede, or a mapping of its arguments


# -- memories: reads ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Get(Read["MemoryResponse"]):
    """One memory by id."""

    id: str
    _: KW_ONLY
    bank: str | None = None


@dataclass(frozen=True)
class List(Read["ListResponse"]):
    """A bank's memories, filtered and paged."""

    _: KW_ONLY
    bank: str | None = None
    tag: str | None = None
    type: str | None = None
    scope: str | None = None
    status: str | None = None
    include_superseded: bool = False
    page_size: int | None = None
    page_token: str | None = None
    type_filter: Labels = None
    scope_filter: Labels = None


@dataclass(frozen=True)
class Tags(Read["TagsResponse"]):
    """A bank's tags with their counts."""

    _: KW_ONLY
    bank: str | None = None


@dataclass(frozen=True)
class Recall(Read["RecallResponse"]):
    """The memories that best answer ``query``."""

    query: str
    _: KW_ONLY
    bank: str | None = None
    limit: int | None = None
    tag: str | None = None
    mode: str = "hybrid"
    include_superseded: bool = False
    include_pending: bool = False
    token_budget: int | None = None
    session_id: str | None = None
    project: str | None = None
    type_filter: Labels = None
    scope_filter: Labels = None
    hint: str | None = None
    model_target: str | None = None
    as_of: int | None = None


@dataclass(frozen=True)
class Backlinks(Read["BacklinksResponse"]):
    """The memories whose text links to ``id`` with ``[[id]]``."""

    id: str
    _: KW_ONLY
    bank: str | None = None


@dataclass(frozen=True)
class Dangling(Read["DanglingResponse"]):
    """Links to memories that do not exist."""

    _: KW_ONLY
    bank: str | None = None


# -- drafts (ratification) ---------------------------------------------------------------------


@dataclass(frozen=True)
class Approve(Write["MemoryResponse"]):
    """Make a pending draft canonical."""

    id: str
    _: KW_ONLY
    bank: str | None = None


@dataclass(frozen=True)
class Reject(Write["RejectResponse"]):
    """Drop a pending draft."""

    id: str
    _: KW_ONLY
    bank: str | None = None


@dataclass(frozen=True)
class Drafts(Read["tuple[Memory, ...]"]):
    """The drafts waiting for ratification."""

    _: KW_ONLY
    bank: str | None = None


# -- secrets already stored --------------------------------------------------------------------


@dataclass(frozen=True)
class RedactRescan(Write["RescanResponse"]):
    """Re-run redaction over stored memories; ``purge`` rewrites the logs without them.
    No bank: every bank (on every shard)."""

    route: ClassVar[Route] = "all"
    _: KW_ONLY
    bank: str | None = None
    purge: bool = False


@dataclass(frozen=True)
class Purge(Write["PurgeResponse"]):
    """Rewrite a bank's log without a record's lines (audited; the one erasure)."""

    id: str
    _: KW_ONLY
    bank: str | None = None


# -- rules -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RuleList(Read["RuleListResponse"]):
    """A bank's rules."""

    _: KW_ONLY
    bank: str | None = None


@dataclass(frozen=True)
class RuleGet(Read["Rule"]):
    """One rule by name."""

    name: str
    _: KW_ONLY
    bank: str | None = None


@dataclass(frozen=True)
class RuleSet(Write["RuleSetResponse"]):
    """Write a rule (empty content removes it); ``expect`` refuses a rule changed since read."""

    name: str
    content: str
    _: KW_ONLY
    bank: str | None = None
    expect: str | None = None


# -- the harness seam --------------------------------------------------------------------------


@dataclass(frozen=True)
class PreGenerate(Write["InjectResponse"]):
    """What a turn is given: the rules section and the recalled block. A write: it remembers
    the session's bank and what its rules section was."""

    route: ClassVar[Route] = "session"
    session_id: str
    turn_id: str | None = None
    step: int = 0
    messages: list[Message] | None = None
    metadata: dict[str, Any] | None = None
    parent_session_id: str | None = None


@dataclass(frozen=True)
class Preview(Read["PreviewResponse"]):
    """What a turn asking ``query`` would be given."""

    query: str
    _: KW_ONLY
    bank: str | None = None
    session_id: str | None = None


@dataclass(frozen=True)
class TurnCompleted(Write["TurnCompletedResponse"]):
    """A finished turn: queued (redacted) for extraction."""

    route: ClassVar[Route] = "session"
    session_id: str
    turn_id: str | None = None
    messages: list[Message] | None = None
    status: str = "completed"
    parent_session_id: str | None = None
    _: KW_ONLY
    parent: str | None = None


@dataclass(frozen=True)
class LinkSession(Write[None]):
    """Declare a session's parent (its lineage)."""

    route: ClassVar[Route] = "session"
    session_id: str
    parent_session_id: str | None


@dataclass(frozen=True)
class SessionLineage(Read["tuple[str, ...]"]):
    """A session and its ancestors, nearest first."""

    route: ClassVar[Route] = "session"
    session_id: str | None


# -- sibling plumbing: the extraction outbox ---------------------------------------------------


@dataclass(frozen=True)
class OutboxWatch(Write[None]):
    """Have ``callback`` called after each enqueued turn (in the store's process)."""

    route: ClassVar[Route] = "all"
    wire: ClassVar[bool] = False
    name: str
    callback: Any


@dataclass(frozen=True)
class OutboxClaim(Write["list[OutboxJob]"]):
    """Lease up to ``limit`` jobs."""

    route: ClassVar[Route] = "all"
    limit: int = 8


@dataclass(frozen=True)
class OutboxNote(Write["OutboxJob"]):
    """Keep a job's model reply with it (a retry does not pay for the model twice)."""

    route: ClassVar[Route] = "job"
    job_id: str
    reply: dict[str, Any]
    _: KW_ONLY
    lease: str


@dataclass(frozen=True)
class OutboxAck(Write["OutboxAckResponse"]):
    """A job is done."""

    route: ClassVar[Route] = "job"
    job_id: str


@dataclass(frozen=True)
class OutboxFail(Write["OutboxAckResponse"]):
    """A job failed: retried later, or dead-lettered."""

    route: ClassVar[Route] = "job"
    job_id: str
    error: str
    _: KW_ONLY
    retry_after_ms: int | None = None
    dead_letter: bool = False
    lease: str | None = None


@dataclass(frozen=True)
class OutboxRequeue(Write["OutboxAckResponse"]):
    """Queue a dead-lettered (or leased) job again."""

    route: ClassVar[Route] = "job"
    job_id: str
    _: KW_ONLY
    fresh: bool = False


@dataclass(frozen=True)
class OutboxList(Read["OutboxListResponse"]):
    """The outbox's counts and jobs."""

    route: ClassVar[Route] = "all"
    _: KW_ONLY
    include_dead: bool = True
    limit: int = 100


@dataclass(frozen=True)
class OutboxLookup(Read["OutboxJob"]):
    """One job by id."""

    method: ClassVar[str] = "outbox_job"
    route: ClassVar[Route] = "job"
    job_id: str


# -- sibling plumbing: events and state --------------------------------------------------------


@dataclass(frozen=True)
class Subscribe(Write[None]):
    """Push matching events to ``callback`` (over Ray: the subscriber's actor handle)."""

    route: ClassVar[Route] = "all"
    wire: ClassVar[bool] = False
    name: str
    callback: Any
    banks: Labels = None


@dataclass(frozen=True)
class Unsubscribe(Write[bool]):
    """Stop a subscription; whether there was one."""

    route: ClassVar[Route] = "all"
    name: str


@dataclass(frozen=True)
class EventsSince(Read["EventsResponse"]):
    """Events after ``cursor`` (a resume token)."""

    route: ClassVar[Route] = "all"
    cursor: int = 0
    _: KW_ONLY
    limit: int = 500
    bank: str | None = None


@dataclass(frozen=True)
class StateGet(Read["object | None"]):
    """A sibling's checkpoint value."""

    route: ClassVar[Route] = "first"
    owner: str
    key: str


@dataclass(frozen=True)
class StateSet(Write[None]):
    """Keep a sibling's checkpoint value (atomic write)."""

    route: ClassVar[Route] = "all"
    owner: str
    key: str
    value: object


# -- operations --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Doctor(Read["DoctorResponse"]):
    """The store's self-test."""

    route: ClassVar[Route] = "all"


@dataclass(frozen=True)
class Describe(Read["dict[str, Any]"]):
    """The store's settings and counts."""

    route: ClassVar[Route] = "all"


@dataclass(frozen=True)
class Capabilities(Read["dict[str, Any]"]):
    """What the store supports (memory.v1 capabilities)."""

    route: ClassVar[Route] = "first"


@dataclass(frozen=True)
class Configure(Write["dict[str, Any]"]):
    """Change settings at run time; answers the settings in force."""

    route: ClassVar[Route] = "all"
    config: dict[str, Any]


@dataclass(frozen=True)
class Reload(Write["ReloadResponse"]):
    """Read the files again (hand edits)."""

    route: ClassVar[Route] = "all"


# -- this store as one shard of several --------------------------------------------------------


@dataclass(frozen=True)
class ShardRouting(Write["dict[str, Any]"]):
    """``{"shard", "routing", "banks"}``; with ``table``, take that slot table first."""

    route: ClassVar[Route] = "all"
    wire: ClassVar[bool] = False
    table: dict[str, Any] | None = None


@dataclass(frozen=True)
class BankExport(Read["dict[str, bytes]"]):
    """A bank's files by relative path; only a frozen (moving) or foreign bank."""

    route: ClassVar[Route] = "name"
    wire: ClassVar[bool] = False
    name: str


@dataclass(frozen=True)
class BankImport(Write["BankInfo"]):
    """Place and load a bank's files; only a bank this shard does not own yet."""

    route: ClassVar[Route] = "local"
    wire: ClassVar[bool] = False
    name: str
    files: dict[str, bytes]


@dataclass(frozen=True)
class BankRelease(Write["BankDeleteResponse"]):
    """Trash this shard's copy of a bank another shard now owns."""

    route: ClassVar[Route] = "local"
    wire: ClassVar[bool] = False
    name: str
