"""Any OpenAI-compatible server for the extractor and ``memory chat``, through litellm's real
HTTP path to a local stub (tests/shared/llm/stub.py): the base URL and the key from the
variable a setting names reach it, and ``memory up`` hands both to the actors under
``MEMORY_*`` names, never through an inherited ``OPENAI_API_BASE``. The key is never shown."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from ulid import ULID

from extract_worker.actor import ExtractorActor
from extract_worker.core import Extractor
from extract_worker.settings import ExtractorSettings
from shared.cli import build_parser, run
from shared.cli.cluster import settings_env
from shared.contract.errors import InvalidArgumentError
from store_worker.core import MemoryStore
from tests.shared.llm.stub import Server, serving

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import

LOCAL_MODEL = "openai/local-model"  # litellm's OpenAI client; the server sees local-model
EXTRACT_KEY = "sk-local-extract-7f3a9c"
CHAT_KEY = "sk-local-chat-41d0be"
TUE = {"memories": [{"text": "The user publishes blog posts on Tuesdays."}], "rules": []}
TURN = [
    {"role": "user", "content": "I publish on Tuesdays"},
    {"role": "assistant", "content": "Noted."},
]


@pytest.fixture
def server() -> Iterator[Server]:
    yield from serving()


@pytest.fixture
def elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """An inherited environment pointing litellm at another server with another key: what
    a shell's ``OPENAI_API_BASE`` did before; the configured endpoint must win."""
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-inherited-wrong")


def extraction_env(server: Server) -> dict[str, str]:
    return {
        "MEMORY_EXTRACTION_MODEL": LOCAL_MODEL,
        "MEMORY_EXTRACTION_API_BASE": server.url,
        "MEMORY_EXTRACTION_API_KEY_ENV": "LOCAL_EXTRACT_KEY",
        "LOCAL_EXTRACT_KEY": EXTRACT_KEY,
    }


def test_the_embedded_extractor_calls_the_configured_server_with_the_named_key(
    server: Server, tmp_path: Path, elsewhere: None
) -> None:
    # Given extraction settings naming a local server and the variable holding its key
    server.reply = json.dumps(TUE)
    settings = ExtractorSettings.from_env(extraction_env(server))
    store = MemoryStore(tmp_path / "data")
    try:
        extractor = Extractor(store, settings.llm(), settings)
        store.turn_completed("s1", str(ULID()), TURN)
        # When the extractor drains the outbox
        stats = extractor.drain()
        texts = [m.text for m in store.list().memories]
    finally:
        store.close()
    # Then the call went to that server, with that key, and its reply was applied
    assert stats.done == 1 and texts == ["The user publishes blog posts on Tuesdays."]
    ((path, headers, body),) = server.requests
    assert path == "/v1/chat/completions" and body["model"] == "local-model"
    assert headers["authorization"] == f"Bearer {EXTRACT_KEY}"


def test_memory_chat_calls_its_server_and_the_embedded_extractor_calls_its_own(
    server: Server,
    tmp_path: Path,
    elsewhere: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Given a chat on a local server (--api-base, --api-key-env) in the embedded mode, with
    # extraction configured through MEMORY_EXTRACTION_* on the same server with its own key
    server.reply = json.dumps(TUE)
    for name, value in extraction_env(server).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LOCAL_CHAT_KEY", CHAT_KEY)
    monkeypatch.setattr("sys.stdin", io.StringIO("I publish on Tuesdays\n/quit\n"))
    argv = ["--data-dir", str(tmp_path / "data"), "chat", "--model", LOCAL_MODEL]
    argv += ["--api-base", server.url, "--api-key-env", "LOCAL_CHAT_KEY"]
    # When one turn is typed
    code = run(argv, err=io.StringIO())
    # Then the chat's call and the extractor's reached the stub, each with its key
    assert code == 0
    assert "assistant> " + json.dumps(TUE) in capsys.readouterr().out
    keys = [headers["authorization"] for _, headers, _ in server.requests]
    assert keys == [f"Bearer {CHAT_KEY}", f"Bearer {EXTRACT_KEY}"]


def test_memory_chat_refuses_a_key_variable_that_is_not_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_VARIABLE", raising=False)
    err = io.StringIO()
    argv = ["--data-dir", str(tmp_path / "data"), "chat", "--model", LOCAL_MODEL]
    code = run([*argv, "--api-key-env", "NO_SUCH_KEY_VARIABLE"], err=err)
    assert code == 2 and "NO_SUCH_KEY_VARIABLE is not set" in err.getvalue()


# -- memory up: what the actors are started with --------------------------------------------


def test_up_hands_the_endpoint_and_the_key_to_the_actors_under_memory_names(
    server: Server, tmp_path: Path
) -> None:
    # Given `up`'s shell: the endpoint settings, the key in the variable they name, and an
    # OPENAI_API_BASE / OPENAI_API_KEY that must not be what the actors rely on
    shell = {
        **extraction_env(server),
        "MEMORY_DATA_DIR": str(tmp_path / "data"),
        "MEMORY_CONSOLIDATE_JUDGE_API_BASE": server.url,
        "MEMORY_CONSOLIDATE_JUDGE_API_KEY_ENV": "LOCAL_JUDGE_KEY",
        "LOCAL_JUDGE_KEY": "sk-local-judge-0c11",
        "OPENAI_API_BASE": "http://127.0.0.1:9/v1",
        "OPENAI_API_KEY": "sk-inherited-wrong",
        "MEMORY_CHAT_API_KEY_ENV": "LOCAL_CHAT_KEY",  # the chat's: no actor needs it
        "LOCAL_CHAT_KEY": CHAT_KEY,
    }
    # When `up` builds the actors' settings
    env = settings_env(shell)
    # Then the base and the key are there under MEMORY_ names, and nothing of OPENAI_*
    assert env["MEMORY_EXTRACTION_API_BASE"] == server.url
    assert env["MEMORY_EXTRACTION_API_KEY"] == EXTRACT_KEY
    assert env["MEMORY_CONSOLIDATE_JUDGE_API_BASE"] == server.url
    assert env["MEMORY_CONSOLIDATE_JUDGE_API_KEY"] == "sk-local-judge-0c11"
    assert all(k.startswith("MEMORY_") for k in env)
    assert "sk-inherited-wrong" not in env.values() and "http://127.0.0.1:9/v1" not in env.values()
    assert CHAT_KEY not in env.values()
    # And an actor's settings, read from that env alone, call the server with the key
    settings = ExtractorSettings.from_env(env)
    assert settings.llm().complete(TURN, model=LOCAL_MODEL).text == "from the stub"
    ((_, headers, _),) = server.requests
    assert headers["authorization"] == f"Bearer {EXTRACT_KEY}"


def test_up_refuses_a_named_key_variable_that_is_not_set(tmp_path: Path) -> None:
    shell = {"MEMORY_DATA_DIR": str(tmp_path), "MEMORY_EXTRACTION_API_KEY_ENV": "UNSET_KEY"}
    with pytest.raises(InvalidArgumentError, match="MEMORY_EXTRACTION_API_KEY_ENV names UNSET_KEY"):
        settings_env(shell)


def test_the_up_flags_reach_the_actors_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given keys in this shell's variables
    monkeypatch.setenv("LOCAL_EXTRACT_KEY", EXTRACT_KEY)
    monkeypatch.setenv("LOCAL_JUDGE_KEY", "sk-local-judge-0c11")
    # When `memory up` is given the endpoint flags
    up = ["up", "--extraction-api-base", "http://127.0.0.1:8080/v1"]
    up += ["--extraction-api-key-env", "LOCAL_EXTRACT_KEY"]
    up += ["--judge-api-base", "http://127.0.0.1:8081/v1", "--judge-api-key-env", "LOCAL_JUDGE_KEY"]
    args = build_parser().parse_args(up)
    # Then the actors' settings carry the bases and the keys (read by `up`, not by them)
    assert args.worker_env == {
        "MEMORY_EXTRACTION_API_BASE": "http://127.0.0.1:8080/v1",
        "MEMORY_EXTRACTION_API_KEY": EXTRACT_KEY,
        "MEMORY_CONSOLIDATE_JUDGE_API_BASE": "http://127.0.0.1:8081/v1",
        "MEMORY_CONSOLIDATE_JUDGE_API_KEY": "sk-local-judge-0c11",
    }


def test_an_up_key_flag_naming_an_unset_variable_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("UNSET_KEY", raising=False)
    with pytest.raises(SystemExit) as caught:
        build_parser().parse_args(["up", "--extraction-api-key-env", "UNSET_KEY"])
    assert caught.value.code == 2 and "UNSET_KEY is not set" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "words"),
    [
        ("--extraction-api-base", "OpenAI-compatible server"),
        ("--extraction-api-key-env", "NAME of the environment variable"),
        ("--judge-api-base", "OpenAI-compatible server"),
        ("--judge-api-key-env", "NAME of the environment variable"),
    ],
)
def test_each_up_flag_is_explained_in_help(flag: str, words: str) -> None:
    parser = build_parser()
    up = parser._subparsers._group_actions[0].choices["up"]  # type: ignore[union-attr]
    (action,) = [a for a in up._actions if flag in a.option_strings]
    assert words in action.help and "e.g." in action.help
    assert flag in up.format_help()


# -- the key is never shown -----------------------------------------------------------------


def test_the_key_is_in_no_repr_status_or_store_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an actor's settings env holding the key, as `up` builds it
    env = {
        "MEMORY_EXTRACTION_MODEL": LOCAL_MODEL,
        "MEMORY_EXTRACTION_API_BASE": "http://127.0.0.1:8080/v1",
        "MEMORY_EXTRACTION_API_KEY": EXTRACT_KEY,
        "MEMORY_DATA_DIR": str(tmp_path / "data"),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = ExtractorSettings.from_env(env)
    llm = settings.llm()
    shown = [repr(settings), str(settings), settings.model_dump_json(), repr(llm)]
    shown.append(json.dumps(settings.model_dump(mode="json")))
    # the actor's repr (what Ray's dashboard shows), built without Ray
    actor = ExtractorActor.__new__(ExtractorActor)
    actor.settings, actor.outbox = settings, (0, 0, 0)
    actor.metrics = SimpleNamespace(last=None)  # type: ignore[assignment]
    store = MemoryStore(tmp_path / "data")
    try:
        actor.core = Extractor(store, llm, settings)
        actor.core.publish_status()  # what `doctor` and status read back
        shown.append(repr(actor))
        shown.append(json.dumps(store.state_get("extractor", "status"), default=str))
    finally:
        store.close()
    # and what the CLI prints of the store (run embedded, from the same environment)
    for argv in (
        ["status"],
        ["describe"],
        ["capabilities"],
        ["doctor"],
        ["configure", "recall_limit=7"],
    ):
        for style in ([], ["--json"]):
            out, err = io.StringIO(), io.StringIO()
            code = run([*style, "--data-dir", str(tmp_path / "data"), *argv], out=out, err=err)
            assert code == 0 and out.getvalue(), (argv, err.getvalue())
            shown += [out.getvalue(), err.getvalue()]
    assert settings.extraction_api_key is not None  # it is there ...
    assert settings.extraction_api_key.get_secret_value() == EXTRACT_KEY
    for text in shown:
        assert EXTRACT_KEY not in text  # ... and shown nowhere
    assert "ExtractorActor(on (openai/local-model)" in shown[5]
