"""``memory mcp``: the memory service as an MCP server, on the official SDK (``mcp``).

Tools (each with a JSON schema from its signature, a description an agent can act on, and the
MCP hints ``readOnlyHint`` / ``destructiveHint`` / ``idempotentHint``); what each does is
``integrations.mcp_tools.MemoryTools``, this module wires it into MCP:

    remember     save a fact; asks first when a near-match exists (shared.client.nearmatch)
    recall       the memories that best match a query (explicit search, no turn budget)
    forget       retire one memory by id (a tombstone: it stays in history)
    supersede    retire a memory in favour of a live one (a correction); idempotent: the same
                 call again answers the same (``already: true``) and writes nothing
    pin          pin a memory (pinned ones are never touched automatically)
    list_rules   a bank's rules (human-owned instructions)
    set_rule     create, replace or remove a rule: only with ``--allow-rule-edits`` (off by
                 default: rules are instructions a person wrote for every session, so an
                 agent must not rewrite them on its own); never ``learned``, whose lines a
                 person approves (``memory rule approve``: no tool approves a rule)

A pinned memory is a person's (``shared.contract.pinned``): ``forget``, ``supersede`` of it,
``pin`` with ``pinned: false`` and ``remember`` with its ``update_id`` are refused with a
``permission_denied`` tool error that says how a person changes it; nothing is written.

Resources: ``memory://banks`` (the banks, with each one's rules URI), ``memory://banks/{bank}/
rules`` (a bank's rules as markdown) and ``memory://banks/{bank}/preview{?query}`` (the rules
section and the recalled block a turn on ``query`` would be given: ``StoreAPI.preview``).

Errors: a store error is an MCP tool error (``isError``) whose text starts with its category
(``not_found: no memory 'x'``) and whose structured content is ``{"error": {category, message,
retryable}}``; arguments the schema refuses are ``invalid_argument`` (``invalid_type`` /
``invalid_scope`` for those fields); anything unexpected is ``unknown: <type>``, never a
traceback. Every call reads and writes the store directly, so a remembered fact is recallable
by the next call, in this server or any other on the same store (read-your-writes). Over the
running store (``integrations.store.RunningStore``) a call made while no store runs is a
retryable ``source_unavailable``, and the next call looks for the store again.
See docs/PROTOCOLS.md#mcp-tools.

The server reports the package's version, and every tool parameter carries a description in
its JSON schema (``Annotated[..., Field(description=...)]``).
"""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp_types import CallToolResult, InputRequiredResult, TextContent, ToolAnnotations
from mcp_types import Tool as MCPTool
from pydantic import Field, ValidationError

from integrations.mcp_tools import MemoryTools
from integrations.serve import principal_of
from integrations.store import RunningStore
from shared.client.scoped import acting_as
from shared.client.workers import package_version
from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.format import jsonable

SERVER_NAME = "agent-memory"
MemoryType = Literal["user", "feedback", "project", "reference"]
MemoryScope = Literal["global", "project", "session"]
RecallMode = Literal["hybrid", "lexical", "semantic"]
UNAUTHENTICATED = "unauthenticated:"  # how the gateway refuses a token (grpc_gateway.auth)
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
# the store's recall limit (store_worker.storage.validate.limit; a test checks)
RECALL_LIMIT_MAX = 500
# MemoryType / MemoryScope mirror shared.contract.models.MEMORY_TYPES / MEMORY_SCOPES (a test
# checks).

# The tools' parameters, each with the description an agent reads in the tool's JSON schema.
Bank = Annotated[
    str | None,
    Field(description="The bank (a separate memory space); default: the store's default bank."),
]
MemoryId = Annotated[str, Field(description="A memory's id, as `recall` or `remember` gave it.")]
Reason = Annotated[str | None, Field(description="Why, in a few words (kept in the history).")]
SessionId = Annotated[
    str | None,
    Field(
        description="The agent session a `scope: session` memory belongs to (needed to "
        "recall, forget, supersede or pin one)."
    ),
]
Project = Annotated[
    str | None,
    Field(
        description="The project folder whose project-scoped memories this concerns (default: "
        "the folder this server runs in, the agent's working folder)."
    ),
]

# Which category a schema refusal of a field belongs to: memory.v1's error taxonomy has a
# category of its own for a bad type and a bad scope (docs/PROTOCOLS.md#errors).
_FIELD_CATEGORY: dict[str, type[errors.MemoryServiceError]] = {
    "type": errors.InvalidTypeError,
    "scope": errors.InvalidScopeError,
}


def _hints(*, read_only: bool, destructive: bool = False, idempotent: bool) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=False,  # the memory store only, never the outside world
    )


def _tool(server: MCPServer[Any], description: str, **hints: bool) -> Callable[[F], F]:
    """Adds the decorated function to ``server`` as a tool: its signature is the input schema,
    ``description`` what the agent reads, ``hints`` the MCP annotations (``_hints``)."""

    def add(fn: F) -> F:
        server.add_tool(fn, description=description, annotations=_hints(**hints))
        return fn

    return add


def error_result(e: errors.MemoryServiceError) -> CallToolResult:
    """A tool error carrying the error's category, message and retryability."""
    return CallToolResult(
        content=[TextContent(type="text", text=f"{e.category}: {e.message}")],
        structured_content={"error": e.to_dict()},
        is_error=True,
    )


def ok_result(payload: dict[str, Any]) -> CallToolResult:
    data = jsonable(payload)
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


def _guarded(
    tools: MemoryTools, fn: Callable[..., dict[str, Any]]
) -> Callable[..., CallToolResult]:
    """A tool body whose failures come back as tool errors with their category."""

    def call(**kwargs: Any) -> CallToolResult:
        try:
            return ok_result(_found_again_if_refused(tools, fn, **kwargs))
        except errors.SourceUnavailableError as e:
            tools.unreachable()  # the next call looks for the store again
            return error_result(e)
        except errors.MemoryServiceError as e:
            return error_result(e)
        except Exception as e:  # the edge: a category and the type, never a traceback
            return error_result(errors.UnknownError(f"{type(e).__name__}: {e}"))

    return call


def _found_again_if_refused(
    tools: MemoryTools, fn: Callable[..., T], *args: Any, **kwargs: Any
) -> T:
    """``fn``'s answer; when the running store's gateway refuses this server's bearer token
    (``memory up`` again with a new token, on the address found before), the store is looked
    for again (its record holds the new token) and ``fn`` called once more: the gateway
    refuses before the store runs anything, so nothing was written. Without this, every
    call failed ``unknown: unauthenticated`` until the agent was restarted."""
    try:
        return fn(*args, **kwargs)
    except errors.UnknownError as e:
        if not (tools.finds_store and e.message.startswith(UNAUTHENTICATED)):
            raise
    tools.unreachable()
    return fn(*args, **kwargs)


class _Server(MCPServer[Any]):
    """``MCPServer`` whose schema refusals carry the error tree's category too, and whose
    tools take only the arguments their schemas name (``additionalProperties: false``): the
    SDK dropped any other silently, so ``remember(text, tags=[...])`` or a misspelt
    ``scpoe: "project"`` saved a memory without them and answered success."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._takes: dict[str, frozenset[str]] = {}

    def add_tool(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        super().add_tool(fn, *args, **kwargs)
        name = kwargs.get("name") or (args[0] if args else None) or fn.__name__
        self._takes[name] = frozenset(inspect.signature(fn).parameters)

    async def list_tools(self) -> list[MCPTool]:
        return [
            t.model_copy(update={"input_schema": {**t.input_schema, "additionalProperties": False}})
            for t in await super().list_tools()
        ]

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        takes = self._takes.get(name)
        unknown = sorted(set(arguments) - takes) if takes is not None else []
        if takes is not None and unknown:
            return error_result(
                errors.InvalidArgumentError(
                    f"{name}: unknown argument{'s' if len(unknown) > 1 else ''} "
                    f"{', '.join(unknown)} (it takes {', '.join(sorted(takes))})"
                )
            )
        try:
            with acting_as_caller(context):
                return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as e:
            return error_result(errors.UnknownError(f"{name}: {type(e.__cause__).__name__}"))
        except ToolError as e:
            return error_result(_refusal(name, e))

    async def read_resource(self, uri: Any, context: Context[Any, Any] | None = None) -> Any:
        with acting_as_caller(context):
            return await super().read_resource(uri, context)


@contextlib.contextmanager
def acting_as_caller(context: Context[Any, Any] | None) -> Iterator[None]:
    """Serve what runs inside as the principal of the HTTP request behind ``context``
    (``integrations.serve.BearerGate`` resolved it); over stdio there is none: the store."""
    request = None
    try:
        request = context.request_context.request if context is not None else None
    except ValueError:  # no request context: called outside a request
        request = None
    principal = principal_of(getattr(request, "scope", None) or {})
    if principal is None:
        yield
        return
    with acting_as(principal):
        yield


def _refusal(name: str, e: ToolError) -> errors.MemoryServiceError:
    cause = e.__cause__
    if not isinstance(cause, ValidationError):  # an unknown tool name
        return errors.InvalidArgumentError(str(e))
    fields = sorted({str(err["loc"][0]) for err in cause.errors() if err["loc"]})
    what = "; ".join(
        f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in cause.errors()
    )
    cls = next((_FIELD_CATEGORY[f] for f in fields if f in _FIELD_CATEGORY), None)
    return (cls or errors.InvalidArgumentError)(f"{name}: bad arguments ({what})")


def build_server(
    store: StoreAPI | RunningStore,
    *,
    allow_rule_edits: bool = False,
    project: str | None = None,
    token: str | None = None,
) -> MCPServer[Any]:
    """The MCP server over ``store``: tools and resources (module docstring); ``project`` and
    ``token`` (a scoped token) as for ``MemoryTools``."""
    tools = MemoryTools(store, allow_rule_edits=allow_rule_edits, project=project, token=token)
    server = _Server(
        SERVER_NAME,
        version=package_version(),
        instructions="Durable memory across sessions. Call `recall` before answering when "
        "past facts may matter; call `remember` for a durable fact the user states; use "
        "`supersede` for a correction and `forget` only when asked. A pinned memory "
        "(`pinned: true`) is the user's: never try to change, retire or unpin it.",
        log_level="WARNING",
    )
    _add_write_tools(server, tools)
    _add_read_tools(server, tools)
    _add_resources(server, tools)
    return server


def _add_write_tools(server: MCPServer[Any], tools: MemoryTools) -> None:
    @_tool(
        server,
        "Save one durable fact (a preference, decision or convention) so later "
        "sessions can recall it. If a close memory already exists nothing is written and "
        "`action` is `needs_confirmation` with `candidates`: call again with `update_id` set to "
        "a candidate's id to revise it, or `confirm_new: true` to keep both. Saving the exact "
        "same fact again reinforces it. `scope: project` files it under `project` (default: "
        "the folder this server runs in); `scope: session` needs `session_id`. Secrets are "
        "redacted before anything is stored (`redacted` then names their kinds). A pinned "
        "memory cannot be revised with `update_id` (a person pinned it; `permission_denied`).",
        read_only=False,
        idempotent=False,
    )
    def remember(
        text: Annotated[
            str,
            Field(
                description='The fact, as one self-contained statement ("The user prefers '
                'tabs over spaces"; "Staging deploys run tools/ship.sh").'
            ),
        ],
        bank: Bank = None,
        title: Annotated[str | None, Field(description="An optional short title.")] = None,
        type: Annotated[
            MemoryType,
            Field(
                description="user: about the user (role, preferences); feedback: how the "
                "user wants you to work; project: about the project or its work; reference: "
                "where outside information lives."
            ),
        ] = "user",
        scope: Annotated[
            MemoryScope,
            Field(
                description="global: recalled in every session; project: only for `project`'s "
                "folder; session: only in `session_id` and its sub-sessions."
            ),
        ] = "global",
        project: Project = None,
        session_id: SessionId = None,
        update_id: Annotated[
            str | None,
            Field(
                description="Revise this memory (a candidate's id from `needs_confirmation`) "
                "instead of saving a new one; never a pinned one."
            ),
        ] = None,
        confirm_new: Annotated[
            bool,
            Field(description="Save a new memory although a close one exists."),
        ] = False,
        occurred_at: Annotated[
            str | None,
            Field(
                description="When the remembered thing happened, if the fact is about an "
                'event ("2023-05-07", or a date-time; UTC when no zone is given). Recall '
                "then finds it for questions naming that time."
            ),
        ] = None,
    ) -> CallToolResult:
        return _guarded(tools, tools.remember)(**_given(tools.remember, locals()))

    @_tool(
        server,
        "Retire one memory by id (from `recall`) when the user asks to forget it "
        "or it is wrong and there is no replacement. It stops being recalled; the history "
        "keeps it. An unknown or already retired id is `not_found`, and so is another "
        "project's memory, or a session's without its `session_id`. A pinned memory is off "
        "limits: a person pinned it, so forgetting it is refused (`permission_denied`); only "
        "the person can (`memory unpin ID` or the console's memory page).",
        read_only=False,
        destructive=True,
        idempotent=False,
    )
    def forget(
        id: MemoryId, bank: Bank = None, reason: Reason = None, session_id: SessionId = None
    ) -> CallToolResult:
        return _guarded(tools, tools.forget)(**_given(tools.forget, locals()))

    @_tool(
        server,
        "Record a correction: memory `id` is replaced by the live memory `by` "
        "(first `remember` the corrected fact, then supersede the old one with its id). The "
        "old memory stops being recalled but stays in history. The same call again answers "
        "the same (`already: true`) and writes nothing. A pinned `id` is off limits (a person "
        "pinned it: `permission_denied`); a pinned `by` is fine.",
        read_only=False,
        destructive=True,
        idempotent=True,
    )
    def supersede(
        id: Annotated[str, Field(description="The memory to retire (an id from `recall`).")],
        by: Annotated[
            str,
            Field(description="The live memory that replaces it (the corrected fact's id)."),
        ],
        bank: Bank = None,
        reason: Reason = None,
        session_id: SessionId = None,
    ) -> CallToolResult:
        return _guarded(tools, tools.supersede)(**_given(tools.supersede, locals()))

    @_tool(
        server,
        "Pin a memory (`pinned: true`) so automatic consolidation never merges, "
        "decays or retires it. Pinning hands it to the user: a pinned memory is the person's, "
        "so no tool unpins (`pinned: false` is refused, `permission_denied`), rewrites, "
        "supersedes or forgets it; a person does (`memory unpin ID` or the console's memory "
        "page). `pinned: false` on an unpinned memory changes nothing.",
        read_only=False,
        idempotent=True,
    )
    def pin(
        id: MemoryId,
        pinned: Annotated[
            bool,
            Field(
                description="true pins it; false unpins it, refused for a pinned memory "
                "(only a person unpins one)."
            ),
        ] = True,
        bank: Bank = None,
        session_id: SessionId = None,
    ) -> CallToolResult:
        return _guarded(tools, tools.pin)(**_given(tools.pin, locals()))

    if tools.allow_rule_edits:

        @_tool(
            server,
            "Create or replace the rule `name` (markdown instructions given to "
            "every session of the bank); empty `content` removes it. Rules are human-owned: "
            "change one only when the user asks.",
            read_only=False,
            destructive=True,
            idempotent=True,
        )
        def set_rule(
            name: Annotated[str, Field(description="The rule's name: [a-z0-9][a-z0-9_-]{0,63}.")],
            content: Annotated[
                str, Field(description="The rule as markdown; empty removes the rule.")
            ],
            bank: Bank = None,
        ) -> CallToolResult:
            return _guarded(tools, tools.set_rule)(**_given(tools.set_rule, locals()))


def _add_read_tools(server: MCPServer[Any], tools: MemoryTools) -> None:
    @_tool(
        server,
        "Search memory: the memories that best match `query` (words from the "
        "question or task), best first, each with an `id` to use with forget, supersede or "
        "pin, and its dates: `occurred` (when it happened, when known) and `stated` (when it "
        "was last said), its `relevance` (0-1) and `why` (the terms, entities, time or meaning "
        "that matched). Finds what was remembered a moment ago. `limit` caps the count "
        "(default 10).",
        read_only=True,
        idempotent=True,
    )
    def recall(
        query: Annotated[
            str, Field(description="Words of the question or task to look for (not empty).")
        ],
        bank: Bank = None,
        limit: Annotated[
            int | None,
            Field(
                ge=1,
                le=RECALL_LIMIT_MAX,
                description=f"At most this many memories (1-{RECALL_LIMIT_MAX}; default 10).",
            ),
        ] = None,
        mode: Annotated[
            RecallMode,
            Field(
                description="hybrid: words and meaning (the default); lexical: words only; "
                "semantic: meaning only (needs an embedding model)."
            ),
        ] = "hybrid",
        tag: Annotated[str | None, Field(description="Only memories with this tag.")] = None,
        session_id: SessionId = None,
        project: Project = None,
        min_relevance: Annotated[
            float | None,
            Field(
                ge=0.0,
                le=1.0,
                description="Only memories whose relevance (0-1, calibrated: about 0.3 and up "
                "is what a turn is given) is at least this.",
            ),
        ] = None,
    ) -> CallToolResult:
        return _guarded(tools, tools.recall)(**_given(tools.recall, locals()))

    @_tool(
        server,
        "List a bank's rules: the standing instructions every session of that "
        "bank is given. Follow them.",
        read_only=True,
        idempotent=True,
    )
    def list_rules(bank: Bank = None) -> CallToolResult:
        return _guarded(tools, tools.list_rules)(**_given(tools.list_rules, locals()))


def _add_resources(server: MCPServer[Any], tools: MemoryTools) -> None:
    def banks() -> str:
        return _read(tools, tools.banks_text)

    def rules(bank: str) -> str:
        return _read(tools, tools.rules_text, bank)

    def preview(bank: str, query: str = "") -> str:
        return _read(tools, tools.preview_text, bank, query)

    server.resource(
        "memory://banks",
        name="banks",
        description="The memory banks, each with its rules resource URI.",
        mime_type="application/json",
    )(banks)
    server.resource(
        "memory://banks/{bank}/rules",
        name="rules",
        description="A bank's rules (human-owned instructions) as markdown.",
        mime_type="text/markdown",
    )(rules)
    server.resource(
        "memory://banks/{bank}/preview{?query}",
        name="preview",
        description="What a turn on `query` would be given: the rules section and the "
        "recalled memory block.",
        mime_type="text/markdown",
    )(preview)


def _read(tools: MemoryTools, fn: Callable[..., str], *args: str) -> str:
    try:
        return _found_again_if_refused(tools, fn, *args)
    except errors.MemoryServiceError as e:
        if isinstance(e, errors.SourceUnavailableError):
            tools.unreachable()
        raise ResourceError(f"{e.category}: {e.message}") from None


def _given(method: Callable[..., Any], values: dict[str, Any]) -> dict[str, Any]:
    """A tool's arguments (its ``locals()``) as keyword arguments of the ``MemoryTools``
    method: the closure's own names (``tools``) are not arguments."""
    wanted = inspect.signature(method).parameters
    return {k: v for k, v in values.items() if k in wanted}
