"""How the ``memory`` CLI shows results: short human lines, or the response model as JSON.

One function per response (``recall`` prints rank, relevance, id, date, text); each takes
the pydantic response a store method returned and gives the text to print.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel


def jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def default_render(result: Any) -> str:
    if result is None:
        return "ok"
    return json.dumps(jsonable(result), indent=2, ensure_ascii=False)


def status(s: dict[str, Any]) -> str:
    lines = [f"dashboard: {s['dashboard_url'] or 'not running'}"]
    lines += [f"{name:<13} {'up' if up else 'down'}" for name, up in s["workers"].items()]
    lines += [bank_line(b) for b in s["banks"]]
    return "\n".join(lines)


def date(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


def one_line(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def memory_line(m: Any) -> str:
    flags = " [pinned]" if m.pinned else ""
    flags += " [retired]" if m.invalid_at is not None else ""
    return f"{m.id}  {date(m.stated_at)}{flags}  {one_line(m.text)}"


def save(r: Any) -> str:
    verb = "saved" if r.created else f"reinforced (corroboration {r.memory.corroboration})"
    note = f"; redacted: {', '.join(r.redacted)}" if r.redacted else ""
    return f"{verb} {r.memory.id} in bank {r.bank}{note}"


def recall(r: Any) -> str:
    if not r.memories:
        return f"no memories found in bank {r.bank} ({r.retrieval})"
    return "\n".join(
        f"{i:>2}. {s.relevance_score:.2f}  {memory_line(s.memory)}"
        for i, s in enumerate(r.memories, 1)
    )


def preview(r: Any) -> str:
    cut = ", truncated" if r.rules_truncated else ""
    head = f"bank {r.bank}: {r.rules} rules{cut}, {len(r.memories)} memories ({r.retrieval})"
    parts = [head, "", "system prompt section:", r.system_prompt_section or "(none)"]
    parts += ["", "appended message:", r.message or "(none: no memory fits)"]
    return "\n".join(parts)


def memory(r: Any) -> str:
    m = r.memory
    rows = [
        ("id", m.id),
        ("bank", r.bank),
        ("title", m.title),
        ("text", m.text),
        ("type", f"{m.type} / {m.scope}" + (f" ({m.project})" if m.project else "")),
        ("tags", ", ".join(m.tags)),
        ("entities", ", ".join(m.entities)),
        ("pinned", "yes" if m.pinned else "no"),
        ("stated", date(m.stated_at)),
        ("occurred", "" if m.occurred_at is None else date(m.occurred_at)),
        ("revision", str(m.revision)),
        ("corroboration", str(m.corroboration)),
    ]
    if m.invalid_at is not None:
        rows.append(("retired", f"{date(m.invalid_at)} superseded by {m.superseded_by or '-'}"))
    return "\n".join(f"{k:<14}{v}" for k, v in rows if v)


def memories(r: Any) -> str:
    lines = [memory_line(m) for m in r.memories]
    lines.append(f"({len(r.memories)} of {r.total} in bank {r.bank})")
    if r.next_page_token:
        lines.append(f"next page: --page-token {r.next_page_token}")
    return "\n".join(lines)


def supersede(r: Any) -> str:
    extra = " (reinforced)" if r.reinforced else ""
    return f"{r.memory.id} superseded by {r.survivor.id}{extra}"


def tags(r: Any) -> str:
    return "\n".join(f"{t.count:>5}  {t.tag}" for t in r.tags) or f"no tags in bank {r.bank}"


def bank_line(b: dict[str, Any]) -> str:
    return (
        f"bank {b['name']:<20} {b['memories']} memories, {b['rules']} rules, {b['pinned']} pinned"
    )


def banks(r: Any) -> str:
    return "\n".join(bank_line(b.model_dump()) for b in r.banks)


def bank_created(r: Any) -> str:
    return f"{'created' if r.created else 'exists'}: {bank_line(r.bank.model_dump())}"


def rules(r: Any) -> str:
    return (
        "\n".join(
            f"{x.name:<20} {x.chars} chars{' (learned)' if x.learned else ''}" for x in r.rules
        )
        or f"no rules in bank {r.bank}"
    )


def rule_set(r: Any) -> str:
    return f"rule {r.name} {'saved' if r.exists else 'removed'} in bank {r.bank}"


def doctor(r: Any) -> str:
    lines = [f"{'ok' if r.ok else 'PROBLEM'}"]
    for c in r.checks:
        mark = "ok  " if c.ok else ("FAIL" if c.required else "warn")
        lines.append(f"  {mark} {c.name}: {c.detail}")
    return "\n".join(lines)


def event(e: Any) -> str:
    what = f" {e.memory.id}" if e.memory is not None else ""
    why = f" ({e.reason})" if e.reason else ""
    return f"{e.seq:>6} {e.kind} {e.event_type} [{e.bank}]{what}{why}"
