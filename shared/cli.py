"""``memory``: the command line of the memory service (DESIGN §10, issue 2).

Cluster verbs: ``up``, ``down``, ``stop``, ``status``. Every store method has a verb
(``save``, ``recall``, ``rule set`` ...) that talks to the running ``memory-store`` actor
through ``shared.client`` — or, in the embedded mode (``--data-dir DIR``, or
``MEMORY_EMBEDDED=1`` with ``MEMORY_DATA_DIR``), to a ``MemoryStore`` in this process, no Ray.

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
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from shared import cli_output as show
from shared import cluster
from shared.errors import InvalidArgumentError, MemoryServiceError, SourceUnavailableError
from shared.workers import WorkerSpec, discover

Verb = Callable[["Ctx"], Any]
Render = Callable[[Any], str]


class Ctx:
    """What a verb gets: its parsed args and the store (the actor's client, or embedded)."""

    def __init__(self, args: argparse.Namespace, *, store: Any = None, out: TextIO) -> None:
        self.args = args
        self.out = out
        self._store = store
        self.dashboard_url = ""

    @property
    def embedded(self) -> bool:
        return bool(self.args.data_dir)

    @property
    def store(self) -> Any:
        if self._store is None:
            self._store = self._open()
        return self._store

    def _open(self) -> Any:
        if self.embedded:
            from shared.config import StoreSettings
            from store_worker.core import MemoryStore

            settings = StoreSettings.from_env(dict(os.environ), data_dir=self.args.data_dir)
            return MemoryStore(settings=settings)
        from shared.client import StoreClient, connect

        self.dashboard_url = connect()["dashboard_url"]
        return StoreClient(timeout=self.args.timeout)

    def close(self) -> None:
        close = getattr(self._store, "close", None)
        if self.embedded and callable(close):
            close()


# -- entry points ------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """The ``memory`` console script."""
    return run(list(sys.argv[1:] if argv is None else argv))


def run(
    argv: Sequence[str],
    *,
    store: Any = None,
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


def _common() -> argparse.ArgumentParser:
    """Options every verb accepts after its name too (SUPPRESS keeps a global value)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print the result as JSON"
    )
    p.add_argument(
        "--data-dir",
        default=argparse.SUPPRESS,
        help="embedded mode: use this data dir in-process, without Ray",
    )
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
    _add_memory_verbs(sub, common)
    _add_bank_verbs(sub, common)
    _add_rule_verbs(sub, common)
    _add_ops_verbs(sub, common)
    for spec in discover() if specs is None else specs:
        if spec.add_cli is not None:
            spec.add_cli(sub)
    return parser


def _verb(
    sub: Any,
    name: str,
    help: str,
    common: argparse.ArgumentParser,
    fn: Verb,
    render: Render | None = None,
) -> argparse.ArgumentParser:
    p: argparse.ArgumentParser = sub.add_parser(name, help=help, description=help, parents=[common])
    p.set_defaults(verb=fn, render=render)
    return p


def _bank_opt(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bank", help="bank to use (default: the configured default bank, main)")


# -- cluster verbs -----------------------------------------------------------------------------


def _add_cluster_verbs(sub: Any, common: argparse.ArgumentParser) -> None:
    p = _verb(sub, "up", "Start (or join) a local Ray cluster and the memory workers.", common, _up)
    p.add_argument(
        "workers", nargs="*", help="workers to start (default: every default-on installed one)"
    )
    p.add_argument("--num-cpus", type=int, help="CPUs of a newly started head")
    p.add_argument("--port", type=int, help="GCS port of a new head (Ray default 6379)")
    p.add_argument("--dashboard-port", type=int, help="dashboard port (Ray default 8265)")
    p.add_argument("--client-port", type=int, help="Ray client server port (default 10001)")
    p.add_argument("--agent-port", type=int, help="dashboard agent port (default 52365)")
    p = _verb(
        sub, "down", "Stop the memory workers, and the cluster if `up` started it.", common, _down
    )
    p.add_argument(
        "--keep-cluster", action="store_true", help="stop the workers only; leave Ray running"
    )
    p = _verb(sub, "stop", "Stop one worker's actor (ray.kill, no restart).", common, _stop)
    p.add_argument("worker", help="worker name, e.g. extractor or consolidator")
    _verb(sub, "status", "Show workers, banks with counts, and the dashboard URL.", common, _status)


def _up(ctx: Ctx) -> int:
    a = ctx.args
    # Workers may add `up` flags in their add_cli: `also_start` names opt-in workers to start
    # beside the chosen ones, `worker_env` adds MEMORY_* settings (grpc_gateway: --grpc-port).
    also = list(getattr(a, "also_start", None) or [])
    chosen = list(a.workers) or ([s.name for s in cluster.select_workers([])] if also else [])
    specs = cluster.select_workers(list(dict.fromkeys(chosen + also)))
    env = {**cluster.settings_env(), **(getattr(a, "worker_env", None) or {})}
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


# -- memory verbs ------------------------------------------------------------------------------


def _add_memory_verbs(sub: Any, common: argparse.ArgumentParser) -> None:
    p = _verb(
        sub,
        "save",
        "Save a memory (the same text again reinforces it).",
        common,
        _save,
        show.save,
    )
    p.add_argument("text", help='the memory text ("-" reads stdin)')
    p.add_argument("--title", help="short title")
    p.add_argument("--id", help="suggested id (slug); a collision gets a numeric suffix")
    p.add_argument("--type", default="user", help="user | feedback | project | reference")
    p.add_argument("--scope", default="global", help="global | project | session")
    p.add_argument("--project", help="project folder for --scope project (default: cwd)")
    p.add_argument("--session-id", help="session id for --scope session")
    p.add_argument("--tag", action="append", dest="tags", help="a tag (repeatable)")
    p.add_argument("--entity", action="append", dest="entities", help="an entity (repeatable)")
    p.add_argument("--pin", action="store_true", help="pin it: never touched automatically")
    p.add_argument("--confidence", default="stated", help="stated | extracted | inferred")
    _bank_opt(p)

    p = _verb(
        sub,
        "recall",
        "Recall the memories that best match a query.",
        common,
        _recall,
        show.recall,
    )
    p.add_argument("query", help="what to look for")
    p.add_argument("--limit", type=int, help="how many memories (default 10)")
    p.add_argument("--mode", default="hybrid", help="hybrid | lexical | semantic")
    p.add_argument("--tag", help="only memories with this tag")
    p.add_argument("--budget", type=int, help="token budget of the answer")
    p.add_argument("--type", action="append", dest="types", help="only this type (repeatable)")
    p.add_argument("--scope", action="append", dest="scopes", help="only this scope (repeatable)")
    p.add_argument("--project", help="the project folder a project-scoped memory must match")
    p.add_argument("--session-id", help="the session whose session memories are visible")
    p.add_argument("--include-superseded", action="store_true", help="history view: retired too")
    _bank_opt(p)

    p = _verb(
        sub,
        "preview",
        "Show what a turn on this message would be given: rules section and recalled block.",
        common,
        _preview,
        show.preview,
    )
    p.add_argument("query", help="the hypothetical chat message")
    _bank_opt(p)

    p = _verb(sub, "get", "Show one memory by id.", common, _get, show.memory)
    p.add_argument("id", help="memory id")
    _bank_opt(p)

    p = _verb(sub, "list", "List memories, newest first, in pages.", common, _list, show.memories)
    p.add_argument("--tag", help="only this tag")
    p.add_argument("--type", help="only this type")
    p.add_argument("--scope", help="only this scope")
    p.add_argument("--status", help="canonical | pending")
    p.add_argument("--include-superseded", action="store_true", help="include retired memories")
    p.add_argument("--page-size", type=int, help="memories per page (1-500, default 50)")
    p.add_argument("--page-token", help="continue from a previous page")
    p.add_argument("--all", action="store_true", help="follow every page")
    _bank_opt(p)

    p = _verb(
        sub,
        "update",
        "Revise a memory in place (same id, next revision).",
        common,
        _update,
        show.memory,
    )
    p.add_argument("id", help="memory id")
    p.add_argument("--text", help="new text")
    p.add_argument("--title", help="new title")
    p.add_argument("--tag", action="append", dest="tags", help="replace the tags (repeatable)")
    p.add_argument("--entity", action="append", dest="entities", help="replace the entities")
    pin = p.add_mutually_exclusive_group()
    pin.add_argument("--pin", action="store_true", default=None, dest="pinned", help="pin it")
    pin.add_argument("--unpin", action="store_false", dest="pinned", help="unpin it")
    _bank_opt(p)

    p = _verb(
        sub,
        "delete",
        "Delete a memory (a tombstone; it stays in history).",
        common,
        _delete,
        show.memory,
    )
    p.add_argument("id", help="memory id")
    p.add_argument("--reason", help="why (kept in the event)")
    _bank_opt(p)

    for name, pinned in (("pin", True), ("unpin", False)):
        what = "Pin a memory: never touched by automatic paths." if pinned else "Unpin a memory."
        p = _verb(sub, name, what, common, _pin, show.memory)
        p.add_argument("id", help="memory id")
        p.set_defaults(pinned=pinned)
        _bank_opt(p)

    p = _verb(
        sub,
        "supersede",
        "Retire a memory in favour of a live one.",
        common,
        _supersede,
        show.supersede,
    )
    p.add_argument("id", help="the memory to retire")
    p.add_argument("--by", required=True, dest="survivor", help="the live memory that replaces it")
    p.add_argument("--reason", help="why")
    p.add_argument("--reinforce", action="store_true", help="merge observations into the survivor")
    _bank_opt(p)

    p = _verb(sub, "tags", "List a bank's tags with counts.", common, _tags, show.tags)
    _bank_opt(p)

    p = _verb(
        sub, "watch", "Follow the store's events (item-changed, bank-changed).", common, _watch
    )
    p.add_argument("--bank", help="only this bank's events")
    p.add_argument("--from", type=int, default=0, dest="cursor", help="start after this cursor")
    p.add_argument("--once", action="store_true", help="print what is there and exit")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between polls")


def _save(ctx: Ctx) -> Any:
    a = ctx.args
    text = sys.stdin.read() if a.text == "-" else a.text
    project = (a.project or os.getcwd()) if a.scope == "project" else a.project
    return ctx.store.save(
        text,
        bank=a.bank,
        title=a.title,
        id=a.id,
        type=a.type,
        scope=a.scope,
        project=project,
        session_id=a.session_id,
        tags=a.tags,
        entities=a.entities,
        pinned=a.pin,
        confidence=a.confidence,
        recorded_by="cli",
    )


def _recall(ctx: Ctx) -> Any:
    a = ctx.args
    return ctx.store.recall(
        a.query,
        bank=a.bank,
        limit=a.limit,
        tag=a.tag,
        mode=a.mode,
        include_superseded=a.include_superseded,
        token_budget=a.budget,
        session_id=a.session_id,
        project=a.project,
        type_filter=a.types,
        scope_filter=a.scopes,
    )


def _preview(ctx: Ctx) -> Any:
    return ctx.store.preview(ctx.args.query, bank=ctx.args.bank)


def _get(ctx: Ctx) -> Any:
    return ctx.store.get(ctx.args.id, bank=ctx.args.bank)


def _list(ctx: Ctx) -> Any:
    a = ctx.args
    kwargs = dict(
        bank=a.bank,
        tag=a.tag,
        type=a.type,
        scope=a.scope,
        status=a.status,
        include_superseded=a.include_superseded,
        page_size=a.page_size,
    )
    page = ctx.store.list(page_token=a.page_token, **kwargs)
    if not a.all:
        return page
    rows = list(page.memories)
    while page.next_page_token:
        page = ctx.store.list(page_token=page.next_page_token, **kwargs)
        rows += page.memories
    return page.model_copy(update={"memories": tuple(rows), "next_page_token": None})


def _update(ctx: Ctx) -> Any:
    a = ctx.args
    return ctx.store.update(
        a.id,
        bank=a.bank,
        text=a.text,
        title=a.title,
        tags=a.tags,
        entities=a.entities,
        pinned=a.pinned,
    )


def _delete(ctx: Ctx) -> Any:
    return ctx.store.delete(ctx.args.id, bank=ctx.args.bank, reason=ctx.args.reason)


def _pin(ctx: Ctx) -> Any:
    return ctx.store.pin(ctx.args.id, ctx.args.pinned, bank=ctx.args.bank)


def _supersede(ctx: Ctx) -> Any:
    a = ctx.args
    return ctx.store.supersede(
        a.id, a.survivor, bank=a.bank, reason=a.reason, reinforce=a.reinforce
    )


def _tags(ctx: Ctx) -> Any:
    return ctx.store.tags(bank=ctx.args.bank)


def _watch(ctx: Ctx) -> int:
    a = ctx.args
    cursor = a.cursor
    while True:
        found = ctx.store.events_since(cursor, bank=a.bank)
        for event in found.events:
            line = json.dumps(show.jsonable(event)) if a.json else show.event(event)
            ctx.out.write(line + "\n")
        ctx.out.flush()
        cursor = found.cursor
        if a.once:
            if not a.json and not found.events:
                ctx.out.write(f"no events after cursor {a.cursor} (cursor {cursor})\n")
            return 0
        time.sleep(a.interval)  # a polling follower, like `tail -f`


# -- bank, rule and operations verbs -----------------------------------------------------------


def _add_bank_verbs(sub: Any, common: argparse.ArgumentParser) -> None:
    group = sub.add_parser("bank", help="Create, list and delete banks.", description="Banks.")
    inner = group.add_subparsers(title="bank commands", metavar="COMMAND", required=True)
    p = _verb(
        inner, "create", "Create a bank (idempotent).", common, _bank_create, show.bank_created
    )
    p.add_argument("name", help="bank name: [a-z0-9][a-z0-9_-]{0,63}")
    p.add_argument("--description", help="what the bank is for")
    _verb(
        inner,
        "list",
        "List banks with memory, rule and pinned counts.",
        common,
        _bank_list,
        show.banks,
    )
    p = _verb(
        inner,
        "delete",
        "Delete a bank (moved to .trash, recoverable by hand).",
        common,
        _bank_delete,
    )
    p.add_argument("name", help="bank name")


def _bank_create(ctx: Ctx) -> Any:
    return ctx.store.bank_create(ctx.args.name, ctx.args.description)


def _bank_list(ctx: Ctx) -> Any:
    return ctx.store.bank_list()


def _bank_delete(ctx: Ctx) -> Any:
    ctx.args.render = lambda r: f"trashed to {r.trashed_to}"
    return ctx.store.bank_delete(ctx.args.name)


def _add_rule_verbs(sub: Any, common: argparse.ArgumentParser) -> None:
    group = sub.add_parser("rule", help="List, show, set and remove rules.", description="Rules.")
    inner = group.add_subparsers(title="rule commands", metavar="COMMAND", required=True)
    p = _verb(inner, "list", "List a bank's rules.", common, _rule_list, show.rules)
    _bank_opt(p)
    p = _verb(inner, "show", "Print one rule's content.", common, _rule_show, lambda r: r.content)
    p.add_argument("name", help="rule name")
    _bank_opt(p)
    p = _verb(
        inner,
        "set",
        "Create or replace a rule (--file, --content or stdin).",
        common,
        _rule_set,
        show.rule_set,
    )
    p.add_argument("name", help="rule name: [a-z0-9][a-z0-9_-]{0,63}")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--file", help="read the content from this markdown file")
    src.add_argument("--content", help="the content itself")
    _bank_opt(p)
    p = _verb(inner, "rm", "Remove a rule.", common, _rule_rm, show.rule_set)
    p.add_argument("name", help="rule name")
    _bank_opt(p)


def _rule_list(ctx: Ctx) -> Any:
    return ctx.store.rule_list(bank=ctx.args.bank)


def _rule_show(ctx: Ctx) -> Any:
    return ctx.store.rule_get(ctx.args.name, bank=ctx.args.bank)


def _rule_set(ctx: Ctx) -> Any:
    a = ctx.args
    if a.file:
        try:
            content = Path(a.file).read_text("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise InvalidArgumentError(f"cannot read {a.file}: {e}") from e
    elif a.content is not None:
        content = a.content
    else:
        content = sys.stdin.read()
    if not content.strip():
        raise InvalidArgumentError("empty rule content; use `memory rule rm NAME` to remove")
    return ctx.store.rule_set(a.name, content, bank=a.bank)


def _rule_rm(ctx: Ctx) -> Any:
    ctx.store.rule_get(ctx.args.name, bank=ctx.args.bank)  # a typo is not_found, not a no-op
    return ctx.store.rule_set(ctx.args.name, "", bank=ctx.args.bank)


def _add_ops_verbs(sub: Any, common: argparse.ArgumentParser) -> None:
    _verb(
        sub,
        "doctor",
        "Check the store's health (exit 1 when a required check fails).",
        common,
        _doctor,
        show.doctor,
    )
    _verb(sub, "reload", "Re-read every bank from the files (after hand edits).", common, _reload)
    _verb(
        sub, "describe", "Show the service's name, version, digest and data dir.", common, _describe
    )
    _verb(sub, "capabilities", "Show what the store supports.", common, _capabilities)
    p = _verb(sub, "configure", "Change settings at run time: KEY=VALUE ...", common, _configure)
    p.add_argument("pairs", nargs="+", metavar="KEY=VALUE", help="setting and value")


def _doctor(ctx: Ctx) -> Any:
    return ctx.store.doctor()


def _reload(ctx: Ctx) -> Any:
    ctx.args.render = lambda r: f"reloaded {len(r.banks)} banks ({r.corrupt_lines} corrupt lines)"
    return ctx.store.reload()


def _describe(ctx: Ctx) -> Any:
    return ctx.store.describe()


def _capabilities(ctx: Ctx) -> Any:
    return ctx.store.capabilities()


def _configure(ctx: Ctx) -> Any:
    changes: dict[str, Any] = {}
    for pair in ctx.args.pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidArgumentError(f"expected KEY=VALUE, got {pair!r}")
        changes[key.strip()] = value  # pydantic coerces "3" / "true" to the field's type
    return ctx.store.configure(changes)
