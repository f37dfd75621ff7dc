"""What a turn's injection costs: ``preview`` and ``pre_generate`` on the bench's 10k-memory
bank with a 2,000-character prompt, with the relevance threshold off (``min_relevance`` 0:
recall's top k, as before it existed) and at the default, in the same run:
``python -m bench.inject``.

The prompts are the corpus's recall queries (``bench.corpus.queries``) run together with
ordinary English until each is 2,000 characters, as a user's long message with a few words of
the bank in it. Both settings are timed turn by turn, alternating, on one store (``configure``
switches the setting), so the machine's load falls on both alike; no embedding model. Each
``pre_generate`` is a new session's first step, so it also writes the session's injection
state (atomically, not fsynced), which ``preview`` (a dry run) does not. Target: the
default's p50 ≤ 7 ms. Reports, never assertions; results go to ``.bench/inject.json``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from ulid import ULID

from bench import corpus
from bench import store as b
from bench.stats import percentiles, write_results

SIZE = 10_000
PROMPT_CHARS = 2_000
TARGET_MS = 7.0
FILLER = (
    "I have been going back and forth on this for a while and would like a second opinion "
    "before the review on Thursday, so please read the whole thing and tell me what you think "
    "about the plan, what could go wrong, and what I should check first. "
)


def prompts(count: int, cache: Path) -> list[str]:
    """``count`` prompts of ``PROMPT_CHARS`` characters, each holding a few corpus queries."""
    recs = list(corpus.records(SIZE))
    drawn = [q.text for q in corpus.queries(recs, count * 4)]
    rng = np.random.default_rng(corpus.SEED + 7)
    out = []
    for i in range(count):
        parts = [*drawn[i * 4 : i * 4 + 4]]
        text = ""
        while len(text) < PROMPT_CHARS:
            text += FILLER if rng.random() < 0.7 or not parts else parts.pop() + ". "
        out.append(text[:PROMPT_CHARS])
    return out


def run(turns: int, cache: Path) -> dict[str, Any]:
    path, _ = b.data_dir(SIZE, cache)
    store = b.open_store(path)
    default = float(store.settings.min_relevance)
    texts = prompts(turns, cache)
    samples: dict[str, list[float]] = {
        f"{verb} {label}": [] for verb in ("preview", "pre_generate") for label in ("off", "on")
    }
    given: dict[str, list[int]] = {"off": [], "on": []}
    try:
        for text in texts[:10]:  # warm caches outside the measurement
            store.preview(text)
        for i, text in enumerate(texts):
            for label, value in (("off", 0.0), ("on", default)):
                store.configure({"min_relevance": value})
                start = time.perf_counter()
                view = store.preview(text)
                samples[f"preview {label}"].append(time.perf_counter() - start)
                given[label].append(len(view.memories))
                window = [{"role": "user", "content": text}]
                start = time.perf_counter()
                store.pre_generate(f"bench-{label}-{i}", str(ULID()), 0, window)
                samples[f"pre_generate {label}"].append(time.perf_counter() - start)
    finally:
        store.close()
    return {
        "size": SIZE,
        "prompt_chars": PROMPT_CHARS,
        "min_relevance": default,
        "timings": {name: percentiles(s) for name, s in samples.items()},
        "memories_per_turn": {k: round(sum(v) / max(len(v), 1), 2) for k, v in given.items()},
    }


def table(res: dict[str, Any]) -> str:
    lines = [
        f"injection on a {res['size']:,}-memory bank, {res['prompt_chars']:,}-char prompts "
        f"(min_relevance off vs {res['min_relevance']}; p50 / p95 ms)"
    ]
    for name, t in res["timings"].items():
        mark = ""
        if name.endswith(" on"):
            mark = "  met" if t["p50_ms"] <= TARGET_MS else "  MISSED"
            mark += f" (target p50 <= {TARGET_MS} ms)"
        lines.append(f"  {name:<18} {t['p50_ms']:7.2f} / {t['p95_ms']:7.2f}{mark}")
    per = res["memories_per_turn"]
    lines.append(f"  memories per turn: off {per['off']}, on {per['on']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.inject", description=__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=200, help="prompts timed (default 200)")
    p.add_argument("--out", type=Path, default=b.REPO / ".bench" / "inject.json")
    p.add_argument("--cache", type=Path, default=b.REPO / ".bench" / "cache")
    args = p.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    res = run(args.turns, args.cache)
    write_results(args.out, res)
    print(table(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
