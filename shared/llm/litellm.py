"""``LiteLLMBackend``: the ``LLM`` interface over ``litellm.completion``.

litellm is imported on the first call, never when this module is: its import costs about 6 s
and 200 MB, which a CLI verb or an actor with extraction off must not pay. ``load_litellm`` is
the one place the project imports it, so every process that does gets the same set-up first:

- ``LITELLM_LOCAL_MODEL_COST_MAP=True`` (unless the environment already sets it), so litellm
  reads the price map it ships with instead of fetching one over the network at import (a
  fetch that fails offline and logs a warning into a chat prompt or a worker's log);
- litellm's loggers held at WARNING: at DEBUG and INFO they log whole requests and replies,
  and a reply can quote a secret the redactor did not know.

``api_base`` and ``api_key`` point the backend at any OpenAI-compatible server (llama.cpp's
server, Ollama, vLLM) explicitly, so it never depends on what environment a worker inherited.
"""

from __future__ import annotations

import logging
import os
import time
from types import ModuleType
from typing import Any

from shared.llm.base import LLM, Completion, Prompt, classify

COST_MAP_VARIABLE = "LITELLM_LOCAL_MODEL_COST_MAP"
_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm")


def load_litellm() -> ModuleType:
    """The litellm module, imported (once per process) with the set-up the module docstring
    describes."""
    os.environ.setdefault(COST_MAP_VARIABLE, "True")
    import litellm

    for name in _LOGGERS:
        logger = logging.getLogger(name)
        if logger.level < logging.WARNING:
            logger.setLevel(logging.WARNING)
    return litellm


class LiteLLMBackend(LLM):
    """``litellm.completion`` behind ``LLM``; ``extra`` keywords pass through to every call
    and win over the ones built from the arguments (tests use litellm's ``mock_response=``)."""

    def __init__(
        self, *, api_base: str | None = None, api_key: str | None = None, **extra: Any
    ) -> None:
        self.api_base = api_base
        self._api_key = api_key  # not in any repr or log
        self.extra = extra

    def __repr__(self) -> str:
        return f"LiteLLMBackend(api_base={self.api_base!r})"

    def send(self, prompt: Prompt) -> Completion:
        model, messages = prompt.model, prompt.messages
        kwargs: dict[str, Any] = {}
        if prompt.timeout_s is not None:
            kwargs["timeout"] = prompt.timeout_s
        if prompt.max_tokens is not None:
            kwargs["max_tokens"] = prompt.max_tokens
        if prompt.temperature is not None:
            kwargs["temperature"] = prompt.temperature
        if prompt.json_object:
            kwargs["response_format"] = {"type": "json_object"}
            kwargs["drop_params"] = True  # a provider without JSON mode still gets the call
        if self.api_base is not None:
            kwargs["api_base"] = self.api_base
        if self._api_key is not None:
            kwargs["api_key"] = self._api_key
        started = time.perf_counter()
        try:
            litellm = load_litellm()
            response = litellm.completion(
                model=model, messages=messages, **{**kwargs, **self.extra}
            )
        except Exception as e:
            raise classify(e) from e
        latency = (time.perf_counter() - started) * 1000
        usage = getattr(response, "usage", None)
        return Completion(
            text=str(response.choices[0].message.content or ""),
            model=model,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_ms=latency,
        )
