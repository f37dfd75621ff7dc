"""Where a model's calls go and with which key: one rule for the extractor, the judge and chat.

A caller names an OpenAI-compatible server (llama.cpp's server, Ollama, vLLM) with an
``api_base`` URL, and its key by the NAME of the environment variable that holds it
(``MEMORY_EXTRACTION_API_KEY_ENV=OPENAI_API_KEY``), never the key itself on a command line.

- ``api_key(env, "MEMORY_EXTRACTION_API_KEY")``: the key for a setting, read from ``env`` alone:
  the value of the variable ``MEMORY_EXTRACTION_API_KEY_ENV`` names, else
  ``MEMORY_EXTRACTION_API_KEY`` itself (how ``memory up`` hands the key to an actor). ``None``
  leaves litellm to read its own provider variable (``OPENAI_API_KEY`` ...).
- ``resolve_named_keys(source)``: for each ``MEMORY_*_API_KEY_ENV=NAME`` in ``source``, the
  ``MEMORY_*_API_KEY`` it stands for, holding ``source[NAME]``: what ``memory up`` adds to the
  actors' settings, so an actor started from any shell gets the key explicitly.
- ``key_from_variable(name)``: the value of ``name`` in this process's environment, or
  ``InvalidArgumentError`` (the ``--...-api-key-env`` flags).

A key is carried as pydantic's ``SecretStr`` in the settings, so no repr, log line or
``model_dump(mode="json")`` shows it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from shared.contract.errors import InvalidArgumentError

KEY_ENV_SUFFIX = "_ENV"
# `memory chat` runs in the user's own shell and reads its key there: no actor is given it.
NOT_FOR_ACTORS = ("MEMORY_CHAT_",)


def api_key(env: Mapping[str, str], key_var: str) -> str | None:
    """The key for ``key_var`` (module docstring): the variable ``<key_var>_ENV`` names, else
    ``key_var``; ``None`` when neither is set in ``env``."""
    named = env.get(key_var + KEY_ENV_SUFFIX)
    if named and env.get(named):
        return env[named]
    return env.get(key_var) or None


def key_from_variable(name: str, environ: Mapping[str, str] | None = None) -> str:
    """The value of the environment variable ``name`` (this process's by default)."""
    value = (os.environ if environ is None else environ).get(name)
    if not value:
        raise InvalidArgumentError(f"the API key variable {name} is not set in this environment")
    return value


def resolve_named_keys(source: Mapping[str, str]) -> dict[str, str]:
    """``MEMORY_*_API_KEY`` → key, for each ``MEMORY_*_API_KEY_ENV`` set in ``source`` (the
    named variable must be set: a key asked for and missing is refused here, not met later as
    a provider's 401 in an actor's log)."""
    keys = {}
    for var, name in source.items():
        if var.startswith(NOT_FOR_ACTORS):
            continue
        if var.startswith("MEMORY_") and var.endswith("_API_KEY" + KEY_ENV_SUFFIX) and name:
            if not source.get(name):
                raise InvalidArgumentError(f"{var} names {name}, which is not set")
            keys[var.removesuffix(KEY_ENV_SUFFIX)] = source[name]
    return keys
