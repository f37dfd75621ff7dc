"""``python -m bench`` (``make bench``): every store benchmark and the redaction benchmark
in one run.

Prints a table and writes ``.bench/results.json``. Figures are reports, never assertions:
each target row says met / missed, and the run exits 0 either way.

    python -m bench                 # full: recall at 1k/10k/100k, actor at 10k, cold start 100k/1M
    python -m bench --quick         # smoke: small sizes, no 1M
    python -m bench --sizes 1000,10000 --cold-sizes 100000 --no-ray
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from bench import redaction, shards, writes
from bench import store as b
from bench.stats import write_results

OUT_DIR = b.REPO / ".bench"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes for a smoke run")
    p.add_argument("--sizes", help="recall sizes, comma-separated (default 1000,10000,100000)")
    p.add_argument("--cold-sizes", help="cold-start sizes (default 100000,1000000)")
    p.add_argument("--actor-size", type=int, help="recall-through-actor size (default 10000)")
    p.add_argument("--saves", type=int, help="saves timed for throughput (default 1000)")
    p.add_argument("--queries", type=int, help="queries per size (default 300)")
    p.add_argument("--shard-saves", type=int, help="saves per caller in the shards bench")
    p.add_argument("--no-ray", action="store_true", help="skip the recall-through-actor bench")
    p.add_argument("--model-size", type=int, help="recall with the local model (default 10000)")
    p.add_argument("--no-model", action="store_true", help="skip the local-model recall bench")
    p.add_argument("--out", type=Path, default=OUT_DIR / "results.json")
    p.add_argument("--cache", type=Path, default=OUT_DIR / "cache", help="generated corpora")
    return p.parse_args(argv)


def _ints(raw: str | None, default: list[int]) -> list[int]:
    return [int(x) for x in raw.split(",") if x.strip()] if raw else default


def plan(args: argparse.Namespace) -> dict[str, Any]:
    quick = args.quick
    return {
        "sizes": _ints(args.sizes, [1_000, 5_000] if quick else [1_000, 10_000, 100_000]),
        "cold_sizes": _ints(args.cold_sizes, [20_000] if quick else [100_000, 1_000_000]),
        "actor_size": args.actor_size or (2_000 if quick else 10_000),
        "saves": args.saves or (100 if quick else 1_000),
        "queries": args.queries or (50 if quick else 300),
        "bm25_queries": min(args.queries or 40, 20 if quick else 40),
        "write_round": 40 if quick else 400,  # writes per writer per interleaved round
        "write_rounds": 2 if quick else 5,
        "shard_saves": args.shard_saves or (10 if quick else 60),  # per caller, 8 callers
        "ray": not args.no_ray,
        "model_size": None if args.no_model else (args.model_size or (2_000 if quick else 10_000)),
        "quick": quick,
    }


def run(cfg: dict[str, Any], cache: Path) -> dict[str, Any]:
    cache.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    res: dict[str, Any] = {"plan": cfg, "meta": meta()}
    res["recall"] = b.recall_sizes(
        cfg["sizes"], cache, n_queries=cfg["queries"], bm25_queries=cfg["bm25_queries"]
    )
    res["model"] = (
        b.recall_with_model(cfg["model_size"], cache, n_queries=cfg["queries"])
        if cfg.get("model_size")
        else {"skipped": "--no-model"}
    )
    res["save"] = b.save_throughput(cfg["saves"], cache)
    res["writes"] = writes.compare(
        cfg["write_round"], cache, rounds=cfg["write_rounds"], use_ray=cfg["ray"]
    )
    res["writes"]["ratios"] = writes.ratios(res["writes"])
    res["shards"] = shards.compare(cfg["shard_saves"], cache, use_ray=cfg["ray"])
    res["cold_start"] = {str(n): b.cold_start(n, cache) for n in cfg["cold_sizes"]}
    res["actor"] = (
        b.recall_actor(cfg["actor_size"], cache, n_queries=cfg["queries"])
        if cfg["ray"]
        else {"skipped": True}
    )
    res["redaction"] = redaction.redaction(repeat=500 if cfg.get("quick") else 2000)
    res["memory"] = memory_summary(res["cold_start"])
    res["targets"] = targets(res)
    res["meta"]["wall_s"] = round(time.perf_counter() - started, 1)
    return res


def meta() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        # the box is shared: a busy machine stretches wall times (cold start reports CPU too)
        "load": [round(x, 2) for x in os.getloadavg()],
        "memory_method": "RSS delta (VmRSS after MemoryStore open - before), fresh child process",
    }


def memory_summary(cold: dict[str, Any]) -> dict[str, Any]:
    if not cold:
        return {}
    largest = max(cold, key=int)
    return {
        "method": "RSS delta of opening the store in a fresh process",
        "at_records": cold[largest]["records"],
        "per_100k_mb": cold[largest]["rss_per_100k_mb"],
        "by_size": {n: row["rss_per_100k_mb"] for n, row in cold.items()},
    }


def _target(name: str, value: float | None, goal: float, *, most: bool) -> dict[str, Any]:
    met = None if value is None else (value <= goal if most else value >= goal)
    return {
        "target": name,
        "value": value,
        "goal": ("≤ " if most else "≥ ") + f"{goal:g}",
        "met": met,
    }


def targets(res: dict[str, Any]) -> list[dict[str, Any]]:
    rec = res["recall"]
    out = []
    if "10000" in rec:
        out.append(_target("recall p50 @10k (ms)", rec["10000"]["hybrid"]["p50_ms"], 2, most=True))
    m = res.get("model", {})
    if "model" in m and res["plan"].get("model_size") == 10_000:
        out.append(
            _target("recall p50 @10k, local model (ms)", m["model"]["p50_ms"], 30, most=True)
        )
        out.append(_target("  lexical p50, same store (ms)", m["lexical"]["p50_ms"], 2, most=True))
    if "100000" in rec:
        out.append(
            _target("recall p50 @100k (ms)", rec["100000"]["hybrid"]["p50_ms"], 10, most=True)
        )
        out.append(
            _target(
                "speed-up vs rank-bm25 @100k (×)",
                rec["100000"]["speedup_vs_rank_bm25_p50"],
                20,
                most=False,
            )
        )
    out.append(_target("save / bare fsync append (×)", res["save"]["ratio"], 0.5, most=False))
    w = res["writes"]["ratios"]
    out.append(
        _target(
            "saves/s embedded 1 / SQLite FULL 1 (×)", w["embedded_1_vs_sqlite_1"], 1.0, most=False
        )
    )
    if w["actor_8_vs_actor_1"] is not None:
        out.append(
            _target("saves/s actor 8 callers / 1 (×)", w["actor_8_vs_actor_1"], 5.0, most=False)
        )
        out.append(
            _target(
                "saves/s actor 8 / SQLite 8 shared (×)", w["actor_8_vs_sqlite_8"], 1.5, most=False
            )
        )
    if "1000000" in res["cold_start"]:
        out.append(
            _target("cold start @1M (s)", res["cold_start"]["1000000"]["seconds"], 15, most=True)
        )
    if "redaction" in res:
        names = {
            "chat": "chat",
            "chat_secret": "chat+token",
            "plain": "prose",
            "secret": "prose+key",
        }
        for text, name in names.items():
            value = res["redaction"][f"{text}_us"]
            out.append(_target(f"redact ~500 chars, {name} p50 (µs)", value, 50, most=True))
    if res["memory"]:
        out.append(
            _target("RSS per 100k memories (MB)", res["memory"]["per_100k_mb"], 300, most=True)
        )
    return out


def table(res: dict[str, Any]) -> str:
    lines = ["", "recall, in-core (limit 10)            p50 ms   p95 ms"]
    for n, row in res["recall"].items():
        for arm in ("hybrid", "lexical", "hybrid_semantic", "rank_bm25"):
            r = row.get(arm)
            if r is None:  # results written before the arm was measured
                continue
            label = "hybrid + 384-d vectors" if arm == "hybrid_semantic" else arm
            lines.append(f"  {int(n):>9,} {label:<24} {r['p50_ms']:>8.3f} {r['p95_ms']:>8.3f}")
        lines.append(
            f"  {int(n):>9,} speed-up vs rank-bm25 (p50)   {row['speedup_vs_rank_bm25_p50']:>7}× "
            f"hybrid, {row['speedup_lexical_vs_rank_bm25_p50']}× lexical  (open {row['open_s']} s, "
            f"rank-bm25 build {row['rank_bm25']['build_s']} s)"
        )
    m = res.get("model", {})
    if "model" in m:
        lines.append(
            f"recall with the local model @{res['plan']['model_size']:,} ({m['retrieval']}, query "
            f"embedding included): p50 {m['model']['p50_ms']} ms, p95 {m['model']['p95_ms']} ms; "
            f"lexical p50 {m['lexical']['p50_ms']} ms (open {m['open_s']} s)"
        )
    elif m:
        lines.append(f"recall with the local model: skipped ({m['skipped']})")
    a = res["actor"]
    if a.get("skipped"):
        lines.append("recall through the Ray actor: skipped (--no-ray)")
    else:
        lines.append(
            f"recall through the Ray actor @{res['plan']['actor_size']:,}: p50 {a['p50_ms']} ms, "
            f"p95 {a['p95_ms']} ms (ping p50 {a['ping_p50_ms']} ms)"
        )
    s = res["save"]
    lines.append(
        f"save: {s['store_per_s']}/s ({s['store_ms_per_save']} ms) vs bare fsynced append "
        f"{s['bare_fsync_per_s']}/s ({s['bare_ms_per_line']} ms) → {s['ratio']}×"
    )
    lines.append("durable writes, interleaved rounds (saves/s, median; fsyncs per save)")
    for name, r in res["writes"].items():
        if isinstance(r, dict) and "per_s" in r:
            fs = r.get("fsyncs_per_save")
            lines.append(f"  {name:<24} {r['per_s']:>9}/s  {'' if fs is None else fs}")
    floor = res["writes"].get("ratios", {}).get("floor_1_vs_sqlite_1")
    if floor is not None:
        lines.append(
            f"  redact + count + append + fdatasync alone (floor_redacted_1) / SQLite FULL 1: "
            f"{floor}× (the most a store that redacts before the disk can reach there)"
        )
    lines += shard_lines(res.get("shards"))
    for n, c in res["cold_start"].items():
        lines.append(
            f"cold start {int(n):>9,}: {c['seconds']:>7.2f} s wall, {c['cpu_s']:.2f} s CPU "
            f"with the index snapshot, {c['rebuild_seconds']:.2f} s rebuilding "
            f"({c['lines']:,} lines, {c['file_mb']} MB)  RSS +{c['rss_delta_mb']} MB, "
            f"{c['rss_per_100k_mb']} MB/100k net of a {c['rss_fixed_mb']} MB empty store"
        )
    if "redaction" in res:
        r = res["redaction"]
        lines.append(
            f"redact ~500 chars (median of {r['repeat']}): chat {r['chat_us']} µs, with a token "
            f"{r['chat_secret_us']} µs; technical prose {r['plain_us']} µs, with a key "
            f"{r['secret_us']} µs"
        )
    lines.append("")
    lines.append("target                                 value      goal     met")
    for t in res["targets"]:
        met = {True: "yes", False: "NO", None: "-"}[t["met"]]
        lines.append(f"  {t['target']:<36} {t['value']!s:>8}  {t['goal']:>7}  {met:>5}")
    lines.append(f"(wall {res['meta']['wall_s']} s; load average at start {res['meta']['load']})")
    return "\n".join(lines)


def shard_lines(row: dict[str, Any] | None) -> list[str]:
    if not row:
        return []
    lines = [
        f"store shards, {row['callers']} concurrent callers over {row['banks']} banks "
        "(aggregate saves/s; recall p50/p95 ms)"
    ]
    for kind in ("actor", "embedded"):
        for n, r in row[kind].items():
            if n == "skipped":
                lines.append(f"  {kind:<9} skipped (--no-ray)")
                continue
            label = "single store" if n == "1" else f"{n} shards"
            lines.append(
                f"  {kind:<9} {label:<13} {r['saves_per_s']:>8}/s  "
                f"recall {r['p50_ms']:>7} / {r['p95_ms']} ms"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = plan(args)
    print(f"bench plan: {json.dumps(cfg)}", file=sys.stderr)
    res = run(cfg, args.cache)
    write_results(args.out, res)
    print(table(res))
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
