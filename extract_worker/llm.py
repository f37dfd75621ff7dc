"""The LLM behind a small interface, with a fake that ships in the package (STYLE §9).

``LiteLLMBackend`` imports litellm lazily, on the first call (FACTS: ``import litellm`` costs
~6 s and ~200 MB), and turns its exceptions into the error tree: timeouts, rate limits,
connection and 5xx errors are ``SourceUnavailableError`` (retryable); anything else is
``UnknownError`` (still retried by the outbox, then dead-lettered).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from shared import errors

Message = dict[str, str]

# litellm exception class names that mean "try again later" (litellm/exceptions.py).
TRANSIENT = frozenset(
    {
        "Timeout",
        "APITimeoutError",
        "RateLimitError",
        "APIConnectionError",
        "ServiceUnavailableError",
        "InternalServerError",
        "BadGatewayError",
    }
)


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class LLM(Protocol):
    def complete(
        self,
        messages: list[Message],
        *,
        model: str,
        timeout_s: float,
        max_tokens: int,
    ) -> Completion: ...


class LiteLLMBackend:
    """``litellm.completion``; ``extra`` is passed through (``mock_response=``, ``api_base=``)."""

    def __init__(self, **extra: Any) -> None:
        self.extra = extra

    def complete(
        self,
        messages: list[Message],
        *,
        model: str,
        timeout_s: float,
        max_tokens: int,
    ) -> Completion:
        import litellm  # lazy: see the module docstring

        _quiet_litellm()
        started = time.perf_counter()
        try:
            response = litellm.completion(
                model=model,
                messages=messages,
                timeout=timeout_s,
                max_tokens=max_tokens,
                temperature=0,
                **self.extra,
            )
        except Exception as e:
            raise _translate(e) from e
        latency = (time.perf_counter() - started) * 1000
        text = response.choices[0].message.content or ""
        usage = getattr(response, "usage", None)
        return Completion(
            text=text,
            model=model,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_ms=latency,
        )


def _quiet_litellm() -> None:
    """litellm logs whole requests and replies at DEBUG/INFO; a reply can quote a secret the
    redactor did not know, so its loggers stay at WARNING (DESIGN §6: no secret in a log)."""
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
        logger = logging.getLogger(name)
        if logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)


def _translate(e: Exception) -> errors.MemoryServiceError:
    name = type(e).__name__
    # the message can quote the prompt, so only the class name and status travel on
    status = getattr(e, "status_code", None)
    detail = f"LLM call failed: {name}" + (f" (HTTP {status})" if status else "")
    if name in TRANSIENT or (isinstance(status, int) and status >= 500):
        return errors.SourceUnavailableError(detail)
    return errors.UnknownError(detail, True)


Reply = str | Exception | Callable[[list[Message]], str]


@dataclass
class FakeLLM:
    """Answers from a script: each call takes the next reply (a string, an exception to raise,
    or a function of the messages); the last reply repeats. ``calls`` records what it received.
    """

    replies: list[Reply] = field(default_factory=list)
    calls: list[list[Message]] = field(default_factory=list)
    tokens_per_call: tuple[int, int] = (100, 20)

    @classmethod
    def of(cls, *replies: Reply) -> FakeLLM:
        return cls(replies=list(replies))

    def script(self, replies: Iterable[Reply]) -> None:
        self.replies.extend(replies)

    def complete(
        self,
        messages: list[Message],
        *,
        model: str,
        timeout_s: float,
        max_tokens: int,
    ) -> Completion:
        self.calls.append([dict(m) for m in messages])
        if not self.replies:
            raise errors.UnknownError("FakeLLM has no scripted reply")
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        text = reply(messages) if callable(reply) else reply
        return Completion(
            text=text,
            model=model,
            prompt_tokens=self.tokens_per_call[0],
            completion_tokens=self.tokens_per_call[1],
            latency_ms=0.0,
        )
