"""Page loads of the web console on a 100k-memory bank: ``python -m bench.console``.

The console is served as ``memory console --data-dir`` serves it (uvicorn on a loopback port,
over an embedded store on a copy of the 100k-memory bench corpus), and each row loads one
page ``--runs`` times over HTTP, signed in with a bearer token, timing from the request to the
last byte of the HTML (what a browser waits for before it renders; the static files are
cached after the first load):

- ``banks``: the banks page (every bank with its counts);
- ``list first`` / ``list deep``: the bank's first page of memories, and a page 50 pages in
  (its page token);
- ``search``: the bank's page with a query, each hit with its explanation (queries drawn from
  the corpus, one per run);
- ``memory``: one memory's page (its history, the forms).

Target: p50 ≤ 300 ms for each (the issue's "lists and searches in ≤ 300 ms per page load").
Reports, never assertions; results go to ``.bench/console.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from bench import corpus
from bench import store as b
from bench.stats import percentiles, write_results

TARGET_MS = 300.0
TOKEN = "bench-console-token"


def load(url: str) -> tuple[float, str]:
    """One page load: seconds to the last byte, and the HTML."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {TOKEN}"})
    start = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as answer:
        body = answer.read().decode()
        if answer.status != 200:
            raise RuntimeError(f"{url} answered {answer.status}")
    return time.perf_counter() - start, body


def row(urls: list[str]) -> dict[str, float]:
    load(urls[0])  # warm: the first load of each kind pays for imports and caches
    return percentiles([load(url)[0] for url in urls])


def run(runs: int, size: int, cache: Path) -> dict[str, Any]:
    from web_console.app import build_app
    from web_console.auth import Gate
    from web_console.server import Server

    cache.mkdir(parents=True, exist_ok=True)
    source, _ = b.data_dir(size, cache)
    work = Path(tempfile.mkdtemp(prefix="bench-console-"))
    served = work / "data"
    shutil.copytree(source, served)
    store = b.open_store(served)
    server = Server(build_app(store, Gate(TOKEN)), "127.0.0.1", 0).start()
    try:
        bank = store.bank_list().banks
        name = max(bank, key=lambda info: info.memories).name
        base = f"{server.url}/b/{urllib.parse.quote(name, safe='')}"
        deep = None
        for _ in range(50):
            deep = store.list(bank=name, page_size=50, page_token=deep).next_page_token
        first = store.list(bank=name, page_size=1).memories[0].id
        recs = list(corpus.records(size))
        queries = [q.text for q in corpus.queries(recs, runs + 1)]
        results = {
            "size": size,
            "memories": next(i.memories for i in bank if i.name == name),
            "banks": row([f"{server.url}/"] * (runs + 1)),
            "list first": row([base] * (runs + 1)),
            "list deep": row([f"{base}?page={urllib.parse.quote(deep or '')}"] * (runs + 1)),
            "search": row([f"{base}?q={urllib.parse.quote(q)}" for q in queries]),
            "memory": row([f"{base}/m/{urllib.parse.quote(first)}"] * (runs + 1)),
        }
    finally:
        server.stop()
        store.close()
        shutil.rmtree(work, ignore_errors=True)
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=30, help="page loads per row (default 30)")
    p.add_argument("--size", type=int, default=100_000, help="memories in the bank")
    p.add_argument("--out", type=Path, default=b.REPO / ".bench" / "console.json")
    p.add_argument("--cache", type=Path, default=b.REPO / ".bench" / "cache")
    args = p.parse_args()
    res = run(args.runs, args.size, args.cache)
    print(f"console page loads, a bank of {res['memories']} memories (ms)")
    print(f"  {'page':<14}{'p50':>8} {'p95':>8}")
    for label in ("banks", "list first", "list deep", "search", "memory"):
        r = res[label]
        mark = "met" if r["p50_ms"] <= TARGET_MS else "MISSED"
        print(f"  {label:<14}{r['p50_ms']:>8.1f} {r['p95_ms']:>8.1f}  {mark} (≤ {TARGET_MS:g})")
    write_results(args.out, res)
    print(json.dumps({"written": str(args.out)}))


if __name__ == "__main__":
    main()
