"""The optional LLM judge tier (off by default): one call per ambiguous or contradicting pair.

The deterministic tier never merges a pair in the grey band (similar, but below the duplicate
score) and never merges a polarity or number veto. The judge sees such a pair with both
statement dates and answers JSON ``{"decision": "duplicate" | "contradiction" | "distinct",
"keep": <id or null>, "reason": "..."}``; the reply is validated with pydantic and a bad reply is
retried once, then raised as a typed error (the pass reports it and keeps its checkpoint).

litellm is imported lazily, only when a judge call is made: its import costs ~6 s and ~200 MB
(FACTS.md "litellm"). Tests drive the real ``litellm.completion`` call path with
``mock_response=`` through ``completion_kwargs``.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from consolidate_worker.settings import ConsolidatorSettings
from shared.errors import SourceUnavailableError, UnknownError
from shared.models import Memory

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
    """A judge over ``litellm.completion``; ``completion_kwargs`` pass through (tests use
    ``mock_response``)."""

    def __init__(
        self,
        model: str,
        *,
        timeout_s: float = 30.0,
        retries: int = 1,
        completion_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.timeout_s = timeout_s
        self.retries = retries
        self.completion_kwargs = dict(completion_kwargs or {})

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
        import litellm  # lazy: see the module docstring

        try:
            resp = litellm.completion(
                model=self.model,
                messages=messages,
                temperature=0,
                timeout=self.timeout_s,
                response_format={"type": "json_object"},
                drop_params=True,  # a provider without JSON mode still gets the call
                **self.completion_kwargs,
            )
        except Exception as e:  # the provider's errors are not ours to enumerate
            raise SourceUnavailableError(f"judge call failed: {type(e).__name__}: {e}") from e
        return str(resp.choices[0].message.content or "")


def judge_from(settings: ConsolidatorSettings) -> LLMJudge | None:
    """The judge the settings ask for, or None when the tier is off."""
    if not settings.judge_enabled or not settings.judge_model:
        return None
    return LLMJudge(settings.judge_model, timeout_s=settings.judge_timeout_s)


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
