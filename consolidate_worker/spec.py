"""The consolidator's entry point (``agent_memory.workers``: ``consolidator``), importing
nothing heavy: ``start`` and the verb's ``run`` are imported at their first call
(``shared.client.workers.lazy``); ``memory --help`` only builds the parser."""

from __future__ import annotations

import argparse
from typing import Any

from shared.client.workers import WorkerSpec, add_endpoint_settings, lazy

ACTOR_NAME = "memory-consolidator"
HELP = "Run one consolidation pass (dedup and supersede) now and print its report."


def add_cli(subparsers: argparse._SubParsersAction[Any]) -> None:
    """``memory consolidate --now [--dry-run] [--bank B] [--json] [--data-dir D]``
    (``consolidate_worker.cli.run``)."""
    p = subparsers.add_parser("consolidate", help=HELP, description=HELP)
    p.add_argument("--now", action="store_true", help="run one pass now (required)")
    p.add_argument("--dry-run", action="store_true", help="plan the pass without writing")
    p.add_argument(
        "--bank", action="append", dest="banks", metavar="B", help="only this bank (repeatable)"
    )
    # SUPPRESS: never clobber a global --json / --data-dir parsed before the verb.
    p.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print the report as JSON"
    )
    p.add_argument(
        "--data-dir",
        default=argparse.SUPPRESS,
        help="embedded mode: run over this data dir in-process, without Ray",
    )
    run = lazy("consolidate_worker.cli:run")
    p.set_defaults(func=run, handler=run)
    add_endpoint_settings(
        subparsers,
        "judge",
        "MEMORY_CONSOLIDATE_JUDGE",
        calls="the consolidator's judge calls",
        model="the judge model",
    )


WORKER = WorkerSpec(
    name="consolidator",
    actor_name=ACTOR_NAME,
    start=lazy("consolidate_worker.actor:start"),
    order=20,
    add_cli=add_cli,
)
