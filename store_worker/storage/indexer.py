"""A group commit's index updates, made on a helper thread while its leader fsyncs.

A batch's leader (``commit.py``) calls ``fdatasync``, which releases the GIL for the ~0.2 ms
the disk takes; the batch's index updates (tokenizing, BM25 postings: ~0.1-0.2 ms of Python
per save) need the GIL and nothing from the disk. ``Indexer`` runs them in that window:

    leader:  stage lines ─ write ─ start(job) ─ fdatasync ·········· join ─ answer callers
    indexer:                           (wakes) ─ Bank.settle ─ done

The order is built around the GIL. A thread coming back from a syscall waits for the GIL
behind a thread running Python code, up to the switch interval (5 ms) unless that thread
blocks. So the job starts only once the lines are written and the leader is about to call
``fdatasync`` (``AppendLog.append_many``'s ``on_written``): had the indexer woken earlier,
the leader's ``write`` would have come back to a busy GIL and started the sync only after
the updates. The indexer's wake-up runs beside the sync, not before it; a leader whose sync
ends first waits for the GIL until the job is done, then joins it. When the indexer has not
even begun the job by then (no core was free to wake it: a busy shared machine), the leader
runs it itself, as it would have without the indexer, rather than wait for the wake-up.

The store lock stays with the leader throughout, so no reader sees the index before the
fsync has returned and the job has been joined.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

# An idle indexer thread ends after this long; the next job starts another, so a store that
# is never closed leaves no thread behind for long.
IDLE_S = 5.0


class Job:
    """One call, run by whichever comes first: the indexer thread (``run``) or the leader
    (``join``). ``join`` waits for it and re-raises its error."""

    def __init__(self, work: Callable[[], None]) -> None:
        self.work = work
        self.error: BaseException | None = None
        self._claimed = threading.Lock()
        self._finished = threading.Lock()
        self._finished.acquire()

    def run(self) -> None:
        if not self._claimed.acquire(blocking=False):  # the leader took it over
            return
        try:
            self.work()
        except BaseException as e:  # the leader re-raises it
            self.error = e
        finally:
            self._finished.release()

    def join(self) -> None:
        """Wait for the job; one the indexer has not begun yet, the caller runs itself."""
        if self._claimed.acquire(blocking=False):
            self.work()
            return
        self._finished.acquire()
        if self.error is not None:
            raise self.error


class Indexer:
    """A long-lived thread that runs ``Job``s in turn (the leader holds the store lock until
    it has joined its job, so jobs never overlap; a job the leader ran itself is skipped)."""

    def __init__(self, *, idle_s: float = IDLE_S) -> None:
        self.idle_s = idle_s
        self._mutex = threading.Lock()  # orders a start against an idle thread's exit
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()  # None: close
        self._thread: threading.Thread | None = None

    def start(self, work: Callable[[], None]) -> Job:
        job = Job(work)
        with self._mutex:
            if self._thread is None:
                thread = threading.Thread(
                    target=self._loop, name="memory-store-indexer", daemon=True
                )
                try:
                    thread.start()
                except RuntimeError:  # no thread to be had (a process limit): the leader
                    return job  # runs the job itself when it joins it
                self._thread = thread
            self._jobs.put(job)
        return job

    def close(self) -> None:
        """End the thread (a later job starts another)."""
        with self._mutex:
            thread, self._thread = self._thread, None
            if thread is None:
                return
            self._jobs.put(None)
        thread.join()

    def _loop(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self.idle_s)
            except queue.Empty:
                with self._mutex:
                    if self._jobs.empty():  # still idle: end
                        self._thread = None
                        return
                continue
            if job is None:  # close
                return
            job.run()
