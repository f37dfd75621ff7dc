"""``memory``: the command line of the memory service (DESIGN §10, issue 2).

Cluster verbs: ``up``, ``down``, ``stop``, ``status``. Every store method has a verb
(``save``, ``recall``, ``rule set`` ...; defined in ``shared.cli_store``) that talks to the
running ``memory-store`` actor through ``shared.client`` — or, in the embedded mode
(``--data-dir DIR``, or ``MEMORY_EMBEDDED=1`` with ``MEMORY_DATA_DIR``), to a ``MemoryStore``
in this process, no Ray.

Output: short human text by default, the response model as JSON with ``--json``.
Exit codes: 0 success; 2 a typed ``MemoryServiceError`` (one line ``error: <category>:
<message>`` on stderr) or bad usage; 1 anything unexpected (and ``doctor`` finding a problem).

Worker verbs: each installed ``WorkerSpec.add_cli(subparsers)`` may add its own verbs. Such a
verb sets ``handler`` (or ``func``) to ``handler(args) -> int``; it finds ``args.json`` and
``args.data_dir`` (set to the data dir in the embedded mode, else ``None``) on ``args``, and
may raise ``MemoryServiceError``, which this module turns into the message and exit code.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from shared import cli_output as show
from shared import cluster
from shared.api import StoreAPI
from shared.cli_store import Render, Verb, add_store_verbs, add_verb, close_store, open_store
from shared.errors import InvalidArgumentError, MemoryServiceError, SourceUnavailableError
from shared.workers import WorkerSpec, discover


class Ctx:
    """What a verb gets: its parsed args and the store (the actor's client, or embedded)."""

    def __init__(
        self, args: argparse.Namespace, *, store: StoreAPI | None = None, out: TextIO
    ) -> None:
        self.args = args
        self.out = out
        self._store = store
        self.dashboard_url = ""

    @property
    def embedded(self) -> bool:
        return bool(self.args.data_dir)

    @property
    def store(self) -> StoreAPI:
        if self._store is None:
            self._store = self._open()
        return self._store

    def _open(self) -> StoreAPI:
        if self.embedded:
            return open_store(self.args.data_dir)
        from shared.client import connect
        from shared.sharded import ShardedStoreClient

        self.dashboard_url = connect()["dashboard_url"]
        return ShardedStoreClient.connect(timeout=self.args.timeout)  # one shard: a StoreClient

    def close(self) -> None:
        if self.embedded and self._store is not None:
            close_store(self._store)


# -- entry points ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """The ``memory`` console script."""
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
    specs = discover()
    args = build_parser(specs).parse_args(list(argv))
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
        ctx.out.write(json.dumps(show.jsonable(result), indent=2, ensure_ascii=False) + "\n")
        return
    text = render(result) if render else show.default_render(result)
    if text:
        ctx.out.write(text.rstrip("\n") + "\n")


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


def build_parser(specs: Sequence[WorkerSpec] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    for spec in discover() if specs is None else specs:
        if spec.add_cli is not None:
            spec.add_cli(sub)
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
        sub, "down", "Stop the memory workers, and the cluster if `up` started it.", common, _down
    )
    p.add_argument(
        "--keep-cluster", action="store_true", help="stop the workers only; leave Ray running"
    )
    p = add_verb(sub, "stop", "Stop one worker's actor (ray.kill, no restart).", common, _stop)
    p.add_argument("worker", help="worker name, e.g. extractor or consolidator")
    add_verb(
        sub, "status", "Show workers, banks with counts, and the dashboard URL.", common, _status
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
    info = _join_or_start(
        ctx, cluster.HeadOptions(a.num_cpus, a.port, a.dashboard_port, a.client_port, a.agent_port)
    )
    running = cluster.worker_status(specs)  # a running actor is kept as it is (get_if_exists)
    for spec, _ in cluster.start_workers(specs, env):
        verb = "already running:" if running[spec.name] else "started"
        _say(ctx, f"{verb} {spec.name} ({spec.actor_name})")
    from shared.client import StoreClient

    described = StoreClient(timeout=a.timeout).describe()
    _say(ctx, f"dashboard: {info['dashboard_url'] or 'not running'}")
    if info["dashboard_url"] and os.environ.get("RAY_AUTH_MODE", "token") != "disabled":
        # Ray's token auth stays on (FACTS.md): the dashboard asks for this token once
        _say(ctx, f"           sign in with the token from `{_ray_bin()} get-auth-token`")
    _say(ctx, f"data dir:  {described['data_dir']}")
    if ctx.args.json:
        info.update(data_dir=described["data_dir"], workers=[s.name for s in specs])
        ctx.out.write(json.dumps(info, indent=2) + "\n")
    return 0


def _join_or_start(ctx: Ctx, opts: cluster.HeadOptions) -> dict[str, Any]:
    from shared.client import connect

    try:
        info = connect()
        info["cluster"] = "joined"
    except SourceUnavailableError:
        _say(ctx, "starting a local Ray cluster (ray start --head) ...")
        opts, moved = cluster.with_free_ports(opts)
        for note in moved:
            _say(ctx, note)
        cluster.start_head(opts)
        info = connect()
        cluster.mark_started(cluster.session_dir())
        info["cluster"] = "started"
    _say(ctx, f"ray cluster: {info['cluster']}")
    return info


def _say(ctx: Ctx, line: str) -> None:
    stream = sys.stderr if ctx.args.json else ctx.out
    stream.write(line + "\n")
    stream.flush()


def _down(ctx: Ctx) -> int:
    import ray

    from shared.client import connect

    try:
        connect()
    except SourceUnavailableError:
        _say(ctx, "nothing to stop: no memory cluster is running")
        return 0
    for spec in reversed(discover()):
        if cluster.stop_worker(spec):
            _say(ctx, f"stopped {spec.name}")
    session = cluster.session_dir()
    if ctx.args.keep_cluster or session is None or not cluster.started_by_us(session):
        why = "" if ctx.args.keep_cluster else " (not started by `memory up`)"
        _say(ctx, f"ray cluster left running{why}")
        return 0
    address = ray.get_runtime_context().gcs_address
    ray.shutdown()
    count = cluster.stop_session(session)
    cluster.forget_address(address)
    _say(ctx, f"ray cluster stopped ({count} processes)")
    return 0


def _stop(ctx: Ctx) -> int:
    from shared.client import connect

    spec = cluster.select_workers([ctx.args.worker])[0]
    connect()
    stopped = cluster.stop_worker(spec)
    _say(ctx, f"stopped {spec.name}" if stopped else f"{spec.name} was not running")
    return 0


def _status(ctx: Ctx) -> Any:
    if ctx.embedded:
        return {"mode": "embedded", "data_dir": ctx.args.data_dir, "banks": _banks(ctx)}
    from shared.client import connect

    url = connect()["dashboard_url"]
    specs = discover()
    workers = cluster.worker_status(specs)
    banks = _banks(ctx) if workers.get("store") else []
    ctx.args.render = show.status
    return {"mode": "ray", "dashboard_url": url, "workers": workers, "banks": banks}


def _banks(ctx: Ctx) -> list[dict[str, Any]]:
    return [b.model_dump(mode="json") for b in ctx.store.bank_list().banks]
