"""Latency of the integrations (the per-call latency of a hook and of an MCP
recall, measured): a report, never an assertion.

    python -m bench.integrations [--calls 20] [--memories 500]

- ``hook``: wall time of one ``memory --data-dir D hook UserPromptSubmit`` process (what the
  agent waits for on every prompt), median of ``calls``; beside it the floor of any Python
  process (``python -c pass``) and the same hook run in-process (no start-up).
- ``mcp_recall``: one ``recall`` tool call through the SDK's client to ``memory mcp --data-dir``
  over stdio (the server already running), median of ``calls``.

Both use the embedded store on a temp data dir seeded with ``memories`` memories; the running
store's path adds Ray's import and driver connection (measured here at ~0.5 s for importing Ray and
~1.2 s for the driver connection, per process) until a faster client than Ray exists
(integrations/store.py).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MAIN = "import sys; from shared.cli import main; sys.exit(main())"


def _seed(data: Path, n: int) -> None:
    from shared.contract.config import StoreSettings
    from store_worker.core import MemoryStore

    store = MemoryStore(settings=StoreSettings(data_dir=str(data)))
    try:
        store.save_many(
            [{"text": f"Fact {i}: service s{i} deploys with profile p{i % 7}"} for i in range(n)]
        )
        store.save("Staging deploys run tools/ship.sh with --profile staging")
    finally:
        store.close()


def _ms(samples: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(samples) * 1000, 1),
        "p90_ms": round(sorted(samples)[int(len(samples) * 0.9) - 1] * 1000, 1),
    }


def _timed_process(cmd: list[str], stdin: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, input=stdin, env=env, capture_output=True, text=True, timeout=60)
    took = time.perf_counter() - started
    if done.returncode != 0 or "additionalContext" not in done.stdout:
        raise RuntimeError(f"hook gave no answer: {done.stdout!r} {done.stderr!r}")
    return took


def hook(data: Path, calls: int, env: dict[str, str]) -> dict[str, Any]:
    stdin = json.dumps(
        {"session_id": "bench", "cwd": str(data), "prompt": "how do staging deploys run?"}
    )
    cmd = [sys.executable, "-c", MAIN, "--data-dir", str(data), "hook", "UserPromptSubmit"]
    process = [_timed_process(cmd, stdin, env) for _ in range(calls)]
    floor = []
    for _ in range(calls):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        floor.append(time.perf_counter() - started)
    return {
        "process": _ms(process),
        "python_floor": _ms(floor),
        "in_process": _ms(_hook_in_process(data, stdin, calls)),
    }


def _hook_in_process(data: Path, stdin: str, calls: int) -> list[float]:
    from integrations.hooks import HookOptions, run_hook
    from integrations.store import close, open_store_for

    store = open_store_for(str(data))
    samples = []
    try:
        for _ in range(calls):
            out = io.StringIO()
            started = time.perf_counter()
            run_hook(
                HookOptions(event="UserPromptSubmit"),
                stdin=io.StringIO(stdin),
                stdout=out,
                env={},
                open_store=lambda d, t: store,
                close_store=lambda s: None,
            )
            samples.append(time.perf_counter() - started)
    finally:
        close(store)
    return samples


def mcp_recall(data: Path, calls: int, env: dict[str, str]) -> dict[str, Any]:
    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-c", MAIN, "mcp", "--data-dir", str(data)], env=env
    )
    samples: list[float] = []

    async def main() -> None:
        async with Client(params) as client:
            await client.call_tool("recall", {"query": "warm up"})
            for i in range(calls):
                started = time.perf_counter()
                result = await client.call_tool("recall", {"query": f"staging deploys {i}"})
                samples.append(time.perf_counter() - started)
                assert not result.is_error

    anyio.run(main)
    return {"stdio": _ms(samples)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.integrations", description=__doc__)
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--memories", type=int, default=500)
    args = p.parse_args(argv)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        _seed(data, args.memories)
        res = {
            "memories": args.memories,
            "hook_user_prompt_submit": hook(data, args.calls, env),
            "mcp_recall": mcp_recall(data, args.calls, env),
        }
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
