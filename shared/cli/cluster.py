"""A local Ray cluster for ``memory up`` / ``memory down``, and worker start-up.

``memory up`` joins a running cluster or starts a head with ``ray start --head`` in its own
processes, so the cluster (and the detached actors in it) outlives the CLI. Token auth stays
on: Ray ≥ 2.59 turns it on for ``ray.init()`` clusters, but ``ray start`` turns it on only when
a token already exists (docs/PROTOCOLS.md#token-auth), so ``up`` makes one with
``ray get-auth-token --generate`` unless ``RAY_AUTH_MODE`` says otherwise.

``memory down`` never runs ``ray stop``: that kills *every* Ray process on the machine, other
people's clusters included. It stops the cluster only when ``memory up`` started it (a marker
in the session dir), and then only that cluster's processes (``shared.client.lifecycle``).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from shared.client.lifecycle import (
    Launch,
    error_line,
)
from shared.client.workers import NAMESPACE, WorkerSpec, discover
from shared.contract.errors import InvalidArgumentError, SourceUnavailableError


@dataclass(frozen=True)
class HeadOptions:
    """Ports and size of a head started by ``memory up``; ``None`` keeps Ray's default."""

    num_cpus: int | None = None
    port: int | None = None  # GCS, Ray's default 6379
    dashboard_port: int | None = None  # Ray's default 8265
    client_port: int | None = None  # Ray client server, default 10001 (not in 10002-19999)
    agent_port: int | None = None  # dashboard agent HTTP, default 52365


# Ray's fixed defaults for a head; the other ports are random already. A shared machine may
# hold one of them (another `ray start`, a `ray.init()` dashboard), so `up` moves aside.
DEFAULT_PORTS = {"port": 6379, "dashboard_port": 8265, "client_port": 10001}
PORT_LABELS = {
    "port": "GCS",
    "dashboard_port": "dashboard",
    "client_port": "Ray client",
    "agent_port": "dashboard agent",
}
PORT_FLAGS = {
    "port": "--port",
    "dashboard_port": "--dashboard-port",
    "client_port": "--client-port",
    "agent_port": "--agent-port",
}


class PortTakenError(InvalidArgumentError):
    """A port the user asked for (``memory up --dashboard-port P``...) is taken: ``up`` refuses
    before starting anything, rather than start a head whose dashboard cannot bind."""

    def __init__(self, name: str, port: int) -> None:
        self.port = port
        self.option = name
        super().__init__(
            f"port {port} ({PORT_LABELS[name]}, {PORT_FLAGS[name]}) is taken by another "
            f"process: free it, pick another port, or drop {PORT_FLAGS[name]} to let `up` pick one"
        )


def port_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def free_port(start: int, stop: int) -> int:
    """The first free port in [start, stop), else any free one the kernel picks."""
    for port in range(start, stop):
        if port_free(port):
            return port
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        return int(sock.getsockname()[1])


def with_free_ports(
    opts: HeadOptions, defaults: dict[str, int] | None = None
) -> tuple[HeadOptions, list[str]]:
    """Fill ports left at Ray's defaults that are busy; returns what moved, to tell the user.
    A port the user chose that is taken raises ``PortTakenError`` (nothing started yet).

    Ports stay below Ray's worker range (10002-19999) or above it: the dashboard tries
    8266-8299 first so it stays recognisable; GCS and client get kernel-picked ports.
    """
    for name in PORT_LABELS:
        chosen = getattr(opts, name)
        if chosen is not None and not port_free(chosen):
            raise PortTakenError(name, chosen)
    changes: dict[str, int] = {}
    notes = []
    for name, default in (DEFAULT_PORTS if defaults is None else defaults).items():
        if getattr(opts, name) is None and not port_free(default):
            near = (default + 1, default + 35) if name == "dashboard_port" else (0, 0)
            changes[name] = free_port(*near)
            notes.append(f"port {default} is busy: {PORT_LABELS[name]} on {changes[name]}")
    return replace(opts, **changes), notes


def ray_executable() -> str:
    beside = Path(sys.executable).with_name("ray")
    if beside.exists():
        return str(beside)
    found = shutil.which("ray")
    if found is None:
        raise SourceUnavailableError("the `ray` command is not installed in this environment")
    return found


def head_command(opts: HeadOptions) -> list[str]:
    cmd = [ray_executable(), "start", "--head", "--dashboard-host", "127.0.0.1"]
    cmd.append("--disable-usage-stats")
    flags = {
        "--num-cpus": opts.num_cpus,
        "--port": opts.port,
        "--dashboard-port": opts.dashboard_port,
        "--ray-client-server-port": opts.client_port,
        "--dashboard-agent-listen-port": opts.agent_port,
    }
    for flag, value in flags.items():
        if value is not None:
            cmd += [flag, str(value)]
    return cmd


def start_head(opts: HeadOptions, launch: Launch) -> None:
    """``ray start --head`` through ``launch`` (returns once the head runs; on failure its
    processes are the caller's to stop: ``launch.abort()``); token auth on unless opted out."""
    env = dict(os.environ)
    mode = env.get("RAY_AUTH_MODE", "").lower()
    if mode in ("", "token"):
        env["RAY_AUTH_MODE"] = "token"
        _run([ray_executable(), "get-auth-token", "--generate"], env, "make an auth token")
    launch.start(head_command(opts), env)


def _run(cmd: Sequence[str], env: dict[str, str], what: str) -> None:
    done = subprocess.run(list(cmd), env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        why = error_line(done.stderr + "\n" + done.stdout) or f"exit code {done.returncode}"
        raise SourceUnavailableError(f"could not {what}: {why}")


# -- workers -------------------------------------------------------------------------------


def select_workers(
    names: Sequence[str], specs: Sequence[WorkerSpec] | None = None
) -> list[WorkerSpec]:
    """The workers ``up`` starts: the named ones, or every default-on one; start order kept."""
    specs = list(discover() if specs is None else specs)
    if not names:
        return [s for s in specs if s.default_on]
    known = {s.name: s for s in specs}
    unknown = [n for n in names if n not in known]
    if unknown:
        from shared.contract.errors import InvalidArgumentError

        have = ", ".join(sorted(known)) or "none"
        raise InvalidArgumentError(f"unknown worker {', '.join(unknown)} (installed: {have})")
    return [s for s in specs if s.name in names]


def start_workers(specs: Sequence[WorkerSpec], env: dict[str, str]) -> list[tuple[WorkerSpec, Any]]:
    """Start each worker in order with the ``MEMORY_*`` settings; the same path as ``memory up``."""
    return [(spec, spec.start(env)) for spec in specs]


def worker_status(specs: Sequence[WorkerSpec]) -> dict[str, bool]:
    import ray

    status = {}
    for spec in specs:
        try:
            ray.get_actor(spec.actor_name, namespace=NAMESPACE)
            status[spec.name] = True
        except ValueError:
            status[spec.name] = False
    return status


def stop_worker(spec: WorkerSpec) -> list[str]:
    """``ray.kill(no_restart=True)`` of the worker's actor and of its numbered siblings (store
    shards ``memory-store-<i>``, extractor replicas ``memory-extractor-<i>``; docs/SCALING.md):
    frees their names, touching no other actor. The names stopped (empty: none was running)."""
    import ray

    stopped = []
    for name in running_actor_names(spec):
        try:
            handle = ray.get_actor(name, namespace=NAMESPACE)
        except ValueError:  # gone meanwhile
            continue
        ray.kill(handle, no_restart=True)
        stopped.append(name)
    return stopped


def running_actor_names(spec: WorkerSpec) -> list[str]:
    """The worker's actor and numbered siblings running now (``worker_actor_names``)."""
    import ray

    return worker_actor_names(spec, ray.util.list_named_actors(all_namespaces=True))


def worker_actor_names(spec: WorkerSpec, named: list[Any]) -> list[str]:
    """The worker's actor and its numbered siblings among Ray's named actors (``named``: what
    ``ray.util.list_named_actors(all_namespaces=True)`` returns), shard 0 / replica 0 first."""
    sibling = re.compile(rf"{re.escape(spec.actor_name)}-(\d+)\Z")
    found: dict[str, int] = {}
    for entry in named:
        name = entry.get("name") if isinstance(entry, dict) else entry
        space = entry.get("namespace", NAMESPACE) if isinstance(entry, dict) else NAMESPACE
        if space != NAMESPACE or not isinstance(name, str):
            continue
        if name == spec.actor_name:
            found[name] = 0
        elif (m := sibling.match(name)) is not None:
            found[name] = int(m.group(1))
    return sorted(found, key=lambda n: found[n])


def settings_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The ``MEMORY_*`` variables workers are started with; the data dir made absolute; each
    API key a ``MEMORY_*_API_KEY_ENV`` names read here and passed as ``MEMORY_*_API_KEY``
    (``shared.llm.endpoint``), so the actors never depend on the environment Ray started in."""
    from shared.contract.config import StoreSettings
    from shared.llm.endpoint import resolve_named_keys

    source = dict(os.environ if environ is None else environ)
    env = {k: v for k, v in source.items() if k.startswith("MEMORY_") and k != "MEMORY_EMBEDDED"}
    env["MEMORY_DATA_DIR"] = str(StoreSettings.from_env(source).data_path)
    env.update(resolve_named_keys(source))
    return env
