"""Promote-to-rule: memories re-observed often are proposed as lines of the ``learned`` rule.

A memory whose ``corroboration`` reaches ``promote_corroboration_threshold`` has been stated again
and again, and may be a standing instruction for the always-injected ``learned`` rule, which
extraction also proposes lines for. Repetition alone never makes a rule: the lines go to the
store's review queue (``rule_propose``), which holds every promotion for a person unless
``rule_review`` is ``none``. The rule and the queue are read first and lines are deduped by
fingerprint, so a fact already there or already waiting is never proposed twice. A line a
person rejected is sent on (the store drops it, with a ``rule-dropped`` event) but is neither
reported as a promotion nor counted against the pass's limit. Only
global-scope memories qualify: a rule is injected into every session of the bank. Dry runs
propose without writing. Corroboration is read as listed at the start of the pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from consolidate_worker.api import PassTally
from consolidate_worker.report import Promotion
from consolidate_worker.settings import ConsolidatorSettings
from shared.contract.api import StoreAPI
from shared.contract.models import Memory
from shared.text import fingerprint

LEARNED = "learned"
MAX_PROMOTIONS_PER_BANK = 20
MAX_LINE_CHARS = 500  # a longer memory is no one-line instruction (the store's limit)
MAX_PROPOSED = 50  # lines in one proposal (the store's limit)


def _line_text(line: str) -> str:
    return line.strip().lstrip("-*").strip()


def promote(
    store: StoreAPI,
    bank: str,
    memories: Sequence[Memory],
    settings: ConsolidatorSettings,
    tally: PassTally,
) -> list[Promotion]:
    threshold = settings.promote_corroboration_threshold
    ready = sorted(
        (
            m
            for m in memories
            if m.corroboration >= threshold
            and m.scope == "global"
            and len(" ".join(m.text.split())) <= MAX_LINE_CHARS
            and (bank, m.id) not in tally.retired
        ),
        key=lambda m: (-m.corroboration, m.id),
    )
    if not ready:
        return []
    current = next((r.content for r in store.rule_list(bank=bank).rules if r.name == LEARNED), "")
    known = {fingerprint(_line_text(line)) for line in current.splitlines() if _line_text(line)}
    known |= {fingerprint(p.text) for p in store.rule_pending(bank=bank).proposals}
    rejected = store.rule_pending(bank=bank, rejected=True).proposals
    refused = {fingerprint(p.text) for p in rejected}
    out: list[Promotion] = []
    lines: list[str] = []
    again: list[str] = []  # rejected by a person: the store drops them
    for m in ready:
        fp = fingerprint(m.text)
        if fp in known:
            continue
        if fp in refused:
            known.add(fp)
            again.append(" ".join(m.text.split()))
            continue
        if len(out) >= MAX_PROMOTIONS_PER_BANK:
            continue
        known.add(fp)
        lines.append(" ".join(m.text.split()))
        out.append(
            Promotion(
                bank=bank,
                id=m.id,
                corroboration=m.corroboration,
                line=f"- {lines[-1]}",
                added=False,
            )
        )
    if not (lines or again) or tally.dry_run:
        return out
    again = again[: MAX_PROPOSED - len(lines)]
    answer = store.rule_propose(lines + again, bank=bank, origin="promotion")
    learned = {fingerprint(line) for line in answer.learned}
    waiting = {fingerprint(p.text) for p in answer.pending}
    return [
        p.model_copy(
            update={
                "added": fingerprint(text) in learned,
                "queued": fingerprint(text) in waiting,
            }
        )
        for p, text in zip(out, lines, strict=True)
    ]
