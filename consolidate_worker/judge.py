"""The optional LLM judge tier (off by default): one call per ambiguous or contradicting pair.

The deterministic tier never merges a pair in the grey band (similar, but below the duplicate
score) and never merges a polarity or number veto. The judge sees such a pair with both
statement dates and answers JSON ``{"decision": "duplicate" | "contradiction" | "distinct",
"keep": <id or null>, "reason": "..."}``; the reply is validated with pydantic and a bad reply is
retried once, then raised as a typed error (the pass reports it and keeps its checkpoint).

The model is called through ``shared.llm``: its error policy types a failed call (a transient
one is a retryable ``source_unavailable``, a refused one a non-retryable ``unknown``), and its
litellm backend imports litellm only when a judge call is made.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from consolidate_worker.settings import ConsolidatorSettings
from shared.contract.errors import UnknownError
from shared.contract.models import Memory
from shared.llm import LLM, create_llm

log = logging.getLogger(__name__)

Kind = Literal["ambiguous", "contradiction", "paraphrase"]

SYSTEM_PROMPT = """You curate an agent's long-term memory. You are shown two stored memories.
"why_asked" says why the pair was picked: "ambiguous" (similar wording), "contradiction"
(near-identical wording but a different number, date or negation) or "paraphrase" (similar
meaning, different wording).
Decide one of:
- "duplicate": both state the same fact (a restatement or paraphrase, possibly with a detail
  added); "keep" is the id of the statement that says more.
- "contradiction": the newer statement corrects or replaces the older one; "keep" is the id of
  the statement that is true now (normally the newer one).
- "distinct": different facts that must both be kept (different people, roles, numbers, dates,
  or a fact and its negation that may both have been true at different times).
When unsure, answer "distinct".
Reply with JSON only: {"decision": "...", "keep": "<id or null>", "reason": "<one sentence>"}"""


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    decision: Literal["duplicate", "contradiction", "distinct"]
    keep: str | None = None
    reason: str = ""


class Judge(Protocol):
    def decide(self, kind: Kind, a: Memory, b: Memory) -> Verdict: ...


class LLMJudge:
    """A judge over an ``LLM`` (by default litellm's backend, ``shared.llm.create_llm``)."""

    def __init__(
        self,
        model: str,
        *,
        llm: LLM | None = None,
        timeout_s: float = 30.0,
        retries: int = 1,
    ) -> None:
        self.model = model
        self.llm = llm if llm is not None else create_llm()
        self.timeout_s = timeout_s
        self.retries = retries

    def decide(self, kind: Kind, a: Memory, b: Memory) -> Verdict:
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": _pair_prompt(kind, a, b)},
        ]
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                return _validated(self._complete(messages), a, b)
            except (ValueError, ValidationError) as e:
                last = e
                log.warning("judge reply rejected (attempt %d): %s", attempt + 1, e)
        raise UnknownError(f"judge reply invalid after {self.retries + 1} attempts: {last}")

    def _complete(self, messages: list[dict[str, str]]) -> str:
        completion = self.llm.complete(
            messages, model=self.model, timeout_s=self.timeout_s, json_object=True
        )
        return completion.text


def judge_from(settings: ConsolidatorSettings, llm: LLM | None = None) -> LLMJudge | None:
    """The judge the settings ask for, or None when the tier is off; ``llm`` replaces the
    litellm backend (pointed at ``judge_api_base`` and given ``judge_api_key`` when the settings
    name them)."""
    if not settings.judge_enabled or not settings.judge_model:
        return None
    if llm is None:
        llm = create_llm(api_base=settings.judge_api_base, api_key=settings.judge_key())
    return LLMJudge(settings.judge_model, llm=llm, timeout_s=settings.judge_timeout_s)


def _pair_prompt(kind: Kind, a: Memory, b: Memory) -> str:
    def entry(m: Memory) -> dict[str, Any]:
        stated = datetime.fromtimestamp(m.stated_at / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M")
        return {"id": m.id, "text": m.text, "stated": stated, "corroboration": m.corroboration}

    older, newer = sorted((a, b), key=lambda m: (m.stated_at, m.id))
    payload = {"why_asked": kind, "older": entry(older), "newer": entry(newer)}
    return json.dumps(payload, ensure_ascii=False)


def _validated(raw: str, a: Memory, b: Memory) -> Verdict:
    text = raw.strip()
    if text.startswith("```"):  # some models fence JSON even when asked not to
        text = text.strip("`").removeprefix("json").strip()
    verdict = Verdict.model_validate_json(text)
    if verdict.decision != "distinct" and verdict.keep not in (a.id, b.id):
        if verdict.decision == "contradiction":
            raise ValueError(f"contradiction must keep {a.id!r} or {b.id!r}, not {verdict.keep!r}")
        verdict = verdict.model_copy(update={"keep": None})
    return verdict
