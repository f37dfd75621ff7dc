"""The consolidator's entry point (``agent_memory.workers``: ``consolidator``), importing
nothing heavy: ``start`` and the verb's ``run`` are imported at their first call
(``shared.client.workers.lazy``); ``memory --help`` only builds the parser."""

from __future__ import annotations

import argparse
from typing import Any

from shared.client.workers import WorkerSpec, add_up_setting, lazy

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
    add_up_setting(
        subparsers,
        "--judge-api-base",
        metavar="URL",
        env="MEMORY_CONSOLIDATE_JUDGE_API_BASE",
        help="send the consolidator's judge calls to this OpenAI-compatible server (llama.cpp, "
        "Ollama, vLLM), e.g. http://127.0.0.1:8080/v1; default "
        "MEMORY_CONSOLIDATE_JUDGE_API_BASE, else the provider litellm picks for the judge model",
    )
    add_up_setting(
        subparsers,
        "--judge-api-key-env",
        metavar="VAR",
        env="MEMORY_CONSOLIDATE_JUDGE_API_KEY",
        check=lazy("shared.llm.endpoint:key_from_variable"),  # the key, read by `up`
        help="NAME of the environment variable holding the judge's API key (e.g. "
        "OPENAI_API_KEY); `up` reads it here and hands the key to the actors; default "
        "MEMORY_CONSOLIDATE_JUDGE_API_KEY_ENV, else litellm's own provider variable",
    )


WORKER = WorkerSpec(
    name="consolidator",
    actor_name=ACTOR_NAME,
    start=lazy("consolidate_worker.actor:start"),
    order=20,
    add_cli=add_cli,
)
