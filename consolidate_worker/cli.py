"""``memory consolidate --now [--dry-run] [--bank B] [--json]``: the consolidator's CLI verb.

The parser is built by ``consolidate_worker.spec.add_cli`` (the worker's ``WorkerSpec.add_cli``,
so the verb disappears with the package); this module, with the core, is imported only when the
verb runs. Where the pass runs:

- ``--data-dir`` (embedded mode): in this process, over a local ``MemoryStore`` on that folder;
- else the running ``memory-consolidator`` actor runs it (``run_now``);
- else, when only the store is up, in this process over the Ray store client (every shard:
  one Ray task per shard, as the actor runs it).

Errors are raised as they are (``MemoryServiceError``); the CLI edge turns them into messages
and exit codes. The exit code is 0 for a clean pass and 1 when the report carries errors.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from consolidate_worker.core import Consolidator
from consolidate_worker.judge import judge_from
from consolidate_worker.report import Report
from consolidate_worker.settings import ConsolidatorSettings
from consolidate_worker.shards import ShardRunner, run_in_turn
from shared.client import connect
from shared.contract import errors
from shared.contract.api import StoreAPI


def run(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    if not getattr(args, "now", False):
        raise errors.InvalidArgumentError("nothing to do: pass --now to run a pass")
    banks = list(args.banks) if getattr(args, "banks", None) else None
    dry_run = bool(getattr(args, "dry_run", False))
    data_dir = getattr(args, "data_dir", None)
    if data_dir:
        report = _embedded(str(data_dir), banks, dry_run)
    else:
        report = _remote(banks, dry_run)
    print_report(report, as_json=bool(getattr(args, "json", False)), out=out)
    return 0 if report.ok else 1


def _consolidator(store: StoreAPI, runner: ShardRunner | None = None) -> Consolidator:
    """A pass run here reads the same MEMORY_CONSOLIDATE_* settings, judge included, as the
    memory-consolidator actor."""
    settings = ConsolidatorSettings.from_env()
    return Consolidator(store, settings=settings, judge=judge_from(settings), shard_runner=runner)


def _embedded(data_dir: str, banks: list[str] | None, dry_run: bool) -> Report:
    # The embedded mode opens the folder the way every ``memory --data-dir`` verb does (the
    # other MEMORY_* settings apply), through the store worker's entry point: this package
    # keeps no dependency on the store worker (siblings reach it only through its contract:
    # docs/ARCHITECTURE.md#the-siblings-reach-the-store-only-through-its-contract).
    store = connect(f"file:{data_dir}")
    try:
        runner = None
        sharding = store.sharding()
        if sharding is not None:  # MEMORY_STORE_SHARDS: a pass per shard
            shards = sharding.shards
            runner = run_in_turn(
                lambda job, dry: _consolidator(shards[job.shard]).run_shard(
                    job.shard, banks=job.banks, dry_run=dry, budget=job.budget
                )
            )
        return _consolidator(store, runner).run_pass(banks=banks, dry_run=dry_run)
    finally:
        store.close()


def _remote(banks: list[str] | None, dry_run: bool) -> Report:
    from consolidate_worker.actor import ACTOR_READS, RayShardRunner
    from consolidate_worker.spec import ACTOR_NAME
    from shared.client.ray import ActorClient, join_cluster
    from shared.client.sharded import ShardedStoreClient

    join_cluster()
    actor = ActorClient(actor_name=ACTOR_NAME, reads=ACTOR_READS, timeout=None)
    try:
        actor.handle  # noqa: B018 - looks the actor up; raises when it is not running
    except errors.SourceUnavailableError:
        print("memory-consolidator is not running; running the pass here", file=sys.stderr)
        store = ShardedStoreClient.connect()
        runner = None
        if store.sharding() is not None:
            runner = RayShardRunner(store, ConsolidatorSettings.from_env())
        return _consolidator(store, runner).run_pass(banks=banks, dry_run=dry_run)
    report = actor.call("run_now", banks=banks, dry_run=dry_run)
    if not isinstance(report, Report):
        raise errors.UnknownError(f"{ACTOR_NAME}.run_now answered a {type(report).__name__}")
    return report


def print_report(report: Report, *, as_json: bool, out: TextIO) -> None:
    if as_json:
        out.write(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
        return
    out.write(report.summary() + "\n")
    for g in report.groups:
        retire = ", ".join(g.retire) or "-"
        kept = f" (pinned kept: {', '.join(g.pinned_kept)})" if g.pinned_kept else ""
        out.write(f"  [{g.bank}] {g.reason}: keep {g.survivor}; retire {retire}{kept}\n")
    for d in report.judged:
        keep = f" (keep {d.keep})" if d.keep else ""
        out.write(
            f"  [{d.bank}] judge, {d.kind}: {d.pair[0]} ~ {d.pair[1]}: {d.decision}{keep}"
            f"{': ' + d.reason if d.reason else ''}\n"
        )
    for c in report.capped:
        out.write(f"  capped: [{c.bank}] {c.id} -> {c.survivor}\n")
    for e in report.errors:
        where = f"shard {e.shard}" if e.shard is not None else e.bank
        out.write(f"  error: [{where}] {e.id or '-'}: {e.category}: {e.message}\n")
