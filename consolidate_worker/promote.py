"""Promote-to-rule: memories re-observed often are proposed as lines of the ``learned`` rule.

A memory whose ``corroboration`` reaches ``promote_corroboration_threshold`` has been stated again
and again; as a standing instruction it belongs in the always-injected ``learned`` rule (standing
instructions learned from what the user keeps saying), which extraction also appends to. The rule is
read first and lines are deduped by fingerprint, so a fact already there (by either writer) is never
added twice. Only global-scope memories qualify: a rule is injected into every session of the bank.
Dry runs propose without writing. Corroboration is read as listed at the start of the pass.
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
            and (bank, m.id) not in tally.retired
        ),
        key=lambda m: (-m.corroboration, m.id),
    )
    if not ready:
        return []
    current = next((r.content for r in store.rule_list(bank=bank).rules if r.name == LEARNED), "")
    known = {fingerprint(_line_text(line)) for line in current.splitlines() if _line_text(line)}
    out: list[Promotion] = []
    lines: list[str] = []
    for m in ready:
        fp = fingerprint(m.text)
        if fp in known or len(out) >= MAX_PROMOTIONS_PER_BANK:
            continue
        known.add(fp)
        line = f"- {' '.join(m.text.split())}"
        lines.append(line)
        out.append(
            Promotion(
                bank=bank,
                id=m.id,
                corroboration=m.corroboration,
                line=line,
                added=not tally.dry_run,
            )
        )
    if lines and not tally.dry_run:
        body = current.rstrip("\n")
        store.rule_set(LEARNED, (body + "\n" if body else "") + "\n".join(lines) + "\n", bank=bank)
    return out
