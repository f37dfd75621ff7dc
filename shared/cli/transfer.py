"""``memory export`` and ``memory import``: a store's records out to JSON Lines and back in,
and the formats users come from (``shared.cli.formats``) in.

The export file is the one export format: a header line (``format``, ``version``), then for
each bank a ``bank`` line (its description), its ``rule`` lines and its ``memory`` lines, each
a whole record (``import_records`` takes them back as they are). It holds what the store
holds: a redacted secret is its placeholder, never the original.

An import reads the whole source first (a line that cannot be read is reported with its place
and skipped), then sends the records in batches of ``--batch`` to ``import_records``: the store
validates and redacts every record of a batch before it writes any, leaves out a refused one
(reported with its place), and appends the rest with one fsync. Records are keyed by id, so
importing again, or after a killed import, writes only what is missing.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from shared.cli import formats
from shared.contract.errors import InvalidArgumentError, NotFoundError

if TYPE_CHECKING:
    import argparse

    from shared.cli import Ctx
    from shared.contract.api import StoreAPI

EXPORT_PAGE = 2_000  # records a page: at most ~32 MB of text, half a gRPC message
IMPORT_BATCH = 5_000
PREVIEW = 50  # records a dry run lists (--json); the text shows the first 20
BATCH_TEXT = 8_000_000  # characters of text a batch: well under a gRPC message (64 MB)


# -- export ------------------------------------------------------------------------------------


def _record(mem: Any) -> dict[str, Any]:
    """A record as the file keeps it: every field that is not its default."""
    if not hasattr(mem, "model_dump"):  # a view from the gateway: a plain JSON object
        from shared.contract.models import Memory

        mem = Memory.model_validate(dict(mem))
    out: dict[str, Any] = mem.model_dump(mode="json", exclude_defaults=True)
    return out


def export_lines(
    store: StoreAPI, *, bank: str | None, history: bool, now_ms: int
) -> Iterator[dict[str, Any]]:
    """The export file's rows: the header, then each bank's description, rules and records."""
    yield formats.header(exported_at=now_ms, history=history)
    banks = {b.name: b.description for b in store.bank_list().banks}
    names = sorted(banks) if bank is None else [bank]
    for name in names:
        if name not in banks:
            raise NotFoundError(f"no bank named {name!r}")
        yield {"kind": "bank", "bank": name, "description": banks[name]}
        for rule in store.rule_list(bank=name).rules:
            yield {"kind": "rule", "bank": name, "name": rule.name, "content": rule.content}
        token = None
        while True:
            page = store.export(bank=name, history=history, page_size=EXPORT_PAGE, page_token=token)
            for mem in page.records:
                yield {"kind": "memory", "bank": name, "record": _record(mem)}
            token = page.next_page_token
            if token is None:
                break


class _Dumps:
    """``--json`` prints a summary as the response models print (``shared.format.jsonable``)."""

    def model_dump(self, mode: str = "json") -> dict[str, Any]:
        out: dict[str, Any] = dataclasses.asdict(self)  # type: ignore[call-overload]
        return out


@dataclass
class ExportSummary(_Dumps):
    path: str
    banks: int = 0
    rules: int = 0
    records: int = 0


def export(ctx: Ctx) -> ExportSummary | int:
    """The export file at ``-o``, and its summary; to stdout, the file alone (exit 0)."""
    a = ctx.args
    target: TextIO
    path = a.output or "-"
    summary = ExportSummary(path=path)
    rows = export_lines(ctx.store, bank=a.bank, history=a.include_history, now_ms=_now())
    if path == "-":  # the output is the file: no summary after it, even with --json
        _write_rows(rows, ctx.out, summary)
        return 0
    tmp = Path(f"{path}.partial")
    try:
        with tmp.open("w", encoding="utf-8") as target:
            _write_rows(rows, target, summary)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a failed export (no such bank) leaves no half file
        raise
    tmp.replace(path)  # a killed export leaves no half file under the name asked for
    return summary


def _write_rows(rows: Iterable[dict[str, Any]], out: TextIO, summary: ExportSummary) -> None:
    for row in rows:
        kind = row.get("kind")
        summary.banks += kind == "bank"
        summary.rules += kind == "rule"
        summary.records += kind == "memory"
        out.write(json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n")


def _now() -> int:
    return int(time.time() * 1000)


def show_export(s: ExportSummary) -> str:
    return f"exported {s.records:,} records, {s.rules} rules from {s.banks} banks to {s.path}"


# -- import ------------------------------------------------------------------------------------


@dataclass
class ImportSummary(_Dumps):
    source: str
    format: str
    dry_run: bool = False
    written: int = 0
    unchanged: int = 0
    rules: int = 0
    banks: list[str] = field(default_factory=list)
    problems: list[dict[str, str]] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)
    seconds: float = 0.0
    would_write: list[dict[str, Any]] = field(default_factory=list)  # dry run: the first few

    def problem(self, where: str, message: str) -> None:
        """A skipped line, as the report shows it: a credential in the source (a file's name,
        a line's unknown kind) is redacted there too."""
        from shared.redact import redact_text

        self.problems.append({"where": redact_text(where), "message": redact_text(message)})


def import_file(
    store: StoreAPI,
    path: Path,
    fmt: str | None = None,
    *,
    bank: str | None = None,
    dry_run: bool = False,
    batch: int = IMPORT_BATCH,
    progress: TextIO | None = None,
) -> ImportSummary:
    """Import ``path`` (of ``fmt``, else detected) into ``store`` (see the module docstring)."""
    started = time.perf_counter()
    if not path.exists():
        raise InvalidArgumentError(f"no such file or folder: {path}")
    try:
        fmt = fmt or formats.detect(path)
    except ValueError as e:
        raise InvalidArgumentError(str(e)) from e
    summary = ImportSummary(source=str(path), format=fmt, dry_run=dry_run)
    memories: dict[str | None, list[formats.Entry]] = {}
    others: list[formats.Entry] = []
    for item in formats.read(path, fmt):
        if isinstance(item, formats.Problem):
            summary.problem(item.where, item.message)
        elif item.kind == "memory":
            memories.setdefault(bank or item.bank, []).append(item)
        else:
            others.append(item)
    redacted: set[str] = set()
    refused: dict[str | None, str] = {}  # banks whose name the store refused
    for entry in others:
        try:
            _bank_or_rule(store, entry, bank or entry.bank, dry_run, summary)
        except InvalidArgumentError as e:  # this line's bank or rule, not the whole import
            if bank is not None and entry.kind == "bank":
                raise  # --bank itself: the command's argument is wrong
            summary.problem(entry.where, f"{e.category}: {e.message}")
    bar = Progress(sum(len(v) for v in memories.values()), progress)
    for target, entries in memories.items():
        for chunk in _batches(entries, batch):
            _import_chunk(store, target, chunk, summary, redacted, refused, given=bank)
            bar.advance(len(chunk))
    bar.close()
    summary.redacted = sorted(redacted)
    summary.seconds = round(time.perf_counter() - started, 3)
    return summary


def _import_chunk(
    store: StoreAPI,
    target: str | None,
    chunk: list[formats.Entry],
    summary: ImportSummary,
    redacted: set[str],
    refused: dict[str | None, str],
    *,
    given: str | None,
) -> None:
    """One batch to ``import_records``; a bank the store refuses is each entry's problem,
    unless it is the one ``--bank`` gave (the command's argument: its typed error)."""
    try:  # with skip_bad, only the bank itself can refuse a whole batch
        if target in refused:
            raise InvalidArgumentError(refused[target])
        res = store.import_records(
            [e.data for e in chunk], bank=target, skip_bad=True, dry_run=summary.dry_run
        )
    except InvalidArgumentError as e:
        if given is not None:
            raise
        refused[target] = why = refused.get(target) or f"{e.category}: {e.message}"
        for entry in chunk:
            summary.problem(entry.where, why)
        return
    for mem in res.records[: PREVIEW - len(summary.would_write)]:
        summary.would_write.append({"bank": res.bank, **_record(mem)})
    summary.written += res.written
    summary.unchanged += res.unchanged
    redacted.update(res.redacted)
    for p in res.problems:
        summary.problem(chunk[p.index].where, f"{p.category}: {p.message}")
    if res.bank not in summary.banks:
        summary.banks.append(res.bank)


def _batches(entries: list[formats.Entry], most: int) -> Iterator[list[formats.Entry]]:
    """``entries`` in batches of at most ``most`` records and ``BATCH_TEXT`` characters."""
    chunk: list[formats.Entry] = []
    chars = 0
    for entry in entries:
        size = len(str(entry.data.get("text", ""))) + len(str(entry.data.get("title", "")))
        if chunk and (len(chunk) >= most or chars + size > BATCH_TEXT):
            yield chunk
            chunk, chars = [], 0
        chunk.append(entry)
        chars += size
    if chunk:
        yield chunk


def _bank_or_rule(
    store: StoreAPI, entry: formats.Entry, bank: str | None, dry_run: bool, s: ImportSummary
) -> None:
    """A bank line makes the bank (with its description) if it is missing; a rule line sets
    the rule unless it already reads the same."""
    if entry.kind == "bank":
        if bank is not None and bank not in s.banks:
            s.banks.append(bank)
        known = {b.name for b in store.bank_list().banks}
        if not dry_run and bank not in known:
            store.bank_create(bank or "main", entry.data.get("description") or None)
        return
    name, content = entry.data["name"], entry.data.get("content")
    if not isinstance(content, str):
        s.problems.append({"where": entry.where, "message": "a rule's content must be text"})
        return
    try:
        if store.rule_get(name, bank=bank).content == content:
            return
    except NotFoundError:
        pass
    if not dry_run:
        store.rule_set(name, content, bank=bank)
    s.rules += 1  # once the store took it: a refused rule is a problem, not a rule


class Progress:
    """A one-line bar on stderr with the rate and the time left, only on a terminal."""

    def __init__(self, total: int, out: TextIO | None) -> None:
        self.total, self.done, self.out = total, 0, out
        self.started = time.perf_counter()
        self.on = out is not None and out.isatty() and total > 0

    def advance(self, n: int) -> None:
        self.done += n
        if not self.on or self.out is None:
            return
        spent = max(time.perf_counter() - self.started, 1e-6)
        rate = self.done / spent
        left = (self.total - self.done) / rate if rate else 0.0
        filled = int(30 * self.done / self.total)
        self.out.write(
            f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done:,}/{self.total:,} "
            f"{rate:,.0f}/s ETA {left:4.0f}s"
        )
        self.out.flush()

    def close(self) -> None:
        if self.on and self.out is not None:
            self.out.write("\n")
            self.out.flush()


def import_verb(ctx: Ctx) -> ImportSummary:
    a = ctx.args
    return import_file(
        ctx.store,
        Path(a.path),
        a.source_format,
        bank=a.bank,
        dry_run=a.dry_run,
        batch=a.batch,
        progress=sys.stderr,
    )


def show_import(s: ImportSummary) -> str:
    verb = "would write" if s.dry_run else "wrote"
    lines = [
        f"{s.format}: {verb} {s.written:,} records ({s.unchanged:,} already there), "
        f"{s.rules} rules, into {', '.join(s.banks) or 'no bank'} in {s.seconds:.1f}s"
    ]
    for row in s.would_write[:20]:
        text = " ".join(str(row.get("text", "")).split())
        lines.append(f"  {row['bank']}/{row['id']}  {text[:90]}")
    if s.dry_run and s.written > min(20, len(s.would_write)):
        lines.append(f"  … and {s.written - min(20, len(s.would_write)):,} more")
    if s.redacted:
        lines.append(f"redacted: {', '.join(s.redacted)}")
    if s.problems:
        lines.append(f"skipped {len(s.problems)}:")
        lines += [f"  {p['where']}: {p['message']}" for p in s.problems[:50]]
        if len(s.problems) > 50:
            lines.append(f"  … and {len(s.problems) - 50} more (--json lists them all)")
    return "\n".join(lines)


def _batch(value: str) -> int:
    n = int(value)
    if not 1 <= n <= 10_000:
        raise ValueError(n)
    return n


def add_transfer_verbs(sub: Any, common: argparse.ArgumentParser) -> None:
    from shared.cli.store import add_verb, bank_opt

    p = add_verb(
        sub,
        "export",
        "Write banks to a JSON Lines file (records, supersede chain, rules, provenance).",
        common,
        export,
        show_export,
    )
    bank_opt(p)
    p.add_argument("--include-history", action="store_true", help="every revision, not the last")
    p.add_argument("-o", "--output", help="the file to write (default: stdout)")

    p = add_verb(
        sub,
        "import",
        "Read records into the store: an export, mem0, MCP memory.jsonl, markdown notes, "
        "or a memory-tool /memories folder (re-importing changes nothing).",
        common,
        import_verb,
        show_import,
    )
    p.add_argument("path", help="the file or folder to read")
    p.add_argument(
        "--from",
        dest="source_format",
        choices=formats.FORMATS,
        help="the source's format (default: detected)",
    )
    p.add_argument("--bank", help="put everything in this bank (default: the source's banks)")
    p.add_argument("--dry-run", action="store_true", help="check and count; write nothing")
    p.add_argument(
        "--batch", type=_batch, default=IMPORT_BATCH, help="records per write (1 to 10000)"
    )
