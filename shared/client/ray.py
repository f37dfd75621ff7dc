"""The Ray transport: ``StoreClient`` carries each op to the ``memory-store`` actor.

``join_cluster()`` joins a running cluster; ``StoreClient`` implements
``shared.contract.api.StoreAPI``'s one ``call(op)`` over the actor's one ``call`` entry::

    join_cluster()
    store = StoreClient()
    store.save("The user prefers tabs", tags=["style"])  # handle.call.remote(Save(...))

An op says whether it may be re-sent after the actor restarted mid-call (``shared.contract.ops``): a
read is re-sent by Ray ``READ_RETRIES`` times, and the client tries once more on a fresh
handle; a write goes at most once (``store_worker.actor`` says why). The answer is checked
against the op's declared response type (a mismatch is an ``UnknownError``, never a wrong
object handed on).

Errors reach the caller as the store raised them: Ray wraps an actor's exception in a
``RayTaskError`` (a dual subclass of the original class), and the client re-raises the original
``MemoryServiceError`` so ``except NotFoundError`` works and ``str(e)`` is the store's message.
Transport failures (no cluster, no actor, a dead or restarting actor, a timeout) become a
retryable ``SourceUnavailableError``.

``ActorClient`` is the untyped base, for a sibling's own actor (``memory consolidate`` calls
the consolidator's ``run_now`` through it): ``client.call("name", ...)``.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, TypeVar, cast

from pydantic import TypeAdapter, ValidationError

from shared.client.coalesce import LINGER_S, Coalescing
from shared.client.workers import NAMESPACE
from shared.contract.api import StoreAPI
from shared.contract.errors import MemoryServiceError, SourceUnavailableError, UnknownError
from shared.contract.op import Op

STORE_ACTOR = "memory-store"
NO_STORE_HINT = "no memory store is running; start it with `memory up` or `make run`"
DEFAULT_TIMEOUT_S = 120.0
READ_RETRIES = 3

R = TypeVar("R")


def join_cluster(address: str | None = None, *, quiet: bool = True) -> dict[str, Any]:
    """Join a running Ray cluster in namespace ``memory``; returns ``{"dashboard_url": ...}``.

    ``address`` defaults to ``RAY_ADDRESS``, else the local ``ray start`` cluster (never Ray's
    "auto", which may join any cluster on the machine: ``shared.client.lifecycle.local_address``).
    Already connected (a test's cluster, a Ray job): nothing changes.
    """
    from shared.client.lifecycle import local_address

    # Ray takes ~0.9 s to import: a process that never imported it is joined to no cluster,
    # and with no cluster to join (`memory status` before `up`) it is not imported at all.
    already = sys.modules.get("ray")
    if already is not None and already.is_initialized():
        return {"dashboard_url": _dashboard_url()}
    address = address or os.environ.get("RAY_ADDRESS") or local_address()
    if not address:
        raise SourceUnavailableError(_why_no_cluster())
    import ray

    _token_auth_if_available()
    try:
        context = ray.init(
            address=address,
            namespace=NAMESPACE,
            logging_level=logging.ERROR if quiet else logging.INFO,
            log_to_driver=not quiet,
        )
    except ConnectionError as e:
        raise SourceUnavailableError(_why_no_cluster()) from e
    url = getattr(context, "dashboard_url", "") or ""
    return {"dashboard_url": _http(url)}


def _why_no_cluster() -> str:
    """``NO_STORE_HINT``, unless the cluster ``memory up`` started is half dead (its GCS
    gone, its processes running: ``shared.client.lifecycle.half_dead``), which a new ``up`` cannot
    fix."""
    from shared.client.lifecycle import half_dead

    return half_dead() or NO_STORE_HINT


def _token_auth_if_available() -> None:
    """Send the cluster token when there is one (clients of a token-auth cluster need
    RAY_AUTH_MODE=token: docs/PROTOCOLS.md#token-auth).

    Ray turns token mode on by itself only for ``address="auto"``; with an explicit address
    and the mode unset, a token-auth cluster (``memory up`` keeps auth on) refuses the
    driver. Ray reads the mode when it is imported, so the env var alone is too late here;
    its own helper also refreshes the cached config.
    """
    if os.environ.get("RAY_AUTH_MODE"):
        return  # the user's explicit choice
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # pragma: no cover - a Ray without token auth
        return
    quiet = logging.getLogger(maybe_enable_token_auth_if_token_available.__module__)
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # "token authentication is enabled" on every CLI call
    try:
        maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    finally:
        quiet.setLevel(level)


def _dashboard_url() -> str:
    try:
        from ray._private.worker import get_dashboard_url  # no public getter once connected

        return _http(str(get_dashboard_url() or ""))  # type: ignore[no-untyped-call]
    except Exception:
        return ""


def _http(url: str) -> str:
    if url and not url.startswith("http"):
        return f"http://{url}"
    return url


def get_actor(name: str) -> Any:
    """The handle of a named actor in the namespace, or ``SourceUnavailableError``."""
    import ray

    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError as e:
        hint = NO_STORE_HINT if name == STORE_ACTOR else f"{name} is not running"
        raise SourceUnavailableError(hint) from e


class ActorClient:
    """Synchronous, untyped calls to a named actor: ``client.call("method", *args)``.

    ``reads`` names the actor's retry-safe methods; every other call is sent at most once.
    """

    def __init__(
        self,
        handle: Any = None,
        *,
        actor_name: str,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        reads: frozenset[str] = frozenset(),
    ) -> None:
        self._handle = handle
        self.actor_name = actor_name
        self.timeout = timeout
        self._reads = reads

    @property
    def handle(self) -> Any:
        if self._handle is None:
            self._handle = get_actor(self.actor_name)
        return self._handle

    def retry_safe(self, method: str) -> bool:
        return method in self._reads

    def call(self, method: str, /, *args: Any, **kwargs: Any) -> Any:
        """``ray.get(handle.<method>.remote(...))`` with the actor's errors, unwrapped."""
        return self._invoke(method, args, kwargs, retry=self.retry_safe(method))

    def _invoke(
        self, method: str, args: tuple[object, ...], kwargs: dict[str, object], *, retry: bool
    ) -> object:
        import ray.exceptions as rex

        attempts = 2 if retry else 1
        for attempt in range(attempts):
            try:
                return self._once(method, retry, args, kwargs)
            except rex.RayActorError as e:  # died, or restarting (ActorUnavailableError)
                self._handle = None  # a fresh `memory up` makes a new actor with the name
                if attempt + 1 < attempts:
                    continue
                raise SourceUnavailableError(f"{self.actor_name} is unavailable: {e}") from e
        raise AssertionError("unreachable")  # pragma: no cover

    def _once(
        self, method: str, retry: bool, args: tuple[object, ...], kwargs: dict[str, object]
    ) -> object:
        import ray
        import ray.exceptions as rex

        remote = getattr(self.handle, method, None)
        if remote is None:
            raise UnknownError(f"the running {self.actor_name} has no method {method!r}")
        if retry:
            # Ray re-sends a read after the actor restarted (a call to a restarting actor fails
            # at once otherwise); writes keep the actor's max_task_retries=0: at most once.
            remote = remote.options(max_task_retries=READ_RETRIES)
        ref = remote.remote(*args, **kwargs)
        try:
            return cast(object, ray.get(ref, timeout=self.timeout))
        except rex.GetTimeoutError as e:
            ray.cancel(ref)
            raise SourceUnavailableError(
                f"{self.actor_name}.{method} took longer than {self.timeout:g} s"
            ) from e
        except rex.RayTaskError as e:
            raise unwrap(e) from None


_ADAPTERS: dict[object, TypeAdapter[Any]] = {}


def _checked(expect: Any, value: object, where: str) -> Any:
    """``value`` as the declared response type, or ``UnknownError`` (a store of another
    version answered something else)."""
    adapter = _ADAPTERS.get(expect)
    if adapter is None:
        adapter = _ADAPTERS[expect] = TypeAdapter(expect)
    try:
        return adapter.validate_python(value)
    except ValidationError as e:
        raise UnknownError(
            f"{where} answered a {type(value).__name__}, not the declared response: "
            f"{e.errors()[0]['msg']}"
        ) from e


class StoreClient(StoreAPI):
    """``StoreAPI`` over Ray: the ``memory-store`` actor (or another store actor by name).

    Each op goes to the actor's one ``call`` entry; a read (``Read``) may be re-sent after
    the actor restarted mid-call, a write never is. With ``coalesce`` (the default) concurrent
    saves of this process go out together (``shared.client.coalesce``)."""

    def __init__(
        self,
        handle: Any = None,
        *,
        actor_name: str = STORE_ACTOR,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        coalesce: bool = True,
        linger_s: float = LINGER_S,
    ) -> None:
        self.actor = ActorClient(handle, actor_name=actor_name, timeout=timeout)
        direct = _Direct(self.actor)
        self._send: StoreAPI = Coalescing(direct, linger_s=linger_s) if coalesce else direct

    @property
    def actor_name(self) -> str:
        return self.actor.actor_name

    @property
    def handle(self) -> Any:
        return self.actor.handle

    def call(self, op: Op[R]) -> R:
        return self._send.call(op)


class _Direct(StoreAPI):
    """The actor itself, one op a call (what ``Coalescing`` wraps)."""

    def __init__(self, actor: ActorClient) -> None:
        self.actor = actor

    def call(self, op: Op[R]) -> R:
        result = self.actor._invoke("call", (op,), {}, retry=op.retry)
        where = f"{self.actor.actor_name}.{op.method}"
        return cast(R, _checked(op.response_type(), result, where))


def unwrap(error: Exception) -> MemoryServiceError:
    """The store's own typed error inside a ``RayTaskError``; anything else is ``unknown``."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, MemoryServiceError):
        return cause
    if cause is not None:
        return UnknownError(f"{type(cause).__name__}: {cause}")
    return UnknownError(str(error).strip().splitlines()[-1] if str(error).strip() else "")
