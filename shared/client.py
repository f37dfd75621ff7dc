"""The Ray client every caller of the store uses: the CLI, the extractor, the consolidator.

``connect()`` joins a running cluster; ``StoreClient`` wraps the named ``memory-store`` actor
and exposes the store's methods synchronously under their own names::

    connect()
    store = StoreClient()
    store.save("The user prefers tabs", tags=["style"])   # == ray.get(handle.save.remote(...))

Errors reach the caller as the store raised them: Ray wraps an actor's exception in a
``RayTaskError`` (a dual subclass of the original class), and the client re-raises the original
``MemoryServiceError`` so ``except NotFoundError`` works and ``str(e)`` is the store's message.
Transport failures (no cluster, no actor, a dead or restarting actor, a timeout) become a
retryable ``SourceUnavailableError`` (DESIGN §9). Read-only calls are re-sent by Ray across an
actor restart (``max_task_retries`` per call); writes never are (``store_worker.actor`` says
why).
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from typing import Any

from shared.errors import MemoryServiceError, SourceUnavailableError, UnknownError
from shared.workers import NAMESPACE

STORE_ACTOR = "memory-store"
NO_STORE_HINT = "no memory store is running; start it with `memory up` or `make run`"
DEFAULT_TIMEOUT_S = 120.0
READ_RETRIES = 3

# Calls that change nothing: Ray may send them again after the actor restarted mid-call.
# Anything not listed is treated as a write (at most once): the safe default for a new method.
READ_METHODS = frozenset(
    {
        "ping",
        "get",
        "list",
        "tags",
        "recall",
        "bank_list",
        "rule_list",
        "rule_get",
        "describe",
        "capabilities",
        "events_since",
        "state_get",
        "session_lineage",
        "preview",
        "backlinks",
        "dangling",
        "drafts",
        "outbox_job",
        "outbox_list",
    }
)
# The store's public methods by name (DESIGN §3); kept for callers that extend the set.
WRITE_METHODS = frozenset(
    {
        "bank_create",
        "bank_delete",
        "save",
        "update",
        "delete",
        "pin",
        "supersede",
        "approve",
        "reject",
        "rule_set",
        "doctor",  # writes and trashes a scratch bank
        "reload",
        "configure",
        "subscribe",
        "unsubscribe",
        "state_set",
        "link_session",
        "pre_generate",
        "turn_completed",
        "outbox_claim",
        "outbox_ack",
        "outbox_fail",
        "outbox_note",
        "outbox_requeue",
        "outbox_watch",
    }
)
STORE_METHODS = READ_METHODS | WRITE_METHODS


def connect(address: str | None = None, *, quiet: bool = True) -> dict[str, Any]:
    """Join a running Ray cluster in namespace ``memory``; returns ``{"dashboard_url": ...}``.

    ``address`` defaults to ``RAY_ADDRESS``, else the local ``ray start`` cluster (never Ray's
    "auto", which may join any cluster on the machine: ``shared.cluster.local_address``).
    Already connected (a test's cluster, a Ray job): nothing changes.
    """
    import ray

    from shared.cluster import local_address

    if ray.is_initialized():
        return {"dashboard_url": _dashboard_url()}
    address = address or os.environ.get("RAY_ADDRESS") or local_address()
    if not address:
        raise SourceUnavailableError(NO_STORE_HINT)
    _token_auth_if_available()
    try:
        context = ray.init(
            address=address,
            namespace=NAMESPACE,
            logging_level=logging.ERROR if quiet else logging.INFO,
            log_to_driver=not quiet,
        )
    except ConnectionError as e:
        raise SourceUnavailableError(NO_STORE_HINT) from e
    url = getattr(context, "dashboard_url", "") or ""
    return {"dashboard_url": _http(url)}


def _token_auth_if_available() -> None:
    """Send the cluster token when there is one (FACTS "Ray": clients need RAY_AUTH_MODE=token).

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


class StoreClient:
    """Synchronous proxy over a named actor (default ``memory-store``).

    Every public name (or, given ``methods``, every name in it) is callable as
    ``client.<name>(*args, **kwargs)``; ``call`` is the same with the name as a string; a name
    the actor lacks is an ``UnknownError``. Siblings reuse the class for their own actors by
    passing their ``actor_name``, ``methods`` and ``read_methods``.
    """

    def __init__(
        self,
        handle: Any = None,
        *,
        actor_name: str = STORE_ACTOR,
        timeout: float | None = DEFAULT_TIMEOUT_S,
        methods: frozenset[str] | None = None,
        read_methods: frozenset[str] = READ_METHODS,
    ) -> None:
        self._handle = handle
        self.actor_name = actor_name
        self.timeout = timeout
        self.methods = methods
        self.read_methods = read_methods

    @property
    def handle(self) -> Any:
        if self._handle is None:
            self._handle = get_actor(self.actor_name)
        return self._handle

    def __getattr__(self, name: str) -> Callable[..., Any]:
        allowed = self.methods is None or name in self.methods
        if name.startswith("_") or not allowed:
            raise AttributeError(f"{type(self).__name__} has no method {name!r}")
        return functools.partial(self.call, name)

    def call(self, method: str, /, *args: Any, **kwargs: Any) -> Any:
        """``ray.get(handle.<method>.remote(...))`` with the store's errors, unwrapped."""
        import ray.exceptions as rex

        attempts = 2 if method in self.read_methods else 1
        for attempt in range(attempts):
            try:
                return self._once(method, args, kwargs)
            except rex.RayActorError as e:  # died, or restarting (ActorUnavailableError)
                self._handle = None  # a fresh `memory up` makes a new actor with the name
                if attempt + 1 < attempts:
                    continue
                raise SourceUnavailableError(f"{self.actor_name} is unavailable: {e}") from e
        raise AssertionError("unreachable")  # pragma: no cover

    def _once(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        import ray
        import ray.exceptions as rex

        remote = getattr(self.handle, method, None)
        if remote is None:
            raise UnknownError(f"the running {self.actor_name} has no method {method!r}")
        if method in self.read_methods:
            # Ray re-sends a read after the actor restarted (a call to a restarting actor fails
            # at once otherwise); writes keep the actor's max_task_retries=0: at most once.
            remote = remote.options(max_task_retries=READ_RETRIES)
        ref = remote.remote(*args, **kwargs)
        try:
            return ray.get(ref, timeout=self.timeout)
        except rex.GetTimeoutError as e:
            ray.cancel(ref)
            raise SourceUnavailableError(
                f"{self.actor_name}.{method} took longer than {self.timeout:g} s"
            ) from e
        except rex.RayTaskError as e:
            raise unwrap(e) from None


def unwrap(error: Exception) -> MemoryServiceError:
    """The store's own typed error inside a ``RayTaskError``; anything else is ``unknown``."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, MemoryServiceError):
        return cause
    if cause is not None:
        return UnknownError(f"{type(cause).__name__}: {cause}")
    return UnknownError(str(error).strip().splitlines()[-1] if str(error).strip() else "")
