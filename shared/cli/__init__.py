"""``memory``: the command line of the memory service (docs/ARCHITECTURE.md#the-parts).

Cluster verbs: ``up``, ``down``, ``stop``, ``status``. Every store method has a verb
(``save``, ``recall``, ``rule set`` ...; defined in ``shared.cli.store``) that talks to the
running ``memory-store`` actor through ``shared.client.ray`` — or, in the embedded mode
(``--data-dir DIR``, or ``MEMORY_EMBEDDED=1`` with ``MEMORY_DATA_DIR``), to a ``MemoryStore``
in this process, no Ray.

Output: short human text by default, the response model as JSON with ``--json``.
Exit codes: 0 success; 2 a typed ``MemoryServiceError`` (one line ``error: <category>:
<message>`` on stderr) or bad usage; 1 anything unexpected (and ``doctor`` finding a problem).

Worker verbs: each installed ``WorkerSpec.add_cli(subparsers)`` may add its own verbs, and so
may each ``CommandSpec`` of the ``agent_memory.commands`` group (``memory mcp``, ``memory
hook``). Such a verb sets ``handler`` (or ``func``) to ``handler(args) -> int``; it finds
``args.json`` and ``args.data_dir`` (the data dir in the embedded mode, else ``None``) on
``args``, and may raise ``MemoryServiceError``, which this module turns into the message and
exit code.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import difflib
import gc
import importlib.util
import json
import os
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from shared import format as fmt
from shared.cli import down as down_verbs
from shared.cli import output as show
from shared.cli import report
from shared.cli.down import say
from shared.cli.store import (
    STORE_VERBS,
    Render,
    Verb,
    add_store_verbs,
    add_verb,
)
from shared.cli.tokens import add_token_verbs
from shared.client import connect, console_file, gateway_file
from shared.contract.errors import InvalidArgumentError, MemoryServiceError, SourceUnavailableError


def _lazy(name: str) -> ModuleType:
    """``name`` imported on first use (``importlib.util.LazyLoader``): a store verb through the
    gateway never needs the cluster code or the worker entry points, whose imports would
    slow every one-shot command."""
    found = sys.modules.get(name)
    if found is not None:
        return found
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(name)
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:
    from shared.cli import cluster
    from shared.client import lifecycle
    from shared.client.workers import CommandSpec, WorkerSpec
    from shared.contract.api import StoreAPI
else:
    cluster = _lazy("shared.cli.cluster")
    lifecycle = _lazy("shared.client.lifecycle")


def discover() -> list[WorkerSpec]:
    """The installed workers (``shared.client.workers.discover``, imported only when called)."""
    from shared.client.workers import discover as installed

    return installed()


def discover_commands() -> list[CommandSpec]:
    """The installed command plug-ins (``shared.client.workers.discover_commands``, imported only
    when called: a store verb never loads them)."""
    from shared.client.workers import discover_commands as installed

    return installed()


class Ctx:
    """What a verb gets: its parsed args and the store (the actor's client, or embedded)."""

    def __init__(
        self, args: argparse.Namespace, *, store: StoreAPI | None = None, out: TextIO
    ) -> None:
        self.args = args
        self.out = out
        self._store = store
        self.launch: lifecycle.Launch | None = None  # `up`: the head it starts, to undo

    @property
    def embedded(self) -> bool:
        return bool(self.args.data_dir)

    @property
    def store(self) -> StoreAPI:
        if self._store is None:
            self._store = self._open()
        return self._store

    def _open(self) -> StoreAPI:
        if self.embedded:  # one command in one thread: the store may boot lazily
            return connect(f"file:{self.args.data_dir}", one_shot=True)
        # the gateway when recorded (answers as views: this process never loads pydantic),
        # else Ray
        return connect(timeout=self.args.timeout, validate=False)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()  # an embedded store's files, a gRPC client's channel


# -- entry points ------------------------------------------------------------------------------


# verbs that answer once and end (a coding agent runs them on every prompt): ``console`` runs
# them without the cyclic collector and ends their process without Python's teardown
# (``watch`` follows until it is stopped: it keeps the collector)
ONE_SHOT = (STORE_VERBS - {"watch"}) | {"hook"}


def console() -> NoReturn:
    """The ``memory`` console script: ``main``, and for a one-shot verb a quick end.

    A one-shot verb's process lives for one command: the cyclic collector would only walk the
    objects the imports and the bank's replay leave alive (~30 ms of a ~450 ms embedded
    recall on 10k memories, measured), and the interpreter's teardown frees every one of them
    again (~50 ms) just before the OS takes the whole heap back. So the collector is off, and
    once the command is done the process ends as Python would end it, minus the teardown:
    non-daemon threads (a snapshot being written) are waited for, ``atexit`` handlers run, the
    output is flushed, then ``os._exit``. The store is closed by then (``run``)."""
    argv = sys.argv[1:]
    one_shot = _verb(argv) in ONE_SHOT
    if one_shot:
        gc.disable()
    code = main(argv)
    if one_shot:
        _end(code)
    sys.exit(code)


def _end(code: int) -> NoReturn:
    shutdown = getattr(threading, "_shutdown", None)  # what the interpreter calls at exit:
    if shutdown is not None and threading.current_thread() is threading.main_thread():
        shutdown()  # threading's own exit hooks (executors stop), then every thread joined
    else:
        current = threading.current_thread()
        for thread in threading.enumerate():
            if thread is not current and not thread.daemon:
                thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):  # None when the descriptor was closed at start
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a reader that went away: as Python reports it
            code = code or 120
    os._exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """``memory``: parse ``argv`` (default ``sys.argv[1:]``), run it, return the exit code."""
    # pydantic looks for plugins among every installed package's entry points when it builds
    # its first model schema (importlib.metadata, zipfile, email ...: ~10 ms of a ~160 ms
    # command, measured); this CLI uses none. A caller's own setting wins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    return run(list(sys.argv[1:] if argv is None else argv))


def run(
    argv: Sequence[str],
    *,
    store: StoreAPI | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Parse and run one command; ``store`` injects a backend (tests)."""
    out = out or sys.stdout
    err = err or sys.stderr
    specs, commands = _plugins_for(_verb(argv))
    args = build_parser(specs, commands).parse_args(list(argv))
    args.data_dir = _embedded_dir(args)
    ctx = Ctx(args, store=store, out=out)
    try:
        return _dispatch(ctx)
    except MemoryServiceError as e:
        err.write(f"error: {e.category}: {e.message}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # the edge: one line, never a traceback for a user
        err.write(f"error: unexpected: {type(e).__name__}: {e}\n")
        return 1
    finally:
        if store is None:
            ctx.close()


_VALUED = frozenset({"--data-dir", "--timeout"})  # global options that take a value


def _verb(argv: Sequence[str]) -> str | None:
    """The command's verb: the first word that is not a global option or its value."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in _VALUED:
            skip = True
        elif not word.startswith("-"):
            return word
    return None


def _plugins_for(verb: str | None) -> tuple[list[WorkerSpec], list[CommandSpec]]:
    """The worker specs and command plug-ins the parser needs for ``verb``: none for a store
    verb; only its own plug-in for a plug-in's verb (``memory hook`` runs on every prompt of
    a coding agent: loading every worker package would cost it ~0.3 s, measured); all of them
    for the cluster verbs, a worker's own verbs and ``--help``."""
    if verb in STORE_VERBS:
        return [], []
    commands = discover_commands()
    owner = [c for c in commands if verb in _verbs_of(c)]
    if owner:
        return [], owner
    return discover(), commands


def _verbs_of(command: CommandSpec) -> set[str]:
    """The top-level verbs ``command`` adds (it adds them to a throwaway parser)."""
    sub = argparse.ArgumentParser(add_help=False).add_subparsers()
    command.add_cli(sub)
    return set(sub.choices)


def _embedded_dir(args: argparse.Namespace) -> str | None:
    chosen = getattr(args, "data_dir", None)
    if chosen:
        return str(chosen)
    if os.environ.get("MEMORY_EMBEDDED", "").lower() in ("1", "true", "yes"):
        return os.environ.get("MEMORY_DATA_DIR") or "./data/memory"
    return None


def _dispatch(ctx: Ctx) -> int:
    args = ctx.args
    verb: Verb | None = getattr(args, "verb", None)
    if verb is None:
        handler = getattr(args, "handler", None) or getattr(args, "func", None)
        if handler is None:
            raise InvalidArgumentError("no command given; see `memory --help`")
        return int(handler(args) or 0)  # a worker's own verb (WorkerSpec.add_cli)
    result = verb(ctx)
    if isinstance(result, int) and not isinstance(result, bool):
        return result  # cluster verbs print as they go
    _print(ctx, result, getattr(args, "render", None))
    failed = getattr(result, "ok", True) is False
    return 1 if failed else 0


def _print(ctx: Ctx, result: Any, render: Render | None) -> None:
    if ctx.args.json:
        ctx.out.write(json.dumps(fmt.jsonable(result), indent=2, ensure_ascii=False) + "\n")
        return
    text = render(result) if render else show.default_render(result)
    if text:
        ctx.out.write(fmt.terminal_safe(text.rstrip("\n")) + "\n")


# -- the parser --------------------------------------------------------------------------------


def _common(
    data_dir_help: str = "embedded mode: use this data dir in-process, without Ray",
) -> argparse.ArgumentParser:
    """Options every verb accepts after its name too (SUPPRESS keeps a global value)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print the result as JSON"
    )
    p.add_argument("--data-dir", default=argparse.SUPPRESS, help=data_dir_help)
    return p


class _Parser(argparse.ArgumentParser):
    """argparse, with "did you mean" for a mistyped verb or choice (its subparsers are this
    class too: ``memory bank lsit`` is answered as well as ``memory recal``)."""

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        choices = action.choices
        if choices is not None and value not in choices:
            close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=3)
            if close:
                hint = " or ".join(close)
                raise argparse.ArgumentError(
                    action, f"invalid choice: {value!r} (did you mean {hint}?)"
                )
        super()._check_value(action, value)


def build_parser(
    specs: Sequence[WorkerSpec] | None = None, commands: Sequence[CommandSpec] | None = None
) -> argparse.ArgumentParser:
    """The ``memory`` parser with the verbs of ``specs`` and ``commands`` (default: every
    installed worker and command plug-in)."""
    parser = _Parser(
        prog="memory",
        description="Durable cross-session memory for LLM agents: run the service, "
        "save and recall memories, manage banks and rules.",
    )
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    parser.add_argument(
        "--data-dir",
        default=None,
        help="embedded mode: use a MemoryStore on this folder in-process, without Ray "
        "(also MEMORY_EMBEDDED=1 with MEMORY_DATA_DIR)",
    )
    parser.add_argument(
        "--timeout", type=float, default=120.0, help="seconds to wait for the store (default 120)"
    )
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")
    common = _common()
    _add_cluster_verbs(sub, common)
    add_store_verbs(sub, common)
    add_token_verbs(sub, common)  # `memory token`: scoped tokens (the admin token's join it)
    for spec in discover() if specs is None else specs:
        if spec.add_cli is not None:
            spec.add_cli(sub)
    for command in discover_commands() if commands is None else commands:
        command.add_cli(sub)  # verbs of packages that start no worker
    return parser


# -- cluster verbs -----------------------------------------------------------------------------


def _add_cluster_verbs(sub: Any, common: argparse.ArgumentParser) -> None:
    # for `up` the shared flag means "serve this folder" (there is no embedded `up`)
    serve = _common("data dir the workers serve (default MEMORY_DATA_DIR or ./data/memory)")
    p = add_verb(
        sub, "up", "Start (or join) a local Ray cluster and the memory workers.", serve, _up
    )
    p.add_argument(
        "workers", nargs="*", help="workers to start (default: every default-on installed one)"
    )
    p.add_argument("--num-cpus", type=int, help="CPUs of a newly started head")
    p.add_argument("--port", type=int, help="GCS port of a new head (Ray default 6379)")
    p.add_argument("--dashboard-port", type=int, help="dashboard port (Ray default 8265)")
    p.add_argument("--client-port", type=int, help="Ray client server port (default 10001)")
    p.add_argument("--agent-port", type=int, help="dashboard agent port (default 52365)")
    p = add_verb(
        sub,
        "down",
        "Stop the memory workers, and the cluster if `up` started it.",
        common,
        down_verbs.down,
    )
    p.add_argument(
        "--keep-cluster", action="store_true", help="stop the workers only; leave Ray running"
    )
    p = add_verb(
        sub,
        "stop",
        "Stop one worker's actor and its numbered siblings: every store shard, every "
        "extractor replica (ray.kill, no restart).",
        common,
        down_verbs.stop,
    )
    p.add_argument("worker", help="worker name, e.g. store, extractor or consolidator")
    add_verb(
        sub,
        "status",
        "Show workers, banks with counts, and the dashboard URL.",
        common,
        report.status,
    )
    p = add_verb(
        sub,
        "metrics",
        "Show the workers' current metrics (recall latency, writes, live memories, outbox, "
        "extraction and consolidation), read from Ray's metrics endpoint.",
        common,
        report.metrics,
    )
    p.add_argument(
        "--url", action="append", help="read this Prometheus endpoint instead of asking Ray"
    )


def _ray_bin() -> str:
    """The ``ray`` command of this environment (the venv's, when run from it)."""
    beside = os.path.join(os.path.dirname(sys.executable), "ray")
    if not os.path.exists(beside):
        return "ray"
    rel = os.path.relpath(beside)
    return rel if not rel.startswith("..") else beside


def _up(ctx: Ctx) -> int:
    a = ctx.args
    # Workers may add `up` flags in their add_cli: `also_start` names opt-in workers to start
    # beside the chosen ones, `worker_env` adds MEMORY_* settings (grpc_gateway: --grpc-port).
    also = list(getattr(a, "also_start", None) or [])
    chosen = list(a.workers) or ([s.name for s in cluster.select_workers([])] if also else [])
    specs = cluster.select_workers(list(dict.fromkeys(chosen + also)))
    env = {**cluster.settings_env(), **(getattr(a, "worker_env", None) or {})}
    if a.data_dir:  # `memory up --data-dir D`: the workers serve D (there is no embedded `up`)
        env["MEMORY_DATA_DIR"] = os.path.abspath(os.path.expanduser(a.data_dir))
    for spec in specs:  # refused before any cluster starts (a taken --grpc-port)
        env.update(spec.before_up(env) if spec.before_up else {})
    launch = ctx.launch = lifecycle.Launch(lifecycle.address_file().parent)
    started: list[WorkerSpec] = []
    try:
        info = _join_or_start(
            ctx,
            cluster.HeadOptions(a.num_cpus, a.port, a.dashboard_port, a.client_port, a.agent_port),
        )
        if info["dashboard_url"]:  # the console links it (an actor cannot always ask Ray)
            env.setdefault("MEMORY_CONSOLE_DASHBOARD_URL", info["dashboard_url"])
        described = _start_workers(ctx, specs, env, started)
        _dashboard_answers(info)
    except BaseException:
        _undo(ctx, launch, started)  # a failed `up` leaves nothing of its own behind
        raise
    gateway = gateway_file.read(described["data_dir"])
    if gateway is not None:  # a hook or an MCP server in any folder of this user finds it
        gateway_file.point(described["data_dir"])
    info["gateway"] = gateway.address if gateway else None
    say(ctx, f"gateway:   {_gateway_line(gateway)}")
    if gateway is not None:
        say(ctx, f"token:     {_token_line(gateway)}")
    say(ctx, f"dashboard: {info['dashboard_url'] or _no_dashboard(launch, info)}")
    if info["dashboard_url"] and os.environ.get("RAY_AUTH_MODE", "token") != "disabled":
        # Ray's token auth stays on (docs/PROTOCOLS.md#token-auth): the dashboard asks for
        # this token once
        say(ctx, f"           sign in with the token from `{_ray_bin()} get-auth-token`")
    console = console_file.read(described["data_dir"])
    if console is not None:  # the URL holds the sign-in token (the record is 0600 too)
        info["console"] = console.url
        say(ctx, f"console:   {console.login_url}")
    say(ctx, f"data dir:  {described['data_dir']}")
    if ctx.args.json:
        info.update(data_dir=described["data_dir"], workers=[s.name for s in specs])
        ctx.out.write(json.dumps(info, indent=2) + "\n")
    return 0


def _start_workers(
    ctx: Ctx, specs: list[WorkerSpec], env: dict[str, str], started: list[WorkerSpec]
) -> dict[str, Any]:
    """Start each worker (a running actor is kept as it is: get_if_exists), noting in
    ``started`` the ones this `up` created; returns the store's describe() once it answers."""
    running = cluster.worker_status(specs)
    # noted before the start: on a failure half-way, each of these that exists is stopped
    started.extend(spec for spec in specs if not running[spec.name])
    before = {spec.name: cluster.running_actor_names(spec) for spec in specs}
    for spec, _ in cluster.start_workers(specs, env):
        # a running worker may gain numbered siblings (`up --store-shards N+1`, docs/SCALING.md)
        new = [n for n in cluster.running_actor_names(spec) if n not in before[spec.name]]
        old = before[spec.name] or ([] if new else [spec.actor_name])
        line = "; ".join(
            f"{verb} {spec.name} ({', '.join(names)})"
            for verb, names in (("started", new), ("already running:", old))
            if names
        )
        say(ctx, line)
    from shared.client.ray import StoreClient

    return StoreClient(timeout=ctx.args.timeout).describe()


def _dashboard_answers(info: dict[str, Any]) -> None:
    """A dashboard this `up` started must answer before `up` says it is up."""
    url = info["dashboard_url"]
    if info.get("cluster") == "started" and url and not lifecycle.wait_dashboard(url, 60):
        session = lifecycle.session_dir()
        log = f"{session}/logs/dashboard.log" if session else "Ray's dashboard.log"
        raise SourceUnavailableError(f"the dashboard at {url} does not answer; see {log}")


def _no_dashboard(launch: lifecycle.Launch, info: dict[str, Any]) -> str:
    """``not running``, and, for a head this `up` started, Ray's reason (its port taken by a
    cluster that won the race for it, no dashboard package...)."""
    if info.get("cluster") != "started":
        return "not running"
    why = lifecycle.dashboard_failure(launch.log, lifecycle.session_dir())
    info["dashboard_error"] = why
    return f"not running ({why})"


def _undo(ctx: Ctx, launch: lifecycle.Launch, started: list[WorkerSpec]) -> None:
    if launch.session_id is not None:
        import ray

        ray.shutdown()
        count = launch.abort()
        if launch.address:
            lifecycle.forget_address(launch.address)
        say(ctx, f"`up` failed: stopped the Ray cluster it started ({count} processes)")
        return
    for spec in reversed(started):  # a joined cluster stays; only what this `up` added goes
        with contextlib.suppress(Exception):
            if cluster.stop_worker(spec):
                say(ctx, f"`up` failed: stopped {spec.name}")


def _join_or_start(ctx: Ctx, opts: cluster.HeadOptions) -> dict[str, Any]:
    from shared.client.ray import join_cluster

    try:
        info = join_cluster()
        info["cluster"] = "joined"
    except SourceUnavailableError:
        stuck = lifecycle.half_dead()
        if stuck:  # a second head's store would be refused the data dir the first still holds
            raise SourceUnavailableError(stuck, retryable=False) from None
        opts, moved = cluster.with_free_ports(opts)  # a taken port asked for: refused here
        say(ctx, "starting a local Ray cluster (ray start --head) ...")
        for note in moved:
            say(ctx, note)
        launch = ctx.launch or lifecycle.Launch(lifecycle.address_file().parent)
        cluster.start_head(opts, launch)
        info = join_cluster()
        import ray

        launch.mark(lifecycle.session_dir(), ray.get_runtime_context().gcs_address)
        info["cluster"] = "started"
    say(ctx, f"ray cluster: {info['cluster']}")
    return info


def _token_line(gateway: gateway_file.GatewayInfo) -> str:
    """How a client reaches the gateway: the token's file (found by every client through the
    record), never the token itself."""
    if gateway.no_token:
        return "NONE (--no-token / MEMORY_ALLOW_NO_TOKEN=1): anyone who reaches it has every memory"
    if gateway.token_file:
        return f"in {gateway.token_file}, found by clients here (`memory token show` prints it)"
    return "the MEMORY_GRPC_TOKEN it was started with (clients need it set too)"


def _gateway_line(gateway: gateway_file.GatewayInfo | None) -> str:
    if gateway is None:
        return "not running (the CLI goes through Ray)"
    return f"{gateway.address} (memory.v1, memory.store.v1, grpc.health.v1)"
