"""The judge tier's bookkeeping: which pairs to ask about and how a verdict becomes a write.

Pairs asked (at most ``judge_max_calls`` per pass): contradictions first (similar pairs that the
deterministic tier vetoed for polarity or numbers: a newer statement may correct an older one),
then ambiguous pairs (the grey band below ``duplicate_score``), then paraphrases (pairs the
semantic arm found close that share too little wording for the deterministic tier, closest
first; ``plan.py``). Verdicts apply through the same ``supersede`` path and cap as the
deterministic tier:

- ambiguous or paraphrase + "duplicate": a restatement, ``reinforce=True``; the survivor is a
  pinned record if either is pinned, else the one the judge keeps (it read both, so it keeps
  the one that says more), else the survivor rule (pinned > corroboration > newest
  ``stated_at`` > smallest id);
- any + "contradiction": the record the judge keeps survives, ``reinforce=False`` (a correction
  is not a re-observation);
- a "duplicate" verdict on a contradiction pair (lexically near-identical, vetoed for polarity
  or numbers) is recorded but never applied: polarity flips and number changes are never
  merged as duplicates (a false merge retires a true memory);
- a pinned loser is never retired, only reported.

Every settled verdict is remembered (``memo_key``: bank, older and newer text, pins; kept by
the consolidator in the store's sibling state), so a pair is asked once, not once per pass: a
daily pass over a stable bank makes no judge calls at all. A verdict whose merge the cap or an
error stopped is not settled, and is asked again next pass; an edited or re-pinned text, or
the same texts stated in the other order, make a new question.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from consolidate_worker.api import PassTally
from consolidate_worker.dedup import Features
from consolidate_worker.judge import Judge, Kind, Verdict
from consolidate_worker.plan import BankPlan, Edge, survivor_key
from consolidate_worker.report import Change, Group, JudgeDecision, PassError
from consolidate_worker.settings import ConsolidatorSettings
from shared.contract import errors
from shared.contract.models import Memory

Supersede = Callable[..., None]
MAX_REASON = 300


class JudgeTier:
    def __init__(self, judge: Judge, settings: ConsolidatorSettings) -> None:
        self.judge = judge
        self.settings = settings

    def run(
        self,
        plan: BankPlan,
        by_id: Mapping[str, Memory],
        tally: PassTally,
        supersede: Supersede,
    ) -> None:
        asks: list[tuple[Kind, Edge]] = [("contradiction", e) for e in plan.contradictions]
        asks += [("ambiguous", e) for e in plan.ambiguous]
        asks += [("paraphrase", e) for e in plan.paraphrases]
        for kind, edge in asks:
            if (plan.bank, edge.a) in tally.retired or (plan.bank, edge.b) in tally.retired:
                continue
            a, b = by_id[edge.a], by_id[edge.b]
            key = memo_key(plan.bank, a, b)
            if tally.recall_verdict(key):
                continue
            if tally.judge_calls >= self.settings.judge_max_calls:
                return
            tally.judge_calls += 1
            try:
                verdict = self.judge.decide(kind, a, b)
            except errors.MemoryServiceError as e:
                tally.errors.append(
                    PassError(bank=plan.bank, id=a.id, category=e.category, message=e.message)
                )
                continue
            tally.judged.append(
                JudgeDecision(
                    bank=plan.bank,
                    pair=(a.id, b.id),
                    kind=kind,
                    decision=verdict.decision,
                    keep=verdict.keep,
                    reason=verdict.reason[:MAX_REASON],
                )
            )
            if self._apply(plan.bank, kind, verdict, a, b, tally, supersede):
                tally.remember_verdict(key, verdict.decision)

    def _apply(
        self,
        bank: str,
        kind: Kind,
        verdict: Verdict,
        a: Memory,
        b: Memory,
        tally: PassTally,
        supersede: Supersede,
    ) -> bool:
        """Act on a verdict; True when it is settled (nothing left to write), so the pair need
        not be asked again. A merge that the cap or an error stopped is not settled."""
        if verdict.decision == "distinct":
            return True
        if verdict.decision == "duplicate":
            if kind == "contradiction":
                return True
            keep, lose = _duplicate_survivor(a, b, verdict.keep)
            reinforce = True
            tally.groups.append(
                Group(
                    bank=bank,
                    survivor=keep.id,
                    members=tuple(sorted((a.id, b.id))),
                    retire=() if lose.pinned else (lose.id,),
                    pinned_kept=(lose.id,) if lose.pinned else (),
                    reason="judge-duplicate",
                )
            )
        else:
            keep, lose = (a, b) if verdict.keep == a.id else (b, a)
            reinforce = False
        why = f"consolidator: judge {verdict.decision} ({kind}), kept {keep.id}: {verdict.reason}"
        change = Change(
            bank=bank, id=lose.id, survivor=keep.id, reason=why[:MAX_REASON], revision=lose.revision
        )
        if lose.pinned:  # settled while it stays pinned: the pins are part of the memo key
            tally.skipped_pinned.append(change.model_copy(update={"reason": "pinned"}))
            return True
        merged = len(tally.merged)
        supersede(tally, change, reinforce=reinforce)
        return len(tally.merged) > merged


def memo_key(bank: str, a: Memory, b: Memory) -> str:
    """The question's identity across passes: the bank, and the older then the newer text
    (fingerprint) with its pin. The judge is told which statement is newer, so the same two
    texts stated the other way round (a move back to the old office) are a new question; an
    edit, a pin or an unpin makes one too."""
    older, newer = sorted((a, b), key=lambda m: (m.stated_at, m.id))
    return "|".join(
        (bank, *(f"{m.fingerprint}{'+pin' if m.pinned else ''}" for m in (older, newer)))
    )


def _duplicate_survivor(a: Memory, b: Memory, judge_keeps: str | None) -> tuple[Memory, Memory]:
    """(survivor, loser): pinned first, then the judge's pick, then the survivor rule."""
    if a.pinned != b.pinned:
        return (a, b) if a.pinned else (b, a)
    if judge_keeps in (a.id, b.id):
        return (a, b) if judge_keeps == a.id else (b, a)
    keep, lose = sorted((a, b), key=lambda m: survivor_key(Features(m)))
    return keep, lose
