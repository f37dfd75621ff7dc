"""How the ``memory`` CLI shows results: short human lines, or the response model as JSON.

One function per response (``recall`` prints rank, relevance, id, date, text; the date is
when it happened where a memory knows it, else when it was stated: ``when``); each takes
the response a store method returned and gives the text to print. A response is the pydantic
model, or (through the gateway) a ``store_wire.View`` of it: renderers read fields only.
"""

from __future__ import annotations

import json
from typing import Any

from shared.format import counted, date, jsonable, one_line


def with_fields(value: Any, **update: Any) -> Any:
    """``value`` with some fields replaced: a model's ``model_copy``, a view's copy."""
    if hasattr(value, "model_copy"):
        return value.model_copy(update=update)
    return type(value)({**value, **update})


def default_render(result: Any) -> str:
    """Readable text for a result without its own renderer (JSON only with ``--json``)."""
    if result is None:
        return "ok"
    return readable(jsonable(result))


def readable(value: Any, indent: int = 0) -> str:
    """A mapping as aligned ``key  value`` lines (nested ones indented below their key), a list
    of plain values comma-separated, yes/no for booleans, ``-`` for nothing."""
    pad = " " * indent
    if not isinstance(value, dict):
        return pad + _scalar(value)
    if not value:
        return pad + "-"
    width = max(len(_label(k)) for k in value) + 2
    lines = []
    for key, item in value.items():
        if isinstance(item, dict) and item:
            lines += [f"{pad}{_label(key)}:", readable(item, indent + 2)]
        elif isinstance(item, list) and any(isinstance(x, dict | list) for x in item):
            lines.append(f"{pad}{_label(key)}:")
            lines += [readable(x, indent + 2) if isinstance(x, dict) else pad + "  " + _scalar(x)
                      for x in item]  # fmt: skip
        else:
            lines.append(f"{pad}{_label(key):<{width}}{_scalar(item)}")
    return "\n".join(lines)


def _label(key: Any) -> str:
    return str(key)  # as typed: `memory configure recall_limit=5` takes these names


def _scalar(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(_scalar(v) for v in value) or "none"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def describe(d: dict[str, Any]) -> str:
    commits = d.get("commits") or {}
    shown = {k: v for k, v in d.items() if k != "commits"}
    if commits:  # group commit: fsyncs paid per memory write
        shown["commits"] = (
            f"{commits.get('writes', 0)} writes in {commits.get('batches', 0)} batches"
        )
    return readable(shown)


def capabilities(c: dict[str, Any]) -> str:
    """What the store supports, with its settings (``memory configure KEY=VALUE``) as one line
    each instead of the JSON schema (``--json`` prints the schema)."""
    shown = {k: v for k, v in c.items() if k != "config_schema"}
    text = readable(shown)
    props = (c.get("config_schema") or {}).get("properties") or {}
    if props:
        width = max(len(name) for name in props) + 2
        rows = [f"  {name:<{width}}{_setting(spec)}" for name, spec in props.items()]
        text += "\nsettings (memory configure KEY=VALUE):\n" + "\n".join(rows)
    return text


def _setting(spec: dict[str, Any]) -> str:
    kinds = [spec.get("type")] if "type" in spec else [a.get("type") for a in spec.get("anyOf", [])]
    kind = " or ".join(str(k) for k in kinds if k) or "any"
    default = f", default {_scalar(spec['default'])}" if "default" in spec else ""
    about = f": {spec['description']}" if spec.get("description") else ""
    return f"{kind}{default}{about}"


def status(s: dict[str, Any]) -> str:
    me = principal_line(s.get("principal"))
    if s.get("mode") == "embedded":
        lines = [f"embedded store on {s['data_dir']}", me]
        return "\n".join(lines + [bank_line(b) for b in s["banks"]])
    if s.get("mode") == "scoped":
        lines = [f"gateway:   {s['gateway']}", me]
        return "\n".join(lines + [bank_line(b) for b in s["banks"]])
    url = s["dashboard_url"]
    answers = s.get("dashboard_answers", True)
    lines = [
        f"dashboard: {url + ('' if answers else ' (not answering)') if url else 'not running'}"
    ]
    lines += [f"gateway:   {s.get('gateway') or 'not running'}"]
    lines += [me]
    if s.get("console"):  # the address only: the sign-in URL is the one `memory up` printed
        lines += [f"console:   {s['console']}"]
    lines += [f"{name:<13} {'up' if up else 'down'}" for name, up in s["workers"].items()]
    shards = s.get("shards") or []
    if len(shards) > 1 or any(not shard["up"] for shard in shards):
        lines += [shard_line(shard) for shard in shards]
    lines += [bank_line(b) for b in s["banks"]]
    return "\n".join(lines)


def principal_line(p: dict[str, Any] | None) -> str:
    """``you are:   reader (read-only; bank main; every project)``."""
    from shared.contract.principal import Principal

    return f"you are:   {Principal.from_dict(p).describe() if p else 'unknown'}"


def shard_line(shard: dict[str, Any]) -> str:
    """``  memory-store-1  up    banks: notes, work`` (a shard that does not answer: why)."""
    if not shard["up"]:
        return f"  {shard['actor']:<16} down  {shard.get('error', '')}".rstrip()
    held = ", ".join(shard["banks"]) or "none"
    return f"  {shard['actor']:<16} up    banks: {held}"


def when(m: Any) -> int:
    """The date a memory's line shows: when it happened if known (``occurred_at``), else when
    it was stated; the recalled block a turn is given dates its lines the same way
    (``store_worker/harness/inject.py``). ``get`` and ``--json`` show both."""
    return int(m.stated_at if m.occurred_at is None else m.occurred_at)


def memory_line(m: Any, id_width: int = 0, flags_width: int = 0) -> str:
    """``id  date  flags  text``; widths align a column of them (``memories``)."""
    flags = " ".join(memory_flags(m))
    column = f"  {flags:<{flags_width}}" if flags or flags_width else ""
    return f"{m.id:<{id_width}}  {date(when(m))}{column}  {one_line(m.text)}"


def memory_flags(m: Any) -> list[str]:
    """``pinned``, and for a memory out of the live set (``--include-superseded``) what took it
    out: ``superseded`` by another, or ``deleted``."""
    flags = ["pinned"] if m.pinned else []
    if m.invalid_at is not None:
        flags.append("superseded" if m.superseded_by else "deleted")
    return flags


def redacted_note(r: Any) -> str:
    """``; redacted: aws_access_key, password`` when a write redacted something (every response
    that redacted names the kinds, never the value: docs/ARCHITECTURE.md#redaction-before-the-disk),
    else nothing."""
    kinds = getattr(r, "redacted", ())
    return f"; redacted: {', '.join(kinds)}" if kinds else ""


def saved(r: Any) -> str:
    verb = "saved" if r.created else f"reinforced (corroboration {r.memory.corroboration})"
    return f"{verb} {r.memory.id} in bank {r.bank}{redacted_note(r)}"


def recall(r: Any) -> str:
    read_as = getattr(r, "read_as", None)  # a misspelt word read as one the bank holds
    head = [f"read as: {read_as}"] if read_as else []
    if not r.memories:
        return "\n".join([*head, f"no memories found in bank {r.bank} ({r.retrieval})"])
    found = [s.memory for s in r.memories]
    id_width, flags_width = _widths(found)
    return "\n".join(
        head
        + [
            f"{i:>2}. {s.relevance_score:.2f}  {memory_line(s.memory, id_width, flags_width)}"
            for i, s in enumerate(r.memories, 1)
        ]
    )


def recall_explained(r: Any) -> str:
    """``recall --explain``: each memory's line, then what matched."""
    if not r.memories:
        return recall(r)
    lines = recall(r).split("\n")
    head = lines[: len(lines) - len(r.memories)]
    out = list(head)
    for line, s in zip(lines[len(head) :], r.memories, strict=True):
        out += [line, f"      {why(s.why)}"]
    return "\n".join(out)


def why(w: Any) -> str:
    """What made a memory relevant, in one line (``shared.contract.models.Why``)."""
    if w is None:
        return "why: (not given)"
    parts = []
    if w.ambient:
        parts.append("ambient: " + ("pinned" if w.pinned else "always-on"))
    if w.terms:
        parts.append("terms " + ", ".join(w.terms))
    if w.context:
        parts.append("beside turns with " + ", ".join(w.context))
    if w.entities:
        parts.append("entities " + ", ".join(w.entities))
    if w.date:
        parts.append("in the time asked about")
    if w.semantic is not None:
        parts.append(f"semantic {w.semantic:.2f}")
    if w.recency != 1.0:
        parts.append(f"recency x{w.recency:.2f}")
    if w.pinned and not w.ambient:
        parts.append("pinned")
    return "why: " + ("; ".join(parts) if parts else "nothing matched")


def _widths(ms: list[Any]) -> tuple[int, int]:
    """The id and flags column widths that align these memories' lines."""
    id_width = max((len(m.id) for m in ms), default=0)
    return id_width, max((len(" ".join(memory_flags(m))) for m in ms), default=0)


def preview(r: Any) -> str:
    cut = ", truncated" if r.rules_truncated else ""
    rules, memories = counted(r.rules, "rule"), counted(len(r.memories), "memory")
    ambient = getattr(r, "ambient", 0)
    floor = f", {ambient} ambient" if ambient else ""
    head = f"bank {r.bank}: {rules}{cut}, {memories}{floor} ({r.retrieval})"
    tokens = f"this turn spends {getattr(r, 'tokens', 0)} tokens on recalled memories"
    threshold = f"min_relevance {getattr(r, 'min_relevance', 0.0):.2f}"
    parts = [head, f"{tokens} ({threshold})", "", "system prompt section:"]
    parts.append(r.system_prompt_section or "(none)")
    parts += ["", "appended message:", r.message or "(none: nothing relevant enough)"]
    if r.memories:
        parts += ["", "why each memory:"]
        for m in r.memories:
            parts.append(f"  {m.memory.id}  {m.relevance_score:.2f}  {why(m.why)}")
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
        if m.superseded_by:
            rows.append(("superseded", f"{date(m.invalid_at)} by {m.superseded_by}"))
        else:
            rows.append(("deleted", date(m.invalid_at)))
    if getattr(r, "redacted", ()):
        rows.append(("redacted", ", ".join(r.redacted)))
    return "\n".join(f"{k:<14}{v}" for k, v in rows if v)


def history(r: Any) -> str:
    """One line per revision (its number, the date it was stated, what changed to it), then
    the supersede chain."""
    lines = [f"{r.id} in bank {r.bank}: {len(r.revisions)} revision(s)"]
    for m in r.revisions:
        state = "pinned " if m.pinned else ""
        if m.invalid_at is not None:
            state += f"superseded by {m.superseded_by} " if m.superseded_by else "deleted "
        lines.append(f"  r{m.revision:<3} {date(m.updated_at)}  {state}{one_line(m.text, 120)}")
    if r.supersedes:
        lines.append(f"supersedes:    {', '.join(r.supersedes)}")
    if r.superseded_by:
        lines.append(f"superseded by: {r.superseded_by}")
    return "\n".join(lines)


def memories(r: Any) -> str:
    lines = [memory_line(m, *_widths(list(r.memories))) for m in r.memories]
    lines.append(f"({len(r.memories)} of {r.total} in bank {r.bank})")
    if r.next_page_token:
        lines.append(f"next page: --page-token {r.next_page_token}")
    return "\n".join(lines)


def supersede(r: Any) -> str:
    extra = " (reinforced)" if r.reinforced else ""
    return f"{r.memory.id} superseded by {r.survivor.id}{extra}{redacted_note(r)}"


def tags(r: Any) -> str:
    return "\n".join(f"{t.count:>5}  {t.tag}" for t in r.tags) or f"no tags in bank {r.bank}"


def bank_line(b: dict[str, Any]) -> str:
    return (
        f"bank {b['name']:<20} {counted(b['memories'], 'memory')}, {counted(b['rules'], 'rule')}, "
        f"{b['pinned']} pinned"
    )


def banks(r: Any) -> str:
    return "\n".join(bank_line(jsonable(b)) for b in r.banks)


def bank_created(r: Any) -> str:
    verb = "created" if r.created else "exists"
    return f"{verb}: {bank_line(jsonable(r.bank))}{redacted_note(r)}"


def rules(r: Any) -> str:
    return (
        "\n".join(
            f"{x.name:<20} {x.chars} chars{' (learned)' if x.learned else ''}" for x in r.rules
        )
        or f"no rules in bank {r.bank}"
    )


def rule_set(r: Any) -> str:
    return f"rule {r.name} {'saved' if r.exists else 'removed'} in bank {r.bank}{redacted_note(r)}"


def rescan(r: Any) -> str:
    """One line per bank: what held a secret, its kinds, and whether the log was rewritten."""
    lines = []
    for b in r.banks:
        what = f"{counted(b.memories, 'memory')}, {counted(b.rules, 'rule')}"
        what += ", description" if b.description else ""
        how = f"; log purged ({counted(b.log_lines, 'line')} rewritten)" if b.purged else ""
        kinds = f"; kinds: {', '.join(b.kinds)}" if b.kinds else "; nothing to redact"
        lines.append(f"bank {b.bank}: redacted {what}{kinds}{how}")
    jobs = getattr(r, "outbox_jobs", 0)
    if jobs:
        lines.append(f"extraction queue: {jobs} job(s) held a secret and were rewritten")
    return "\n".join(lines) or "no banks"


def purged(r: Any) -> str:
    draft = " and its draft file" if r.draft else ""
    return f"purged {r.id} from bank {r.bank}: {r.revisions} log line(s){draft}"


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
