"""``memory chat`` end to end: a scripted conversation on a stub litellm provider, with
injection and extraction in the loop, ends with the right memory superseded, the rule learned,
and the next session's injection showing both."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from extract_worker.chat import ChatSession, model_complete, run_chat
from extract_worker.core import Extractor
from extract_worker.settings import ExtractorSettings
from shared.cli import run as cli_run
from shared.contract.clock import FakeClock
from shared.llm import FakeLLM, LiteLLMBackend
from store_worker.core import MemoryStore

EXTRACTION_MARK = "You maintain an assistant's long-term memory"
TUE = "The user publishes blog posts on Tuesdays."
WED = "The user publishes blog posts on Wednesdays."
RULE = 'Never start replies with "Certainly".'


class ScriptedModel:
    """One stub provider for both models: a chat reply, or a scripted extraction reply keyed
    on what the user said in the turn (and on the known memory ids the prompt lists)."""

    def __init__(self) -> None:
        self.chat_requests: list[list[dict[str, Any]]] = []
        self.extraction_requests: list[list[dict[str, Any]]] = []

    def reply(self, messages: list[dict[str, Any]]) -> str:
        if EXTRACTION_MARK in messages[0]["content"]:
            self.extraction_requests.append(messages)
            return json.dumps(self.extract(messages[1]["content"]))
        self.chat_requests.append(messages)
        return "Noted."

    @staticmethod
    def extract(prompt: str) -> dict[str, Any]:
        turn = prompt.split("The turn (each message with its date", 1)[1]
        said = " ".join(re.findall(r"\] user: (.*)", turn)).lower()
        if "tuesdays" in said:
            return {"memories": [{"text": TUE, "entities": ["user"], "tags": ["blog"]}]}
        if "wednesdays" in said:
            old = re.search(r"^- ([a-z0-9-]+) \([0-9-]+\): .*Tuesdays", prompt, re.M)
            return {"memories": [{"text": WED, "supersedes": old.group(1) if old else None}]}
        if "certainly" in said:
            return {"memories": [], "rules": [RULE]}
        return {"memories": [], "rules": []}


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    import litellm
    from litellm import CustomLLM

    scripted = ScriptedModel()

    class Handler(CustomLLM):  # type: ignore[misc]
        def completion(self, *args: Any, **kwargs: Any) -> Any:
            text = scripted.reply(kwargs["messages"])
            return litellm.completion(
                model="gpt-4o-mini", messages=kwargs["messages"], mock_response=text
            )

    saved = list(litellm.custom_provider_map)
    litellm.custom_provider_map = [{"provider": "stub", "custom_handler": Handler()}]
    yield scripted
    litellm.custom_provider_map = saved


def session(store: MemoryStore, clock: FakeClock, **kw: Any) -> ChatSession:
    settings = ExtractorSettings(extraction_model="stub/extract")
    extractor = Extractor(store, LiteLLMBackend(), settings, clock=clock)
    extractor.publish_status()
    return ChatSession(
        store,
        model_complete(LiteLLMBackend(), "stub/chat"),
        clock=clock,
        after_turn=extractor.drain,
        **kw,
    )


def test_scripted_conversation_supersedes_learns_and_injects_next_session(
    model: ScriptedModel, fresh_store: Callable[..., MemoryStore]
) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    # Given a first session in which the user states, corrects and instructs
    first = session(store, clock)
    out = io.StringIO()
    lines = [
        "I publish on Tuesdays",
        "what should I write about next?",
        "actually, Wednesdays",
        "never start replies with Certainly",
        "/quit",
        "this is never sent",
    ]
    assert run_chat(first, lines, out) == 4
    assert out.getvalue().count("assistant> Noted.") == 4
    assert len(model.extraction_requests) == 4  # one LLM call per turn
    # Then the Tuesday memory is superseded by the Wednesday one
    every = {m.text: m for m in store.list(include_superseded=True).memories}
    assert every[TUE].superseded_by == every[WED].id and every[WED].invalid_at is None
    assert "user" in every[TUE].entities
    # and the rule is in `learned`
    assert store.rule_get("learned").content == f"- {RULE}\n"
    # When a new session asks about it
    clock.advance(days=1)
    second = session(store, clock)
    shown = io.StringIO()
    run_chat(second, ["when do I publish?"], shown, show_memory=True)
    # Then its injection carries both: the learned rule in the system prompt ...
    request = model.chat_requests[-1]
    system = request[0]["content"]
    assert request[0]["role"] == "system" and f"## learned\n- {RULE}" in system
    # ... and the current memory (not the superseded one) in the recalled block
    block = next(m["content"] for m in request if m["content"].startswith("<memory bank="))
    assert WED in block and TUE not in block
    assert all(set(m) == {"role", "content"} for m in request)  # no harness fields leak out
    assert "[memory] system prompt section:" in shown.getvalue() and WED in shown.getvalue()


def test_running_session_gets_the_learned_rule_as_one_update(
    model: ScriptedModel, fresh_store: Callable[..., MemoryStore]
) -> None:
    clock = FakeClock()
    store = fresh_store(clock=clock)
    chat = session(store, clock)
    chat.send("never start replies with Certainly")
    record = chat.send("ok, tell me a joke")
    (update,) = [m for m in record.appended if m["content"].startswith('<memory update="rules"')]
    assert RULE in update["content"]
    later = chat.send("another one").appended
    assert not [m for m in later if m["content"].startswith('<memory update="rules"')]


def test_failed_llm_turn_is_still_queued(fresh_store: Callable[..., MemoryStore]) -> None:
    store = fresh_store()

    def broken(messages: list[dict[str, str]]) -> str:
        raise RuntimeError("provider down")

    chat = ChatSession(store, broken)
    with pytest.raises(RuntimeError):
        chat.send("I publish on Tuesdays")
    (job,) = store.outbox_claim(5)
    assert job.status == "failed" and job.messages[0].content == "I publish on Tuesdays"


def test_memory_chat_cli_embedded(
    model: ScriptedModel,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / "data"
    monkeypatch.setattr(sys, "stdin", io.StringIO("I publish on Tuesdays\n/quit\n"))
    code = cli_run(
        [
            "chat",
            "--data-dir",
            str(data),
            "--model",
            "stub/chat",
            "--extraction-model",
            "stub/extract",
            "--show-memory",
        ]
    )
    assert code == 0
    assert "assistant> Noted." in capsys.readouterr().out
    store = MemoryStore(data)
    assert [m.text for m in store.list().memories] == [TUE]
    store.close()
    # `memory outbox` shows the (now empty) queue
    assert cli_run(["outbox", "--data-dir", str(data)]) == 0
    assert "queued 0, leased 0, dead 0" in capsys.readouterr().out
    assert cli_run(["chat", "--data-dir", str(data)]) == 2  # no model: a typed error


def test_a_failed_model_call_says_why_and_the_chat_goes_on(
    fresh_store: Callable[..., MemoryStore],
) -> None:
    """No key for the provider (or an outage): the turn answers with the reason, one line,
    with no secret the provider's error quoted, and the next turn is served."""
    store = fresh_store()
    calls = []

    def flaky(messages: list[dict[str, str]]) -> str:
        calls.append(messages)
        if len(calls) == 1:
            raise RuntimeError(
                "AuthenticationError: Incorrect API key provided: sk-proj-"
                + "Ab1" * 15
                + "\nTraceback and more lines"
            )
        return "Noted."

    out = io.StringIO()
    turns = run_chat(ChatSession(store, flaky), ["hello", "I publish on Tuesdays"], out)
    text = out.getvalue()
    assert turns == 1 and "assistant> Noted." in text
    assert "the model call failed: RuntimeError: AuthenticationError" in text
    assert "Ab1Ab1" not in text and "Traceback" not in text
    jobs = [store.outbox_job(j.job_id) for j in store.outbox_list().jobs]
    assert [j.status for j in jobs] == ["failed", "completed"]


def test_a_refused_model_call_through_the_adapter_says_why_and_the_chat_goes_on(
    fresh_store: Callable[..., MemoryStore],
) -> None:
    """The adapter types a provider's refusal (``LLMRejectedError``, a ``MemoryServiceError``):
    the loop still answers "no reply" and goes on, as for any model failure; only a store
    failure stops it."""
    import litellm

    store = fresh_store()
    refused = litellm.AuthenticationError("Incorrect API key: sk-proj-xyz", "openai", "gpt")
    llm = FakeLLM.of(refused, "Noted.")
    out = io.StringIO()
    turns = run_chat(ChatSession(store, model_complete(llm, "fake/chat")), ["hi", "again"], out)
    text = out.getvalue()
    assert turns == 1 and "assistant> Noted." in text
    assert "the model call failed: LLMRejectedError: LLM call failed: AuthenticationError" in text
    assert "sk-proj" not in text
    assert llm.options[0]["temperature"] is None  # the chat keeps the provider's temperature


def test_memory_outbox_drop_deletes_a_dead_letter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    store = MemoryStore(data)
    msgs = [{"role": "user", "content": "I like tea"}]
    job = store.turn_completed("s1", str(ULID()), msgs).job_id
    assert job is not None
    store.outbox_claim(1)
    store.outbox_fail(job, "the model answered nonsense", dead_letter=True)
    store.close()
    assert cli_run(["outbox", "--data-dir", str(data), "--drop", job]) == 0
    assert f"dropped {job}" in capsys.readouterr().out
    assert cli_run(["outbox", "--data-dir", str(data)]) == 0
    assert "queued 0, leased 0, dead 0" in capsys.readouterr().out
    # a second drop: nothing to drop, a typed error
    assert cli_run(["outbox", "--data-dir", str(data), "--drop", job]) == 2
    assert f"error: not_found: no dead letter {job!r}" in capsys.readouterr().err
