"""The extractor's entry point (``agent_memory.workers``: ``extractor``), importing nothing
heavy: ``start`` (the actor, litellm) is imported at its first call
(``shared.client.workers.lazy``)."""

from __future__ import annotations

from typing import Any

from shared.client.workers import (
    WorkerSpec,
    add_endpoint_settings,
    add_up_setting,
    flag_count,
    lazy,
)

ACTOR_NAME = "memory-extractor"
MAX_REPLICAS = 64


def replica_name(name: str, i: int) -> str:
    return name if i == 0 else f"{name}-{i}"


def replica_count(value: object) -> int:
    return flag_count(value, MAX_REPLICAS, "extractor replicas")


def _add_cli(sub: Any) -> None:
    lazy("extract_worker.chat:add_cli")(sub)
    add_endpoint_settings(
        sub,
        "extraction",
        "MEMORY_EXTRACTION",
        calls="the extractor's model calls",
        model="MEMORY_EXTRACTION_MODEL",
    )
    add_up_setting(
        sub,
        "--extractor-replicas",
        metavar="K",
        env="MEMORY_EXTRACTOR_REPLICAS",
        check=replica_count,
        help="run K extractors (memory-extractor, memory-extractor-1 ...); default 1",
    )


WORKER = WorkerSpec(
    name="extractor",
    actor_name=ACTOR_NAME,
    start=lazy("extract_worker.actor:start"),
    order=10,
    add_cli=_add_cli,
    extract_turn=lazy("extract_worker.inline:extract_turn"),
)
