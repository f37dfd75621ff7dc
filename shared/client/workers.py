"""How the ``memory`` CLI finds the workers it can start (README "What it is").

Each worker package declares one entry point in the ``agent_memory.workers`` group that names a
``WorkerSpec``. Removing a worker package removes it from ``memory up`` cleanly, because the CLI
only knows what the installed entry points say. ``add_cli`` lets a worker add its own verbs
(``memory consolidate ...``) without the CLI importing the worker's internals.

``start_detached`` is the one way a worker's ``start`` creates its named detached actor.

Packages that add verbs but start no worker (``integrations``: ``memory mcp``, ``memory hook``)
declare a ``CommandSpec`` in the ``agent_memory.commands`` group instead; ``discover_commands``
finds them the same way.

The embedded mode (``memory --data-dir``) opens the store the same way: the store worker's
spec carries ``open_embedded(settings) -> StoreAPI``, and ``open_embedded_store`` finds it, so
``shared`` never imports a worker package (``make lint`` enforces it).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.contract.api import StoreAPI
    from shared.contract.config import StoreSettings

log = logging.getLogger(__name__)

GROUP = "agent_memory.workers"
COMMANDS_GROUP = "agent_memory.commands"
NAMESPACE = "memory"


def package_version() -> str:
    """This installation's version (the ``agent-memory`` distribution's metadata)."""
    try:
        return metadata.version("agent-memory")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "0.0.0+local"


@dataclass(frozen=True)
class WorkerSpec:
    """One startable worker: its short name, its Ray actor name, and how to start it."""

    name: str  # "store", "extractor", "consolidator", "grpc"
    actor_name: str  # "memory-store", ...
    start: Callable[..., Any]  # start(settings_env: dict[str, str]) -> actor handle
    default_on: bool = True  # started by a bare ``memory up``
    order: int = 50  # start order (the store first)
    add_cli: Callable[[argparse._SubParsersAction[Any]], None] | None = field(default=None)
    # The store worker only: the store in this process, without Ray (the embedded mode).
    # ``open_embedded(settings, one_shot=False)``; ``one_shot``: a single-threaded caller that
    # runs one command and ends (the CLI), which the store may boot for lazily.
    open_embedded: Callable[..., StoreAPI] | None = field(default=None)
    # The extractor only: one turn's extraction run now, in this process, over any store
    # (``extract_now``); what a library caller that adds a conversation synchronously uses.
    extract_turn: Callable[..., Any] | None = field(default=None)
    # ``before_up(settings_env) -> settings to add``: run by ``memory up`` before it starts or
    # joins a cluster, to refuse (a typed error) what could not start, such as a taken port.
    before_up: Callable[[dict[str, str]], dict[str, str]] | None = field(default=None)


def lazy(target: str) -> Callable[..., Any]:
    """``"package.module:function"`` as a function that imports its module at the first call.
    A worker's spec module names its ``start``, ``open_embedded`` and ``add_cli`` this way, so
    loading the entry points (``memory --help``, ``up``, ``status``) imports no worker core,
    numpy or Ray until a verb needs them."""
    module, _, name = target.partition(":")

    def call(*args: Any, **kwargs: Any) -> Any:
        import importlib

        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"{target}, imported at the first call (shared.client.workers.lazy)."
    return call


class UpSetting(argparse.Action):
    """A flag a worker adds to ``memory up`` that reaches the workers as a ``MEMORY_*``
    variable: collected into ``worker_env``, which ``up`` starts the actors with. ``check``
    turns the value into what is stored (a ``MemoryServiceError`` becomes argparse's usage
    error, exit 2); ``implies`` names an opt-in worker the flag also starts (``also_start``:
    ``--grpc-port`` starts the gateway)."""

    def __init__(
        self,
        option_strings: list[str],
        dest: str,
        *,
        env: str,
        check: Callable[[Any], object] | None = None,
        implies: str | None = None,
        **kw: Any,
    ) -> None:
        super().__init__(option_strings, dest, **kw)
        self.env = env
        self.check = check
        self.implies = implies

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        from shared.contract.errors import MemoryServiceError

        value = values
        if self.check is not None:
            try:
                value = self.check(values)
            except MemoryServiceError as e:
                parser.error(str(e))
        env = dict(getattr(namespace, "worker_env", None) or {})
        env[self.env] = str(value)
        namespace.worker_env = env
        if self.implies is not None:
            also = list(getattr(namespace, "also_start", None) or [])
            namespace.also_start = [*also, self.implies]


def add_up_setting(sub: argparse._SubParsersAction[Any], flag: str, **kw: Any) -> None:
    """Add ``flag`` to ``memory up`` as an ``UpSetting`` (``kw``: its ``env``, ``check``,
    ``metavar``, ``help`` ...); nothing when the CLI being built has no ``up`` verb."""
    up = sub.choices.get("up")
    if up is not None:
        up.add_argument(flag, action=UpSetting, **kw)


def add_endpoint_settings(
    sub: argparse._SubParsersAction[Any], flag: str, env: str, *, calls: str, model: str
) -> None:
    """``memory up``'s two flags pointing a worker's model ``calls`` at any OpenAI-compatible
    server: ``--<flag>-api-base`` (``<env>_API_BASE``) and ``--<flag>-api-key-env``, the NAME
    of the variable holding the key, which ``up`` reads and hands on as ``<env>_API_KEY``."""
    add_up_setting(
        sub,
        f"--{flag}-api-base",
        metavar="URL",
        env=f"{env}_API_BASE",
        help=f"send {calls} to this OpenAI-compatible server (llama.cpp, Ollama, vLLM), e.g. "
        f"http://127.0.0.1:8080/v1; default {env}_API_BASE, else the provider litellm picks "
        f"for {model}",
    )
    add_up_setting(
        sub,
        f"--{flag}-api-key-env",
        metavar="VAR",
        env=f"{env}_API_KEY",
        check=lazy("shared.llm.endpoint:key_from_variable"),  # the key, read by `up`
        help=f"NAME of the environment variable holding the API key of {calls} (e.g. "
        f"OPENAI_API_KEY); `up` reads it here and hands the key to the actors; default "
        f"{env}_API_KEY_ENV, else litellm's own provider variable",
    )


def flag_count(value: object, most: int, what: str) -> int:
    """A count of 1 to ``most`` from a flag or a ``MEMORY_*`` variable (an ``UpSetting``'s
    ``check``), or ``InvalidArgumentError``: "``what`` must be 1..``most``"."""
    from shared.contract.errors import InvalidArgumentError

    try:
        n = int(str(value))
    except ValueError:
        n = 0
    if not 1 <= n <= most:
        raise InvalidArgumentError(f"{what} must be 1..{most}, got {value!r}")
    return n


@dataclass(frozen=True)
class CommandSpec:
    """Verbs a package adds to ``memory`` without being a worker (nothing to start)."""

    name: str  # "integrations"
    add_cli: Callable[[argparse._SubParsersAction[Any]], None]


def discover() -> list[WorkerSpec]:
    """Installed workers, in start order; a broken entry point is logged and skipped."""
    specs = [s for s in _load(GROUP) if isinstance(s, WorkerSpec)]
    return sorted(specs, key=lambda s: (s.order, s.name))


def discover_commands() -> list[CommandSpec]:
    """Installed command plug-ins, by name; a broken entry point is logged and skipped."""
    specs = [s for s in _load(COMMANDS_GROUP) if isinstance(s, CommandSpec)]
    return sorted(specs, key=lambda s: s.name)


def _load(group: str) -> list[object]:
    found: list[object] = []
    for ep in metadata.entry_points(group=group):
        try:
            found.append(ep.load())
        except Exception as e:  # a half-removed package must not break the CLI
            log.warning("entry point %s (%s) failed to load: %s", ep.name, group, e)
    return found


def open_embedded_store(settings: StoreSettings, *, one_shot: bool = False) -> StoreAPI:
    """The store on ``settings.data_dir`` in this process, from the installed store worker.

    Entry points load one at a time, ``store`` first: the embedded CLI imports the store
    worker only, not every sibling (so a ``memory --data-dir`` call stays fast)."""
    spec = _first_with(
        "open_embedded",
        "no installed worker can open an embedded store (is store_worker installed?)",
        first="store",
    )
    assert spec.open_embedded is not None
    return spec.open_embedded(settings, one_shot=one_shot)


def extract_now(store: StoreAPI, messages: list[dict[str, str]], **options: Any) -> Any:
    """One turn's extraction, run now in this process over ``store``, by the installed
    extractor (its spec's ``extract_turn``: ``extract_worker.inline``), so an integration
    reaches it without importing a worker."""
    spec = _first_with(
        "extract_turn", "no installed worker can extract memories (is extract_worker installed?)"
    )
    assert spec.extract_turn is not None
    return spec.extract_turn(store, messages, **options)


def _first_with(field: str, missing: str, *, first: str | None = None) -> WorkerSpec:
    """The first installed worker spec whose ``field`` is set, entry points loaded one at a
    time (``first``: that one tried before the others); ``missing`` is the error without one."""
    eps = metadata.entry_points(group=GROUP)
    for ep in sorted(eps, key=lambda ep: ep.name != first) if first else eps:
        try:
            spec = ep.load()
        except Exception as e:  # a half-removed worker must not break the caller
            log.warning("worker entry point %s failed to load: %s", ep.name, e)
            continue
        if isinstance(spec, WorkerSpec) and getattr(spec, field) is not None:
            return spec
    from shared.contract.errors import SourceUnavailableError

    raise SourceUnavailableError(missing, retryable=False)


SIBLING_RESOURCE_ENV = "MEMORY_SIBLING_RESOURCE"


def sibling_options(env: dict[str, str], **options: Any) -> dict[str, Any]:
    """The Ray options of a worker other than the store: ``options``, plus, when
    ``MEMORY_SIBLING_RESOURCE`` names a custom resource, one unit of it and no CPU. Only the
    siblings' nodes declare that resource (``deploy/raycluster.yaml``), so on a cluster the
    extractor, the consolidator and the gateway never land on the head or on the store's
    node, and never hold the CPU the store's node offers. Unset (one machine): ``options``
    unchanged, as ``memory up`` has always placed them."""
    name = env.get(SIBLING_RESOURCE_ENV)
    if not name:
        return dict(options)
    resources = {**options.get("resources", {}), name: 1}
    return {**options, "num_cpus": 0, "resources": resources}


def start_detached(
    actor_class: type,
    *args: Any,
    name: str,
    max_restarts: int,
    release_on_error: bool = False,
    **options: Any,
) -> Any:
    """Start (or find) the named detached actor and wait until it answers ``ping``.

    A running actor is returned as it is (``get_if_exists``): ``args`` reach only a new one.
    ``options`` are the worker's own Ray options (``max_concurrency``, ``num_cpus`` ...).
    A failed ``__init__`` or ``ping`` raises here; with ``release_on_error`` the actor is
    killed first (its name freed for a corrected retry) and its own typed error is raised.
    Ray is imported lazily: the CLI loads every worker module on each run.
    """
    import ray

    handle: Any = (
        ray.remote(actor_class)
        .options(
            name=name,
            namespace=NAMESPACE,
            lifetime="detached",
            get_if_exists=True,
            max_restarts=max_restarts,
            **options,
        )
        .remote(*args)
    )
    try:
        ray.get(handle.ping.remote())
    except ray.exceptions.RayTaskError as e:
        if not release_on_error:
            raise
        from shared.client.ray import unwrap

        ray.kill(handle, no_restart=True)
        raise unwrap(e) from None
    return handle
