"""Whole-process wall time of the coding-agent hooks through a running gateway (what the agent
waits for at every prompt and every stop): ``python -m bench.hooks``.

Each row runs ``memory hook <event>`` ``--runs`` times (default 20) as Claude Code does, a fresh
process each time with the event's JSON on stdin, and reports p50/p95 of the wall time from
spawn to exit, beside ``python -c pass`` spawned the same way (this machine's floor now):

- ``UserPromptSubmit``: recall for the prompt through the gateway. Target: p50 ≤ 250 ms.
- ``Stop``: the finished turn read from a transcript and handed to ``turn_completed``; the
  gateway is on loopback, so the hook leaves redaction to the store. Target: p50 ≤ 300 ms.

The gateway is served from this process over an embedded store on a copy of the 200-memory
bench corpus, recorded as ``memory up`` records it (``bench.cli.local_gateway``); no Ray. A
hook that failed (its log written) fails the run: a failing hook is fast and measures
nothing. Reports, never assertions; results go to ``.bench/hooks.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import store as b
from bench.cli import _env, local_gateway, wall
from bench.stats import process_row, write_results

TARGETS_MS = {"UserPromptSubmit": 250.0, "Stop": 300.0}
SESSION = "bench-hooks-session"
PROMPT = "what does the user prefer for the deploy scripts?"
ANSWER = (
    "The deploy scripts live in tools/, and the staging profile is the default. I ran the "
    "checks, fixed the failing lint step and left the release notes for you to review."
)


def _transcript(path: Path, cwd: Path) -> None:
    """A Claude Code transcript whose last turn is one prompt and its answer."""
    lines = [
        {"type": "user", "cwd": str(cwd), "timestamp": "2026-01-01T10:00:00Z",
         "message": {"role": "user", "content": PROMPT}},
        {"type": "assistant", "cwd": str(cwd), "timestamp": "2026-01-01T10:00:05Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": ANSWER}]}},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")


def events(work: Path) -> dict[str, str]:
    """Each event's hook JSON, for a project folder under ``work``."""
    project = work / "project"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    transcript = work / "transcript.jsonl"
    _transcript(transcript, project)
    common = {"session_id": SESSION, "cwd": str(project), "transcript_path": str(transcript)}
    return {
        "UserPromptSubmit": json.dumps(
            {**common, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT}
        ),
        "Stop": json.dumps({**common, "hook_event_name": "Stop", "stop_hook_active": False}),
    }


def run(runs: int, cache: Path) -> dict[str, Any]:
    res: dict[str, Any] = {"runs": runs}
    cache.mkdir(parents=True, exist_ok=True)
    res["python"] = wall(["-c", "pass"], dict(os.environ), runs, cmd=[sys.executable])
    work = Path(tempfile.mkdtemp(prefix="bench-hooks-"))
    try:
        served = work / "served"
        shutil.copytree(b.data_dir(200, cache)[0], served)
        log = work / "hooks.log"
        env = _env(served, MEMORY_HOOK_LOG=str(log))
        stdin = events(work)
        with local_gateway(served):
            for event in TARGETS_MS:
                res[event] = wall(["hook", event], env, runs, stdin=stdin[event])
                if log.exists():
                    raise RuntimeError(f"the {event} hook failed: {log.read_text('utf-8')}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return res


def table(res: dict[str, Any]) -> str:
    lines = [
        f"memory hooks through a loopback gateway, whole process, {res['runs']} runs"
        " (wall p50 / p95, cpu p50 ms)",
        process_row("python -c pass", res["python"]) + "  (this machine's floor now)",
    ]
    lines += [process_row(event, res[event], target) for event, target in TARGETS_MS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.hooks", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20, help="processes per event (default 20)")
    p.add_argument("--out", type=Path, default=b.REPO / ".bench" / "hooks.json")
    p.add_argument("--cache", type=Path, default=b.REPO / ".bench" / "cache")
    args = p.parse_args(argv)
    res = run(args.runs, args.cache)
    write_results(args.out, res)
    print(table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
