"""Bulk import against saving one by one: ``python -m bench.imports`` (in ``make bench``).

- ``import``: ``memory import`` of an export file of ``--size`` memories (default 100k) into an
  empty embedded store, timed from reading the file (parsing included) to the first recall
  answered (the index is built once, on that first read). Target: ≤ 30 s for 100k.
- ``import vs one by one``: per item, the first 10 × ``--sample`` items (default 10,000)
  imported, then the first ``--sample`` of them (default 1,000) through ``MemoryStore.save``,
  one call and one fsync each, in turn for five rounds; the median of the rounds' ratios.
  Target: the import ≥ 3× faster. The one-by-one time of the whole size is extrapolated from
  those rounds (100k single saves would take minutes; a save's cost is flat in the store's
  size, as ``bench.writes`` shows).

Both run embedded, on the same disk, with the bench corpus's texts (``bench.corpus``), and
with the cyclic collector off, as ``memory import`` (a one-shot verb) runs.
Reports, never assertions; results go to ``.bench/imports.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import corpus
from bench import store as b
from bench.stats import write_results
from shared.cli import formats
from shared.cli.transfer import import_file
from store_worker.core import MemoryStore

TARGET_S = 30.0
TARGET_SPEEDUP = 3.0
IMPORTED = 10  # items imported per item saved one by one, in each side-by-side round


def write_export(path: Path, n: int) -> None:
    """An export file of ``n`` bench-corpus memories in bank main."""
    with path.open("w", encoding="utf-8") as f:
        f.write(json.dumps(formats.header(exported_at=0, history=False)) + "\n")
        f.write(json.dumps({"kind": "bank", "bank": "main", "description": ""}) + "\n")
        for rec in corpus.records(n):
            row = {"kind": "memory", "bank": "main", "record": rec}
            f.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def time_import(path: Path, work: Path) -> dict[str, Any]:
    data = work / "import"
    store = MemoryStore(data)  # opened outside the timing, as the one-by-one saves' store
    try:
        started = time.perf_counter()
        gc.disable()  # as ``memory import`` runs it (a one-shot verb: ``shared.cli.console``)
        summary = import_file(store, path)
        written = time.perf_counter()
        store.recall("deploy schedule", limit=5)  # the index is built on this first read
        spent = time.perf_counter() - started
        indexing = time.perf_counter() - written
    finally:
        gc.enable()
        store.close()
    shutil.rmtree(data)
    return {
        "seconds": round(spent, 2),
        "index_s": round(indexing, 2),
        "written": summary.written,
        "problems": len(summary.problems),
    }


def time_saves(path: Path, work: Path, sample: int) -> dict[str, Any]:
    records = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row.get("kind") == "memory":
                records.append(row["record"])
            if len(records) == sample:
                break
    data = work / "saves"
    store = MemoryStore(data)
    try:
        started = time.perf_counter()
        gc.disable()  # the same conditions as the import's
        for rec in records:
            store.save(
                rec["text"],
                id=rec["id"],
                type=rec.get("type", "user"),
                scope=rec.get("scope", "global"),
                project=rec.get("project"),
                session_id=rec.get("session_id"),
                tags=rec.get("tags"),
                entities=rec.get("entities"),
                pinned=rec.get("pinned", False),
                reinforce=False,
            )
        spent = time.perf_counter() - started
    finally:
        gc.enable()
        store.close()
    shutil.rmtree(data)
    return {
        "sample": len(records),
        "seconds": round(spent, 2),
        "ms_per_item": spent / len(records) * 1e3,
    }


def side_by_side(source: Path, work: Path, sample: int, rounds: int) -> dict[str, Any]:
    """Per item: the first ``IMPORTED × sample`` items imported (an import's own fixed costs,
    the index build among them, spread as a real import spreads them), then the first
    ``sample`` of them saved one by one, ``rounds`` times in turn (a shared machine's load
    changes by the minute: each round's two runs see the same); the figure is the median of
    the rounds' ratios of the per-item times."""
    imported_n = IMPORTED * sample
    head = work / "sample.jsonl"
    with source.open(encoding="utf-8") as f, head.open("w", encoding="utf-8") as out:
        for n, line in enumerate(f):
            if n >= imported_n + 2:  # the header and the bank line, then the items
                break
            out.write(line)
    ratios, imports_ms, saves_ms = [], [], []
    for _ in range(rounds):
        imported = time_import(head, work)
        saved = time_saves(head, work, sample)
        per_import = imported["seconds"] * 1e3 / imported["written"]
        ratios.append(saved["ms_per_item"] / per_import)
        imports_ms.append(round(per_import, 3))
        saves_ms.append(round(saved["ms_per_item"], 3))
    return {
        "imported": imported_n,
        "saved": sample,
        "rounds": rounds,
        "import_ms_per_item": imports_ms,
        "save_ms_per_item": saves_ms,
        "speedup": round(statistics.median(ratios), 1),
    }


def run(size: int, sample: int, rounds: int = 5) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-imports-"))
    try:
        source = work / "export.jsonl"
        write_export(source, size)
        imported = time_import(source, work)
        pair = side_by_side(source, work, min(sample, size // IMPORTED), rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per_item = statistics.median(pair["save_ms_per_item"])
    one_by_one_s = per_item * size / 1e3
    return {
        "size": size,
        "import": imported,
        "save_one_by_one": {"ms_per_item": per_item, "extrapolated_s": round(one_by_one_s, 1)},
        "side_by_side": pair,
        "import_rate_per_s": round(size / imported["seconds"]),
        "speedup": pair["speedup"],
        "met": {
            "import_s": imported["seconds"] <= TARGET_S * size / 100_000,
            "speedup": pair["speedup"] >= TARGET_SPEEDUP,
        },
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.imports", description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=100_000, help="memories imported (default 100k)")
    p.add_argument("--sample", type=int, default=1_000, help="saves a round (default 1k)")
    p.add_argument("--out", type=Path, default=b.REPO / ".bench" / "imports.json")
    a = p.parse_args(argv)
    res = run(a.size, a.sample)
    imp, one = res["import"], res["save_one_by_one"]
    target = TARGET_S * a.size / 100_000
    load = os.getloadavg()[0]
    res["load_average"] = round(load, 2)
    print(f"bulk import, embedded, {a.size:,} memories (parsing and the index included)")
    print(f"  this machine: {os.cpu_count()} cores, load average {load:.1f} at the end")
    print(
        f"  import               {imp['seconds']:8.1f} s  {res['import_rate_per_s']:8,}/s  "
        f"target ≤ {target:.3g} s: {'met' if res['met']['import_s'] else 'MISSED'}"
    )
    print(f"    of which the index, built on the first read: {imp['index_s']:.1f} s")
    print(
        f"  save one by one      {one['extrapolated_s']:8.1f} s  "
        f"{one['ms_per_item']:8.2f} ms/item  (extrapolated from the rounds below)"
    )
    pair = res["side_by_side"]
    print(
        f"  import vs one by one {res['speedup']:8.1f} ×  per item, {pair['imported']:,} imported "
        f"and {pair['saved']:,} of them saved, median of {pair['rounds']} rounds; "
        f"target ≥ {TARGET_SPEEDUP:.0f}×: {'met' if res['met']['speedup'] else 'MISSED'}"
    )
    write_results(a.out, res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
