"""``FakeLLM``: the ``LLM`` interface answering from a script, shipped for tests and demos."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from shared.llm.base import LLM, Completion, LLMRejectedError, Message, Prompt, classify

Reply = str | BaseException | Callable[[list[Message]], str]


@dataclass
class FakeLLM(LLM):
    """Each call takes the next reply (a string, an exception to raise, or a function of the
    messages); the last reply repeats. ``calls`` records the messages it received, ``options``
    the keywords of each call. A scripted exception goes through the same error policy as a
    real backend's (``shared.llm.base.classify``): a ``TimeoutError`` arrives as a retryable
    ``LLMUnavailableError``, an already typed error unchanged."""

    replies: list[Reply] = field(default_factory=list)
    calls: list[list[Message]] = field(default_factory=list)
    options: list[dict[str, object]] = field(default_factory=list)
    tokens_per_call: tuple[int, int] = (100, 20)

    @classmethod
    def of(cls, *replies: Reply) -> FakeLLM:
        return cls(replies=list(replies))

    def script(self, replies: Iterable[Reply]) -> None:
        self.replies.extend(replies)

    def send(self, prompt: Prompt) -> Completion:
        messages, model = prompt.messages, prompt.model
        self.calls.append([dict(m) for m in messages])
        self.options.append(prompt.options())
        if not self.replies:
            raise LLMRejectedError("FakeLLM has no scripted reply")
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, BaseException):
            raise classify(reply) from reply
        text = reply(messages) if callable(reply) else reply
        return Completion(
            text=text,
            model=model,
            prompt_tokens=self.tokens_per_call[0],
            completion_tokens=self.tokens_per_call[1],
            latency_ms=0.0,
        )
