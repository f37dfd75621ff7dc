"""The repository of banks on one data dir (the layout: ``files.py``).

``Banks`` finds the bank folders under the data dir, loads each (``Bank.load``: replay or
snapshot, then whatever ``on_load`` hooks the store composed in: drafts, vectors), creates
new ones, and moves deleted ones to ``.trash/``. It is a read-only mapping of name → loaded
``Bank``; ``resolve`` is the one rule for "which bank does this call mean": the default bank
materializes on first use, writes may create others, and any other unknown name is
``not_found``.
"""

from __future__ import annotations

import logging
import re
import resource
import shutil
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from shared.client.shards import frozen_error
from shared.contract import errors
from shared.contract.clock import Clock
from shared.contract.config import StoreSettings
from shared.contract.models import BankCreateResponse, BankInfo
from shared.redact import redact
from store_worker.storage import validate as v
from store_worker.storage.bank import Bank
from store_worker.storage.events import EventBus
from store_worker.storage.files import LINKED, TRASH_DIR
from store_worker.storage.log import AppendLog

if TYPE_CHECKING:
    from store_worker.storage.commit import Stage
    from store_worker.storage.shards import ShardGuard

log = logging.getLogger(__name__)

BankHook = Callable[[Bank], object]


class Banks(Mapping[str, Bank]):
    """Every loaded bank of one data dir, by name."""

    def __init__(
        self,
        root: Path,
        settings: StoreSettings,
        *,
        clock: Clock,
        events: EventBus,
        on_load: Sequence[BankHook] = (),
        lazy_records: bool = False,
        may_write: Callable[[], object] = lambda: None,
    ) -> None:
        self.root = root
        self.lazy_records = lazy_records  # boots decode snapshot-covered lines on use
        self.settings = settings
        self.clock = clock
        self.events = events
        self.on_load = list(on_load)
        # Raises while the store does not hold the data dir (closed, moved away): a read that
        # loads a bank or makes the default one changes files (a torn tail cut, a folder made)
        self.may_write = may_write
        self._banks: dict[str, Bank] = {}
        # Banks a reload took out of RAM and could not read back (an I/O error): the next
        # call that means one loads it again (``resolve``) and fails typed while it cannot,
        # never answering ``not_found`` or from a RAM the files no longer match. Each keeps
        # its log object: what it knows about a refused append that could not be cut back
        # (``AppendLog.good_size``) outlives the reload.
        self._unloaded: dict[str, AppendLog] = {}
        # each bank's rules as RAM held them before a reload: a rule whose file cannot be
        # read after it keeps its last good text (``Bank.stale_rules``), never dropped unseen
        self._last_good: dict[str, dict[str, str]] = {}
        self.stage: Stage | None = None  # the group commit batch in progress (commit.py)
        # The logs holding a descriptor, least recently opened first (``_opened``).
        self._open_logs: OrderedDict[AppendLog, None] = OrderedDict()
        self.max_open_logs = open_logs_allowed()
        self.guard: ShardGuard | None = None  # this store as one shard of several (shards.py)

    # -- the mapping -----------------------------------------------------------------------

    def __getitem__(self, name: str) -> Bank:
        return self._banks[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._banks)

    def __len__(self) -> int:
        return len(self._banks)

    # -- lifecycle -------------------------------------------------------------------------

    def open(self, *, carry: Banks | None = None, strict: bool = True) -> None:
        """Load every folder under the data dir that has a valid bank name; ``carry``, the
        repository this one replaces, lends its banks' log objects (``_unloaded``). A bank
        that cannot be read raises, unless not ``strict`` (a boot: the others serve)."""
        self._banks = {}
        if carry is not None:
            self._unloaded = {
                name: log
                for name, log in carry.logs().items()
                if log.path.parent.parent == self.root
            }
            self._last_good = carry.good_rules()
        carried = set(self._unloaded)
        for path in sorted(self.root.iterdir()):
            if path.is_dir() and not path.name.startswith("."):
                try:
                    v.bank_name(path.name)
                except errors.InvalidArgumentError:
                    log.warning("ignoring folder %s: not a valid bank name", path)
                    continue
                if path.is_symlink():
                    log.warning("ignoring %s: %s", path, LINKED)
                    continue
                carried.discard(path.name)
                try:
                    self._load(path.name)
                except errors.SourceUnavailableError as e:
                    if strict:
                        raise
                    # One bank whose files cannot be read (an I/O error) does not keep the
                    # others from serving: it waits in ``_unloaded``, a call that names it
                    # loads it again and is refused typed while it cannot be read, and
                    # doctor's files_readable names its files. Never an empty bank in its
                    # place: nothing is written to it meanwhile.
                    log.error("bank %s: cannot load it (%s); the others serve", path.name, e)
        for name in carried:  # its folder is gone: nothing to load it from
            del self._unloaded[name]

    def _load(self, name: str) -> Bank:
        """Load one bank; a bank that cannot be read stays out of RAM (``_unloaded``) and the
        error is typed (``source_unavailable``)."""
        bank = Bank(self.root, name, lazy_records=self.lazy_records)
        if bank.files.dir.is_symlink():
            raise errors.SourceUnavailableError(
                f"bank {name!r} is {bank.files.dir}, a link: {LINKED}", retryable=False
            )
        carried = self._unloaded.pop(name, None)
        if carried is not None:
            bank.files.log = carried
        bank.files.log.on_open = self._opened
        try:
            bank.load()
            previous = self._last_good.pop(name, {})
            bank.stale_rules = {r: previous[r] for r in bank.unread_rules if r in previous}
            self._banks[name] = bank
            for hook in self.on_load:
                hook(bank)
        except BaseException as e:
            if self._banks.get(name) is bank:
                del self._banks[name]
            self._unloaded[name] = bank.files.log
            if isinstance(e, OSError):
                raise errors.storage_error(f"cannot load bank {name}", e) from e
            raise
        return bank

    def reload(self, name: str) -> Bank:
        """Read one bank again from its files (RAM back to exactly what is on disk)."""
        old = self._banks.pop(name, None)
        if old is not None:
            _retire(old)
            self._unloaded[name] = old.files.log
            self._last_good[name] = {**old.stale_rules, **old.rules}
        return self._load(name)

    def good_rules(self) -> dict[str, dict[str, str]]:
        """Every bank's last readable text of each rule (``_last_good``, then RAM)."""
        out = dict(self._last_good)
        out.update((n, {**b.stale_rules, **b.rules}) for n, b in self._banks.items())
        return out

    def reread(self, name: str) -> None:
        """Read one bank again from its files after a refused or broken write, so RAM holds
        what they say. One that cannot be read (an I/O error) stays out of RAM until its next
        use loads it (``resolve``: ``source_unavailable`` while it cannot be); the failure is
        logged, and the caller's own error stands."""
        try:
            self.reload(name)
        except Exception:
            log.exception("bank %s: cannot read it back; loaded at its next use", name)

    def logs(self) -> dict[str, AppendLog]:
        """Every bank's log object, loaded or waiting to be (``open(carry=...)``)."""
        out = dict(self._unloaded)
        out.update((name, bank.files.log) for name, bank in self._banks.items())
        return out

    def close(self) -> None:
        for bank in self._banks.values():
            _retire(bank)
        self._open_logs.clear()

    def _opened(self, opened: AppendLog) -> None:
        """Keep at most ``max_open_logs`` logs open: each bank's log keeps its descriptor
        between appends, and one held per bank ran a store with many banks out of them
        (``EMFILE``: every write to a bank not yet open was refused, and so were the rule,
        state and outbox writes that need one). The least recently opened one is closed;
        it opens again at its next append. Called under the store lock, as every append."""
        self._open_logs[opened] = None
        self._open_logs.move_to_end(opened)
        while len(self._open_logs) > self.max_open_logs:
            oldest = next(iter(self._open_logs))
            del self._open_logs[oldest]
            if oldest is not opened:
                oldest.close()

    # -- resolving and creating ------------------------------------------------------------

    def resolve(self, name: str | None, *, create: bool = False) -> Bank:
        """The bank a call means: the default materializes on first use; writes create."""
        return self.resolve_made(name, create=create)[0]

    def resolve_made(self, name: str | None, *, create: bool = False) -> tuple[Bank, bool]:
        """``resolve``, and whether this call made the bank's folder: a write refused after
        it (a full disk at the append, a rule file that could not be written) takes the bank
        back (``take_back``), so a refused write leaves no new bank behind. In a group
        commit the batch does, for the writes of it that failed (``Stage.created``)."""
        name, frozen = self._named(name)
        made = False
        bank = self._banks.get(name)
        if bank is None and name in self._unloaded:  # a reload could not read it back
            self.may_write()
            bank = self._load(name)
        if bank is None:
            if not (create or name == self.settings.default_bank):
                raise errors.NotFoundError(f"no bank named {v.quoted(name)}")
            if frozen:
                raise frozen_error(name)
            self.may_write()
            made = not (self.root / name).is_dir()  # else a folder made by hand, adopted
            try:
                bank = self.create(name, "")[0]
            except errors.MemoryServiceError:
                left = self._banks.get(name)  # refused past its rename: the folder is there
                if made and left is not None:
                    self.take_back(left)
                raise
        bank.frozen = frozen
        if self.stage is not None and bank.stage is not self.stage:
            bank.stage = self.stage  # its log writes join the batch
            self.stage.attached.append(bank)
        if made and self.stage is not None:
            self.stage.made(bank)
        return bank, made

    def take_back(self, bank: Bank) -> bool:
        """Remove a bank a refused write made (``resolve_made``) while its folder holds
        nothing but what its creation put there (``BankFiles.remove_if_bare``), and forget
        it; whether it went. A bank anything else wrote to since stays."""
        if self._banks.get(bank.name) is not bank or not bank.files.remove_if_bare():
            return False
        if bank.snapshot_writer is not None:
            bank.snapshot_writer.join()
        del self._banks[bank.name]
        self._unloaded.pop(bank.name, None)
        self._open_logs.pop(bank.files.log, None)
        return True

    def check_write(self, name: str | None) -> None:
        """Refuse, changing nothing, what a write to ``name`` would be refused for as it runs
        (``resolve(name, create=True)``, a staged line): a bad name, a bank served elsewhere
        or frozen, a new bank whose name holds a credential. An all-or-nothing write checks
        every item first: an item's draft file or new bank folder is written as it runs."""
        name, frozen = self._named(name)
        if frozen:
            raise frozen_error(name)
        if name not in self._banks and name not in self._unloaded:
            v.no_credential(name, "bank name")

    def _named(self, name: str | None) -> tuple[str, bool]:
        """The bank name a call means, and whether its slot is frozen (a bank another shard
        serves is refused: ``ShardGuard.check``)."""
        name = v.bank_name(name or self.settings.default_bank)
        return name, self.guard.check(name) if self.guard is not None else False

    def create(self, name: str, description: str) -> tuple[Bank, bool]:
        """The bank, and whether this call created it (a folder made by hand is adopted)."""
        existing = self._banks.get(name)
        if existing is not None:
            return existing, False
        v.no_credential(v.bank_name(name), "bank name")  # a folder name is never redacted
        if Bank(self.root, name).files.exists():  # created on disk by hand since the last open
            bank = self._load(name)
        else:
            bank = Bank(self.root, name)
            bank.files.log.on_open = self._opened
            try:
                bank.files.create(description, self.clock.now_ms())
            except errors.MemoryServiceError:
                self._follow_folder(name)
                raise
            bank.description, bank.created_at = bank.files.read_meta()
            self._banks[name] = bank
        self.events.emit("bank-changed", "created", name, now=self.clock.now_ms())
        return bank, True

    def create_described(self, name: str, description: str | None) -> BankCreateResponse:
        """``bank_create``: the bank, made if it is new; a description given for a bank that
        exists replaces its own. The description is redacted before it reaches the disk."""
        name = v.bank_name(name)
        scrubbed = redact(v.optional_str(description, "description", 2000) or "")
        description = scrubbed.text
        if self.guard is not None and self.guard.check(name) and name not in self:
            raise frozen_error(name)
        bank, created = self.create(name, description)
        if not created and description and description != bank.description:
            target = self.writable(self.resolve(name))
            try:
                target.files.write_meta(description, bank.created_at)
            except errors.MemoryServiceError:
                # refused past the rename (the folder's sync): the next boot reads the new
                # description, so RAM takes what the file says (the caller was told it failed)
                bank.description = target.files.read_meta()[0]
                raise
            bank.description = description
        return BankCreateResponse(bank=Banks.info(bank), created=created, redacted=scrubbed.labels)

    def _follow_folder(self, name: str) -> None:
        """After a refused creation or trashing, RAM takes what the data dir shows: a failure
        past the rename (the folders' fsync) leaves the bank made or moved, and the next boot
        would see it so (the caller was told it failed: it may not be durable)."""
        folder = self.root / name
        if not folder.is_dir():
            self._banks.pop(name, None)
            self._unloaded.pop(name, None)
        elif name not in self._banks:
            self.reread(name)

    def owned(self) -> list[Bank]:
        """The loaded banks this store serves (all of them unless it is one shard of several)."""
        guard = self.guard
        return [b for _, b in sorted(self._banks.items()) if guard is None or guard.owns(b.name)]

    def writable(self, bank: Bank) -> Bank:
        """The bank, unless its slot is being moved to another shard (``frozen_error``)."""
        bank.refuse_if_frozen()
        return bank

    @property
    def trash_dir(self) -> Path:
        return self.root / TRASH_DIR

    def purge_trashed(self, path: str) -> None:
        """Remove one trashed folder for good (doctor's scratch bank only)."""
        target = Path(path).resolve()
        if target.parent != self.trash_dir.resolve():
            raise errors.InvalidArgumentError("only folders directly in .trash can be purged")
        shutil.rmtree(target, ignore_errors=True)

    def trash(self, name: str) -> Path:
        """Move a bank's folder to ``.trash/<bank>-<ms>/`` and forget it."""
        bank = self.writable(self.resolve(v.bank_name(name)))
        return self.discard(bank)

    def discard(self, bank: Bank) -> Path:
        """Trash a resolved bank's folder and forget it (``trash``; a shard's ``release``)."""
        try:
            target = bank.files.trash(self.clock.now_ms())
        except errors.MemoryServiceError:
            self._follow_folder(bank.name)
            raise
        del self._banks[bank.name]
        self.events.emit("bank-changed", "trashed", bank.name, now=self.clock.now_ms())
        return target

    def trashed(self, name: str) -> bool:
        """Whether a bank of this name is not loaded and was deleted (is in ``.trash``). A
        bank another shard owns was not deleted: a rebalance moved it there and left this
        shard's copy in ``.trash`` (``release``); its queued turns are still to be extracted
        (the extractor writes through the client, which routes by bank)."""
        if name in self._banks:
            return False
        if self.guard is not None and not self.guard.owns(name):
            return False
        trash = self.root / TRASH_DIR
        pattern = re.compile(rf"^{re.escape(name)}-\d+(?:-\d+)?\Z")
        return trash.is_dir() and any(pattern.match(p.name) for p in trash.iterdir())

    @staticmethod
    def info(bank: Bank) -> BankInfo:
        live, pinned = bank.counts()
        return BankInfo(
            name=bank.name,
            description=bank.description,
            created_at=bank.created_at,
            memories=live,
            rules=len(bank.rules),
            pinned=pinned,
        )


def open_logs_allowed() -> int:
    """How many bank logs may hold a descriptor at once: a quarter of this process's soft
    descriptor limit (1,024 by default on Linux: 256 logs), leaving the rest to rule,
    draft, state and outbox writes, the lock, sockets and the runtime."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        soft = resource.RLIM_INFINITY
    if soft == resource.RLIM_INFINITY:
        return 1024
    return max(4, min(1024, soft // 4))


def _retire(bank: Bank) -> None:
    """Close a bank leaving RAM once its index snapshot is written: a writer still running
    would put the old index back after a purge's rewrite (the purged text's terms on disk
    again), and its temp would be taken for a killed writer's by the next load."""
    bank.files.log.close()
    if bank.snapshot_writer is not None:
        bank.snapshot_writer.join()
