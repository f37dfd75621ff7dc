"""Operations: ``doctor``, ``describe``, ``capabilities``, ``configure``.

``doctor`` is honest health, degradation explicit and never silent: a real save → recall →
trash roundtrip in a scratch bank, the index checked against the files, every rule file
readable, corrupt-line counts, and advisory checks (tokenizer, embeddings, siblings). ``ok``
is true only when every required check passes.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shared.client.workers import package_version
from shared.contract import errors
from shared.contract.config import StoreSettings
from shared.contract.models import MEMORY_SCOPES, MEMORY_TYPES, DoctorCheck, DoctorResponse, Memory
from shared.text.tokens import TokenCounter
from store_worker.recall.embed import Embedder, from_settings
from store_worker.recall.vectors import Vectors
from store_worker.storage import audit
from store_worker.storage import lock as dir_lock
from store_worker.storage.drafts import refuse_stranding_drafts
from store_worker.storage.files import check_writable
from store_worker.storage.validate import stored_record_problem

if TYPE_CHECKING:
    from store_worker.core import MemoryStore
    from store_worker.storage.bank import Bank

SERVICE_NAME = "memory-store"
SiblingProbe = Callable[[], dict[str, bool]]


def version() -> str:
    return package_version()  # the MCP server reports the same (shared.client.workers)


def source_digest() -> str:
    """sha256 over this build's Python sources (memory.v1 Describe's digest)."""
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for pkg in ("shared", "store_worker"):
        for path in sorted((root / pkg).rglob("*.py")):
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return "sha256:" + h.hexdigest()


def _check(name: str, fn: Callable[[], str], *, required: bool = True) -> DoctorCheck:
    try:
        return DoctorCheck(name=name, ok=True, required=required, detail=fn())
    except Exception as e:  # a check's failure is its result, never the doctor's crash
        return DoctorCheck(name=name, ok=False, required=required, detail=errors.reason(e))


def doctor(store: MemoryStore, siblings: SiblingProbe | None = None) -> DoctorResponse:
    checks = [
        _check("data_dir_writable", lambda: _writable(store)),
        _check("roundtrip", lambda: _roundtrip(store)),
        _check("index_consistent", lambda: _index_consistent(store)),
        _check("log_integrity", lambda: _log_integrity(store), required=False),
        _check("files_readable", lambda: _files_readable(store), required=False),
        _check("rules_readable", lambda: _rules_readable(store)),
        _check("tokenizer", lambda: _tokenizer(store), required=False),
        _check("embeddings", lambda: _embeddings(store), required=False),
        _check("siblings", lambda: _siblings(siblings), required=False),
        _check("extraction", lambda: _extraction(store), required=False),
        _check("outbox", lambda: _outbox(store), required=False),
    ]
    return DoctorResponse(ok=all(c.ok for c in checks if c.required), checks=tuple(checks))


def _writable(store: MemoryStore) -> str:
    if not store.holds_data_dir:
        raise errors.SourceUnavailableError(
            f"{store.root} is no longer the folder this store opened (moved, removed or "
            "replaced while it ran): writes are refused"
        )
    check_writable(store.root)
    return str(store.root)


def _roundtrip(store: MemoryStore) -> str:
    stamp = time.time_ns() // 1000
    name = f"doctor-{stamp}"
    while not store.shard.owns(name):  # a shard probes with a bank it serves (shards.py)
        stamp += 1
        name = f"doctor-{stamp}"
    started = time.perf_counter()
    with store.events.muted(name):  # subscribers hear nothing of the scratch bank
        _probe_bank(store, name)
    return f"save → recall → trash in {(time.perf_counter() - started) * 1000:.1f} ms"


def _probe_bank(store: MemoryStore, name: str) -> None:
    store.bank_create(name, "doctor scratch bank")
    try:
        saved = store.save("doctor roundtrip probe zebracorn", bank=name)
        found = store.recall("zebracorn probe", bank=name, mode="lexical")
        if not any(h.memory.id == saved.memory.id for h in found.memories):
            raise errors.UnknownError("a saved memory was not recalled")
        store.bank_list()
    finally:
        if name in store.banks:
            trashed = store.bank_delete(name).trashed_to
            store.purge_trash(trashed)


def _index_consistent(store: MemoryStore) -> str:
    """RAM and index against a fresh read of every bank's log: the same ids at the same
    revisions, and the index counting exactly the live canonical ones."""
    problems: list[str] = []
    for name, bank in sorted(store.banks.items()):
        problems.extend(f"{name}: {p}" for p in _bank_drift(bank))
    if problems:
        raise errors.UnknownError("; ".join(problems[:10]))
    return f"{len(store.banks)} banks match their files"


def _bank_drift(bank: Bank) -> list[str]:
    on_disk: dict[str, tuple[int, bool]] = {}
    for _, raw, _ in bank.files.log.read_lines():
        try:  # what replay accepts (bank.py): a record that decodes and is in range
            row = Memory.model_validate_json(raw)
        except ValueError:
            continue  # skipped at replay too, and reported by log_integrity
        if stored_record_problem(row) is not None:
            continue
        mem_id, revision = row.id, row.revision
        if mem_id not in on_disk or revision >= on_disk[mem_id][0]:
            on_disk[mem_id] = (revision, row.invalid_at is None)
    in_ram = {i: m for i, m in bank.records.items() if m.status == "canonical"}
    problems = []
    unseen = sorted(set(on_disk) - set(in_ram))
    if unseen:
        problems.append(f"{len(unseen)} records in the file but not in RAM (e.g. {unseen[0]})")
    stale = sorted(i for i, m in in_ram.items() if i in on_disk and on_disk[i][0] != m.revision)
    if stale:
        problems.append(f"{len(stale)} records at another revision than the file (e.g. {stale[0]})")
    ghosts = sorted(set(in_ram) - set(on_disk))
    if ghosts:
        problems.append(f"{len(ghosts)} records in RAM but not in the file (e.g. {ghosts[0]})")
    live = sum(1 for _, is_live in on_disk.values() if is_live)
    if bank.index.live_count != live:
        problems.append(f"index counts {bank.index.live_count} live, the file {live}")
    missing = [i for i in bank.records if i not in bank.index.slot_of]
    if missing:
        problems.append(f"{len(missing)} records missing from the index")
    return problems


def _log_integrity(store: MemoryStore) -> str:
    bad = {
        name: (b.stats.corrupt, b.stats.torn)
        for name, b in store.banks.items()
        if b.stats.corrupt or b.stats.torn
    }
    if bad:
        detail = ", ".join(f"{n}: {c} corrupt, {t} torn" for n, (c, t) in sorted(bad.items()))
        raise errors.UnknownError(f"skipped lines at boot ({detail})")
    return "no corrupt or torn lines"


def _files_readable(store: MemoryStore) -> str:
    """Every hand-edit problem open worked around, until it is fixed (``storage/audit.py``)."""
    corrupt = {name: b.stats.corrupt_at for name, b in store.banks.items()}
    found = audit.problems(store.root, corrupt)
    if found:
        shown = "; ".join(found[:20])
        more = f"; and {len(found) - 20} more" if len(found) > 20 else ""
        raise errors.UnknownError(f"{len(found)} problem(s): {shown}{more}")
    return "every bank, rule, draft, state and outbox file reads cleanly"


def _rules_readable(store: MemoryStore) -> str:
    """Required: a rule whose file cannot be read is missing from every prompt (or shows a
    text older than its file's), whatever else works; doctor fails until it is fixed."""
    found = [
        f"{b.files.dir}/{why}" + ("; its last good text is injected" if r in b.stale_rules else "")
        for name, b in sorted(store.banks.items())
        for r, why in sorted(b.unread_rules.items())
    ]
    if found:
        raise errors.UnknownError(
            f"{len(found)} rule file(s) cannot be read: " + "; ".join(found[:20])
        )
    return "every rule file reads cleanly"


def _tokenizer(store: MemoryStore) -> str:
    if not store.tokens.exact:
        raise errors.SourceUnavailableError(
            "no offline tokenizer files: token counts are estimates"
        )
    return f"{store.tokens.encoding} (exact)"


def _embeddings(store: MemoryStore) -> str:
    if store.embedder is None:
        return (
            "off (lexical recall only; set MEMORY_EMBEDDINGS_ENABLED=true and "
            "MEMORY_EMBEDDING_MODEL to add the semantic arm)"
        )
    vector = store.embedder.embed(["doctor probe"])[0]
    return f"{store.embedder.name} answers ({len(vector)}-d)"


def _extraction(store: MemoryStore) -> str:
    """Advisory: what the extractor last reported through ``state_set``."""
    status = store.state.get("extractor", "status")
    if not isinstance(status, dict):
        raise errors.SourceUnavailableError(
            "no extractor has reported: turns queue in the outbox; explicit saves still work"
        )
    if not status.get("enabled"):
        raise errors.SourceUnavailableError(
            "extraction is off (no extraction_model configured); explicit saves still work"
        )
    return f"on ({status.get('model')})"


def _outbox(store: MemoryStore) -> str:
    listing = store.outbox_list(limit=0)
    detail = f"{listing.queued} queued, {listing.leased} leased, {listing.dead} dead-lettered"
    if listing.dead:
        raise errors.UnknownError(f"{detail}: see `memory outbox`")
    return detail


def _siblings(probe: SiblingProbe | None) -> str:
    if probe is None:
        return "not checked (embedded mode)"
    status = probe()
    down = [name for name, up in status.items() if not up]
    if down:
        raise errors.SourceUnavailableError(f"not running: {', '.join(sorted(down))}")
    return ", ".join(f"{n} up" for n in sorted(status)) or "none configured"


def describe(store: MemoryStore) -> dict[str, Any]:
    return {
        "name": SERVICE_NAME,
        "version": version(),
        "digest": source_digest(),
        "data_dir": str(store.root),
        "banks": sorted(store.banks),
        "default_bank": store.settings.default_bank,
        # group commit (commit.py): batches per write call, and log fsyncs per line appended
        "commits": {
            "batches": store.commits.batches,
            "writes": store.commits.writes,
            "fsyncs": store.commits.fsyncs,
            "lines": store.commits.lines,
        },
    }


def capabilities(store: MemoryStore) -> dict[str, Any]:
    return {
        "default_token_budget": store.settings.recall_budget_tokens,
        "supported_types": list(MEMORY_TYPES),
        "supported_scopes": list(MEMORY_SCOPES),
        "ratification_supported": store.settings.ratification,
        "recall_modes": ["hybrid", "lexical"] + (["semantic"] if store.embedder else []),
        "config_schema": StoreSettings.model_json_schema(),
        "supported_hook_points": [],
        "outbox": {
            "max_attempts": store.settings.outbox_max_attempts,
            "lease_ms": store.settings.outbox_lease_ms,
            "backoff_ms": store.settings.outbox_backoff_ms,
            "backoff_max_ms": store.settings.outbox_backoff_max_ms,
        },
    }


def configure(store: MemoryStore, config: dict[str, Any]) -> dict[str, Any]:
    """Validate and apply a partial settings change; unknown keys change nothing."""
    if not isinstance(config, dict):
        raise errors.InvalidArgumentError("config must be a mapping of setting → value")
    new = store.settings.merged(config)
    if store.settings.ratification and not new.ratification:
        refuse_stranding_drafts(store.banks.values())
    embedder = store.embedder
    if "embedding_model" in config or "embeddings_enabled" in config:
        fresh = from_settings(new)  # before any change: a bad folder changes nothing
        if _embedder_name(fresh) != _embedder_name(store.embedder):
            embedder = fresh
    # Another model's vectors mean nothing to the new one: reopening re-reads the sidecars.
    reopen = new.data_path != store.settings.data_path or embedder is not store.embedder
    # A move takes the new dir's lock and lets go of the old one only once the parts are
    # the new dir's: refused before that, the store goes on with the old dir, held.
    held, banks = store._dir_lock, store.banks
    moving = new.data_path != store.settings.data_path
    taken = dir_lock.acquire(new.data_path) if moving else held  # refused: nothing changed
    before = (store._dir_lock, store.settings, store.tokens, store.vectors)
    store._dir_lock, store.settings, store.tokens = taken, new, TokenCounter(new.token_model)
    try:
        if reopen:
            store.vectors = Vectors(embedder)
            store._reopen()
        else:
            _retune(store, new)
    except BaseException:
        if store.banks is banks:  # the parts were not swapped in
            store._dir_lock, store.settings, store.tokens, store.vectors = before
        raise
    finally:
        if moving:
            dir_lock.release(taken if store._dir_lock is held else held)
    return new.model_dump()


def _retune(store: MemoryStore, new: StoreSettings) -> None:
    """Hand every part the new settings (no reopen needed: same data dir and embedder)."""
    for part in (
        store.sessions,
        store.ratification,
        store.banks,
        store.writer,
        store.reader,
        store.injector,
        store.outbox,
        store.review,
    ):
        part.settings = new
    store.writer.tokens = store.reader.tokens = store.purger.tokens = store.tokens


def _embedder_name(embedder: Embedder | None) -> str | None:
    return None if embedder is None else embedder.name
