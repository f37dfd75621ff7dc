"""What every benchmark measures with: timing percentiles, a throwaway local Ray cluster, and
the results file."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np


def percentiles(samples_s: Sequence[float]) -> dict[str, float]:
    """p50, p95 and mean of timings given in seconds, in milliseconds, and how many."""
    ms = np.asarray(samples_s, dtype=np.float64) * 1000.0
    return {
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "mean_ms": round(float(ms.mean()), 3),
        "n": len(ms),
    }


def process_row(label: str, row: dict[str, float], target: float | None = None) -> str:
    """One whole-process timing as a table line: wall p50 / p95 and CPU p50 in ms, and
    whether the p50 met ``target`` (ms), when there is one."""
    mark = ""
    if target is not None:
        mark = f"  {'met' if row['p50_ms'] <= target else 'MISSED'} (≤ {target:g})"
    figures = f"{row['p50_ms']:>8.1f} {row['p95_ms']:>8.1f} {row['cpu_p50_ms']:>7.1f}"
    return f"  {label:<24}{figures}{mark}"


def in_threads(n: int, work: Callable[[int], None]) -> float:
    """``work(i)`` in each of ``n`` threads at once; wall seconds from the first start to the
    last join. The first error any thread raised is raised here, after all have ended."""
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            work(i)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - started


def import_ray() -> Any:
    """The ``ray`` module, set up for a throwaway local cluster (no auth token)."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")  # a throwaway local cluster
    import ray

    return ray


@contextmanager
def local_ray(namespace: str) -> Iterator[Any]:
    """A throwaway local Ray cluster for one benchmark (2 CPUs, no dashboard, its own temp dir,
    removed afterwards); yields the ``ray`` module. Imports Ray only when called."""
    ray = import_ray()

    tmp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        namespace=namespace,
        _temp_dir=str(tmp),
    )
    try:
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


def write_results(path: Path, results: Any) -> None:
    """The results as indented JSON at ``path``, its folder made if missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
