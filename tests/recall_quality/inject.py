"""The injection eval: what reaches a turn's prompt, asked on and off topic.

Recall's evals (``run.py``, ``locomo.py``) score a ranking; this one scores what injection hands
a harness, through ``MemoryStore.preview`` (the hooks' own code path: recall, the relevance
threshold and cut, the ambient floor, the budget). The data is LoCoMo's development split, read
where ``locomo.py`` reads it (``<repo root>/../shared/data/locomo-dev``, ``MEMORY_LOCOMO_DIR``
overrides; absent: a skip line, exit 0), and every dialog turn is saved as ``locomo.py`` saves
it: one memory ``"<speaker>: <text>"`` per turn, one bank per conversation, with the session id
a harness saving it would pass.

* **On topic**: every question (categories 1-4) asked in its own conversation's bank. Per
  question: memories injected, precision (the share of them that is evidence), coverage (the
  share of its evidence turns injected) and tokens (the recalled block, counted by the store's
  tokenizer); averaged over questions, and a question that gets nothing injected counts 0 for
  both precision and coverage.
* **Off topic**: the other conversations' questions asked in each bank (none of it is
  evidence there), and the ordinary assistant prompts of ``ordinary_prompts.txt`` (coding,
  writing, general knowledge) asked in every bank: memories and tokens per turn.
* **The curve**: coverage against precision (and the off-topic memories per turn) as
  ``min_relevance`` moves, the injector's own selection (``store_worker.recall.relevance``)
  applied to each question's candidates (0: off, recall's top k); the default is marked.

Run ``python -m tests.recall_quality.inject`` (``make eval``); ``--json`` prints the headline
figures, ``--set min_relevance=0.3`` (any store setting) measures another point through
``preview``, ``--questions N`` asks the first N questions of each conversation only,
``--model`` runs with the local all-MiniLM-L6-v2 model (the semantic arm; lexical without).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from shared.contract.clock import FakeClock
from shared.contract.config import StoreSettings
from shared.contract.models import PreviewResponse
from store_worker.core import MemoryStore
from store_worker.recall import relevance
from tests.recall_quality import locomo

PROMPTS = Path(__file__).with_name("ordinary_prompts.txt")
# The thresholds the curve visits (the default is added when it is not one of them).
CURVE = (0.0, 0.1, 0.2, 0.25, 0.28, 0.3, 0.32, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8)


def ordinary_prompts(path: Path = PROMPTS) -> list[str]:
    """The ordinary prompts, one a line; ``#`` lines are comments."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [s for line in lines if (s := line.strip()) and not s.startswith("#")]


@dataclasses.dataclass
class Turn:
    """One asked prompt: what was injected (memory ids, recalled vs ambient) and its cost."""

    injected: tuple[str, ...]
    ambient: int
    tokens: int
    precision: float = 0.0
    coverage: float = 0.0
    # (memory id, calibrated relevance, recall score) of every recall candidate (the curve)
    candidates: tuple[tuple[str, float, float], ...] = ()


def judge(
    got: Sequence[str], owners: dict[str, list[str]], evidence: Sequence[str]
) -> tuple[float, float]:
    """(precision, coverage) of the memories ``got`` for a question with ``evidence`` turns; a
    question given nothing scores 0 for both."""
    if not got:
        return 0.0, 0.0
    want = set(evidence)
    hits = [m for m in got if want & set(owners.get(m, ()))]
    covered = {d for m in got for d in owners.get(m, ())} & want
    return len(hits) / len(got), (len(covered) / len(want) if want else 0.0)


def asked(store: MemoryStore, text: str, bank: str) -> Turn:
    """``text`` previewed in ``bank``, and the candidates the injector chose from: recall's
    top ``recall_limit`` with their calibrated relevance (the curve re-cuts them)."""
    view: PreviewResponse = store.preview(text, bank=bank)
    found = store.recall(text, bank=bank, limit=store.settings.recall_limit)
    return Turn(
        tuple(m.memory.id for m in view.memories),
        view.ambient,
        view.tokens,
        candidates=tuple((h.memory.id, h.relevance_score, h.score) for h in found.memories),
    )


def mean(values: Sequence[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def summary(turns: Sequence[Turn], *, scored: bool) -> dict[str, float]:
    out = {
        "n": float(len(turns)),
        "memories_per_turn": mean([len(t.injected) for t in turns]),
        "ambient_per_turn": mean([t.ambient for t in turns]),
        "tokens_per_turn": mean([t.tokens for t in turns]),
        "turns_with_block": mean([1.0 if t.injected else 0.0 for t in turns]),
    }
    if scored:
        out["precision"] = mean([t.precision for t in turns])
        out["coverage"] = mean([t.coverage for t in turns])
    return out


def evaluate(
    convs: Sequence[locomo.Conversation],
    prompts: Sequence[str],
    *,
    settings: dict[str, Any] | None = None,
    questions: int | None = None,
    model: bool = False,
) -> dict[str, Any]:
    """Every conversation saved to its bank, then on-topic, other-conversation and ordinary
    prompts asked through ``preview``; the curve from the same candidates."""
    on: list[Turn] = []
    other: list[Turn] = []
    ordinary: list[Turn] = []
    per_q: list[tuple[Turn, dict[str, list[str]], tuple[str, ...]]] = []
    with tempfile.TemporaryDirectory(prefix="inject-eval-") as tmp:
        root = Path(tmp) / "store"
        owners = locomo.build_store(root, convs)
        clock = FakeClock(start_ms=0, tick=0)
        base = StoreSettings().merged({"data_dir": str(root), **(settings or {})})
        embedder = locomo.semantic_embedder() if model else None
        store = MemoryStore(root, clock=clock, settings=base, embedder=embedder)
        t0 = time.perf_counter()
        try:
            for conv in convs:
                clock.ms = locomo.asked_at(conv)
                mine = owners[conv.bank]
                for q in conv.questions[:questions]:
                    turn = asked(store, q.text, conv.bank)
                    turn.precision, turn.coverage = judge(turn.injected, mine, q.evidence)
                    on.append(turn)
                    per_q.append((turn, mine, q.evidence))
                for o in convs:
                    if o is conv:
                        continue
                    for q in o.questions[:questions]:
                        other.append(asked(store, q.text, conv.bank))
                for text in prompts:
                    ordinary.append(asked(store, text, conv.bank))
        finally:
            store.close()
        took = time.perf_counter() - t0
    return {
        "settings": {k: getattr(base, k) for k in _SHOWN if hasattr(base, k)},
        "on_topic": summary(on, scored=True),
        "other_conversations": summary(other, scored=False),
        "ordinary_prompts": summary(ordinary, scored=False),
        "curve": curve(per_q, other, ordinary),
        "_turns": (per_q, other, ordinary),
        "ask_s": round(took, 1),
    }


_SHOWN = ("recall_limit", "recall_budget_tokens", "ambient_floor", "min_relevance")


def curve(
    per_q: Sequence[tuple[Turn, dict[str, list[str]], tuple[str, ...]]],
    other: Sequence[Turn],
    ordinary: Sequence[Turn],
) -> list[dict[str, float]]:
    """The injector's selection (``relevance.taken``) at each threshold (0: off), over the
    recall candidates of each question (no ambient floor: these banks pin nothing)."""
    default = float(StoreSettings().min_relevance)
    points = sorted({*CURVE, default})
    out = []
    for th in points:
        prec, cov, n = [], [], []
        for turn, owners, evidence in per_q:
            got = [m for m, _, _ in relevance.taken(turn.candidates, th)]
            p, c = judge(got, owners, evidence)
            prec.append(p)
            cov.append(c)
            n.append(len(got))
        off_o = [len(relevance.taken(t.candidates, th)) for t in other]
        off_p = [len(relevance.taken(t.candidates, th)) for t in ordinary]
        out.append(
            {
                "min_relevance": th,
                "default": float(th == default),
                "coverage": mean(cov),
                "precision": mean(prec),
                "memories_per_turn": mean(n),
                "other_per_turn": mean(off_o),
                "ordinary_per_turn": mean(off_p),
            }
        )
    return out


def table(report: dict[str, Any]) -> str:
    lines = [
        "| asked | n | memories/turn | ambient/turn | tokens/turn | with block | precision"
        " | coverage |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in ("on_topic", "other_conversations", "ordinary_prompts"):
        s = report[name]
        p = f"{s['precision']:.3f}" if "precision" in s else ""
        c = f"{s['coverage']:.3f}" if "coverage" in s else ""
        lines.append(
            f"| {name.replace('_', ' ')} | {int(s['n'])} | {s['memories_per_turn']:.2f} | "
            f"{s['ambient_per_turn']:.2f} | {s['tokens_per_turn']:.0f} | "
            f"{s['turns_with_block']:.2f} | {p} | {c} |"
        )
    if report["curve"]:
        lines += [
            "",
            "| min_relevance | coverage | precision | on-topic/turn | other conv./turn"
            " | ordinary/turn |",
            "|---|---|---|---|---|---|",
        ]
        for pt in report["curve"]:
            mark = " (default)" if pt["default"] else ""
            lines.append(
                f"| {pt['min_relevance']:.2f}{mark} | {pt['coverage']:.3f} | "
                f"{pt['precision']:.3f} | {pt['memories_per_turn']:.2f} | "
                f"{pt['other_per_turn']:.2f} | {pt['ordinary_per_turn']:.2f} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print the report as JSON")
    ap.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="a store setting"
    )
    ap.add_argument("--questions", type=int, default=None, help="first N questions per conv.")
    ap.add_argument("--model", action="store_true", help="with the local embedding model")
    args = ap.parse_args(argv)
    folder = locomo.data_dir()
    if not folder.is_dir() or not any(folder.glob("*.json")):
        print(f"inject: skipped, no data at {folder} (set {locomo.DATA_ENV})")
        return 0
    convs = locomo.load(folder)
    prompts = ordinary_prompts()
    settings = dict(item.split("=", 1) for item in args.set)
    t0 = time.perf_counter()
    report = evaluate(
        convs, prompts, settings=settings, questions=args.questions, model=args.model
    )
    took = time.perf_counter() - t0
    report.pop("_turns")
    if args.json:
        print(json.dumps(report, indent=1, sort_keys=True))
    else:
        print(table(report))
    print(
        f"(inject {folder.name}: {len(convs)} conversations, {len(prompts)} ordinary prompts, "
        f"settings {report['settings']}, {took:.1f} s)",
        file=sys.stderr if args.json else sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
