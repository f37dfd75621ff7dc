"""Whole-process wall time of ``memory`` commands, start-up included (what a user waits
for): ``python -m bench.cli``.

Each row runs one command ``--runs`` times (default 20) as a user does, a fresh process each
time, and reports p50/p95 of the wall time from spawn to exit:

- ``gateway``: ``memory recall`` / ``memory save`` with the service up, through the gateway's
  memory.store.v1 (the production path: CLI → gRPC → ``memory-grpc`` actor → store actor).
  Target: p50 ≤ 150 ms, and no Ray in the CLI's process. ``memory status`` and ``memory
  metrics`` too (the gateway answers what they need of the cluster): target p50 ≤ 500 ms.
- ``ray``: the same commands over the old path (a Ray driver per command: ``ray.init``, a
  job registered, ``StoreClient``), for comparison.
- ``embedded``: ``memory --data-dir D recall`` on a 10k-memory bank. Target: p50 ≤ 400 ms.
- ``gateway save 10000 tags``: ``memory save`` with 10,000 ``--tag`` through the gateway; it
  answers the store's typed refusal (at most 1000 tags, exit 2). Target: p50 ≤ 500 ms (argparse
  alone took 2-5 s before the verb gathered its repeated options).

The Ray rows start a throwaway local cluster in this process (private temp dir, Ray picks
free ports, auth off) with the store and gateway actors; ``--no-ray`` serves the gateway
from this process over an embedded store instead and skips the old-path rows. Reports, never
assertions; results go to ``.bench/cli.json``.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import store as b
from bench.stats import local_ray, percentiles, process_row, write_results

TARGETS_MS = {"gateway": 150.0, "embedded": 400.0, "tags": 500.0}
TAGS = 10_000
# `memory status` / `memory metrics` through the gateway: it pings the workers, lists the
# shards or reads Ray's metrics export for them
CLUSTER_TARGET_MS = 500.0
CLUSTER_VERBS = ("status", "metrics")
QUERY = "what does the user prefer"


def memory_cmd() -> list[str]:
    """The ``memory`` console script beside this interpreter (as a user runs it)."""
    script = Path(sys.executable).with_name("memory")
    if script.exists():
        return [sys.executable, str(script)]
    return [sys.executable, "-c", "import sys; from shared.cli import main; sys.exit(main())"]


def wall(
    argv: Sequence[str] | Callable[[int], Sequence[str]],
    env: dict[str, str],
    runs: int,
    *,
    cmd: Sequence[str] | None = None,
    stdin: str | None = None,
    codes: tuple[int, ...] = (0,),
) -> dict[str, Any]:
    """``runs`` fresh processes (after 2 warm-ups): wall-time percentiles, and the p50 of the
    CPU time they used (user + system), which a busy machine inflates far less than wall
    time. ``argv`` may be a function of the run number (each save a new text); ``stdin`` is
    what each reads; an exit code outside ``codes`` fails the run."""
    samples, cpu = [], []
    for i in range(runs + 2):
        words = argv(i) if callable(argv) else argv
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(
            [*(memory_cmd() if cmd is None else cmd), *words],
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
        )
        took = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in codes:
            raise RuntimeError(f"memory {' '.join(words)} failed: {done.stderr.strip()}")
        if i >= 2:
            samples.append(took)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return {**percentiles(samples), "cpu_p50_ms": round(statistics.median(cpu) * 1000, 1)}


def _env(data_dir: Path, **extra: str) -> dict[str, str]:
    # bytecode caching on, as in an installed package: the warm-up runs write the .pyc files
    # (a PYTHONDONTWRITEBYTECODE=1 environment would compile every module on every command)
    dropped = ("RAY_ADDRESS", "MEMORY_EMBEDDED", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["PYTHONPATH"] = str(b.REPO)
    env["MEMORY_DATA_DIR"] = str(data_dir)
    return {**env, **extra}


def commands(env: dict[str, str], runs: int, *, cluster: bool = False) -> dict[str, Any]:
    """recall and save; with ``cluster`` (a Ray cluster runs) status and metrics too."""
    rows = {
        "recall": wall(["recall", QUERY], env, runs),
        "save": wall(lambda n: ["save", f"bench note {n} {time.time_ns()}"], env, runs),
    }
    if cluster:
        rows.update({verb: wall([verb], env, runs) for verb in CLUSTER_VERBS})
    return rows


def many_tags(env: dict[str, str], runs: int) -> dict[str, Any]:
    """``memory save`` with ``TAGS`` ``--tag``: the store's refusal (exit 2), or the save."""
    tags = [w for n in range(TAGS) for w in ("--tag", f"t{n}")]
    return wall(["save", "bench note with many tags", *tags], env, runs, codes=(0, 2))


@contextmanager
def ray_service(data_dir: Path) -> Iterator[str]:
    """A throwaway cluster with the store and gateway actors on ``data_dir``; yields the GCS
    address (the gateway records itself in ``data_dir``)."""
    with local_ray("memory") as ray:
        from grpc_gateway.actor import start as start_gateway
        from store_worker.actor import start as start_store

        env = {"MEMORY_DATA_DIR": str(data_dir), "MEMORY_GRPC_PORT": "0"}
        store = start_store(env)
        gateway = start_gateway(env)
        yield str(ray.get_runtime_context().gcs_address)
        ray.kill(gateway, no_restart=True)
        ray.kill(store, no_restart=True)


@contextmanager
def local_gateway(data_dir: Path) -> Iterator[None]:
    """The gateway in this process over an embedded store, recorded as ``up`` records it."""
    from grpc_gateway.server import build_server
    from shared.client import connect, gateway_file

    store = connect(f"file:{data_dir!s}")
    server, port = build_server(store, port=0)
    server.start()
    gateway_file.write(data_dir, f"127.0.0.1:{port}", None)
    try:
        yield
    finally:
        server.stop(None)
        gateway_file.remove(data_dir)
        store.close()


def run(runs: int, size: int, cache: Path, *, use_ray: bool) -> dict[str, Any]:
    res: dict[str, Any] = {"runs": runs, "size": size}
    cache.mkdir(parents=True, exist_ok=True)
    # the floor on this machine right now: a bare interpreter, spawned the same way
    res["python"] = wall(["-c", "pass"], dict(os.environ), runs, cmd=[sys.executable])
    big, _ = b.data_dir(size, cache)
    res["embedded"] = {"recall": wall(["--data-dir", str(big), "recall", QUERY], _env(big), runs)}
    work = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    try:
        served = work / "served"
        shutil.copytree(b.data_dir(200, cache)[0], served)
        if use_ray:
            with ray_service(served) as address:
                res["gateway"] = commands(_env(served), runs, cluster=True)
                res["tags"] = many_tags(_env(served), runs)
                # the old path: no gateway recorded for this data dir, the cluster by address
                unserved = _env(work / "unserved", RAY_ADDRESS=address)
                res["ray"] = commands(unserved, runs, cluster=True)
        else:
            with local_gateway(served):
                res["gateway"] = commands(_env(served), runs)
                res["tags"] = many_tags(_env(served), runs)
            res["ray"] = {"skipped": True}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res


def table(res: dict[str, Any]) -> str:
    lines = [
        f"memory CLI, whole process, {res['runs']} runs (wall p50 / p95, cpu p50 ms)",
        process_row("python -c pass", res["python"]) + "  (this machine's floor now)",
    ]
    for path in ("gateway", "ray"):
        for verb in ("recall", "save", *CLUSTER_VERBS):
            row = res[path].get(verb)
            if row:
                target = TARGETS_MS.get(path)
                if path == "gateway" and verb in CLUSTER_VERBS:
                    target = CLUSTER_TARGET_MS
                lines.append(process_row(f"{path} {verb}", row, target))
    lines.append(process_row(f"gateway save {TAGS} tags", res["tags"], TARGETS_MS["tags"]))
    embedded = f"embedded recall {res['size']}"
    lines.append(process_row(embedded, res["embedded"]["recall"], TARGETS_MS["embedded"]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.cli", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20, help="processes per command (default 20)")
    p.add_argument("--size", type=int, default=10_000, help="embedded bank size (default 10k)")
    p.add_argument("--no-ray", action="store_true", help="gateway in-process; no old-path rows")
    p.add_argument("--out", type=Path, default=b.REPO / ".bench" / "cli.json")
    p.add_argument("--cache", type=Path, default=b.REPO / ".bench" / "cache")
    args = p.parse_args(argv)
    res = run(args.runs, args.size, args.cache, use_ray=not args.no_ray)
    write_results(args.out, res)
    print(table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
