"""The memory.v1 servicers: every RPC is one protocol view (``views.py``, ``tools.py``) over
the store's public API (docs/ARCHITECTURE.md#the-gateway).

``shared.contract.api.StoreAPI`` is the store contract the gateway uses; a plain ``MemoryStore``
satisfies it (tests, embedded mode) and so does ``shared.client.ray.StoreClient`` over the
``memory-store`` actor (``actor.py``). Errors translate only here, at the edge (the core raises
typed errors; only the edge knows the wire): a ``MemoryServiceError`` is classified into one of
memory.v1's seven error categories (``on_the_wire``: the store's own ``invalid_argument`` is not one
of them) and becomes that category's gRPC status with ``MemoryError{category, message, retryable}``
in the trailing metadata (``memory-error-bin``, serialized; ``memory-error-category``, its name).
README "Errors on the wire" has the table. No path answers gRPC ``UNKNOWN``.

The bank: the gateway's configured bank, or per call the ``x-memory-bank`` metadata.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent import futures
from contextlib import contextmanager
from typing import Any, TypeVar, cast

import grpc

from grpc_gateway import convert
from grpc_gateway.decode import add_service
from grpc_gateway.health import HEALTH_SERVICE, add_citizenship
from grpc_gateway.principals import PrincipalAuth, Resolver
from grpc_gateway.spec import DEFAULT_PORT
from grpc_gateway.store_service import DESCRIPTOR as STORE_DESCRIPTOR
from grpc_gateway.store_service import GatewayCall, StoreServicer, ping
from grpc_gateway.tools import Tools
from grpc_gateway.views import ProtocolViews
from shared.client import ports
from shared.client.ports import port_free
from shared.client.scoped import PerCall
from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.contract.config import refused_remotely
from shared.contract.models import Memory
from shared.proto.memory.v1 import memory_pb2 as pb
from shared.proto.memory.v1 import memory_pb2_grpc as pb_grpc
from shared.text import parse_links

log = logging.getLogger(__name__)

PERSONS_SETTINGS = frozenset({"rule_review"})
"""Settings memory.v1 never changes: whether a learned rule waits for a person is the person's."""

ERROR_KEY = "memory-error-bin"
CATEGORY_KEY = "memory-error-category"
BANK_KEY = "x-memory-bank"
RENDER_PAGE = 50
# gRPC refuses a request over 4 MiB before any servicer sees it, as RESOURCE_EXHAUSTED with no
# MemoryError (and RESOURCE_EXHAUSTED is budget_exceeded's code in memory.v1). Admitting up to
# 64 MiB lets an oversized record or query reach the store's own limits and come back
# classified (`unknown`, naming the field); past 64 MiB gRPC's own refusal stands.
MAX_REQUEST_BYTES = 64 * 1024 * 1024
_LINK = re.compile(r"\[\[([^\[\]\n]{1,200})\]\]")  # the same syntax as shared.text.parse_links
T = TypeVar("T")
STORE_SERVICE = STORE_DESCRIPTOR.full_name
SERVICES = (
    pb.DESCRIPTOR.services_by_name["MemoryService"].full_name,
    pb.DESCRIPTOR.services_by_name["MemoryTools"].full_name,
    STORE_SERVICE,
)
"""What the gateway serves (besides grpc.health.v1 and reflection): reflection lists them."""


# memory.v1's error taxonomy (docs/PROTOCOLS.md#errors): the closed set a memory.v1 failure is
# classified into.
WIRE_CATEGORIES = frozenset(
    {
        "not_found",
        "invalid_type",
        "ratification_unsupported",
        "budget_exceeded",
        "source_unavailable",
        "unknown",
        "invalid_scope",
    }
)


REFUSED = "permission denied: "
"""How a memory.v1 message starts when the call was refused (its category is ``unknown``)."""


def on_the_wire(err: errors.MemoryServiceError) -> errors.MemoryServiceError:
    """``err`` as one of memory.v1's seven categories. The views already turn a malformed or
    retired id into ``not_found``; turning ratification off with drafts waiting is refused
    as ``ratification_unsupported`` (FailedPrecondition: the state forbids it, retrying
    as-is cannot help); a refusal (a permission the principal lacks, a pinned record a tool
    may not change) is ``unknown`` starting ``permission denied:``; any other malformed input
    is ``unknown`` ("anything else", with the detail of what was malformed)."""
    if err.category in WIRE_CATEGORIES:
        return err
    if isinstance(err, errors.PermissionDeniedError):  # README: a refusal is `unknown`
        refused = err.message  # named as one: a pinned record's refusal says so too
        if not refused.startswith(REFUSED):
            refused = REFUSED + refused
        return errors.UnknownError(refused, err.retryable)
    if isinstance(err, errors.DraftsWaitingError):
        return errors.RatificationUnsupportedError(err.message, err.retryable)
    return errors.UnknownError(f"malformed request: {err.message}", err.retryable)


def abort(context: Any, err: errors.MemoryServiceError) -> None:
    """End the call with ``err`` classified for the wire: its category's status code and the
    MemoryError trailers (raises)."""
    err = on_the_wire(err)
    status = grpc.StatusCode[errors.GRPC_CODES[err.category]]
    context.set_trailing_metadata(
        (
            (ERROR_KEY, convert.memory_error(err).SerializeToString()),
            (CATEGORY_KEY, err.category),
        )
    )
    context.abort(status, err.message)


class _Edge:
    """Shared by both servicers: the bank of a call, the store lock, error translation."""

    def __init__(
        self, store: StoreAPI, *, bank: str | None, serialize: bool, raw: StoreAPI | None = None
    ) -> None:
        self.store = store
        self.raw = store if raw is None else raw  # the store itself, for the health probe
        self.views = ProtocolViews(store)
        self.tools = Tools(self.views)
        self.bank = bank
        # A plain MemoryStore is single-threaded; the actor serializes calls itself.
        self._lock: threading.Lock | None = threading.Lock() if serialize else None

    def bank_of(self, context: Any) -> str | None:
        for key, value in context.invocation_metadata() or ():
            if key == BANK_KEY and value:
                return str(value)
        return self.bank

    @contextmanager
    def locked(self) -> Iterator[None]:
        if self._lock is None:
            yield
            return
        with self._lock:
            yield

    def run(self, context: Any, fn: Callable[[], T]) -> T:
        """Run one RPC body; every failure leaves as a typed status, never UNKNOWN."""
        try:
            with self.locked():
                return fn()
        except errors.MemoryServiceError as e:
            err = e
        except Exception as e:  # translate, never leak: "unknown" maps to INTERNAL
            log.exception("gateway call failed")
            err = errors.UnknownError(f"{type(e).__name__}: {e}")
        abort(context, err)
        raise AssertionError("unreachable")  # context.abort raised


def _rpc(body: Callable[[Any, Any, Any, str | None], T]) -> Callable[[Any, Any, Any], T]:
    """A servicer's RPC method from its body: the body gets the call's bank (``x-memory-bank``
    metadata, else the gateway's) and runs under the edge (``_Edge.run``: one failure policy
    for every RPC)."""

    @functools.wraps(body)
    def rpc(self: Any, request: Any, context: Any) -> T:
        return cast(
            T,
            self.edge.run(
                context, lambda: body(self, request, context, self.edge.bank_of(context))
            ),
        )

    return rpc


class MemoryServicer(pb_grpc.MemoryServiceServicer):
    """memory.v1.MemoryService over ``StoreAPI``."""

    def __init__(self, edge: _Edge) -> None:
        self.edge = edge
        self.store = edge.store
        self.views = edge.views

    @_rpc
    def GetCapabilities(
        self, request: pb.GetCapabilitiesRequest, context: Any, bank: str | None
    ) -> pb.GetCapabilitiesResponse:
        caps = convert.capabilities(self.store.capabilities())
        return pb.GetCapabilitiesResponse(capabilities=caps)

    @_rpc
    def Configure(
        self, request: pb.ConfigureRequest, context: Any, bank: str | None
    ) -> pb.ConfigureResponse:
        config = convert.config_in(request.config)
        if why := refused_remotely(config):  # a remote caller never points the store
            raise errors.InvalidArgumentError(why)  # at its files (shared.contract.config)
        if PERSONS_SETTINGS & config.keys():  # nor does an agent's protocol turn review off
            raise errors.InvalidArgumentError(
                "rule_review is a person's setting: set it with `memory configure` "
                "(memory.store.v1), not over memory.v1"
            )
        return pb.ConfigureResponse(effective=convert.config_out(self.store.configure(config)))

    @_rpc
    def Recall(
        self, request: pb.RecallRequest, context: Any, bank: str | None
    ) -> pb.RecallResponse:
        found = self.views.recall_context(
            bank=bank,
            query=request.query or None,
            files_touched=list(request.files_touched),
            session_id=convert.optional(request.session_id),
            turn_id=convert.optional(request.turn_id),
            project=convert.optional(request.working_directory),
            token_budget=request.token_budget or None,
            model_target=convert.optional(request.model_target.id),
            type_filter=convert.type_filter(request.type_filter),
            scope_filter=convert.scope_filter(request.scope_filter),
            include_pending=request.include_pending,
            limit=request.limit or None,
            min_relevance=convert.min_relevance(request),
            caller=_caller(context),
        )
        return pb.RecallResponse(records=convert.scored(found.memories))

    @_rpc
    def Record(
        self, request: pb.RecordRequest, context: Any, bank: str | None
    ) -> pb.RecordResponse:
        saved = self.views.record(**record_kwargs(request), bank=bank, caller=_caller(context))
        return pb.RecordResponse(result=convert.result(saved.memory))

    @_rpc
    def UpdateRecord(
        self, request: pb.UpdateRecordRequest, context: Any, bank: str | None
    ) -> pb.UpdateRecordResponse:
        updated = self.views.update_record(
            request.id,
            text=convert.content_text(request.content),
            title=request.title if request.HasField("title") else None,
            bank=bank,
        )
        return pb.UpdateRecordResponse(result=convert.result(updated.memory))

    @_rpc
    def DeleteRecord(
        self, request: pb.DeleteRecordRequest, context: Any, bank: str | None
    ) -> pb.DeleteRecordResponse:
        self.views.delete_record(request.id, bank=bank)
        return pb.DeleteRecordResponse(result=pb.DeleteResult(deleted=True))

    @_rpc
    def ApproveRecord(
        self, request: pb.ApproveRecordRequest, context: Any, bank: str | None
    ) -> pb.ApproveRecordResponse:
        approved = self.views.approve(request.id, bank=bank)
        return pb.ApproveRecordResponse(result=convert.result(approved.memory))

    @_rpc
    def RejectRecord(
        self, request: pb.RejectRecordRequest, context: Any, bank: str | None
    ) -> pb.RejectRecordResponse:
        done = self.views.reject(request.id, bank=bank)
        return pb.RejectRecordResponse(result=pb.DeleteResult(deleted=bool(done.deleted)))

    @_rpc
    def Render(
        self, request: pb.RenderRequest, context: Any, bank: str | None
    ) -> pb.RenderResponse:
        page = self.views.list_records(
            bank=bank,
            status=convert.status(request.status_filter),
            page_size=convert.page_size(request.page_size) or RENDER_PAGE,
        )
        missing = {(d.source, d.target) for d in self.store.dangling(bank=bank).links}
        return pb.RenderResponse(tree=render_tree(page.memories, missing))

    @_rpc
    def ListRecords(
        self, request: pb.ListRecordsRequest, context: Any, bank: str | None
    ) -> pb.ListRecordsResponse:
        wanted = request.status_filter if request.HasField("status_filter") else 0
        page = self.views.list_records(
            bank=bank,
            type_filter=convert.type_filter(request.type_filter),
            scope_filter=convert.scope_filter(request.scope_filter),
            status=convert.status(wanted),
            page_size=convert.page_size(request.page_size),
            page_token=request.page_token or None,
        )
        # No relevance on a plain listing: memory.v1 asks to leave the field unset rather
        # than fabricate a value.
        return pb.ListRecordsResponse(
            records=[convert.record(m) for m in page.memories],
            next_page_token=page.next_page_token or "",
        )

    @_rpc
    def GetRecord(
        self, request: pb.GetRecordRequest, context: Any, bank: str | None
    ) -> pb.GetRecordResponse:
        found = self.views.get_record(request.id, bank=bank)
        return pb.GetRecordResponse(record=convert.record(found.memory))

    @_rpc
    def Describe(
        self, request: pb.DescribeRequest, context: Any, bank: str | None
    ) -> pb.DescribeResponse:
        return pb.DescribeResponse(producer=convert.producer(self.store.describe()))


class ToolsServicer(pb_grpc.MemoryToolsServicer):
    """memory.v1.MemoryTools: memory.remember / memory.forget / memory.search."""

    def __init__(self, edge: _Edge) -> None:
        self.edge = edge
        self.tools = edge.tools

    @_rpc
    def Remember(
        self, request: pb.RememberRequest, context: Any, bank: str | None
    ) -> pb.RememberResponse:
        rec = request.record
        chosen = request.update_id or None
        kwargs = record_kwargs(rec, types_required=chosen is None)
        kwargs.pop("status", None)
        kwargs.pop("id", None)
        kwargs["recorded_by"] = kwargs.get("recorded_by") or "memory.remember"
        done = self.tools.remember(
            **kwargs,
            bank=bank,
            update_id=chosen,
            confirm_new=request.confirm_new,
            caller=_caller(context),
        )
        out = pb.RememberResponse(action=convert.REMEMBER_ACTIONS[done.action])
        if done.memory is not None:
            out.result.CopyFrom(convert.result(done.memory))
        for cand in done.candidates:
            out.candidates.add(record=convert.record(cand.memory), similarity=cand.similarity)
        return out

    @_rpc
    def Forget(
        self, request: pb.ForgetRequest, context: Any, bank: str | None
    ) -> pb.ForgetResponse:
        self.tools.forget(request.id, bank=bank)
        return pb.ForgetResponse(result=pb.DeleteResult(deleted=True))

    @_rpc
    def Search(
        self, request: pb.SearchRequest, context: Any, bank: str | None
    ) -> pb.RecallResponse:
        found = self.tools.search(
            request.query,
            bank=bank,
            limit=request.limit or None,
            session_id=convert.optional(request.session_id),
            project=convert.optional(request.working_directory),
            type_filter=convert.type_filter(request.type_filter),
            scope_filter=convert.scope_filter(request.scope_filter),
            include_pending=request.include_pending,
        )
        return pb.RecallResponse(records=convert.scored(found.memories))


def _caller(context: Any) -> str | None:
    """Who is calling: the connection's peer (``ipv4:127.0.0.1:53412``), so one agent's
    Recall context never owns another agent's ownerless Record (``owners.py``)."""
    peer = getattr(context, "peer", None)
    return str(peer()) if callable(peer) else None


def record_kwargs(req: pb.RecordRequest, *, types_required: bool = True) -> dict[str, Any]:
    """RecordRequest → ``save`` keywords; unspecified type/scope are typed errors."""
    out: dict[str, Any] = {
        "text": convert.content_text(req.content),
        "title": req.title or None,
        # memory.v1's id is optional (the provider derives one when omitted): an empty id
        # (proto3 presence set to "") suggests nothing
        "id": req.id or None,
        "session_id": convert.optional(req.session_id),
        "turn_id": convert.optional(req.turn_id),
        "recorded_by": convert.optional(req.recorded_by),
        "project": convert.optional(req.working_directory),
        "status": convert.status(req.status),
    }
    if types_required or req.type:
        out["type"] = convert.memory_type(req.type)
    if types_required or req.scope:
        out["scope"] = convert.memory_scope(req.scope)
    return out


def render_tree(records: Sequence[Memory], missing: set[tuple[str, str]]) -> pb.RenderTree:
    """A review inbox: pending drafts first, then canonical records; ``[[x]]`` → link nodes."""
    root = pb.RenderNode(kind="section", text="Memory review inbox")
    for status, heading in (("pending", "Pending drafts"), ("canonical", "Canonical records")):
        group = [m for m in records if m.status == status]
        if group:
            section = root.children.add(kind="section", text=heading)
            for mem in group:
                section.children.append(_record_node(mem, missing))
    return pb.RenderTree(root=root)


def _record_node(mem: Memory, missing: set[tuple[str, str]]) -> pb.RenderNode:
    node = pb.RenderNode(kind="record", text=mem.title or mem.id, target=mem.id)
    at = 0
    for match in _LINK.finditer(mem.text):
        named = parse_links(match.group(0))
        if not named:  # ``[[ ]]`` names no record: it stays text
            continue
        if match.start() > at:
            node.children.add(kind="text", text=mem.text[at : match.start()])
        slug = named[0]
        node.children.add(
            kind="link", text=match.group(1), target=slug, resolved=(mem.id, slug) not in missing
        )
        at = match.end()
    if at < len(mem.text):
        node.children.add(kind="text", text=mem.text[at:])
    return node


def _probe(edge: _Edge) -> str:
    """The health probe: the store answers (under the store lock, like any call). ``ping``
    reads and writes nothing: an unauthenticated probe is not use of the default bank."""
    with edge.locked():
        return ping(edge.raw)


def build_server(
    store: StoreAPI,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    bank: str | None = None,
    serialize: bool = True,
    max_workers: int = 8,
    gateway_calls: Mapping[str, GatewayCall] | None = None,
) -> tuple[Any, int]:
    """A started-ready ``grpc.Server`` serving memory.v1 (MemoryService, MemoryTools),
    memory.store.v1 (StoreService), grpc.health.v1 and reflection, and the port it bound
    (port 0 picks a free one). Call ``.start()`` on it; ``.stop(grace)`` to end."""
    # every call is served as its token's principal (grpc_gateway.principals); health stays
    # open (a Kubernetes probe carries no token)
    edge = _Edge(PerCall(store), bank=bank, serialize=serialize, raw=store)
    resolve = Resolver(store, token, edge.locked)
    interceptors: list[grpc.ServerInterceptor] = [
        PrincipalAuth(resolve, abort, open_services=(HEALTH_SERVICE,))
    ]
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="memory-grpc"),
        interceptors=interceptors,
        # grpcio binds with SO_REUSEPORT by default: a second gateway (another data dir) could
        # bind a port this one holds and the kernel would split connections between them
        options=[("grpc.max_receive_message_length", MAX_REQUEST_BYTES), ("grpc.so_reuseport", 0)],
    )
    # each method parses its own request, so undecodable bytes get the MemoryError trailers
    add_service(
        server, MemoryServicer(edge), pb.DESCRIPTOR.services_by_name["MemoryService"], pb, abort
    )
    add_service(
        server, ToolsServicer(edge), pb.DESCRIPTOR.services_by_name["MemoryTools"], pb, abort
    )
    # memory.store.v1 (every store operation, for the CLI), under the same lock
    servicer = StoreServicer(edge.store, edge.locked, gateway_calls)
    server.add_generic_rpc_handlers((servicer.handler(),))
    add_citizenship(server, lambda: _probe(edge), SERVICES)
    if ports.loopback_held(port, host):  # the other loopback family's P shares localhost:P
        raise PortHeldError(host, port)
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError as e:
        if port and not port_free(port, host):
            raise PortHeldError(host, port) from e
        raise errors.SourceUnavailableError(f"cannot listen on {host}:{port}: {e}") from e
    if bound == 0:
        if port and not port_free(port, host):
            raise PortHeldError(host, port)
        raise errors.SourceUnavailableError(f"cannot listen on {host}:{port}")
    return server, int(bound)


class PortHeldError(ports.PortHeldError):
    """The port a gateway was asked to listen on is held by another server: refused at start
    (never shared: one port serves one store). ``holder`` names it when known."""

    def __init__(self, host: str, port: int, holder: str | None = None) -> None:
        super().__init__(host, port, holder, flag="--grpc-port")
