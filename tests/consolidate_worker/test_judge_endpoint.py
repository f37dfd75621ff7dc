"""The judge on any OpenAI-compatible server: ``judge_from(settings)`` with
``MEMORY_CONSOLIDATE_JUDGE_API_BASE`` and the key in the variable
``MEMORY_CONSOLIDATE_JUDGE_API_KEY_ENV`` names reaches a local stub through litellm's real HTTP
path (tests/shared/llm/stub.py), whatever ``OPENAI_API_BASE`` the process inherited; the key
shows in no repr."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from consolidate_worker.judge import judge_from
from consolidate_worker.settings import ConsolidatorSettings
from shared.contract.models import Memory
from tests.shared.llm.stub import Server, serving

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import

JUDGE_KEY = "sk-local-judge-0c11e2"


@pytest.fixture
def server() -> Iterator[Server]:
    yield from serving()


def memory(id_: str, text: str, stated_at: int) -> Memory:
    return Memory.model_validate(
        {"id": id_, "fingerprint": id_, "text": text, "stated_at": stated_at}
        | {"created_at": stated_at, "updated_at": stated_at}
    )


def test_the_judge_calls_the_configured_server_with_the_named_key(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an inherited environment pointing elsewhere, and judge settings naming the stub
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-inherited-wrong")
    server.reply = json.dumps({"decision": "distinct", "keep": None, "reason": "two rooms"})
    env = {
        "MEMORY_CONSOLIDATE_JUDGE_ENABLED": "true",
        "MEMORY_CONSOLIDATE_JUDGE_MODEL": "openai/local-judge",
        "MEMORY_CONSOLIDATE_JUDGE_API_BASE": server.url,
        "MEMORY_CONSOLIDATE_JUDGE_API_KEY_ENV": "LOCAL_JUDGE_KEY",
        "LOCAL_JUDGE_KEY": JUDGE_KEY,
    }
    settings = ConsolidatorSettings.from_env(env)
    judge = judge_from(settings)
    assert judge is not None
    # When it judges a pair
    a = memory("m1", "The office is in room 12", 1_700_000_000_000)
    b = memory("m2", "The office is in room 14", 1_700_000_100_000)
    verdict = judge.decide("contradiction", a, b)
    # Then the stub answered it, asked with the configured key
    assert verdict.decision == "distinct"
    ((path, headers, body),) = server.requests
    assert path == "/v1/chat/completions" and body["model"] == "local-judge"
    assert headers["authorization"] == f"Bearer {JUDGE_KEY}"
    # and the key shows in no repr or dump of the settings or the backend
    for text in (repr(settings), settings.model_dump_json(), repr(judge.llm), repr(judge)):
        assert JUDGE_KEY not in text


def test_the_actor_env_key_is_used_when_no_variable_is_named() -> None:
    # what `memory up` hands the consolidator: the key itself under its MEMORY_ name
    settings = ConsolidatorSettings.from_env({"MEMORY_CONSOLIDATE_JUDGE_API_KEY": JUDGE_KEY})
    assert settings.judge_api_key is not None
    assert settings.judge_api_key.get_secret_value() == JUDGE_KEY
    assert JUDGE_KEY not in repr(settings)
