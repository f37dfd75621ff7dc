"""Consolidation benchmark: ``python -m bench.consolidate``.

A bank of N synthetic memories (``bench.corpus`` records: 10-40 Zipfian words, mixed types and
scopes, a few pinned) gets planted near-duplicates (2 % of N: copies with one or two small
edits: a dropped or added filler word, an adjacent swap, a typo, case and punctuation) and
planted never-group traps (0.5 % of N pairs each: polarity flips, role swaps of two names, and
changed numbers). One real ``Consolidator`` pass runs in-process over an embedded
``MemoryStore`` (candidates from ``recall(mode=lexical)`` plus rare-token blocking up to
``recall_max_bank`` = 20k memories, blocking alone above: ``consolidate_worker/candidates.py``),
and is scored against the planted groups at the pair level: precision, recall, and false
merges on traps.

Baseline, in the same run: a rapidfuzz ``process.cdist`` with ``fuzz.ratio`` (the cheapest
scorer: ``token_set_ratio`` measured at 12× the cost of ``ratio`` per pair) thresholded at the same
``duplicate_score``. Up to ``--cdist-full-up-to`` (12k) it is the full N × N matrix. At 100k the
full matrix (10^10 cells) is out of reach, so it runs on ``--cdist-sample`` rows (500: whole
planted groups and trap pairs for half of them, random rows for the rest) against all 100k
columns; precision, recall and trap figures are then over the sampled planted units, and the
full-matrix time is extrapolated linearly from the row count (each row costs the same).

The store's files are seeded directly as ``memories.jsonl`` lines (``Memory.to_line``), which
is ~100× faster than ``save``; the consolidator itself only ever uses the store's API.

    python -m bench.consolidate                  # 10k and 100k
    python -m bench.consolidate --sizes 10000    # one size
    python -m bench.consolidate --quick          # 2k smoke run
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench.corpus import records
from bench.stats import write_results
from consolidate_worker import dedup
from consolidate_worker.core import Consolidator
from consolidate_worker.report import Report
from consolidate_worker.settings import ConsolidatorSettings
from shared.contract.models import Memory
from shared.text import fingerprint, normalize

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / ".bench" / "consolidate.json"
BANK = "bench"
DAY_MS = 86_400_000
FILLERS = ("also", "really", "still", "just", "indeed")
PROTECTED = frozenset(
    {*dedup.NEGATIONS, *dedup.FREQUENCY, *dedup.NUMBER_WORDS, *dedup.DATE_WORDS}
    | {w for pair in dedup.ANTONYMS for w in pair}
)
NAMES = ("Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy")

Pair = tuple[str, str]


def pair(a: str, b: str) -> Pair:
    return (a, b) if a < b else (b, a)


@dataclass
class Planted:
    """The ground truth: planted duplicate groups and never-group trap pairs, by kind."""

    groups: list[list[str]] = field(default_factory=list)
    traps: dict[str, list[Pair]] = field(default_factory=dict)

    def dup_pairs(self) -> set[Pair]:
        return {pair(a, b) for g in self.groups for i, a in enumerate(g) for b in g[i + 1 :]}

    def trap_pairs(self) -> set[Pair]:
        return {p for ps in self.traps.values() for p in ps}


# -- the corpus ----------------------------------------------------------------------------------


def _protected(word: str) -> bool:
    """Words an honest paraphrase keeps: names, numbers, negations and polar words."""
    bare = word.strip(".!").lower()
    return word[:1].isupper() or any(ch.isdigit() for ch in word) or bare in PROTECTED


def _edit(words: list[str], rng: random.Random) -> list[str]:
    """One small, meaning-keeping edit that never touches a protected word (the first word
    reads as a name, so it is kept too)."""
    w = words[:]
    kind = rng.randrange(5)
    free = [k for k in range(1, len(w)) if not _protected(w[k])] or [len(w) - 1]
    i = rng.choice(free)
    if kind == 0 and len(w) > 12:
        del w[i]
    elif kind == 1:
        w.insert(i, rng.choice(FILLERS))
    elif kind == 2 and i + 1 < len(w) and not _protected(w[i + 1]):
        w[i], w[i + 1] = w[i + 1], w[i]
    elif kind == 3 and len(w[i]) > 3:
        j = rng.randrange(1, len(w[i]) - 1)
        w[i] = w[i][:j] + w[i][j + 1] + w[i][j] + w[i][j + 2 :]  # a transposition typo
    else:
        w[-1] = w[-1].rstrip(".") + "!"
    return w


def _variant(base: Memory, new_id: str, text: str, rng: random.Random) -> Memory:
    at = base.stated_at + rng.randrange(1, 30) * DAY_MS
    return base.model_copy(
        update={
            "id": new_id,
            "text": text,
            "fingerprint": fingerprint(text),
            "pinned": False,
            "corroboration": 0,
            "created_at": at,
            "updated_at": at,
            "stated_at": at,
        }
    )


def _with(base: Memory, text: str) -> Memory:
    return base.model_copy(update={"text": text, "fingerprint": fingerprint(text)})


def _insert(words: list[str], rng: random.Random, *extra: str) -> list[str]:
    w = words[:]
    for token in extra:
        w.insert(rng.randrange(1, len(w)), token)
    return w


def build(n: int, *, seed: int = 7) -> tuple[list[Memory], Planted]:
    """``n`` memories in all: base records, 2 % planted duplicates, 3 × 0.5 % trap pairs."""
    rng = random.Random(seed)
    n_dup = n * 2 // 100
    n_trap = max(3, n * 5 // 1000)
    n_base = n - n_dup - 3 * n_trap
    base = [Memory.model_validate({**r, "fingerprint": "fp0"}) for r in records(n_base, seed=seed)]
    base = [_with(m, m.text) for m in base]  # real fingerprints
    order = list(range(n_base))
    rng.shuffle(order)
    planted = Planted(traps={"polarity": [], "role-swap": [], "numbers": []})
    extra: list[Memory] = []
    cursor = 0
    made = 0
    while made < n_dup:  # groups of two (80 %) or three (20 %) around one base record
        src = base[order[cursor]]
        cursor += 1
        size = 3 if rng.random() < 0.2 and made + 2 <= n_dup else 2
        group = [src.id]
        for k in range(size - 1):
            text = " ".join(_edit(src.text.split(), rng))
            dup = _variant(src, f"{src.id}-dup{k}", text, rng)
            extra.append(dup)
            group.append(dup.id)
            made += 1
        planted.groups.append(group)
    for t in range(n_trap):
        extra += _traps(base, order[cursor : cursor + 3], t, rng, planted)
        cursor += 3
    return base + extra, planted


def _traps(
    base: list[Memory], picks: list[int], t: int, rng: random.Random, planted: Planted
) -> list[Memory]:
    """Three trap pairs: each changes a base record one way, and its twin the opposite way."""
    out: list[Memory] = []
    # Polarity: the base record against a negated copy.
    src = base[picks[0]]
    twin = _variant(src, f"{src.id}-neg", " ".join(_insert(src.text.split(), rng, "not")), rng)
    out.append(twin)
    planted.traps["polarity"].append(pair(src.id, twin.id))
    # Role swap: two names inserted into a base record, then swapped in the twin.
    src = base[picks[1]]
    x, y = rng.sample(NAMES, 2)
    words = src.text.split()
    i = rng.randrange(1, len(words) - 1)
    j = rng.randrange(i + 1, len(words))
    a_words = [*words[:i], x, *words[i:j], y, *words[j:]]
    b_words = [*words[:i], y, *words[i:j], x, *words[j:]]
    a = _variant(src, f"{src.id}-role-a", " ".join(a_words), rng)
    b = _variant(src, f"{src.id}-role-b", " ".join(b_words), rng)
    out += [a, b]
    planted.traps["role-swap"].append(pair(a.id, b.id))
    # Numbers: the same sentence with a different number.
    src = base[picks[2]]
    num = rng.randrange(2, 500)
    k = rng.randrange(1, len(src.text.split()))
    words = src.text.split()
    a = _variant(src, f"{src.id}-num-a", " ".join([*words[:k], str(num), *words[k:]]), rng)
    b = _variant(src, f"{src.id}-num-b", " ".join([*words[:k], str(num + 1), *words[k:]]), rng)
    out += [a, b]
    planted.traps["numbers"].append(pair(a.id, b.id))
    # The untouched base records of the role and number traps stay as ordinary memories.
    return out


def seed_store(folder: Path, memories: Iterable[Memory]) -> None:
    bank = folder / BANK
    bank.mkdir(parents=True, exist_ok=True)
    (bank / "bank.yaml").write_text("description: consolidation bench\ncreated_at: 0\n")
    with open(bank / "memories.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(m.to_line() + "\n" for m in memories)


# -- scoring -------------------------------------------------------------------------------------


def score_pairs(predicted: set[Pair], planted: Planted) -> dict[str, Any]:
    truth = planted.dup_pairs()
    hit = predicted & truth
    traps = {kind: len(predicted & set(ps)) for kind, ps in planted.traps.items()}
    return {
        "predicted_pairs": len(predicted),
        "planted_pairs": len(truth),
        "precision": round(len(hit) / len(predicted), 4) if predicted else 1.0,
        "recall": round(len(hit) / len(truth), 4) if truth else 1.0,
        "false_merges_on_traps": traps,
    }


def report_pairs(report: Report) -> set[Pair]:
    return {
        pair(a, b)
        for g in report.groups
        for i, a in enumerate(g.members)
        for b in g.members[i + 1 :]
    }


def run_pass(memories: list[Memory], planted: Planted, tmp: Path) -> dict[str, Any]:
    from store_worker.core import MemoryStore  # the embedded store: a bench, not the worker

    folder = tmp / "data"
    seed_store(folder, memories)
    t0 = time.perf_counter()
    store = MemoryStore(folder)
    open_s = time.perf_counter() - t0
    settings = ConsolidatorSettings(max_supersedes_per_run=len(memories))
    t0 = time.perf_counter()
    report = Consolidator(store, settings=settings).run_pass(banks=[BANK])
    wall = time.perf_counter() - t0
    live = store.list(bank=BANK, page_size=1).total
    store.close()
    out = score_pairs(report_pairs(report), planted)
    out.update(
        wall_s=round(wall, 2),
        store_open_s=round(open_s, 2),
        merged=len(report.merged),
        groups=len(report.groups),
        pairs_scored=report.pairs_scored,
        vetoed=dict(report.vetoed),
        phases_s={k: round(v / 1000, 2) for k, v in report.phases_ms},
        errors=len(report.errors),
        live_after=live,
    )
    return out


def _sample(planted: Planted, ids: list[str], rows: int, seed: int) -> tuple[list[int], Planted]:
    """``rows`` row indices: whole planted groups and trap pairs (half the rows), then random
    others; and the ground truth restricted to what was sampled."""
    rng = random.Random(seed)
    where = {i: k for k, i in enumerate(ids)}
    units: list[tuple[str, list[str]]] = [("dup", g) for g in planted.groups]
    units += [(kind, list(p)) for kind, ps in planted.traps.items() for p in ps]
    rng.shuffle(units)
    chosen: set[int] = set()
    sub = Planted(traps={kind: [] for kind in planted.traps})
    for kind, members in units:
        if len(chosen) + len(members) > rows // 2:
            break
        chosen.update(where[m] for m in members)
        if kind == "dup":
            sub.groups.append(members)
        else:
            sub.traps[kind].append(pair(members[0], members[1]))
    others = [k for k in range(len(ids)) if k not in chosen]
    chosen.update(rng.sample(others, max(0, rows - len(chosen))))
    return sorted(chosen), sub


def run_cdist(
    memories: list[Memory],
    planted: Planted,
    *,
    threshold: float,
    full_up_to: int,
    sample: int,
    seed: int,
) -> dict[str, Any]:
    from rapidfuzz import fuzz, process

    texts = [normalize(m.text) for m in memories]
    ids = [m.id for m in memories]
    n = len(memories)
    sampled = n > full_up_to
    rows, truth = _sample(planted, ids, sample, seed) if sampled else (list(range(n)), planted)
    t0 = time.perf_counter()
    predicted: set[Pair] = set()
    step = 1_000  # row blocks keep the uint8 matrix at 1k × n
    for start in range(0, len(rows), step):
        block = rows[start : start + step]
        m = process.cdist(
            [texts[k] for k in block],
            texts,
            scorer=fuzz.ratio,
            score_cutoff=threshold,
            dtype=np.uint8,
            workers=-1,
        )
        r, c = np.nonzero(m >= threshold)
        predicted.update(
            pair(ids[block[i]], ids[j]) for i, j in zip(r, c, strict=True) if block[i] != j
        )
    wall = time.perf_counter() - t0
    if sampled:  # score only pairs whose both ends were rows: every sampled planted pair is
        row_ids = {ids[k] for k in rows}
        predicted = {p for p in predicted if p[0] in row_ids and p[1] in row_ids}
    out = score_pairs(predicted, truth)
    out.update(
        scorer="fuzz.ratio",
        rows=len(rows),
        columns=n,
        sampled=sampled,
        wall_s=round(wall, 2),
        full_matrix_s=round(wall * n / len(rows), 1),
        full_matrix_note="extrapolated from the sampled rows" if sampled else "measured",
    )
    return out


def bench_size(n: int, args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    memories, planted = build(n, seed=args.seed)
    build_s = time.perf_counter() - t0
    tmp = Path(tempfile.mkdtemp(prefix=f"consolidate-{n}-", dir=args.tmp))
    try:
        result: dict[str, Any] = {"n": len(memories), "build_s": round(build_s, 2)}
        result["planted"] = {
            "groups": len(planted.groups),
            "duplicates": sum(len(g) - 1 for g in planted.groups),
            "traps": {k: len(v) for k, v in planted.traps.items()},
        }
        result["pass"] = run_pass(memories, planted, tmp)
        threshold = ConsolidatorSettings().duplicate_score
        result["cdist"] = run_cdist(
            memories,
            planted,
            threshold=threshold,
            full_up_to=args.cdist_full_up_to,
            sample=args.cdist_sample,
            seed=args.seed,
        )
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def table(results: list[dict[str, Any]]) -> str:
    lines = ["", "consolidation pass vs rapidfuzz cdist (pair-level scores of planted groups)"]
    lines.append(
        f"{'n':>8} {'method':<26} {'wall s':>8} {'precision':>9} {'recall':>7}  traps merged"
    )
    for r in results:
        for name, row in (("consolidator pass", r["pass"]), ("cdist ratio", r["cdist"])):
            label = name
            if name.startswith("cdist") and row["sampled"]:
                label = f"cdist ratio ({row['rows']:,} rows)"
            traps = row["false_merges_on_traps"]
            lines.append(
                f"{r['n']:>8,} {label:<26} {row['wall_s']:>8} {row['precision']:>9} "
                f"{row['recall']:>7}  {traps}"
            )
        c = r["cdist"]
        lines.append(f"{'':>8} cdist full matrix: {c['full_matrix_s']} s ({c['full_matrix_note']})")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.consolidate", description=__doc__.splitlines()[0]
    )
    p.add_argument("--sizes", default="10000,100000", help="bank sizes, comma-separated")
    p.add_argument("--quick", action="store_true", help="one 2k bank (a smoke run)")
    p.add_argument(
        "--cdist-full-up-to", type=int, default=12_000, help="full cdist matrix up to this size"
    )
    p.add_argument("--cdist-sample", type=int, default=500, help="cdist rows above that size")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--tmp", default=None, help="folder for the temporary data dirs")
    p.add_argument("--out", type=Path, default=OUT)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = [2_000] if args.quick else [int(s) for s in args.sizes.split(",") if s.strip()]
    started = time.perf_counter()
    results = []
    for n in sizes:
        print(f"consolidate bench: {n:,} memories ...", file=sys.stderr)
        results.append(bench_size(n, args))
        print(json.dumps(results[-1], indent=2), file=sys.stderr)
    out = {"results": results, "wall_s": round(time.perf_counter() - started, 1)}
    write_results(args.out, out)
    print(table(results))
    print(f"(total wall {out['wall_s']} s; results: {args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
