"""Group commit: concurrent writes share one fsync per bank.

Every write to a memory log goes through ``GroupCommit.run(fn)``. Callers queue their write;
whichever caller finds no commit in progress becomes the leader, takes everything queued, and
commits it as one batch while the others wait:

1. under the store lock, each queued write runs in turn (``fn``: validate → redact → build the
   revision → ``Bank.apply_many``). A bank resolved during the batch stages its lines in the
   batch's ``Stage`` instead of appending them, and reflects them in its records and
   fingerprint maps so the next write in the batch sees them (ids stay unique, a re-save
   reinforces); their index updates wait (``Bank.settle``). Events are held back.
2. each touched bank's staged lines go out in one ``write`` + one ``fsync``; while the first
   fsync runs (it releases the GIL) the ``Indexer`` thread makes the banks' waiting index
   updates, and the leader, still holding the store lock, joins it after the fsyncs;
3. only then are the callers answered and their events emitted. A write that failed (a bad
   argument: nothing of it is flushed) or a bank whose flush failed (a full disk: the log is
   cut back to where the batch began) leaves RAM that no longer matches the files: those banks
   are reloaded from their files, so RAM is exactly what is on disk, and every caller whose
   lines did not reach the disk gets the error. A bank whose index update failed is reloaded
   too; its callers' lines are on disk, so they are answered.

So "acknowledged = on disk" and read-your-writes hold as with one fsync per write: nobody can
read RAM mid-batch (reads take the same store lock; a read waits for at most one batch), and
no caller is answered before the fsync that covers its line. ``run_many`` commits several
writes as one all-or-nothing unit (``save_many``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from shared.contract.errors import MemoryServiceError, SourceUnavailableError
from store_worker.storage.indexer import Indexer, Job

if TYPE_CHECKING:
    from store_worker.storage.bank import Bank
    from store_worker.storage.banks import Banks
    from store_worker.storage.events import EventBus

T = TypeVar("T")

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Ticket(Generic[T]):
    """One queued write (or an all-or-nothing group of them) and, once done, its outcome."""

    fn: Callable[[], T]
    result: T | None = None
    error: BaseException | None = None
    done: bool = False
    held_events: list[Callable[[], object]] = field(default_factory=list)


class Stage:
    """The lines a batch has staged, per bank and per ticket, in write order."""

    def __init__(self) -> None:
        self.current: Ticket[Any] | None = None
        self.attached: list[Bank] = []  # banks resolved during the batch (Banks.resolve)
        self.lines: dict[Bank, list[tuple[Ticket[Any], str]]] = {}
        # what a write leaves for after its lines are on disk (a draft file's removal)
        self.after: list[tuple[Bank, Ticket[Any], Callable[[], None]]] = []
        # banks a write of the batch created (``Banks.resolve_made``), and by which write
        self.created: list[tuple[Bank, Ticket[Any]]] = []

    def made(self, bank: Bank) -> None:
        """The current write created ``bank``: taken back when that write fails
        (``GroupCommit._take_back_banks``)."""
        if self.current is not None:
            self.created.append((bank, self.current))

    def add(self, bank: Bank, lines: Sequence[str]) -> None:
        assert self.current is not None, "a bank staged a line outside a ticket"
        self.lines.setdefault(bank, []).extend((self.current, line) for line in lines)

    def after_flush(self, bank: Bank, fn: Callable[[], None]) -> None:
        """Run ``fn`` once the current write's lines in ``bank`` are durable; never when
        that write or the bank's flush fails."""
        assert self.current is not None, "a bank deferred work outside a ticket"
        self.after.append((bank, self.current, fn))

    def drop(self, ticket: Ticket[Any]) -> set[Bank]:
        """Forget a failed ticket's lines; returns the banks whose RAM it had changed."""
        touched = set()
        for bank, rows in self.lines.items():
            kept = [row for row in rows if row[0] is not ticket]
            if len(kept) != len(rows):
                touched.add(bank)
                rows[:] = kept
        return touched


def _answer_all(batch: list[Ticket[Any]]) -> None:
    """Answer every ticket of a batch: a commit that broke off before answering one (an
    interrupt in the leader) must not leave its caller waiting forever, nor acknowledge it."""
    for ticket in batch:
        if not ticket.done:
            if ticket.error is None:
                ticket.error = SourceUnavailableError(
                    "the group commit carrying this write broke off; it was not acknowledged"
                )
            ticket.held_events = []
            ticket.done = True


class GroupCommit:
    """Leader/follower batching of log writes (see the module docstring)."""

    def __init__(self, lock: threading.RLock, *, banks: Banks, events: EventBus) -> None:
        self.lock = lock  # the store lock: reads take it too
        self.banks = banks  # the store sets the new repository after a reopen
        self.events = events
        self._cv = threading.Condition(threading.Lock())
        self._queue: list[Ticket[Any]] = []
        self._leading = False
        self._leader: threading.Thread | None = None  # the thread committing a batch now
        self.indexer = Indexer()
        self.batches = 0  # commits so far (for benchmarks and tests: fsyncs per write)
        self.writes = 0
        self.fsyncs = 0  # log appends (one write + one fsync each) and the lines they carried
        self.lines = 0

    def run(self, fn: Callable[[], T]) -> T:
        """Run one write as part of the next batch; return once it is durable.

        A write made by the committing thread itself (a subscriber that saves when it hears
        of a committed write) runs at once, on its own fsync: waiting for the next batch
        would wait on itself."""
        if self._leader is threading.current_thread():
            return fn()
        ticket: Ticket[T] = Ticket(fn)
        self._wait(ticket)
        if ticket.error is not None:
            raise ticket.error
        return ticket.result  # type: ignore[return-value]  # set by _commit when no error

    def _wait(self, ticket: Ticket[Any]) -> None:
        with self._cv:
            self._queue.append(ticket)
            while not ticket.done:
                if self._leading:
                    self._cv.wait()
                    continue
                self._leading = True
                batch, self._queue = self._queue, []
                self._cv.release()
                try:
                    with self.lock:
                        self._leader = threading.current_thread()
                        try:
                            self._commit(batch)
                        finally:
                            self._leader = None
                finally:
                    self._cv.acquire()
                    self._leading = False
                    _answer_all(batch)
                    self._cv.notify_all()

    def _commit(self, batch: list[Ticket[Any]]) -> None:
        stage = Stage()
        dirty: set[Bank] = set()
        banks = self.banks
        banks.stage = stage
        try:
            for ticket in batch:
                self._run_one(stage, ticket, dirty)
        finally:
            banks.stage = None
            for bank in stage.attached:
                bank.stage = None
            self.events.hold(None)
        try:
            self._flush_and_settle(stage, dirty)
        except BaseException:  # broke off (an interrupt): whose lines are on disk is unknown
            self._reload_all(stage.lines.keys() | dirty)
            raise
        for bank, ticket, fn in stage.after:
            if bank not in dirty and ticket.error is None:
                try:
                    fn()
                except Exception:  # its line is on disk: what is left over heals at load
                    log.warning("bank %s: after-flush step failed", bank.name, exc_info=True)
        self._take_back_banks(stage, dirty)
        self._reload_all(dirty)
        self.batches += 1
        self.writes += len(batch)
        for ticket in batch:
            if ticket.error is None:
                for emit in ticket.held_events:
                    emit()
            ticket.held_events = []
            ticket.done = True

    def _run_one(self, stage: Stage, ticket: Ticket[Any], dirty: set[Bank]) -> None:
        stage.current = ticket
        self.events.hold(ticket.held_events.append)
        try:
            ticket.result = ticket.fn()
        except BaseException as e:  # the caller gets it; the batch goes on
            ticket.error = e
            dirty |= stage.drop(ticket)

    def _flush_and_settle(self, stage: Stage, dirty: set[Bank]) -> None:
        """Append each bank's staged lines while the indexer thread makes the banks' index
        updates (``indexer.py``); return once both are done. Banks whose flush or update
        failed join ``dirty``."""
        pending = [(bank, rows) for bank, rows in stage.lines.items() if rows]
        settle = [bank for bank in stage.lines if bank not in dirty]
        self.fsyncs += len(pending)
        self.lines += sum(len(rows) for _, rows in pending)
        broken: set[Bank] = set()  # the indexer's, read once it is joined
        job: Job | None = None

        def start_indexing() -> None:  # the first lines are written; their fsync starts now
            nonlocal job
            if job is None and settle:
                job = self.indexer.start(lambda: self._settle(settle, broken))

        flushed: dict[Bank, tuple[int, list[tuple[Ticket[Any], str]]]] = {}
        try:
            for bank, rows in pending:
                kept = [row for row in rows if row[0].error is None]
                if len(kept) != len(rows):  # a write that failed in another bank: RAM has it
                    dirty.add(bank)
                if not kept:
                    continue
                start = self._flush(bank, kept, dirty, on_written=start_indexing)
                if start is None:
                    self._take_back(flushed, dirty)
                else:
                    flushed[bank] = (start, kept)
        finally:
            if job is None:  # nothing was written: no fsync to overlap
                self._settle(settle, broken)
            else:
                job.join()
            dirty |= broken

    @staticmethod
    def _take_back(
        flushed: dict[Bank, tuple[int, list[tuple[Ticket[Any], str]]]], dirty: set[Bank]
    ) -> None:
        """After a bank's flush failed: cut back every bank already flushed in this batch
        that carries a line of a failed write (an all-or-nothing ``save_many`` over several
        banks must leave nothing of itself in the others), and fail the writes it carried
        with it, until no flushed bank holds a failed write's line. Nobody has been answered
        yet, so a write whose lines are taken back was never acknowledged."""
        again = True
        while again:
            again = False
            for bank, (start, rows) in list(flushed.items()):
                if all(ticket.error is None for ticket, _ in rows):
                    continue
                del flushed[bank]
                dirty.add(bank)
                again = True
                try:
                    bank.files.log.take_back(start)
                    why = "another bank of the same batch failed; its lines were taken back"
                except MemoryServiceError as e:
                    why = f"another bank of the same batch failed ({e.message})"
                err = SourceUnavailableError(f"cannot append to bank {bank.name}: {why}")
                for ticket, _ in rows:
                    if ticket.error is None:
                        ticket.error = err

    def _take_back_banks(self, stage: Stage, dirty: set[Bank]) -> None:
        """A bank a failed write created goes again, unless a write of the batch that
        succeeded wrote to it: a refused save to a new bank (a full disk at its append, its
        draft's file) left the bank in the listing, and after a restart too."""
        if not any(ticket.error is not None for _, ticket in stage.created):
            return  # the common batch: no bank made, or none by a failed write
        kept = {bank for bank, rows in stage.lines.items() for t, _ in rows if t.error is None}
        kept |= {bank for bank, ticket, _ in stage.after if ticket.error is None}
        for bank, ticket in stage.created:
            if ticket.error is not None and bank not in kept and self.banks.take_back(bank):
                dirty.discard(bank)  # nothing to read back: it is gone

    def _reload_all(self, banks: Iterable[Bank]) -> None:
        """Read these banks back from their files (``Banks.reread``): the callers whose lines
        did not reach the disk already have their error, the others' lines are on it."""
        for bank in banks:
            self.banks.reread(bank.name)

    @staticmethod
    def _settle(banks: list[Bank], broken: set[Bank]) -> None:
        for bank in banks:
            try:
                bank.settle()
            except Exception:  # its lines are flushed (or cut back): reload it from the file
                log.exception("bank %s: index update failed; reloading it", bank.name)
                broken.add(bank)

    def close(self) -> None:
        """End the indexer thread (a later commit starts it again)."""
        self.indexer.close()

    @staticmethod
    def _flush(
        bank: Bank,
        rows: list[tuple[Ticket[Any], str]],
        dirty: set[Bank],
        *,
        on_written: Callable[[], None] | None = None,
    ) -> int | None:
        """Append ``rows`` in one write and one fsync; where they begin in the log, or
        ``None`` when refused (their writes fail, the bank joins ``dirty``)."""
        try:
            lines = [line for _, line in rows]
            return bank.files.log.append_many(lines, on_written=on_written)
        except MemoryServiceError as e:  # cut back by AppendLog: nothing of it is on disk
            dirty.add(bank)
            for ticket, _ in rows:
                if ticket.error is None:
                    ticket.error = e
        except Exception as e:  # an OSError AppendLog did not map, a fault in ``on_written``
            log.exception("bank %s: append failed", bank.name)  # (cut back all the same)
            dirty.add(bank)
            err = SourceUnavailableError(f"cannot append to bank {bank.name}: {e!r}")
            for ticket, _ in rows:
                if ticket.error is None:
                    ticket.error = err
        return None
