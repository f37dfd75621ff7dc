"""The store's operations, one frozen request each (what an op is: ``shared.contract.op``).

Each dataclass's fields are the operation's arguments; its base names its answer and whether it
is a read or a write; ``route`` says how a sharded store routes it. ``StoreAPI`` binds each one
to a typed method in one line (``shared.contract.api``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY
from typing import TYPE_CHECKING, Any, ClassVar

from shared.contract.op import Labels, Message, Read, Route, Write

if TYPE_CHECKING:  # the answers' types, named in strings (no pydantic at run time)
    from shared.contract import models  # noqa: F401


# -- liveness ----------------------------------------------------------------------------------


class Ping(Read[str]):
    """``"pong"`` once the store answers (its boot error otherwise)."""

    route: ClassVar[Route] = "first"


# -- banks -------------------------------------------------------------------------------------


class BankCreate(Write["models.BankCreateResponse"]):
    """Create a bank (or describe an existing one anew)."""

    route: ClassVar[Route] = "name"
    name: str
    description: str | None = None


class BankList(Read["models.BankListResponse"]):
    """Every bank, with its counts."""

    route: ClassVar[Route] = "all"


class BankDelete(Write["models.BankDeleteResponse"]):
    """Move a bank to the trash (recoverable by hand)."""

    route: ClassVar[Route] = "name"
    name: str


# -- memories: writes --------------------------------------------------------------------------


class Save(Write["models.SaveResponse"]):
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


class SaveMany(Write["models.SaveManyResponse"]):
    """Several saves committed together, all or nothing (one fsync per bank). Each item is a
    ``Save`` (its ``reinforce`` left as it is: a batch always reinforces) or a mapping of its
    arguments."""

    route: ClassVar[Route] = "items"
    items: Sequence[object]


class Update(Write["models.MemoryResponse"]):
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
    revision: int | None = None  # only while ``id`` is at this revision (a stale edit: conflict)


class Pin(Write["models.MemoryResponse"]):
    """Pin (or unpin) a memory: no automatic path touches a pinned one."""

    id: str
    pinned: bool = True
    _: KW_ONLY
    bank: str | None = None


class Delete(Write["models.MemoryResponse"]):
    """Retire a memory with a tombstone (never erased)."""

    id: str
    _: KW_ONLY
    bank: str | None = None
    reason: str | None = None


class Supersede(Write["models.SupersedeResponse"]):
    """Retire ``id`` in favour of ``superseded_by``."""

    id: str
    superseded_by: str
    _: KW_ONLY
    bank: str | None = None
    reason: str | None = None
    reinforce: bool = False
    revision: int | None = None


class SupersedeMany(Write["models.SupersedeManyResponse"]):
    """Several supersedes committed together, all or nothing (one fsync per bank)."""

    route: ClassVar[Route] = "items"
    items: Sequence[object]  # each a Supersede, or a mapping of its arguments


# -- memories: reads ---------------------------------------------------------------------------


class Get(Read["models.MemoryResponse"]):
    """One memory by id."""

    id: str
    _: KW_ONLY
    bank: str | None = None


class List(Read["models.ListResponse"]):
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


class History(Read["models.HistoryResponse"]):
    """A memory's revisions as its bank's log holds them, oldest first, and its supersede
    chain: what it replaced and what replaced it (retired memories included)."""

    id: str
    _: KW_ONLY
    bank: str | None = None


class Tags(Read["models.TagsResponse"]):
    """A bank's tags with their counts."""

    _: KW_ONLY
    bank: str | None = None


class Recall(Read["models.RecallResponse"]):
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
    min_relevance: float | None = None  # keep only hits at or above this calibrated relevance


class Backlinks(Read["models.BacklinksResponse"]):
    """The memories whose text links to ``id`` with ``[[id]]``."""

    id: str
    _: KW_ONLY
    bank: str | None = None


class Dangling(Read["models.DanglingResponse"]):
    """Links to memories that do not exist."""

    _: KW_ONLY
    bank: str | None = None


class Import(Write["models.ImportResponse"]):
    """Whole records written as they are (``memory import``: an export's lines, or a foreign
    format's, mapped): each item a mapping of a ``Memory``'s fields (``id`` and ``text``
    required; ``fingerprint``, ``links`` and ``tokens`` are derived again). Every field is
    validated, and redacted, as a save's; the ids, revisions, times, supersede links and the
    source's provenance are kept, and ``provenance.imported_at`` marks the record imported.

    Keyed by id: a record the bank holds at that revision or later is left as it is, so
    importing again, or resuming a killed import, changes nothing and never corroborates.
    A refused item raises its typed error and nothing is written, unless ``skip_bad``: then it
    is reported in ``problems`` and the others are written. ``dry_run`` writes nothing."""

    method: ClassVar[str] = "import_records"  # ``import`` is a keyword
    items: Sequence[object]
    _: KW_ONLY
    bank: str | None = None
    skip_bad: bool = False
    dry_run: bool = False


class Export(Read["models.ExportResponse"]):
    """A page of a bank's records for ``memory export``: each one's current revision (retired
    ones and drafts included), or with ``history`` every revision its log holds, in log order."""

    _: KW_ONLY
    bank: str | None = None
    history: bool = False
    page_size: int | None = None
    page_token: str | None = None


# -- drafts (ratification) ---------------------------------------------------------------------


class Approve(Write["models.MemoryResponse"]):
    """Make a pending draft canonical."""

    id: str
    _: KW_ONLY
    bank: str | None = None


class Reject(Write["models.RejectResponse"]):
    """Drop a pending draft."""

    id: str
    _: KW_ONLY
    bank: str | None = None


class Drafts(Read["tuple[models.Memory, ...]"]):
    """The drafts waiting for ratification."""

    _: KW_ONLY
    bank: str | None = None


# -- secrets already stored --------------------------------------------------------------------


class RedactRescan(Write["models.RescanResponse"]):
    """Re-run redaction over stored memories; ``purge`` rewrites the logs without them.
    No bank: every bank (on every shard)."""

    route: ClassVar[Route] = "all"
    _: KW_ONLY
    bank: str | None = None
    purge: bool = False


class Purge(Write["models.PurgeResponse"]):
    """Rewrite a bank's log without a record's lines (audited; the one erasure)."""

    id: str
    _: KW_ONLY
    bank: str | None = None


# -- rules -------------------------------------------------------------------------------------


class RuleList(Read["models.RuleListResponse"]):
    """A bank's rules."""

    _: KW_ONLY
    bank: str | None = None


class RuleGet(Read["models.Rule"]):
    """One rule by name."""

    name: str
    _: KW_ONLY
    bank: str | None = None


class RuleSet(Write["models.RuleSetResponse"]):
    """Write a rule (empty content removes it); ``expect`` refuses a rule changed since read."""

    name: str
    content: str
    _: KW_ONLY
    bank: str | None = None
    expect: str | None = None


# -- the harness seam --------------------------------------------------------------------------


class PreGenerate(Write["models.InjectResponse"]):
    """What a turn is given: the rules section and the recalled block. A write: it remembers
    the session's bank and what its rules section was."""

    route: ClassVar[Route] = "session"
    session_id: str
    turn_id: str | None = None
    step: int = 0
    messages: list[Message] | None = None
    metadata: dict[str, Any] | None = None
    parent_session_id: str | None = None
    _: KW_ONLY
    visible_sessions: Labels = None  # whose session records it reads (None: its lineage)


class Preview(Read["models.PreviewResponse"]):
    """What a turn asking ``query`` would be given."""

    query: str
    _: KW_ONLY
    bank: str | None = None
    session_id: str | None = None
    visible_sessions: Labels = None  # as PreGenerate's (``shared.client.scoped_inject``)


class TurnCompleted(Write["models.TurnCompletedResponse"]):
    """A finished turn: queued (redacted) for extraction."""

    route: ClassVar[Route] = "session"
    session_id: str
    turn_id: str | None = None
    messages: list[Message] | None = None
    status: str = "completed"
    parent_session_id: str | None = None
    _: KW_ONLY
    parent: str | None = None


class LinkSession(Write[None]):
    """Declare a session's parent (its lineage)."""

    route: ClassVar[Route] = "session"
    session_id: str
    parent_session_id: str | None


class SessionLineage(Read["tuple[str, ...]"]):
    """A session and its ancestors, nearest first."""

    route: ClassVar[Route] = "session"
    session_id: str | None


# -- sibling plumbing: the extraction outbox ---------------------------------------------------


class OutboxWatch(Write[None]):
    """Have ``callback`` called after each enqueued turn (in the store's process)."""

    route: ClassVar[Route] = "all"
    wire: ClassVar[bool] = False
    name: str
    callback: Any


class OutboxClaim(Write["list[models.OutboxJob]"]):
    """Lease up to ``limit`` jobs."""

    route: ClassVar[Route] = "all"
    limit: int = 8


class OutboxNote(Write["models.OutboxJob"]):
    """Keep a job's model reply with it (a retry does not pay for the model twice)."""

    route: ClassVar[Route] = "job"
    job_id: str
    reply: dict[str, Any]
    _: KW_ONLY
    lease: str


class OutboxAck(Write["models.OutboxAckResponse"]):
    """A job is done."""

    route: ClassVar[Route] = "job"
    job_id: str


class OutboxFail(Write["models.OutboxAckResponse"]):
    """A job failed: retried later, or dead-lettered."""

    route: ClassVar[Route] = "job"
    job_id: str
    error: str
    _: KW_ONLY
    retry_after_ms: int | None = None
    dead_letter: bool = False
    lease: str | None = None


class OutboxRequeue(Write["models.OutboxAckResponse"]):
    """Queue a dead-lettered (or leased) job again."""

    route: ClassVar[Route] = "job"
    job_id: str
    _: KW_ONLY
    fresh: bool = False


class OutboxDrop(Write["models.OutboxAckResponse"]):
    """Delete a dead letter for good: its turn is never extracted (by hand)."""

    route: ClassVar[Route] = "job"
    job_id: str


class OutboxList(Read["models.OutboxListResponse"]):
    """The outbox's counts and jobs."""

    route: ClassVar[Route] = "all"
    _: KW_ONLY
    include_dead: bool = True
    limit: int = 100


class OutboxLookup(Read["models.OutboxJob"]):
    """One job by id."""

    method: ClassVar[str] = "outbox_job"
    route: ClassVar[Route] = "job"
    job_id: str


# -- sibling plumbing: events and state --------------------------------------------------------


class Subscribe(Write[None]):
    """Push matching events to ``callback`` (over Ray: the subscriber's actor handle)."""

    route: ClassVar[Route] = "all"
    wire: ClassVar[bool] = False
    name: str
    callback: Any
    banks: Labels = None


class Unsubscribe(Write[bool]):
    """Stop a subscription; whether there was one."""

    route: ClassVar[Route] = "all"
    name: str


class EventsSince(Read["models.EventsResponse"]):
    """Events after ``cursor`` (a resume token)."""

    route: ClassVar[Route] = "all"
    cursor: int = 0
    _: KW_ONLY
    limit: int = 500
    bank: str | None = None


class StateGet(Read["object | None"]):
    """A sibling's checkpoint value."""

    route: ClassVar[Route] = "first"
    owner: str
    key: str


class StateSet(Write[None]):
    """Keep a sibling's checkpoint value (atomic write)."""

    route: ClassVar[Route] = "all"
    owner: str
    key: str
    value: object


# -- operations --------------------------------------------------------------------------------


class Doctor(Read["models.DoctorResponse"]):
    """The store's self-test."""

    route: ClassVar[Route] = "all"


class Describe(Read["dict[str, Any]"]):
    """The store's settings and counts."""

    route: ClassVar[Route] = "all"


class Capabilities(Read["dict[str, Any]"]):
    """What the store supports (memory.v1 capabilities)."""

    route: ClassVar[Route] = "first"


class Configure(Write["dict[str, Any]"]):
    """Change settings at run time; answers the settings in force."""

    route: ClassVar[Route] = "all"
    config: dict[str, Any]


class Reload(Write["models.ReloadResponse"]):
    """Read the files again (hand edits)."""

    route: ClassVar[Route] = "all"


# -- this store as one shard of several --------------------------------------------------------


class ShardRouting(Write["dict[str, Any]"]):
    """``{"shard", "routing", "banks"}``; with ``table``, take that slot table first."""

    route: ClassVar[Route] = "all"
    wire: ClassVar[bool] = False
    table: dict[str, Any] | None = None


class BankCopy(Read["dict[str, bytes]"]):
    """A bank's files by relative path, byte for byte, for its move to another shard (no
    export: that is ``export``); only a frozen (moving) or foreign bank."""

    route: ClassVar[Route] = "name"
    wire: ClassVar[bool] = False
    name: str


class BankPlace(Write["models.BankInfo"]):
    """Place and load a bank's files; only a bank this shard does not own yet."""

    route: ClassVar[Route] = "local"
    wire: ClassVar[bool] = False
    name: str
    files: dict[str, bytes]


class BankRelease(Write["models.BankDeleteResponse"]):
    """Trash this shard's copy of a bank another shard now owns."""

    route: ClassVar[Route] = "local"
    wire: ClassVar[bool] = False
    name: str


# -- principals: scoped tokens and who owns a session (declared in their own module) ----------

from shared.contract.principal_ops import SessionOwner as SessionOwner  # noqa: E402
from shared.contract.principal_ops import TokenCreate as TokenCreate  # noqa: E402
from shared.contract.principal_ops import TokenList as TokenList  # noqa: E402
from shared.contract.principal_ops import TokenResolve as TokenResolve  # noqa: E402
from shared.contract.principal_ops import TokenRevoke as TokenRevoke  # noqa: E402

# -- the learned-rule review queue (declared in their own module) ------------------------------
from shared.contract.review_ops import RuleApprove as RuleApprove  # noqa: E402
from shared.contract.review_ops import RulePending as RulePending  # noqa: E402
from shared.contract.review_ops import RulePropose as RulePropose  # noqa: E402
from shared.contract.review_ops import RuleReject as RuleReject  # noqa: E402
