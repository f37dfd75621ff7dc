"""``FakeLLM``, the scripted backend that ships with the adapter, and the backend factory."""

from __future__ import annotations

import pytest

from shared.contract.errors import InvalidArgumentError, NotFoundError
from shared.llm import (
    LLM,
    FakeLLM,
    LiteLLMBackend,
    LLMRejectedError,
    LLMUnavailableError,
    create_llm,
)

HI = [{"role": "user", "content": "hi"}]


def test_replies_come_in_order_and_the_last_one_repeats() -> None:
    llm = FakeLLM.of("one", lambda messages: f"echo {messages[-1]['content']}")
    texts = [llm.complete(HI, model="fake/x").text for _ in range(3)]
    assert texts == ["one", "echo hi", "echo hi"]
    assert llm.calls == [HI, HI, HI]
    assert llm.complete(HI, model="fake/x").tokens == 120


def test_it_records_the_options_of_each_call() -> None:
    llm = FakeLLM.of("{}")
    llm.complete(HI, model="fake/x", timeout_s=2.0, max_tokens=9, json_object=True)
    assert llm.options == [
        {
            "model": "fake/x",
            "timeout_s": 2.0,
            "max_tokens": 9,
            "temperature": 0.0,
            "json_object": True,
        }
    ]


@pytest.mark.parametrize(
    ("scripted", "expected", "retryable"),
    [
        (TimeoutError("slow"), LLMUnavailableError, True),
        (ConnectionError("reset"), LLMUnavailableError, True),
        (ValueError("odd"), LLMRejectedError, False),
        (NotFoundError("already typed"), NotFoundError, False),
    ],
)
def test_a_scripted_failure_goes_through_the_error_policy(
    scripted: Exception, expected: type[Exception], retryable: bool
) -> None:
    with pytest.raises(expected) as caught:
        FakeLLM.of(scripted).complete(HI, model="fake/x")
    assert getattr(caught.value, "retryable", None) is retryable
    if isinstance(scripted, NotFoundError):
        assert caught.value is scripted  # a typed error passes unchanged


def test_an_empty_script_is_a_refusal() -> None:
    with pytest.raises(LLMRejectedError):
        FakeLLM().complete(HI, model="fake/x")


def test_the_factory_builds_each_backend() -> None:
    real = create_llm(api_base="http://127.0.0.1:1/v1")
    assert isinstance(real, LiteLLMBackend) and real.api_base == "http://127.0.0.1:1/v1"
    fake = create_llm("fake", replies=["ok"])
    assert isinstance(fake, FakeLLM) and fake.complete(HI, model="fake/x").text == "ok"
    assert isinstance(real, LLM) and isinstance(fake, LLM)
    with pytest.raises(InvalidArgumentError):
        create_llm("nope")
