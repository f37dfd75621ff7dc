"""``LiteLLMBackend`` through litellm's real call path: its mock provider (``mock_response=``)
for replies and for each kind of provider error, and a local OpenAI-compatible HTTP server for
``api_base``/``api_key``. No network, no key."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.contract.errors import SourceUnavailableError, UnknownError
from shared.llm import (
    LiteLLMBackend,
    LLMError,
    LLMRejectedError,
    LLMUnavailableError,
    create_llm,
)
from tests.shared.llm.stub import Server, serving

MODEL = "openai/gpt-4o-mini"
HI = [{"role": "user", "content": "hi, my key is sk-proj-xyz"}]
ROOT = Path(__file__).resolve().parents[3]


def provider_error(name: str) -> Exception:
    """litellm's own exception ``name``, as a provider call raises it."""
    import litellm

    cls = getattr(litellm, name)
    said = {"message": "you said sk-proj-xyz", "llm_provider": "openai", "model": "gpt-4o-mini"}
    if name == "PermissionDeniedError":
        import httpx

        request = httpx.Request("POST", "https://api.openai.com/v1/chat/completions")
        return cls(**said, response=httpx.Response(403, request=request))
    return cls(**said)


def test_a_reply_comes_back_with_its_tokens_and_latency() -> None:
    out = LiteLLMBackend(mock_response='{"memories": []}').complete(
        HI, model=MODEL, timeout_s=5, max_tokens=50
    )
    assert out.text == '{"memories": []}' and out.model == MODEL
    assert out.tokens > 0 and out.latency_ms >= 0


TRANSIENT = [
    "RateLimitError",
    "Timeout",
    "APIConnectionError",
    "ServiceUnavailableError",
    "InternalServerError",
    "BadGatewayError",
]
REFUSED = [
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "BadRequestError",
    "ContextWindowExceededError",
    "ContentPolicyViolationError",
]


@pytest.mark.parametrize(
    ("name", "raised", "base", "retryable", "category"),
    [
        (n, LLMUnavailableError, SourceUnavailableError, True, "source_unavailable")
        for n in TRANSIENT
    ]
    + [(n, LLMRejectedError, UnknownError, False, "unknown") for n in REFUSED],
    ids=TRANSIENT + REFUSED,
)
def test_a_transient_failure_is_retryable_and_a_refused_call_is_not(
    name: str, raised: type[LLMError], base: type[Exception], retryable: bool, category: str
) -> None:
    with pytest.raises(raised) as caught:
        LiteLLMBackend(mock_response=provider_error(name)).complete(HI, model=MODEL)
    error = caught.value
    assert isinstance(error, base) and isinstance(error, LLMError)
    assert bool(error.retryable) is retryable and error.category == category
    assert name in error.message and "sk-proj" not in str(error)  # the prompt stays out


def test_an_unnamed_server_failure_is_transient_too() -> None:
    # litellm's mock turns a plain exception into an HTTP 500 from the provider
    with pytest.raises(LLMUnavailableError) as caught:
        LiteLLMBackend(mock_response=Exception("boom")).complete(HI, model=MODEL)
    assert "HTTP 500" in caught.value.message


def test_the_typed_errors_survive_pickling() -> None:
    # Ray moves errors between processes by pickling them
    for error in (LLMUnavailableError("down"), LLMRejectedError("refused")):
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and back.retryable == error.retryable


# -- a local OpenAI-compatible server (tests/shared/llm/stub.py) -----------------------------


@pytest.fixture
def server() -> Iterator[Server]:
    yield from serving()


def test_api_base_and_key_reach_an_openai_compatible_server(server: Server) -> None:
    llm = create_llm(api_base=server.url, api_key="local-test-key")
    out = llm.complete(HI, model="openai/local-model", timeout_s=10, max_tokens=20)
    assert out.text == "from the stub" and (out.prompt_tokens, out.completion_tokens) == (7, 3)
    ((path, headers, body),) = server.requests
    assert path == "/v1/chat/completions" and body["model"] == "local-model"
    assert headers["authorization"] == "Bearer local-test-key"
    assert body["messages"] == HI and body["max_tokens"] == 20 and body["temperature"] == 0
    assert "local-test-key" not in repr(llm)


@pytest.mark.parametrize(
    ("status", "error"),
    [(503, LLMUnavailableError), (429, LLMUnavailableError), (401, LLMRejectedError)],
)
def test_the_server_status_decides_the_error(
    server: Server, status: int, error: type[LLMError]
) -> None:
    server.status = status
    llm = create_llm(api_base=server.url, api_key="k", max_retries=0)
    with pytest.raises(error) as caught:
        llm.complete(HI, model="openai/local-model", timeout_s=10)
    assert f"HTTP {status}" in caught.value.message


# -- importing -------------------------------------------------------------------------------


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=90
    )


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def test_importing_the_package_does_not_import_litellm() -> None:
    code = "import sys, shared.llm; assert 'litellm' not in sys.modules, 'imported'"
    done = run_python(code, clean_env())
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_litellm_is_loaded_with_the_local_cost_map() -> None:
    # Given a process whose environment does not ask for the local cost map
    code = (
        "from shared.llm.litellm import load_litellm\n"
        "load_litellm()\n"
        "from litellm.litellm_core_utils.get_model_cost_map import "
        "get_model_cost_map_source_info as info\n"
        "print(info()['source'], info()['is_env_forced'])\n"
    )
    # When it loads litellm through the adapter
    done = run_python(code, clean_env())
    # Then litellm read its own map, fetched nothing and warned about nothing
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["local", "True"]
    assert "cost map" not in done.stderr.lower()
