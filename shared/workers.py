"""How the ``memory`` CLI finds the workers it can start (DESIGN §10).

Each worker package declares one entry point in the ``agent_memory.workers`` group that names a
``WorkerSpec``. Removing a worker package removes it from ``memory up`` cleanly, because the CLI
only knows what the installed entry points say. ``add_cli`` lets a worker add its own verbs
(``memory consolidate ...``) without the CLI importing the worker's internals.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

log = logging.getLogger(__name__)

GROUP = "agent_memory.workers"
NAMESPACE = "memory"


@dataclass(frozen=True)
class WorkerSpec:
    """One startable worker: its short name, its Ray actor name, and how to start it."""

    name: str  # "store", "extractor", "consolidator", "grpc"
    actor_name: str  # "memory-store", ...
    start: Callable[..., Any]  # start(settings_env: dict[str, str]) -> actor handle
    default_on: bool = True  # started by a bare ``memory up``
    order: int = 50  # start order (the store first)
    add_cli: Callable[[argparse._SubParsersAction[Any]], None] | None = field(default=None)


def discover() -> list[WorkerSpec]:
    """Installed workers, in start order; a broken entry point is logged and skipped."""
    specs: list[WorkerSpec] = []
    for ep in metadata.entry_points(group=GROUP):
        try:
            spec = ep.load()
        except Exception as e:  # a half-removed worker must not break the CLI
            log.warning("worker entry point %s failed to load: %s", ep.name, e)
            continue
        if isinstance(spec, WorkerSpec):
            specs.append(spec)
    return sorted(specs, key=lambda s: (s.order, s.name))
