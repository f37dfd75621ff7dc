"""One turn's extraction run now, in the caller's process: what a library adds a conversation
with (``integrations.mem0_compat``'s ``Memory.add(..., infer=True)``), reached through the
extractor's spec (``shared.client.workers.extract_now``) so the caller imports no worker.

It is the extractor's own job, on a turn that never went through the outbox: the same window,
known memories, prompt, one model call, parse and apply (reinforce by id, supersede by id,
rules learned), over the same ``StoreAPI``. What differs: the reply is not recorded in a job
(there is none: the caller gets the error and decides), the caller's labels and title ride on
each save, and the answer says what happened to each memory.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from ulid import ULID

from extract_worker.core import Extractor, JobResult
from extract_worker.parse import ExtractedMemory, ExtractionReply
from extract_worker.settings import ExtractorSettings
from shared.contract.api import StoreAPI
from shared.contract.clock import SystemClock
from shared.contract.errors import InvalidArgumentError
from shared.contract.models import Memory, OutboxJob, OutboxMessage, SaveResponse
from shared.llm import LLM

MAX_TAGS = 8


@dataclass(frozen=True)
class Outcome:
    """What one remembered fact did: ``ADD`` (a new memory), ``UPDATE`` (a new memory that
    retired ``previous``), ``NONE`` (it restated a memory already held, which it reinforced)."""

    event: str
    memory: Memory
    previous: Memory | None = None


def extract_turn(
    store: StoreAPI,
    messages: list[dict[str, str]],
    *,
    bank: str | None = None,
    session_id: str | None = None,
    tags: list[str] | None = None,
    title: str | None = None,
    model: str | None = None,
    llm: LLM | None = None,
    uuid_ids: bool = False,
) -> list[Outcome]:
    """Extract what ``messages`` (``{"role", "content"}``; user and assistant turns) teach
    into ``bank``, now; ``tags`` and ``title`` go on every memory it saves, and with
    ``uuid_ids`` each new memory's id is a random UUID (not a slug of its title). The model is
    ``model``, else ``MEMORY_EXTRACTION_MODEL``; none is an ``InvalidArgumentError``."""
    settings = ExtractorSettings.from_env()
    if model:
        settings = settings.model_copy(update={"extraction_model": model})
    if not settings.extraction_model:
        raise InvalidArgumentError(
            "extraction needs a model: set MEMORY_EXTRACTION_MODEL (a litellm model name) "
            "or pass one, or save the messages as they are (infer=False)"
        )
    now = SystemClock().now_ms()
    turn = tuple(
        OutboxMessage(role=m["role"], content=m["content"], timestamp=now)
        for m in messages
        if m.get("role") in ("user", "assistant") and str(m.get("content") or "").strip()
    )
    job = OutboxJob(
        job_id=str(ULID()),
        session_id=session_id or f"inline-{str(ULID()).lower()}",
        turn_id=str(ULID()),
        bank=bank,
        messages=turn,
        enqueued_at=now,
    )
    extractor = _Inline(store, llm or settings.llm(), settings, tags=tags or [], title=title)
    extractor.uuid_ids = uuid_ids
    extractor._extract(job, JobResult(job.job_id, "done"))
    return extractor.outcomes()


class _Inline(Extractor):
    """The extractor on one job it was handed, recording what each save did."""

    def __init__(
        self,
        store: StoreAPI,
        llm: LLM,
        settings: ExtractorSettings,
        *,
        tags: list[str],
        title: str | None,
    ) -> None:
        super().__init__(store, llm, settings)
        self.tags, self.title = tags, title
        self.uuid_ids = False
        self.saved: list[tuple[SaveResponse, bool]] = []  # each answer; whether it re-saved
        self.retired: dict[str, Memory] = {}  # new id -> the memory it superseded

    def _note(self, job: OutboxJob, reply: ExtractionReply) -> None:
        """No job to note the reply in: a failure reaches the caller, who decides."""

    def _request(
        self, job: OutboxJob, text: str, item: ExtractedMemory, old: Memory | None = None
    ) -> dict[str, Any]:
        request = super()._request(job, text, item, old)
        labels = list(dict.fromkeys([*self.tags, *request["tags"]]))[:MAX_TAGS]
        request["tags"] = labels
        if self.title is not None:
            request["title"] = self.title
        if self.uuid_ids and old is None:
            request["id"] = str(uuid.uuid4())
        return request

    def _save_all(
        self, job: OutboxJob, saves: list[tuple[ExtractedMemory, str, Memory | None]]
    ) -> list[SaveResponse]:
        answers = super()._save_all(job, saves)
        self.saved.extend(
            (answer, old is not None) for (_, _, old), answer in zip(saves, answers, strict=True)
        )
        return answers

    def _correct(
        self,
        job: OutboxJob,
        item: ExtractedMemory,
        new: Memory,
        bank: str | None,
        known: dict[str, Memory],
        result: JobResult,
    ) -> None:
        old = self._live(job, item.supersedes, known) if item.supersedes else None
        before = result.superseded
        super()._correct(job, item, new, bank, known, result)
        if old is not None and result.superseded > before:
            self.retired[new.id] = old

    def outcomes(self) -> list[Outcome]:
        out: list[Outcome] = []
        for answer, resaved in self.saved:
            mem = answer.memory
            if answer.created and not resaved:
                previous = self.retired.get(mem.id)
                out.append(Outcome("UPDATE" if previous else "ADD", mem, previous))
            else:
                out.append(Outcome("NONE", mem))
        return out
