"""Redacting what is already stored, and erasing for good.

The log is append-only, and this module is the one exception: nothing else ever rewrites
``memories.jsonl``. Two operations, both run under the store lock (the façade's
``@_serialized``), so no group commit interleaves with a rewrite:

``redact_rescan(bank=None, purge=False)``
    Applies today's catalogue (``shared.redact``) to what a bank holds: each current record
    (drafts included), each rule, the description. A record that held a secret gets a new
    revision through the normal write path (``Drafts.commit``: the log, or a draft's file),
    with an ``item-changed`` event naming the kinds. The log still holds the old lines; with
    ``purge`` the log itself is rewritten instead: every line that held a secret is replaced
    by the same revision redacted (same id, revision, timestamps, pointers), every other line
    is kept byte for byte, and no new revision is appended.
``purge(id)``
    The right-to-erasure answer: every revision of one memory leaves the log (and its draft
    file, when it is pending). Nothing else changes: a record that was superseded by it keeps
    its ``superseded_by`` pointer, a link to it dangles (``dangling`` lists it).

A rewrite, in this order, each step safe to crash after:

1. the index snapshot goes (``index.snap`` holds the old text's terms; the load that follows
   rebuilds it, and writes a new one only past ``SNAPSHOT_MIN_LINES``);
2. the vector sidecar is rewritten without the affected ids (their embeddings were computed
   from the secret; a crash before step 3 re-embeds the old text, which a retry undoes);
3. the log: a temp file beside it, fsynced, renamed over it, the folder fsynced
   (``files.atomic_write``). A crash leaves the old log or the new one, never a mix; a temp
   left behind holds only the new content and is removed at the next load;
4. the bank is read again from its files (``Banks.reload``), so RAM equals the files;
5. the in-RAM event buffer forgets what it held of the old text, and a ``bank-changed``
   ``purged`` event says what kind of thing went and when, never the value.

The ``.torn`` sidecar (a torn final line moved aside at load) is rewritten too: redacted by
a rescan, without the purged memory's fragments by a purge.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.contract import errors
from shared.contract.clock import Clock
from shared.contract.models import BankRescan, Event, Memory, PurgeResponse, RescanResponse
from shared.redact import find_credential, is_placeholder, redact
from shared.text import fingerprint
from shared.text.tokens import TokenCounter
from store_worker.harness.rules import Rules
from store_worker.recall.vectors import Vectors
from store_worker.storage import snapshot
from store_worker.storage import validate as v
from store_worker.storage.bank import Bank
from store_worker.storage.banks import Banks
from store_worker.storage.drafts import Drafts, draft_path
from store_worker.storage.events import EventBus
from store_worker.storage.files import VECTORS, atomic_write, fsync_dir, synced_dirs, torn_path
from store_worker.storage.writes import derived_links

Found = tuple[Memory, tuple[str, ...]]


@dataclass(eq=False, repr=False, kw_only=True)
class Purger:
    """``redact_rescan`` and ``purge`` over the banks: the only rewrites of a log."""

    banks: Banks
    rules: Rules
    vectors: Vectors
    events: EventBus
    clock: Clock
    tokens: TokenCounter

    # -- redact --rescan -------------------------------------------------------------------

    def redact_rescan(self, *, bank: str | None = None, purge: bool = False) -> RescanResponse:
        """Today's catalogue over stored memories, rules and descriptions (module doc)."""
        v.flag(purge, "purge")
        names = [bank] if bank is not None else [b.name for b in self.banks.owned()]
        targets = [self.banks.writable(self.banks.resolve(name)) for name in names]
        done = tuple(self._rescan_bank(target, purge) for target in targets)
        kinds = tuple(sorted({k for d in done for k in d.kinds}))
        return RescanResponse(banks=done, kinds=kinds)

    def _rescan_bank(self, bank: Bank, purge: bool) -> BankRescan:
        kinds: set[str] = set()
        found = {mem.id: hit for mem in bank.records.values() if (hit := self.redacted(mem))}
        rules = self._rescan_rules(bank, kinds)
        description = self._rescan_description(bank, kinds)
        for _, labels in found.values():
            kinds.update(labels)
        lines = 0
        if purge:
            lines, log_kinds = self._compact(bank, found)
            kinds.update(log_kinds)
            bank = self.banks[bank.name]
        else:
            self._new_revisions(bank, found)
            if found:  # the buffer's older events still carry the old text
                self.events.rewrite(lambda e: _redacted_event(e, bank.name, self))
        result = BankRescan(
            bank=bank.name,
            memories=len(found),
            rules=rules,
            description=description,
            kinds=tuple(sorted(kinds)),
            purged=purge,
            log_lines=lines,
        )
        if lines:  # the audit of a rewrite: how many lines, which kinds, when (``at``)
            self._announce(bank, f"rescan: {lines} log line(s) rewritten", result.kinds)
        return result

    def redacted(self, mem: Memory) -> Found | None:
        """``mem`` with today's catalogue applied (same revision), and the kinds; None when
        it holds nothing the catalogue knows. Text and title are redacted, a tag or entity
        that held a secret is dropped whole (as ``save`` does), and a provenance field that
        holds a credential is cleared (an identifier is never rewritten into a marker)."""
        labels: set[str] = set()
        changes: dict[str, Any] = {}
        for name in ("text", "title"):
            result = redact(getattr(mem, name))
            if result.labels:
                labels.update(result.labels)
                changes[name] = result.text
        for name in ("tags", "entities"):
            kept = tuple(x for x in getattr(mem, name) if not self._label_secret(x, labels))
            if kept != getattr(mem, name):
                changes[name] = kept
        provenance = self._clean_provenance(mem, labels)
        if provenance is not None:
            changes["provenance"] = provenance
        if not changes:
            return None
        if "text" in changes:
            text = changes["text"]
            changes.update(
                fingerprint=fingerprint(text),
                links=derived_links(text),
                tokens=self.tokens.count(text),
            )
        return mem.model_copy(update=changes), tuple(sorted(labels))

    @staticmethod
    def _label_secret(label: str, labels: set[str]) -> bool:
        result = redact(label)
        labels.update(result.labels)
        return bool(result.labels) or is_placeholder(label)

    @staticmethod
    def _clean_provenance(mem: Memory, labels: set[str]) -> Any:
        p = mem.provenance
        changes: dict[str, None] = {}
        for name in ("source_session_id", "recorded_by"):
            value = getattr(p, name)
            label = find_credential(value) if value else None
            if label is not None:
                labels.add(label)
                changes[name] = None
        return p.model_copy(update=changes) if changes else None

    def _new_revisions(self, bank: Bank, found: dict[str, Found]) -> None:
        """Without ``purge``: each record that held a secret gets its next revision, through
        the write path (log or draft file), embedded again and announced."""
        now = self.clock.now_ms()
        for mem_id in sorted(found):
            clean, labels = found[mem_id]
            mem = clean.model_copy(update={"revision": clean.revision + 1, "updated_at": now})
            Drafts.commit(bank, mem)
            if mem.invalid_at is None:
                self.vectors.embed_one(bank, mem)
            self.events.emit(
                "item-changed",
                "updated",
                bank.name,
                now=now,
                memory=mem,
                reason="redacted",
                redacted=labels,
            )

    def _rescan_rules(self, bank: Bank, kinds: set[str]) -> int:
        changed = 0
        for name, content in sorted(bank.rules.items()):
            result = redact(content)
            if not result.labels:
                continue
            self.rules.write(bank, name, result.text, result.labels)
            kinds.update(result.labels)
            changed += 1
        return changed

    def _rescan_description(self, bank: Bank, kinds: set[str]) -> bool:
        result = redact(bank.description)
        if not result.labels:
            return False
        try:
            bank.files.write_meta(result.text, bank.created_at)
        except errors.MemoryServiceError:
            # refused past the rename (the folder's sync): the file holds the redacted
            # description, which the next boot reads; RAM takes what the file says
            bank.description = bank.files.read_meta()[0]
            raise
        bank.description = result.text
        kinds.update(result.labels)
        return True

    def _compact(self, bank: Bank, found: dict[str, Found]) -> tuple[int, set[str]]:
        """Rewrite the log with every line that holds a secret redacted in place; drafts'
        files likewise. Returns (lines rewritten, kinds found in the log)."""
        kinds: set[str] = set()
        touched = set(found)  # and every id an older line of which held a secret
        for clean, _ in found.values():
            if clean.status == "pending":
                Drafts.commit(bank, clean)  # the draft's file, rewritten whole (atomically)

        def redact_line(raw: bytes) -> bytes | None:
            try:
                mem = Memory.from_line(raw)
            except errors.MemoryServiceError:  # a corrupt line is kept, but not its secret
                result = redact(raw.decode("utf-8", "replace"))
                kinds.update(result.labels)
                return result.text.encode("utf-8") if result.labels else raw
            hit = self.redacted(mem)
            if hit is None:
                return raw
            kinds.update(hit[1])
            touched.add(mem.id)
            return hit[0].to_line().encode("utf-8")

        lines = self._rewrite(bank, redact_line, touched)
        self._redact_torn(bank, kinds)
        self.events.rewrite(lambda e: _redacted_event(e, bank.name, self))
        return lines, kinds

    def _redact_torn(self, bank: Bank, kinds: set[str]) -> None:
        data = _read_if_any(torn_path(bank.files.log.path))
        if data is None:
            return
        result = redact(data.decode("utf-8", "replace"))
        if result.labels:
            kinds.update(result.labels)
            atomic_write(torn_path(bank.files.log.path), result.text.encode("utf-8"))

    # -- purge ID --------------------------------------------------------------------------

    def purge(self, id: str, *, bank: str | None = None) -> PurgeResponse:
        """Remove memory ``id`` and every revision of it from ``bank`` (module doc)."""
        mem_id = v.memory_id(id)
        target = self.banks.writable(self.banks.resolve(bank))
        if mem_id not in target.records:
            raise errors.NotFoundError(f"no memory {v.quoted(mem_id)} in bank {target.name!r}")
        draft = target.records[mem_id].status == "pending"
        needle = json.dumps({"id": mem_id}, separators=(",", ":"))[:-1].encode()  # {"id":"x"

        def drop_line(raw: bytes) -> bytes | None:
            try:
                return None if Memory.from_line(raw).id == mem_id else raw
            except errors.MemoryServiceError:  # a line replay skips may still be one of it:
                # a JSON object naming it (a newer version's line, a hand edit), or a line
                # cut short that begins with it as the store writes it
                named = _line_id(raw) == mem_id or raw.startswith((needle + b",", needle + b"}"))
                return None if named else raw

        if draft:
            path = draft_path(target, mem_id)
            try:
                path.unlink(missing_ok=True)
                fsync_dir(path.parent)
            except OSError as e:
                self._follow_files(target.name)
                raise errors.storage_error(f"cannot remove draft {path}", e) from e
        # the fragments first: once the log is rewritten, a retry finds no such memory
        self._drop_torn(target, drop_line)
        revisions = self._rewrite(target, drop_line, {mem_id})
        self.events.rewrite(lambda e: _forget_event(e, target.name, mem_id))
        self._announce(self.banks[target.name], f"memory {mem_id}: {revisions} revision(s)", ())
        return PurgeResponse(id=mem_id, bank=target.name, revisions=revisions, draft=draft)

    # -- the rewrite -----------------------------------------------------------------------

    @staticmethod
    def _drop_torn(bank: Bank, drop: Callable[[bytes], bytes | None]) -> None:
        """The fragments set aside in ``.torn`` (a torn final line, one per line) that
        ``drop`` takes out: a fragment of a purged memory's line holds its text too."""
        path = torn_path(bank.files.log.path)
        data = _read_if_any(path)
        if data is None:
            return
        kept = b"".join(raw + b"\n" for raw in data.split(b"\n") if raw and drop(raw))
        if kept != data:
            atomic_write(path, kept)

    def _rewrite(self, bank: Bank, fix: Callable[[bytes], bytes | None], ids: set[str]) -> int:
        """Steps 1-4 of the module doc: each log line through ``fix`` (its new bytes, or None
        to drop it); returns how many lines changed or went. ``ids`` (which ``fix`` may add
        to) lose their vectors. An unchanged log is not rewritten, but the bank is still
        read again (a draft file may have changed)."""
        data = bank.files.log.read_bytes()
        out: list[bytes] = []
        changed = 0
        for raw in data.split(b"\n")[:-1] if data.endswith(b"\n") else data.split(b"\n"):
            if not raw.strip():
                out.append(raw)
                continue
            new = fix(raw)
            changed += new != raw
            if new is not None:
                out.append(new)
        if changed:
            try:
                _remove_snapshot(bank)
                self._drop_vectors(bank, ids)
                bank.files.log.rewrite(b"".join(line + b"\n" for line in out))
            except BaseException:
                self._follow_files(bank.name)
                raise
        self.banks.reload(bank.name)
        return changed

    def _follow_files(self, name: str) -> None:
        """After a refused step of a rewrite, read the bank again from its files
        (``Banks.reread``): a failure past a rename or an unlink (the folder's fsync) leaves
        the new file in place, and RAM must never keep a record the files no longer hold (a
        later revision of it would append the purged text again)."""
        self.banks.reread(name)

    @staticmethod
    def _drop_vectors(bank: Bank, ids: set[str]) -> None:
        """The sidecar without the affected ids' lines (nor any line it cannot read). One
        that cannot be read (an I/O error) goes whole: it is derived (the reload embeds every
        record again), and an erasure must not wait on a file that may hold the purged
        text's vector; a folder in its place holds nothing the store wrote."""
        path = bank.files.dir / VECTORS
        if path.is_dir():
            return
        try:
            data = _read_if_any(path)
        except errors.MemoryServiceError:
            try:
                with synced_dirs(path.parent):
                    path.unlink()
            except OSError as e:
                raise errors.storage_error(f"cannot remove {path}", e) from e
            return
        if data is None:
            return
        kept = [raw for raw in data.splitlines() if _line_id(raw) not in ({None} | ids)]
        atomic_write(path, b"".join(line + b"\n" for line in kept))

    def _announce(self, bank: Bank, what: str, kinds: tuple[str, ...]) -> None:
        """The audit event: what went and when (``at``), never the value."""
        self.events.emit(
            "bank-changed",
            "purged",
            bank.name,
            now=self.clock.now_ms(),
            reason=what,
            redacted=kinds,
        )


def _remove_snapshot(bank: Bank) -> None:
    if bank.snapshot_writer is not None:
        bank.snapshot_writer.join()  # a background write must not land after the removal
    path = bank.files.dir / snapshot.SNAPSHOT
    try:
        if path.exists():
            path.unlink()
            fsync_dir(path.parent)
    except OSError as e:
        raise errors.storage_error(f"cannot remove {path}", e) from e


def _line_id(raw: bytes) -> str | None:
    """The ``id`` of a JSON object line (a vector's, or a log line replay could not take)."""
    try:
        row = json.loads(raw)
        return str(row["id"]) if isinstance(row, dict) else None
    except (ValueError, KeyError, RecursionError):
        return None


def _redacted_event(event: Event, bank: str, purger: Purger) -> Event | None:
    """An event of the buffer with today's catalogue applied to its memory and reason."""
    if event.bank != bank:
        return event
    changes: dict[str, Any] = {}
    if event.memory is not None and (hit := purger.redacted(event.memory)) is not None:
        changes["memory"] = hit[0]
    if event.reason and (result := redact(event.reason)).labels:
        changes["reason"] = result.text
    return event.model_copy(update=changes) if changes else event


def _forget_event(event: Event, bank: str, mem_id: str) -> Event | None:
    """Purge drops the buffer's events about the purged memory (their text is in them)."""
    if event.bank == bank and event.memory is not None and event.memory.id == mem_id:
        return None
    return event


def _read_if_any(path: Path) -> bytes | None:
    """A derived or side file's bytes; ``None`` when there is none (a read fault is typed)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise errors.storage_error(f"cannot read {path}", e) from e
