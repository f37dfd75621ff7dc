"""``Extractor``: drains the store's extraction outbox, one LLM call per turn.

A plain class over two interfaces — ``shared.contract.api.StoreAPI`` (the store's contract, so the
same code runs over the embedded store and over the Ray ``StoreClient``) and ``shared.llm.LLM``
(whose error policy makes a transient model failure a retry and a refused call a dead
letter) — and the Ray shell (``extract_worker.actor``) only adds a loop and metrics.

One job = one finished turn:

    claim → window (newest ``extraction_window`` user/assistant messages, redacted again)
          → known memories (recall over the turn) + learned rules → one LLM call
          → parse (pydantic) → note the reply in the job (``outbox_note``)
          → apply through save_many / supersede / rule_propose → ack

Apply (rules are learned from the user's corrections): the reply's saves
go to the store as one ``save_many`` (one call, one fsync; a refused call wrote nothing and is
sent again save by save, so the ones before a refused save are kept), then the corrections
retire what they replace:
- a plain memory is saved; the same normalised text reinforces by fingerprint (store);
- ``reinforces: id`` re-saves that memory's own text, so a close rewording bumps its
  corroboration instead of duplicating it;
- ``supersedes: id`` saves the corrected memory, then ``supersede(old, new, reason=...)``;
  a pinned memory is never retired or reinforced by this automatic path;
- rules are proposed to the store (``rule_propose``), which makes them ``- text`` lines of the
  ``learned`` rule or holds them for a person (``rule_review``); a rule not grounded in the
  user's own words is never learned (``ground.py``); hand-written rules are never written.
A failure retries with exponential backoff through ``outbox_fail`` and dead-letters after the
last try. The retry policy (tries, backoff) is the store's (``StoreSettings.outbox_*``): the
extractor reads it from ``capabilities()["outbox"]`` (``OutboxPolicy``) when it starts and on
each drain that claims work, so it never reports "retry" for a job the store dead-letters. An
ack comes only after every write, so a killed extractor loses nothing.

Exactly once, in effect: the reply is recorded in the job before any of it is applied, and a
re-run (after a crash, a lost lease, a failed write) applies that recorded reply without a
second LLM call. Applying it again is harmless: every save carries the turn id and the store
counts a turn's corroboration of a fact once; a memory already superseded is no longer live,
so its supersede is skipped; a rule line already learned is deduped by fingerprint.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from extract_worker import prompt
from extract_worker.ground import QUOTED, SAID, grounding
from extract_worker.parse import ExtractedMemory, ExtractionReply, parse_reply
from extract_worker.settings import ExtractorSettings
from shared.contract import errors
from shared.contract.api import StoreAPI
from shared.contract.clock import Clock, SystemClock
from shared.contract.models import KEYED, Memory, OutboxJob, OutboxPolicy, SaveResponse
from shared.llm import LLM, Completion
from shared.redact import redact
from shared.text import fingerprint, rule_lines

log = logging.getLogger(__name__)

LEARNED = "learned"
RECORDED_BY = "extractor"
STATE_OWNER = "extractor"
# The extractor's last runs, newest first, in the store's sibling state (the console's outbox
# page shows them): extraction jobs are not Ray tasks (a job is leased by the replica that
# took it), so this is where a run's duration, outcome and job id can be seen.
RUNS_KEY = "runs"
MAX_RUNS = 50
REPLAY_LOOKUP = 10  # records a replay looks through for its earlier write (exact text ranks top)
MAX_CHAIN = 16  # supersede hops followed to a live successor


class LeaseLost(Exception):
    """Raised when the job's lease passed to another claim before its reply was noted: that
    holder runs the job, this one walks away without a write (not an error of the job)."""


@dataclass
class JobResult:
    job_id: str
    outcome: str  # done | skipped | retry | dead | lost (another claim runs it)
    saved: int = 0
    reinforced: int = 0
    superseded: int = 0
    rules_added: int = 0
    dropped: int = 0
    tokens: int = 0
    llm_ms: float = 0.0
    error: str | None = None
    bank: str | None = None
    duration_ms: int = 0  # the whole job: window, model call, writes
    at: int = 0  # when it finished (ms)

    def run(self) -> dict[str, object]:
        """The job as the run log keeps it (``RUNS_KEY``): figures and a redacted error only."""
        always = ("job_id", "outcome", "duration_ms", "at")
        return {k: v for k, v in vars(self).items() if k in always or v not in (None, 0, 0.0)}


@dataclass
class DrainStats:
    done: int = 0
    skipped: int = 0
    retried: int = 0
    dead: int = 0
    results: list[JobResult] = field(default_factory=list)

    def add(self, result: JobResult) -> None:
        self.results.append(result)
        if result.outcome == "done":
            self.done += 1
        elif result.outcome == "skipped":
            self.skipped += 1
        elif result.outcome in ("retry", "lost"):
            self.retried += 1
        else:
            self.dead += 1


class Extractor:
    def __init__(
        self,
        store: StoreAPI,
        llm: LLM | None,
        settings: ExtractorSettings | None = None,
        *,
        clock: Clock | None = None,
        on_result: Callable[[JobResult], None] | None = None,
    ) -> None:
        self.store = store
        self.llm = llm
        self.settings = settings or ExtractorSettings()
        self.clock = clock or SystemClock()
        self.on_result = on_result
        self.policy: OutboxPolicy | None = None  # the store's; read by refresh_policy()

    @property
    def enabled(self) -> bool:
        return self.settings.enabled and self.llm is not None

    def refresh_policy(self) -> OutboxPolicy:
        """Read the store's retry policy (``capabilities()["outbox"]``): the store alone
        decides when a job is dead, and a ``configure`` there reaches the next drain here."""
        self.policy = OutboxPolicy.of(self.store.capabilities())
        return self.policy

    def publish_status(self) -> None:
        """Tell the store whether extraction runs (its ``doctor`` and injection read this)."""
        policy = self.refresh_policy()
        self.store.state_set(
            STATE_OWNER,
            "status",
            {
                "enabled": self.enabled,
                "model": self.settings.extraction_model,
                "rule_learning": self.settings.rule_learning_enabled,
                "max_attempts": policy.max_attempts,
                "at": self.clock.now_ms(),
            },
        )

    # -- the loop --------------------------------------------------------------------------

    def drain(self, *, max_jobs: int = 10_000) -> DrainStats:
        """Process due jobs until the outbox has none (or ``max_jobs``); never raises per job."""
        stats = DrainStats()
        if not self.enabled:
            return stats
        while len(stats.results) < max_jobs:
            jobs = self.store.outbox_claim(min(self.settings.claim_limit, max_jobs))
            if not jobs:
                break
            if not stats.results:
                self.refresh_policy()  # once per drain that has work, before any job runs
            for job in jobs:
                stats.add(self.run_job(job))
        if stats.results:
            self._log_runs(stats.results)
        return stats

    def _log_runs(self, results: list[JobResult]) -> None:
        """Prepend this drain's runs to the run log (display only: two replicas draining at
        once may each write over the other's latest lines; a failed write loses nothing else)."""
        try:
            old = self.store.state_get(STATE_OWNER, RUNS_KEY)
            kept = old if isinstance(old, list) else []
            runs = [r.run() for r in reversed(results)] + kept
            self.store.state_set(STATE_OWNER, RUNS_KEY, runs[:MAX_RUNS])
        except errors.MemoryServiceError as e:
            log.info("extraction run log not written: %s", e)

    def run_job(self, job: OutboxJob) -> JobResult:
        t0 = time.perf_counter()
        result = self._run_job(job)
        result.bank = job.bank
        result.duration_ms = int((time.perf_counter() - t0) * 1000)
        result.at = self.clock.now_ms()
        return result

    def _run_job(self, job: OutboxJob) -> JobResult:
        if job.skip:
            self.store.outbox_ack(job.job_id)
            return self._report(JobResult(job.job_id, "skipped"))
        result = JobResult(job.job_id, "done")
        try:
            self._extract(job, result)
        except LeaseLost as e:
            result.outcome, result.error = "lost", str(e)
            log.info("extraction job %s: %s", job.job_id, e)
            return self._report(result)
        except Exception as e:  # a job's failure is recorded on the job, never the loop's crash
            return self._report(self._fail(job, result, e))
        self.store.outbox_ack(job.job_id)
        return self._report(result)

    def _fail(self, job: OutboxJob, result: JobResult, e: Exception) -> JobResult:
        message = redact(f"{type(e).__name__}: {e}").text
        retryable = not isinstance(e, errors.MemoryServiceError) or e.retryable
        result.error = message
        policy = self.policy or self.refresh_policy()
        lease = job.lease  # a stale holder's failure must not count (``Outbox.fail``)
        if not retryable or policy.is_last(job.attempts):
            answer = self.store.outbox_fail(job.job_id, message, dead_letter=True, lease=lease)
        else:
            delay = policy.backoff(job.attempts)
            answer = self.store.outbox_fail(job.job_id, message, retry_after_ms=delay, lease=lease)
        # The store's answer is the truth (its policy may have changed since the last read).
        # "missing": the job left the queue meanwhile (acked by another claim's holder);
        # "leased": another claim took it over while this attempt ran: that holder runs it.
        lost = {"dead": "dead", "missing": "lost", "leased": "lost"}
        result.outcome = lost.get(answer.state, "retry")
        if result.outcome == "dead":
            log.warning("extraction job %s dead-lettered: %s", job.job_id, message)
        else:
            log.info(
                "extraction job %s retries at %d: %s", job.job_id, answer.next_attempt_at, message
            )
        return result

    def _report(self, result: JobResult) -> JobResult:
        if self.on_result is not None:
            self.on_result(result)
        return result

    # -- one job ---------------------------------------------------------------------------

    def _extract(self, job: OutboxJob, result: JobResult) -> None:
        if job.reply is not None:
            self._replay(job, job.reply, result)
            return
        turn = self._window(job)
        if not any(m.role == "user" for m in turn):
            return  # an assistant-only turn states nothing about the user
        known = self._known(job, turn)
        learned = rule_lines(self._rules(job.bank).get(LEARNED, ""))
        messages = prompt.build(
            bank=job.bank or "(default)",
            turn=turn,
            # redacted again, as the window is: a record edited by hand or stored under an
            # older catalogue never went through a write's redaction
            known=[
                prompt.KnownMemory(m.id, redact(m.text).text, m.stated_at, m.pinned) for m in known
            ],
            learned=[redact(line).text for line in learned],
            max_memories=self.settings.max_memories_per_turn,
            rules_enabled=self.settings.rule_learning_enabled,
        )
        completion = self._complete(messages)
        result.tokens, result.llm_ms = completion.tokens, completion.latency_ms
        reply = parse_reply(completion.text)
        result.dropped = reply.dropped
        self._note(job, reply)
        self._apply(job, reply, {m.id: m for m in known}, result)

    def _note(self, job: OutboxJob, reply: ExtractionReply) -> None:
        """Record the reply in the job before applying it: a re-run applies the same one."""
        try:
            self.store.outbox_note(job.job_id, reply.model_dump(mode="json"), lease=job.lease or "")
        except (errors.ConflictError, errors.NotFoundError) as e:
            raise LeaseLost(f"not noted, left to its current holder ({e})") from e

    def _replay(self, job: OutboxJob, recorded: dict[str, Any], result: JobResult) -> None:
        """Apply the reply an earlier attempt recorded (and maybe partly applied)."""
        try:
            reply = ExtractionReply.model_validate(recorded)
        except ValidationError as e:  # a hand-edited job file: retrying cannot help
            raise errors.InvalidArgumentError(f"the recorded reply is unreadable: {e}") from e
        result.dropped = reply.dropped
        # known = {}: ``_live`` reads each id as it is now
        self._apply(job, reply, {}, result, replay=True)

    def _window(self, job: OutboxJob) -> list[prompt.TurnMessage]:
        msgs = [m for m in job.messages if m.role in ("user", "assistant")]
        return [
            prompt.TurnMessage(m.role, redact(m.content).text, m.timestamp)
            for m in msgs[-self.settings.extraction_window :]
        ]

    def _known(self, job: OutboxJob, turn: list[prompt.TurnMessage]) -> list[Memory]:
        """What the bank already holds about this conversation (for reinforce/supersede):
        the memories the turn recalls, then the newest ones (a terse correction such as
        "actually, Wednesdays" shares no word with the fact it corrects)."""
        limit = self.settings.context_memories
        query = " ".join(m.content for m in turn)[-4_000:]
        if limit == 0:
            return []
        try:
            found = (
                [
                    h.memory
                    for h in self.store.recall(
                        query, bank=job.bank, limit=limit, session_id=job.session_id
                    ).memories
                ]
                if query.strip()
                else []
            )
            recent = self.store.list(bank=job.bank, page_size=limit).memories
        except errors.NotFoundError:
            return []  # a new bank: extraction creates it
        # the listing is the whole bank's: only what this session may see is shown to the
        # model (another project's or session's memory never reaches this turn's prompt)
        reach = _Reach(self.store, job)
        recent = tuple(m for m in recent if reach(m))
        merged = {
            m.id: m for m in [*found, *recent] if m.invalid_at is None and KEYED not in m.tags
        }  # an application's keyed item is its data, not a fact to reinforce or correct
        return list(merged.values())[: limit + limit // 2]

    def _complete(self, messages: list[dict[str, str]]) -> Completion:
        if self.llm is None or not self.settings.extraction_model:
            raise errors.SourceUnavailableError("no extraction model configured")
        return self.llm.complete(
            messages,
            model=self.settings.extraction_model,
            timeout_s=self.settings.extraction_timeout_ms / 1000,
            max_tokens=self.settings.extraction_max_tokens,
        )

    # -- applying a reply ------------------------------------------------------------------

    def _apply(
        self,
        job: OutboxJob,
        reply: ExtractionReply,
        known: dict[str, Memory],
        result: JobResult,
        *,
        replay: bool = False,
    ) -> None:
        keep = reply.memories[: self.settings.max_memories_per_turn]
        result.dropped += len(reply.memories) - len(keep)
        # every save of the reply goes to the store as one save_many (one call, one fsync),
        # then the corrections retire what they replace
        # item, text, the memory it re-saves (reinforced in its own scope, project, session)
        saves: list[tuple[ExtractedMemory, str, Memory | None]] = []
        gone: list[tuple[ExtractedMemory, Memory]] = []  # applied before, retired since
        for item in keep:
            earlier = self._retired_since(job, item) if replay else None
            if earlier is not None:
                gone.append((item, earlier))
                continue
            if item.reinforces and item.reinforces != item.supersedes:
                old = self._live(job, item.reinforces, known)
                if old is not None:
                    if not old.pinned:  # pinned: no automatic path touches it
                        saves.append((item, old.text, old))
                    continue
            saves.append((item, item.text, None))
        answers = self._save_all(job, saves)
        for (item, _, resaved), saved in zip(saves, answers, strict=True):
            if resaved is not None:
                result.reinforced += 1
                continue
            if saved.created:
                result.saved += 1
            else:
                result.reinforced += 1
            self._correct(job, item, saved.memory, saved.bank, known, result)
        for item, earlier in gone:  # its correction may not have been made before the crash
            survivor = self._successor(job, earlier)
            if survivor is not None:
                self._correct(job, item, survivor, job.bank, known, result)
        if self.settings.rule_learning_enabled and reply.rules:
            result.rules_added = self._learn_rules(job, reply.rules)

    def _correct(
        self,
        job: OutboxJob,
        item: ExtractedMemory,
        new: Memory,
        bank: str | None,
        known: dict[str, Memory],
        result: JobResult,
    ) -> None:
        """Retire what ``item`` says it corrects, in favour of its saved memory ``new``."""
        old = self._live(job, item.supersedes, known) if item.supersedes else None
        if old is None or old.pinned or old.id == new.id or new.status != "canonical":
            return  # a pinned record stays; a pending draft waits for its approval
        self.store.supersede(
            old.id,
            new.id,
            bank=bank,
            reason=f"corrected in turn {job.turn_id or job.job_id}",
        )
        result.superseded += 1

    def _retired_since(self, job: OutboxJob, item: ExtractedMemory) -> Memory | None:
        """On a replay: the record an earlier attempt of this job wrote for ``item`` (created
        or reinforced, so it names this turn) that was retired since — merged by the
        consolidator, superseded, deleted by hand. Saving it again would find no live record
        with its text and create a second one (or bring a deleted fact back), so the item
        counts as applied. Found through recall over retired records too; replays are rare."""
        turn = job.turn_id or job.job_id
        if item.reinforces:  # its earlier attempt re-saved that memory's own text
            try:
                target: Memory | None = self.store.get(item.reinforces, bank=job.bank).memory
            except errors.MemoryServiceError:
                target = None
            if target is not None and target.invalid_at is not None and _stated_in(target, turn):
                return target
        fp = fingerprint(item.text)
        try:
            hits = self.store.recall(
                item.text,
                bank=job.bank,
                limit=REPLAY_LOOKUP,
                mode="lexical",
                include_superseded=True,
                session_id=job.session_id,
            ).memories
        except errors.NotFoundError:
            return None  # no bank yet: nothing was written before
        for hit in hits:
            mem = hit.memory
            if mem.fingerprint == fp and mem.invalid_at is not None and _stated_in(mem, turn):
                return mem
        return None

    def _successor(self, job: OutboxJob, mem: Memory) -> Memory | None:
        """The live end of ``mem``'s supersede chain, if it has one (a deleted one has not)."""
        for _ in range(MAX_CHAIN):
            if mem.invalid_at is None:
                return mem
            if not mem.superseded_by:
                return None
            try:
                mem = self.store.get(mem.superseded_by, bank=job.bank).memory
            except errors.MemoryServiceError:
                return None
        return None

    def _live(self, job: OutboxJob, id: str | None, known: dict[str, Memory]) -> Memory | None:
        """The live memory ``id`` this job may reinforce or correct: one the prompt showed, or
        (a replay, a model naming an id it was not shown) one this session may see. Another
        project's or session's memory is out of reach: the item is then a plain save."""
        if not id:
            return None
        mem = known.get(id)
        if mem is None:
            try:
                mem = self.store.get(id, bank=job.bank).memory
            except errors.MemoryServiceError:
                return None  # an id the model made up: the item is a plain save
            if not _Reach(self.store, job)(mem):
                return None
        return mem if mem.invalid_at is None and KEYED not in mem.tags else None

    def _save_all(
        self, job: OutboxJob, saves: list[tuple[ExtractedMemory, str, Memory | None]]
    ) -> list[SaveResponse]:
        """The reply's saves as one ``save_many`` (one store call, one fsync). A refused call
        wrote nothing: the saves go again one by one, in order, so the good ones are kept
        and the first refused one fails the job, as it did before they were batched."""
        requests = [self._request(job, text, item, old) for item, text, old in saves]
        if not requests:
            return []
        try:
            return list(self.store.save_many(requests).results)
        except errors.REFUSALS:
            return [self.store.save(**request) for request in requests]

    def _request(
        self, job: OutboxJob, text: str, item: ExtractedMemory, old: Memory | None = None
    ) -> dict[str, Any]:
        """The save of ``text``; re-saving ``old`` (a reinforcement) saves it where it is
        (its scope and owner), so the store reinforces that record, never a copy elsewhere:
        a session memory re-saved as a global one would reach every session."""
        entities = list(item.entities)
        if text.lower().startswith(("the user ", "the user's ")) and "user" not in entities:
            entities = ["user", *entities][:8]  # "what do I ...?" recalls it
        place: dict[str, Any] = {}
        if old is not None and old.scope != "global":
            place = {"scope": old.scope, "project": old.project}
            place["session_id"] = old.session_id or job.session_id
        return {
            "text": text,
            "bank": job.bank,
            "type": item.type,
            "tags": list(item.tags),
            "entities": entities,
            "confidence": item.confidence,
            "session_id": job.session_id,
            # the replay key: one turn corroborates a fact once; a turn the harness sent
            # without an id is known by its job's (a ULID too)
            "turn_id": job.turn_id or job.job_id,
            "recorded_by": RECORDED_BY,
            "occurred_at": said_at(job),
            **place,
        }

    # -- rules -----------------------------------------------------------------------------

    def _rules(self, bank: str | None) -> dict[str, str]:
        try:
            rules = self.store.rule_list(bank=bank).rules
        except errors.NotFoundError:
            return {}
        return {r.name: r.content for r in rules}

    def _learn_rules(self, job: OutboxJob, rules: Iterable[str]) -> int:
        """Propose the reply's standing instructions for ``learned`` (``rule_propose``): the
        store learns each at once or holds it for a person (its ``rule_review``). A rule whose
        words the user did not say in this turn (only an assistant reply, a relayed page or a
        tool's output held them) is never learned: it is sent as ungrounded, which the store
        only counts in an event. One the user only quoted or pasted is proposed as ``quoted``,
        which waits for a person. Deduped against every rule of the bank by the store."""
        said = [m.content for m in job.messages if m.role == "user"]
        found: dict[str | None, list[str]] = {}
        for rule in rules:
            found.setdefault(grounding(rule, said), []).append(rule)
        turn = job.turn_id or job.job_id
        if None in found:
            self.store.rule_propose(found[None], bank=job.bank, turn_id=turn, grounded=False)
        if QUOTED in found:
            self.store.rule_propose(found[QUOTED], bank=job.bank, turn_id=turn, origin=QUOTED)
        if SAID not in found:
            return 0
        return len(self.store.rule_propose(found[SAID], bank=job.bank, turn_id=turn).learned)


def _stated_in(mem: Memory, turn: str) -> bool:
    """Whether ``turn`` created ``mem`` or is among its recent corroborations (as the store
    reads it, ``store_worker.storage.writes``)."""
    return mem.provenance.source_turn_id == turn or turn in mem.corroborated_by


def said_at(job: OutboxJob) -> int | None:
    """When the turn's facts were said: its latest user message's date (ms since epoch), the
    ``occurred_at`` of what it teaches. Relative dates in the text are already absolute (the
    prompt turns them into YYYY-MM-DD against these same message dates)."""
    said = [m.timestamp for m in job.messages if m.role == "user" and m.timestamp >= 0]
    return max(said) if said else None


class _Reach:
    """Whether a memory is one a job's session may see: global, or a session memory of the
    session or an ancestor (the job carries no project, so no project memory). The lineage
    is asked for once, and only when a session memory comes up."""

    def __init__(self, store: StoreAPI, job: OutboxJob) -> None:
        self.store, self.job = store, job
        self._lineage: frozenset[str] | None = None

    def __call__(self, mem: Memory) -> bool:
        return mem.seen_from(None, self._sessions)

    def _sessions(self) -> frozenset[str]:
        if self._lineage is None:
            self._lineage = frozenset(self.store.session_lineage(self.job.session_id))
        return self._lineage
