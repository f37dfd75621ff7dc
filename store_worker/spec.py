"""The store worker's entry point (``agent_memory.workers``: ``store``), importing nothing heavy.

The ``memory`` CLI loads every worker's spec on ``--help``, ``up`` and ``status``; the parts
that need the store's core, numpy or Ray (``start``, ``open_embedded``) are named here and
imported at their first call (``shared.client.workers.lazy``), so loading the spec costs nothing.
"""

from __future__ import annotations

from shared.client.workers import WorkerSpec, lazy

ACTOR_NAME = "memory-store"

WORKER = WorkerSpec(
    name="store",
    actor_name=ACTOR_NAME,
    start=lazy("store_worker.actor:start"),
    order=0,
    open_embedded=lazy("store_worker.actor:open_embedded"),
    add_cli=lazy("store_worker.cli:add_cli"),
)
