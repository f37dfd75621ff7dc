"""Secrets never reach the outbox, the LLM, the store, an event or a log.

The extraction model is a litellm ``CustomLLM`` registered as ``stub/...`` (offline), and the
assertions are on what that provider RECEIVED, through the real ``LiteLLMBackend``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from extract_worker.core import Extractor
from extract_worker.settings import ExtractorSettings
from shared.contract.clock import FakeClock
from shared.contract.models import Event
from shared.llm import LiteLLMBackend
from store_worker.core import MemoryStore

# One value per shape family the redactor covers.
SECRETS = {
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
    "anthropic": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-abcdefghij",
    "github": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "jwt": (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
        ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    ),
    "bearer": "Authorization: Bearer abcDEF1234567890ghiJKL1234567890",
    "url": "postgres://admin:Sup3rS3cretPw@db.internal:5432/app",
    "password": "password=hunter2hunter2",
}
VALUES = {
    "openai": SECRETS["openai"],
    "anthropic": SECRETS["anthropic"],
    "github": SECRETS["github"],
    "aws": SECRETS["aws"],
    "jwt": SECRETS["jwt"],
    "bearer": "abcDEF1234567890ghiJKL1234567890",
    "url": "Sup3rS3cretPw",
    "password": "hunter2hunter2",
}


class StubProvider:
    """Builds a litellm ``CustomLLM`` that records every request and answers from a script."""

    def __init__(self) -> None:
        import litellm
        from litellm import CustomLLM

        self.received: list[list[dict[str, Any]]] = []
        self.replies: list[Any] = []
        outer = self

        class Handler(CustomLLM):  # type: ignore[misc]
            def completion(self, *args: Any, **kwargs: Any) -> Any:
                outer.received.append(kwargs["messages"])
                reply = outer.replies.pop(0) if len(outer.replies) > 1 else outer.replies[0]
                if isinstance(reply, Exception):
                    raise reply
                return litellm.completion(
                    model="gpt-4o-mini", messages=kwargs["messages"], mock_response=reply
                )

        self.handler = Handler()


@pytest.fixture
def stub() -> Iterator[StubProvider]:
    import litellm

    saved = list(litellm.custom_provider_map)
    provider = StubProvider()
    litellm.custom_provider_map = [{"provider": "stub", "custom_handler": provider.handler}]
    yield provider
    litellm.custom_provider_map = saved


def all_text_under(root: Path) -> str:
    return "\n".join(p.read_text("utf-8", errors="replace") for p in root.rglob("*") if p.is_file())


def test_no_secret_reaches_outbox_prompt_store_events_or_logs(
    stub: StubProvider,
    fresh_store: Callable[..., MemoryStore],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    clock = FakeClock()
    store = fresh_store(clock=clock)
    events: list[Event] = []
    store.subscribe("t", events.append)
    # Given a turn full of secrets, and a model that echoes some back
    said = "Answer in English. Here are my credentials: " + "; ".join(SECRETS.values())
    stub.replies = [
        json.dumps(
            {
                "memories": [
                    {"text": f"The user's deploy uses {SECRETS['url']}", "tags": ["deploy"]},
                    {"text": "The user deploys with Postgres", "entities": [SECRETS["github"]]},
                ],
                "rules": [f"Always authenticate with {SECRETS['password']}", "Answer in English."],
            }
        )
    ]
    ex = Extractor(
        store, LiteLLMBackend(), ExtractorSettings(extraction_model="stub/extract"), clock=clock
    )
    # When the turn completes and is extracted
    res = store.turn_completed("s1", str(ULID()), [{"role": "user", "content": said}])
    outbox_text = all_text_under(store.root / ".outbox")
    assert ex.drain().done == 1
    # Then no secret value appears anywhere
    sent = json.dumps(stub.received)
    places = {
        "outbox": outbox_text,
        "prompt": sent,
        "store": all_text_under(store.root),
        "events": "\n".join(e.model_dump_json() for e in events),
        "logs": caplog.text,
    }
    for where, text in places.items():
        for name, value in VALUES.items():
            assert value not in text, f"{name} leaked into {where}"
    assert "[REDACTED:" in sent and set(res.redacted) >= {"openai_key", "github_token", "jwt"}
    # and what was safe still arrived
    assert [m.text for m in store.list().memories] == ["The user deploys with Postgres"]
    assert "- Answer in English." in store.rule_get("learned").content


# Shapes that once reached the prompt: command-line passwords, a Discord bot token,
# and keys typed in full-width characters (NFKC folds them to ASCII).
def _full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


ONCE_MISSED = {
    "curl -u": ("curl -u deploy:Zx9kLm2pQ7vR https://ci.example.com", "Zx9kLm2pQ7vR"),
    "mysql -p": ("mysql -u root -pS3cr3tPassw0rd app", "S3cr3tPassw0rd"),
    "sshpass": ("sshpass -p 'hunter2Xy9qW' ssh deploy@host", "hunter2Xy9qW"),
    "discord": (
        "bot MTA1NjQ1NjQ1NjQ1NjQ1NjQ1Ng.GhJk12.abcdefghijklmnopqrstuvwxyz0123456789AB",
        "MTA1NjQ1NjQ1NjQ1NjQ1NjQ1Ng.GhJk12.abcdefghijklmnopqrstuvwxyz0123456789AB",
    ),
    "full-width aws": (_full_width("AKIAIOSFODNN7EXAMPLE"), "AKIAIOSFODNN7EXAMPLE"),
}


def test_once_missed_shapes_never_reach_the_prompt_and_leave_no_placeholder_label(
    stub: StubProvider, fresh_store: Callable[..., MemoryStore]
) -> None:
    from shared.redact import is_placeholder

    clock = FakeClock()
    store = fresh_store(clock=clock)
    events: list[Event] = []
    store.subscribe("t", events.append)
    said = "; ".join(text for text, _ in ONCE_MISSED.values())
    # Given a model that echoes the (redacted) transcript back as a memory, tags and entities
    stub.replies = [
        json.dumps(
            {
                "memories": [
                    {
                        "text": "The user deploys to the Kestrel box over ssh",
                        "tags": ["[REDACTED:password]", "deploy"],
                        "entities": ["redacted", "password]", "Kestrel"],
                    }
                ]
            }
        )
    ]
    ex = Extractor(
        store, LiteLLMBackend(), ExtractorSettings(extraction_model="stub/extract"), clock=clock
    )
    # When the turn completes and is extracted
    store.turn_completed("s1", str(ULID()), [{"role": "user", "content": said}])
    assert ex.drain().done == 1
    # Then no value is in the prompt, the store's files or the events
    places = {
        "prompt": json.dumps(stub.received, ensure_ascii=False),
        "store": all_text_under(store.root),
        "events": "\n".join(e.model_dump_json() for e in events),
    }
    for where, text in places.items():
        for name, (_, value) in ONCE_MISSED.items():
            for form in (value, value.lower(), _full_width(value)):
                assert form not in text, f"{name} leaked into {where}"
    assert "[REDACTED:password]" in places["prompt"]
    # and the memory it saved has no id, tag or entity made of a placeholder
    (mem,) = store.list().memories
    assert not any(is_placeholder(x) for x in (mem.id, *mem.tags, *mem.entities))
    assert mem.tags == ("deploy",) and "kestrel" in mem.entities
