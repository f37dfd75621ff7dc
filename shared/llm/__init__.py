"""One adapter for the language models the workers call: the extractor, the consolidator's
judge and ``memory chat``.

- ``base``: the ``LLM`` interface, ``Completion``, and the one error policy (``classify``:
  a transient failure is a retryable ``LLMUnavailableError``, anything else a non-retryable
  ``LLMRejectedError``);
- ``litellm``: ``LiteLLMBackend`` (any provider litellm knows, or any OpenAI-compatible
  server through ``api_base``/``api_key``), importing litellm only on its first call;
- ``fake``: ``FakeLLM``, answering from a script, for tests;
- ``endpoint``: the one rule for a caller's key: the NAME of the variable holding it
  (``MEMORY_EXTRACTION_API_KEY_ENV=OPENAI_API_KEY``), read where the settings are built, and
  handed by ``memory up`` to the actors as ``MEMORY_*_API_KEY``.

``create_llm`` builds one by name. Importing this package never imports litellm.
"""

from __future__ import annotations

from typing import Any

from shared.contract.errors import InvalidArgumentError
from shared.llm.base import (
    LLM,
    Completion,
    LLMError,
    LLMRejectedError,
    LLMUnavailableError,
    Message,
    classify,
)
from shared.llm.fake import FakeLLM
from shared.llm.litellm import LiteLLMBackend

__all__ = [
    "LLM",
    "Completion",
    "FakeLLM",
    "LLMError",
    "LLMRejectedError",
    "LLMUnavailableError",
    "LiteLLMBackend",
    "Message",
    "classify",
    "create_llm",
]

BACKENDS = ("litellm", "fake")


def create_llm(
    backend: str = "litellm",
    *,
    api_base: str | None = None,
    api_key: str | None = None,
    **extra: Any,
) -> LLM:
    """The backend named ``backend``: ``litellm`` (``api_base``, ``api_key`` and ``extra``
    go to every call) or ``fake`` (``extra["replies"]``: its script)."""
    if backend == "litellm":
        return LiteLLMBackend(api_base=api_base, api_key=api_key, **extra)
    if backend == "fake":
        return FakeLLM(replies=list(extra.get("replies", ())))
    raise InvalidArgumentError(f"unknown LLM backend {backend!r}; one of {', '.join(BACKENDS)}")
