"""The durable extraction outbox: finished turns queued, redacted, for the extractor.

``turn_completed`` redacts a finished turn and writes it as one job file; the extractor drains
the queue through ``outbox_claim`` → ``outbox_ack`` / ``outbox_fail``. One file per job, so a
job is the unit of every atomic write (temp + fsync + rename, ``files.atomic_write``):

    <data_dir>/.outbox/queue/<job_id>.json   waiting or leased (attempts, next_attempt_at)
    <data_dir>/.outbox/dead/<job_id>.json    dead letters, kept until requeued by hand

Why this shape: an acknowledged ``turn_completed`` is a fsynced file, so a store crash loses
nothing acknowledged; an ack is an unlink, so a crash between the extractor's writes and its
ack re-runs the job. The re-run applies the same reply: the lease holder records the model's
reply in the job file (``outbox_note``) before it writes anything, and every later claim hands
it back, so no second LLM call can answer differently; the store counts a turn's
corroboration of a fact once (``writes.Writer._reinforce``), so applying the reply again changes
nothing already applied (effectively exactly-once). Leases live in RAM only: a
claimed-but-unacked job returns to the queue after ``outbox_lease_ms`` or when the
store restarts (the killed-extractor case); each claim carries a fresh ``lease`` token, and
only its holder may note a reply. A session's jobs are handed out strictly in order
(one at a time): a correction must never be extracted before the statement it corrects.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pydantic import ValidationError
from ulid import ULID

from shared.contract import errors
from shared.contract.models import (
    OutboxAckResponse,
    OutboxJob,
    OutboxJobSummary,
    OutboxListResponse,
    TurnCompletedResponse,
)
from shared.contract.ops import OutboxFail
from shared.redact import redact_json
from store_worker.harness.turns import (
    CUT_MARGIN,
    TURN_STATUSES,
    new_messages,
    redact_then_cut,
    remember_queued,
    turn_messages,
)
from store_worker.storage import validate as v
from store_worker.storage.files import atomic_write, fsync_dir, make_dirs, synced_dirs

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from shared.contract.clock import Clock
    from shared.contract.config import StoreSettings
    from store_worker.harness.sessions import Sessions
    from store_worker.storage.banks import Banks
    from store_worker.storage.state import StateStore

    # Injector.turn_bank: (session_id, turn_id, parent_session_id) -> (bank, skip)
    TurnBankFn = Callable[[str, str | None, str | None], tuple[str | None, bool]]

log = logging.getLogger(__name__)

OUTBOX_DIR = ".outbox"
QUEUE = "queue"
DEAD = "dead"
MAX_ERROR_CHARS = 500
MAX_REPLY_BYTES = 256_000  # a reply holds a few memories and rules of at most 2 kB each


class Outbox:
    """Store-side half of extraction: queue, leases, retries with backoff, dead letters."""

    def __init__(
        self,
        root: Path,
        settings: StoreSettings,
        *,
        banks: Banks,
        state: StateStore,
        sessions: Sessions,
        clock: Clock,
        turn_bank: TurnBankFn,
        watchers: dict[str, Callable[[], Any]] | None = None,
    ) -> None:
        self.root = root
        self.settings = settings  # the retry policy: outbox_max_attempts, _lease_ms, _backoff_ms
        self.banks = banks
        self.state = state
        self.sessions = sessions
        self.clock = clock
        self.turn_bank = turn_bank  # Injector.turn_bank: the bank a finished turn belongs to
        self._watchers: dict[str, Callable[[], Any]] = {} if watchers is None else watchers
        self.open()

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def watchers(self) -> list[str]:
        """The names of the callbacks woken after each enqueue."""
        return list(self._watchers)

    def open(self) -> None:
        """Load the queue from disk; leases never survive a restart (the job is claimable)."""
        self._outbox_dir = self.root / OUTBOX_DIR
        for folder in (self._outbox_dir / QUEUE, self._outbox_dir / DEAD):
            for made in make_dirs(folder):  # 0700: turns are private; entries synced
                fsync_dir(made.parent)
        self._jobs: dict[str, OutboxJob] = self._read_jobs(QUEUE)
        self._dead: dict[str, OutboxJob] = self._read_jobs(DEAD)
        self._leases: dict[str, _Lease] = {}
        self._finish_moves()

    def _finish_moves(self) -> None:
        """A job's content says where it belongs (``dead_at``): a dead-lettering or a requeue
        stopped between rewriting the file and renaming it (``_move_job``) is finished here."""
        for src, dst, jobs, others, dead in (
            (QUEUE, DEAD, self._jobs, self._dead, True),
            (DEAD, QUEUE, self._dead, self._jobs, False),
        ):
            for job_id, job in list(jobs.items()):
                if (job.dead_at is not None) is dead:
                    with contextlib.suppress(OSError):
                        os.replace(self._job_path(src, job_id), self._job_path(dst, job_id))
                    others[job_id] = jobs.pop(job_id)

    def _read_jobs(self, sub: str) -> dict[str, OutboxJob]:
        out: dict[str, OutboxJob] = {}
        # a write killed inside atomic_write leaves its temp file; the job was never
        # acknowledged, so the leftover is garbage (the store alone owns this folder)
        for stale in (self._outbox_dir / sub).glob(".*.tmp"):
            with contextlib.suppress(OSError):
                stale.unlink()
        for path in sorted((self._outbox_dir / sub).glob("*.json")):
            try:
                job = OutboxJob.model_validate_json(path.read_bytes())
            except (OSError, ValidationError) as e:
                # A job file is written atomically, so this is a hand edit: keep it aside.
                log.warning("outbox: unreadable job %s (%s); moved to .bad", path.name, e)
                with contextlib.suppress(OSError):
                    os.replace(path, path.with_suffix(".bad"))
                continue
            out[job.job_id] = job
        return out

    def rescan(self, bank: str | None) -> tuple[int, set[str]]:
        """Today's catalogue over the queued and dead-lettered jobs (of ``bank``'s turns, or
        all): a job whose messages, errors or recorded reply held a secret is rewritten in
        place (atomically). Answers how many jobs were rewritten and the kinds found."""
        rewritten, kinds = 0, set[str]()
        for sub, jobs in ((QUEUE, self._jobs), (DEAD, self._dead)):
            for job_id, job in list(jobs.items()):
                if bank is not None and (job.bank or bank) != bank:
                    continue
                found: set[str] = set()
                # read together, as a turn is at enqueue: what one message names is redacted
                # where another, an error or the reply repeats it
                contents, errors_, reply = _scrub(
                    [[m.content for m in job.messages], list(job.errors), job.reply], found
                )
                messages = tuple(
                    m.model_copy(update={"content": c})
                    for m, c in zip(job.messages, contents, strict=True)
                )
                if not found:
                    continue
                update = {
                    "messages": messages,
                    "errors": tuple(errors_),
                    "reply": reply,
                    "redacted": tuple(sorted({*job.redacted, *found})),
                }
                fresh = job.model_copy(update=update)
                with self._following(job_id):
                    self._write_job(sub, fresh)
                jobs[job_id] = fresh
                rewritten += 1
                kinds |= found
        return rewritten, kinds

    def _job_path(self, sub: str, job_id: str) -> Path:
        return self._outbox_dir / sub / f"{job_id}.json"

    def _write_job(self, sub: str, job: OutboxJob) -> None:
        atomic_write(self._job_path(sub, job.job_id), job.model_dump_json().encode())

    def _move_job(self, src: str, dst: str, job: OutboxJob) -> None:
        """Rewrite a job where it is, then rename it into the other folder: one file at every
        step, whose content (``dead_at``) says where it belongs (``_finish_moves``)."""
        self._write_job(src, job)
        path = self._job_path(src, job.job_id)
        try:
            with synced_dirs(path.parent, self._outbox_dir / dst):
                os.replace(path, self._job_path(dst, job.job_id))
        except OSError as e:
            raise errors.storage_error(f"cannot move {path} to {dst}", e) from e

    def _remove_job(self, job_id: str) -> None:
        for sub in (QUEUE, DEAD):
            path = self._job_path(sub, job_id)
            try:
                path.unlink()
                fsync_dir(path.parent)
            except FileNotFoundError:
                continue
            except OSError as e:
                raise errors.storage_error(f"cannot remove {path}", e) from e

    @contextlib.contextmanager
    def _following(self, job_id: str) -> Iterator[None]:
        """A refused change of a job's file: RAM takes what the files say (a failure past
        a rename or an unlink, the folder's fsync, leaves the change in place, and the next
        boot reads it so); the caller is told it failed."""
        try:
            yield
        except errors.MemoryServiceError:
            self._follow_files(job_id)
            raise

    def _follow_files(self, job_id: str) -> None:
        found: OutboxJob | None = None
        for sub in (QUEUE, DEAD):
            try:
                found = OutboxJob.model_validate_json(self._job_path(sub, job_id).read_bytes())
            except FileNotFoundError:
                continue
            except (OSError, ValidationError):
                return  # cannot tell: RAM stays as it was
            break
        self._jobs.pop(job_id, None)
        self._dead.pop(job_id, None)
        if found is None:
            self._leases.pop(job_id, None)
        elif found.dead_at is None:
            self._jobs[job_id] = found
        else:
            self._dead[job_id] = found

    # -- the harness seam ------------------------------------------------------------------

    def enqueue(
        self,
        session_id: str,
        turn_id: str | None = None,
        messages: list[dict[str, Any]] | None = None,
        status: str = "completed",
        parent_session_id: str | None = None,
        *,
        parent: str | None = None,
    ) -> TurnCompletedResponse:
        """Queue one durable extraction job for a finished turn (the harness's
        turn-completed hook).

        ``parent`` marks a sub-agent's turn (a live parent link): never extracted.
        ``parent_session_id`` is a parentless spawn's display parent: extracted, and its bank
        resolves through the parent. Failed and cancelled turns are extracted too.
        """
        self.sessions.prune(force=False)
        session = _session_id(session_id)
        turn = v.no_credential(v.turn_id(turn_id), "turn_id")
        if status not in TURN_STATUSES:
            raise errors.InvalidArgumentError(f"unknown turn status {status!r}")
        parent_id = v.optional_str(parent_session_id, "parent_session_id")
        live_parent = v.no_credential(v.optional_str(parent, "parent"), "parent")
        v.no_credential(parent_id, "parent_session_id")
        clean, labels = turn_messages(messages, self.clock.now_ms())
        if live_parent is not None:
            self.sessions.link(session, live_parent)
            return TurnCompletedResponse(ok=True, queued=False, reason="sub-agent turn")
        self.sessions.link(session, parent_id)
        clean = new_messages(self.state, session, clean)
        if not clean:
            return TurnCompletedResponse(ok=True, queued=False, reason="no new messages")
        bank, skip = self.turn_bank(session, turn, parent_id)
        job = OutboxJob(
            job_id=self._next_job_id(),
            session_id=session,
            turn_id=turn,
            bank=bank,
            skip=skip,
            status=status,
            parent_session_id=parent_id,
            messages=tuple(clean),
            enqueued_at=self.clock.now_ms(),
            redacted=labels,
        )
        with self._following(job.job_id):
            self._write_job(QUEUE, job)  # fsynced: from here on the turn survives a crash
        self._jobs[job.job_id] = job
        try:
            remember_queued(self.state, session, clean)
        except errors.MemoryServiceError as e:
            # The job is on disk, so the turn is queued and is answered so: an error here
            # would make the harness send it again, as a second job. What is lost is only the
            # record that spares a whole-window caller's next turn these messages (they may be
            # extracted twice; the same fact again reinforces).
            log.warning("outbox: session's queued messages not recorded (%s)", e.message)
        self._wake_watchers()
        return TurnCompletedResponse(ok=True, queued=True, job_id=job.job_id, redacted=labels)

    def _next_job_id(self) -> str:
        """A ULID that sorts after every earlier one: queue order is turn order."""
        new = ULID.from_timestamp(self.clock.now_ms() / 1000)
        last = max(self._jobs, default=None)
        if last is not None and str(new) <= last:
            new = ULID.from_int(int(ULID.from_str(last)) + 1)
        return str(new)

    # -- the extractor's side --------------------------------------------------------------

    def watch(self, name: str, callback: Callable[[], Any] | None) -> None:
        """Call ``callback()`` after each enqueue (the extractor's wake-up); None removes it."""
        if not isinstance(name, str) or (callback is not None and not callable(callback)):
            raise errors.InvalidArgumentError("outbox_watch needs a name and a callable")
        if callback is None:
            self._watchers.pop(name, None)
        else:
            self._watchers[name] = callback

    def _wake_watchers(self) -> None:
        for name, callback in list(self._watchers.items()):
            try:
                callback()
            except Exception as e:  # a dead extractor never fails the turn: it catches up
                log.info("outbox watcher %s unreachable (%s); dropped", name, e)
                self._watchers.pop(name, None)

    def claim(self, limit: int = 8) -> list[OutboxJob]:
        """Lease up to ``limit`` due jobs, oldest first, at most one per session at a time."""
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 500:
            raise errors.InvalidArgumentError("limit must be an integer from 1 to 500")
        now = self.clock.now_ms()
        self._expire_leases(now)
        busy: set[str] = set()
        out: list[OutboxJob] = []
        for job in sorted(self._jobs.values(), key=lambda j: j.job_id):
            if job.session_id in busy:
                continue
            busy.add(job.session_id)  # later turns of this session wait for this one
            if job.job_id in self._leases or job.next_attempt_at > now:
                continue
            if job.bank is not None and self.banks.trashed(job.bank):
                job = job.model_copy(update={"skip": True})  # never bring a deleted bank back
            lease = _Lease(now + self.settings.outbox_lease_ms, secrets.token_hex(8))
            self._leases[job.job_id] = lease
            out.append(job.model_copy(update={"attempts": job.attempts + 1, "lease": lease.token}))
            if len(out) >= limit:
                break
        return out

    def _expire_leases(self, now: int) -> None:
        for job_id, lease in list(self._leases.items()):
            if lease.until <= now or job_id not in self._jobs:
                del self._leases[job_id]

    def note(self, job_id: str, reply: dict[str, Any], *, lease: str) -> OutboxJob:
        """Record the model's validated reply in the job before any of it is applied.

        Only the lease holder may note (``lease`` is the token its claim returned): once
        another claim took the job, a stale extractor must not record a second reply. A lease
        that ran out but was not taken over still counts, and the note renews it (the holder
        is about to apply). A job with a reply keeps it: later claims, retries and dead
        letters carry it.
        """
        job_id = _job_id(job_id)
        body = _reply(reply)
        job = self._jobs.get(job_id)
        if job is None:
            where = "dead-lettered" if job_id in self._dead else "acked or never queued"
            raise errors.NotFoundError(f"outbox job {job_id!r} is {where}")
        held = self._leases.get(job_id)  # a claim drops expired leases first: no expiry here
        if held is None or not isinstance(lease, str) or lease != held.token:
            raise errors.ConflictError(f"outbox job {job_id!r} is not leased by this caller")
        if job.reply is not None:
            raise errors.ConflictError(f"outbox job {job_id!r} already has a recorded reply")
        noted = job.model_copy(update={"reply": body})
        with self._following(job_id):
            self._write_job(QUEUE, noted)  # fsynced before the caller applies anything
        self._jobs[job_id] = noted
        self._leases[job_id] = _Lease(
            self.clock.now_ms() + self.settings.outbox_lease_ms, held.token
        )
        return noted.model_copy(update={"lease": held.token})

    def ack(self, job_id: str) -> OutboxAckResponse:
        """The job is done: remove it. Acking an unknown id is harmless (a re-run's ack)."""
        job_id = _job_id(job_id)
        if job_id not in self._jobs:
            self._leases.pop(job_id, None)
            return OutboxAckResponse(ok=True, job_id=job_id, state="missing")
        with self._following(job_id):
            self._remove_job(job_id)
        self._leases.pop(job_id, None)
        del self._jobs[job_id]
        return OutboxAckResponse(ok=True, job_id=job_id, state="acked")

    def fail(self, op: OutboxFail) -> OutboxAckResponse:
        """Record a failed attempt: back off and requeue, or dead-letter after the last try.

        ``lease`` is the token the caller's claim returned: when another claim has taken the
        job since (the caller's lease ran out while its model call was still running), the
        failure is that stale caller's, not the job's. It is answered ``leased`` and changes
        nothing: counted, it would drop the new holder's lease (its reply could no longer be
        noted) and could dead-letter a job that holder is about to finish. A lease that ran
        out with nobody taking over still counts, as ``note`` lets it. Without ``lease`` (a
        caller by hand) every failure counts."""
        error, retry_after_ms, lease = op.error, op.retry_after_ms, op.lease
        job_id = _job_id(op.job_id)
        if not isinstance(error, str):
            raise errors.InvalidArgumentError("error must be a string")
        if retry_after_ms is not None and (
            not isinstance(retry_after_ms, int) or retry_after_ms < 0
        ):
            raise errors.InvalidArgumentError("retry_after_ms must be a non-negative integer")
        job = self._jobs.get(job_id)
        if job is None:
            return OutboxAckResponse(ok=False, job_id=job_id, state="missing")
        held = self._leases.get(job_id)
        if lease is not None and held is not None and lease != held.token:
            return OutboxAckResponse(ok=False, job_id=job_id, state="leased")
        self._leases.pop(job_id, None)
        now = self.clock.now_ms()
        attempts = job.attempts + 1
        # an error can quote the transcript
        message = redact_then_cut(error[: MAX_ERROR_CHARS + CUT_MARGIN], MAX_ERROR_CHARS).text
        history = (*job.errors[-9:], message)
        if op.dead_letter or attempts >= self.settings.outbox_max_attempts:
            dead = job.model_copy(update={"attempts": attempts, "errors": history, "dead_at": now})
            with self._following(job_id):
                self._move_job(QUEUE, DEAD, dead)
            del self._jobs[job_id]
            self._dead[job_id] = dead
            log.warning("outbox: job %s dead-lettered after %d attempts", job_id, attempts)
            return OutboxAckResponse(ok=True, job_id=job_id, state="dead", attempts=attempts)
        delay = retry_after_ms if retry_after_ms is not None else self._backoff(attempts)
        retry = job.model_copy(
            update={"attempts": attempts, "errors": history, "next_attempt_at": now + delay}
        )
        with self._following(job_id):
            self._write_job(QUEUE, retry)
        self._jobs[job_id] = retry
        return OutboxAckResponse(
            ok=True,
            job_id=job_id,
            state="queued",
            attempts=attempts,
            next_attempt_at=retry.next_attempt_at,
        )

    def _backoff(self, attempts: int) -> int:
        return int(
            min(
                self.settings.outbox_backoff_ms * 2 ** (attempts - 1),
                self.settings.outbox_backoff_max_ms,
            )
        )

    def requeue(self, job_id: str, *, fresh: bool = False) -> OutboxAckResponse:
        """Put a dead letter back in the queue with a fresh attempt count (by hand). Its
        recorded reply is kept (it may be partly applied already) unless ``fresh``: then the
        model is asked again, for a reply that itself keeps failing."""
        job_id = _job_id(job_id)
        dead = self._dead.get(job_id)
        if dead is None:
            raise errors.NotFoundError(f"no dead letter {job_id!r}")
        reset: dict[str, Any] = {"attempts": 0, "next_attempt_at": 0, "dead_at": None}
        if fresh:
            reset["reply"] = None
        job = dead.model_copy(update=reset)
        with self._following(job_id):
            self._move_job(DEAD, QUEUE, job)
        del self._dead[job_id]
        self._jobs[job_id] = job
        self._wake_watchers()
        return OutboxAckResponse(ok=True, job_id=job_id, state="queued")

    def drop(self, job_id: str) -> OutboxAckResponse:
        """Delete a dead letter for good (by hand: ``memory outbox --drop``, the console): its
        turn is never extracted. Only a dead letter: a queued job is the extractor's."""
        job_id = _job_id(job_id)
        if job_id not in self._dead:
            raise errors.NotFoundError(f"no dead letter {job_id!r}")
        with self._following(job_id):
            self._remove_job(job_id)
        del self._dead[job_id]
        return OutboxAckResponse(ok=True, job_id=job_id, state="dropped")

    def listing(self, *, include_dead: bool = True, limit: int = 100) -> OutboxListResponse:
        """Counts and the oldest jobs (``memory outbox``); dead letters first."""
        limit = v.count(limit, "limit", most=1_000_000)
        now = self.clock.now_ms()
        self._expire_leases(now)
        rows: list[OutboxJobSummary] = []
        if include_dead:
            rows.extend(_summary(j, "dead") for j in sorted(self._dead.values(), key=_key))
        for job in sorted(self._jobs.values(), key=_key):
            state: Literal["queued", "leased", "waiting"] = "queued"
            if job.job_id in self._leases:
                state = "leased"
            elif job.next_attempt_at > now:
                state = "waiting"
            rows.append(_summary(job, state))
        return OutboxListResponse(
            queued=len(self._jobs) - len(self._leases),
            leased=len(self._leases),
            dead=len(self._dead),
            jobs=tuple(rows[: max(0, limit)]),
        )

    def depth(self) -> dict[str, int]:
        """Jobs by state, without listing them (the store actor's metrics and repr)."""
        leased = len(self._leases)
        return {"queued": len(self._jobs) - leased, "leased": leased, "dead": len(self._dead)}

    def job(self, job_id: str) -> OutboxJob:
        job_id = _job_id(job_id)
        job = self._jobs.get(job_id) or self._dead.get(job_id)
        if job is None:
            raise errors.NotFoundError(f"no outbox job {job_id!r}")
        return job


# -- helpers ------------------------------------------------------------------------------


class _Lease(NamedTuple):
    until: int  # ms since epoch
    token: str  # handed to the claimer: who may note the job's reply


def _reply(value: object) -> dict[str, Any]:
    """A reply as stored: a JSON object, size-capped, every string redacted once more (the
    outbox redacts on every write path: redaction before the disk)."""
    if not isinstance(value, dict):
        raise errors.InvalidArgumentError("reply must be a JSON object")
    clean: dict[str, Any] = _scrub(value)
    try:
        size = len(json.dumps(clean, ensure_ascii=False, allow_nan=False).encode())
    except (TypeError, ValueError) as e:
        raise errors.InvalidArgumentError(f"reply is not JSON: {e}") from e
    if size > MAX_REPLY_BYTES:
        raise errors.InvalidArgumentError(f"reply is {size} bytes; at most {MAX_REPLY_BYTES}")
    return clean


def _scrub(value: Any, found: set[str] | None = None) -> Any:
    """Every string in a JSON value redacted (a reply quotes the turn); the kinds found go
    into ``found`` when one is given."""
    try:
        return redact_json(value, found)
    except TypeError as e:
        raise errors.InvalidArgumentError("reply keys must be strings") from e


def _key(job: OutboxJob) -> str:
    return job.job_id


def _summary(job: OutboxJob, state: Any) -> OutboxJobSummary:
    return OutboxJobSummary(
        job_id=job.job_id,
        state=state,
        session_id=job.session_id,
        turn_id=job.turn_id,
        bank=job.bank,
        messages=len(job.messages),
        attempts=job.attempts,
        enqueued_at=job.enqueued_at,
        next_attempt_at=job.next_attempt_at,
        last_error=job.errors[-1] if job.errors else None,
    )


def _session_id(value: object) -> str:
    session = v.optional_str(value, "session_id")
    if session is None:
        raise errors.InvalidArgumentError("session_id is required")
    v.no_credential(session, "session_id")  # it names the job and the session's state
    return session


def _job_id(value: object) -> str:
    if not isinstance(value, str):
        raise errors.InvalidArgumentError("job_id must be a string")
    try:
        return str(ULID.from_str(value))
    except ValueError as e:
        raise errors.InvalidArgumentError(f"job_id {value!r} is not one this outbox issued") from e
