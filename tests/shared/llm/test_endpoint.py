"""``shared.llm.endpoint``: a key is named by its variable and read from the environment given."""

from __future__ import annotations

import pytest

from shared.contract.errors import InvalidArgumentError
from shared.llm.endpoint import api_key, key_from_variable, resolve_named_keys

VAR = "MEMORY_EXTRACTION_API_KEY"


def test_the_named_variable_wins_then_the_key_itself_then_none() -> None:
    named = {f"{VAR}_ENV": "MY_KEY", "MY_KEY": "k-named", VAR: "k-direct"}
    assert api_key(named, VAR) == "k-named"
    # an actor's env: the name is there but not its variable, the key is (as `up` put it)
    assert api_key({f"{VAR}_ENV": "MY_KEY", VAR: "k-direct"}, VAR) == "k-direct"
    assert api_key({"OPENAI_API_KEY": "k-provider"}, VAR) is None  # litellm reads its own


def test_up_resolves_every_named_key_for_the_actors_but_the_chats() -> None:
    source = {
        "MEMORY_EXTRACTION_API_KEY_ENV": "A",
        "MEMORY_CONSOLIDATE_JUDGE_API_KEY_ENV": "B",
        "MEMORY_CHAT_API_KEY_ENV": "C",
        "A": "ka",
        "B": "kb",
        "C": "kc",
    }
    assert resolve_named_keys(source) == {
        "MEMORY_EXTRACTION_API_KEY": "ka",
        "MEMORY_CONSOLIDATE_JUDGE_API_KEY": "kb",
    }


def test_a_named_variable_that_is_not_set_is_refused_by_name() -> None:
    with pytest.raises(InvalidArgumentError, match="MEMORY_EXTRACTION_API_KEY_ENV names A"):
        resolve_named_keys({"MEMORY_EXTRACTION_API_KEY_ENV": "A"})
    with pytest.raises(InvalidArgumentError, match="NOPE is not set"):
        key_from_variable("NOPE", {})
    assert key_from_variable("K", {"K": "v"}) == "v"
