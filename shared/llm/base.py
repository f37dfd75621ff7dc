"""The LLM interface every caller uses, and its one error policy.

``LLM.complete(messages, ...)`` sends one chat request and answers a ``Completion``. Backends:
``shared.llm.litellm.LiteLLMBackend`` (any provider litellm knows, or any OpenAI-compatible
server through ``api_base``) and ``shared.llm.fake.FakeLLM`` (a script, for tests). The
extractor, the consolidator's judge and ``memory chat`` all call through it, so a provider
failure means the same thing everywhere.

The error policy (``classify``), applied by every backend to whatever its call raised:

- **Transient** (the same call may succeed later) becomes ``LLMUnavailableError``, a
  ``SourceUnavailableError`` with ``retryable=True``:
  timeouts (litellm ``Timeout``, openai ``APITimeoutError``, Python's ``TimeoutError``),
  connection failures (``APIConnectionError``, ``ConnectionError``), rate limits
  (``RateLimitError``, HTTP 429), a server-side failure (``InternalServerError``,
  ``BadGatewayError``, ``ServiceUnavailableError``, any HTTP 5xx), and HTTP 408 and 409. These
  are the statuses the OpenAI client itself retries.
- **Anything else** becomes ``LLMRejectedError``, an ``UnknownError`` with
  ``retryable=False``: the provider refused the call as sent, and sending it again cannot
  help until something changes (a key, a model name, the prompt). That covers
  ``AuthenticationError`` (401), ``PermissionDeniedError`` (403), ``NotFoundError`` (404, an
  unknown model), ``BadRequestError`` (400) and its kinds (context window exceeded, content
  policy, unsupported parameters), ``UnprocessableEntityError`` (422), and any exception the
  policy does not recognise (retried blindly, it would fail the same way each time).
- A ``MemoryServiceError`` raised inside a backend is already typed: it passes unchanged.

Both typed errors also derive from ``LLMError``, so a caller can tell a model failure from a
store failure (``memory chat`` answers "no reply" for the first and stops for the second).
Their message names only the exception class and the HTTP status: a provider's own message
can quote the prompt, which may hold what the redactor did not catch.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from shared.contract.errors import MemoryServiceError, SourceUnavailableError, UnknownError

Message = dict[str, str]

# Exception class names (matched along the class's MRO, so subclasses count) that mean "try
# again later": litellm's exceptions (litellm/exceptions.py), the openai client's, Python's.
TRANSIENT_NAMES = frozenset(
    {
        "Timeout",
        "APITimeoutError",
        "TimeoutError",
        "APIConnectionError",
        "ConnectionError",
        "RateLimitError",
        "ServiceUnavailableError",
        "InternalServerError",
        "BadGatewayError",
    }
)
# HTTP statuses worth retrying (besides 5xx): request timeout, conflict, too many requests.
TRANSIENT_STATUSES = frozenset({408, 409, 429})


class LLMError(MemoryServiceError):
    """A model call failed (either kind below); never raised itself."""


class LLMUnavailableError(SourceUnavailableError, LLMError):
    """Raised when the model call failed for a reason that may pass: retry it later."""


class LLMRejectedError(UnknownError, LLMError):
    """Raised when the provider refused the call as sent: retrying the same call cannot help."""

    default_retryable = False


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


@dataclass(frozen=True)
class Prompt:
    """One chat completion asked of a model: what every backend receives (``LLM.send``)."""

    messages: list[Message]
    model: str
    timeout_s: float | None = None
    max_tokens: int | None = None
    temperature: float | None = 0.0
    json_object: bool = False

    def options(self) -> dict[str, object]:
        """Everything but the messages, by name."""
        return {k: v for k, v in vars(self).items() if k != "messages"}


class LLM(ABC):
    """One chat completion. ``temperature=None`` leaves the provider's default;
    ``max_tokens=None`` and ``timeout_s=None`` set no limit of ours; ``json_object`` asks for a
    JSON reply where the provider supports it (others get the call without it). A backend
    implements ``send``; every failure it raises goes through ``classify``."""

    def complete(
        self,
        messages: list[Message],
        *,
        model: str,
        timeout_s: float | None = None,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
        json_object: bool = False,
    ) -> Completion:
        return self.send(Prompt(messages, model, timeout_s, max_tokens, temperature, json_object))

    @abstractmethod
    def send(self, prompt: Prompt) -> Completion:
        """The completion of ``prompt``, or the policy's typed error."""


def is_transient(e: BaseException) -> bool:
    """Whether ``e`` is a failure the same call may not meet again (the policy above)."""
    if any(cls.__name__ in TRANSIENT_NAMES for cls in type(e).__mro__):
        return True
    status = getattr(e, "status_code", None)
    return isinstance(status, int) and (status in TRANSIENT_STATUSES or status >= 500)


def classify(e: BaseException) -> MemoryServiceError:
    """``e`` as the error tree says it (the module docstring's policy)."""
    if isinstance(e, MemoryServiceError):
        return e
    name = type(e).__name__
    status = getattr(e, "status_code", None)
    detail = f"LLM call failed: {name}" + (f" (HTTP {status})" if status else "")
    if is_transient(e):
        return LLMUnavailableError(detail)
    return LLMRejectedError(detail)
