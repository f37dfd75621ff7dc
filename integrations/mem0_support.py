"""What ``integrations.mem0_compat.Memory`` shares with mem0 beyond its methods: the errors a
mem0 user catches (mem0 raises ``ValueError``; these are also this store's typed errors), its
metadata filter operators, the litellm name of a model a mem0 ``llm`` config names, and the
checks of its arguments (ids, limit, messages)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from integrations.stored_json import identifier
from shared.contract.errors import InvalidArgumentError, NotFoundError

IDS = ("user_id", "agent_id", "run_id")


class Mem0InvalidError(InvalidArgumentError, ValueError):
    """Bad input, as mem0 refuses it: a ``ValueError`` (mem0's own) and an
    ``InvalidArgumentError`` (this store's)."""


class Mem0NotFoundError(NotFoundError, ValueError):
    """No such memory for ``update`` / ``delete`` / ``history``: mem0's ``ValueError``."""


# mem0's llm providers as litellm names them (its prefix); None: the model is litellm's name.
PROVIDERS: dict[str, str | None] = {
    "litellm": None,
    "azure_openai": "azure",
    "azure_openai_structured": "azure",
    "openai_structured": "openai",
    "aws_bedrock": "bedrock",
    "together": "together_ai",
    "lmstudio": "lm_studio",
    "vllm": "hosted_vllm",
}
UNCALLABLE = ("langchain",)  # a provider whose config is a Python object, not a model name


# config keys that would change mem0's answers in a way this store cannot: refused, not ignored
UNSUPPORTED = {
    "custom_fact_extraction_prompt": "the store's extractor runs its own prompt",
    "custom_update_memory_prompt": "the store's extractor runs its own prompt",
    "custom_instructions": "the store's extractor runs its own prompt",
    "custom_prompt": "the store's extractor runs its own prompt",
    "graph_store": "this store keeps no graph (answers have no 'relations')",
}


def check_config(config: dict[str, Any]) -> None:
    """Refuse a mem0 config key whose effect this store cannot give (the vector store,
    embedder, history path and version are ignored: the store has its own)."""
    for key, why in UNSUPPORTED.items():
        if config.get(key):
            raise Mem0InvalidError(f"{key} is not supported here: {why}; drop it from the config")


def litellm_model(provider: str | None, model: str | None) -> str | None:
    """The litellm model a mem0 ``{"llm": {"provider", "config": {"model"}}}`` names."""
    if provider in UNCALLABLE:
        raise Mem0InvalidError(
            f"llm provider {provider!r} cannot be used here: name a litellm model "
            '(e.g. {"provider": "openai", "config": {"model": "gpt-4o-mini"}})'
        )
    if not model or not provider:
        return model
    prefix = PROVIDERS.get(provider, provider)
    if prefix is None or model.startswith(f"{prefix}/"):
        return model
    return f"{prefix}/{model}"


def base_url(config: dict[str, Any]) -> str | None:
    """The base URL a mem0 llm config names (``openai_base_url``, ``ollama_base_url`` ...)."""
    for key, value in config.items():
        if (key == "base_url" or key.endswith("_base_url")) and isinstance(value, str) and value:
            return value
    return None


def _contains(have: Any, want: Any) -> bool:
    return isinstance(have, str) and isinstance(want, str) and want in have


def _icontains(have: Any, want: Any) -> bool:
    return isinstance(have, str) and isinstance(want, str) and want.lower() in have.lower()


def _in(have: Any, want: Any) -> bool:
    if not isinstance(want, list | tuple):
        raise Mem0InvalidError("the 'in' and 'nin' filter operators take a list")
    return have in want


def _ordered(compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def check(have: Any, want: Any) -> bool:
        try:
            return have is not None and bool(compare(have, want))
        except TypeError:
            return False  # a value of another kind is not in the range

    return check


OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "gt": _ordered(operator.gt),
    "gte": _ordered(operator.ge),
    "lt": _ordered(operator.lt),
    "lte": _ordered(operator.le),
    "in": _in,
    "nin": lambda have, want: not _in(have, want),
    "contains": _contains,
    "icontains": _icontains,
}
MISSING = object()


def check_filters(filters: dict[str, Any] | None) -> None:
    """Refuse a filter mem0 would refuse (an unknown operator, a logic key without a list),
    before anything is read."""
    matches({}, filters)


def matches(metadata: dict[str, Any], filters: dict[str, Any] | None) -> bool:
    """Whether a memory's payload (its metadata and ids) answers mem0's ``filters``:
    ``{"k": v}``, ``{"k": "*"}`` (any value), ``{"k": {"eq"|"ne"|"gt"|"gte"|"lt"|"lte"|"in"|
    "nin"|"contains"|"icontains": v}}``, and ``AND`` / ``OR`` / ``NOT`` of such filters."""
    answers = []  # every condition is checked, so a bad one is refused whatever the memory
    for key, want in (filters or {}).items():
        if key in ("AND", "OR", "NOT"):
            if not isinstance(want, list) or not want or not all(isinstance(f, dict) for f in want):
                raise Mem0InvalidError(f"the {key} filter takes a non-empty list of filters")
            each = [matches(metadata, f) for f in want]
            answers.append(
                all(each) if key == "AND" else any(each) if key == "OR" else not any(each)
            )
            continue
        have = metadata.get(key, MISSING)
        if want == "*":
            answers.append(have is not MISSING)
        elif isinstance(want, dict):
            ok = True
            for op, value in want.items():
                if op not in OPERATORS:
                    raise Mem0InvalidError(
                        f"unsupported metadata filter operator {op!r} (mem0's: "
                        f"{', '.join(OPERATORS)})"
                    )
                held = OPERATORS[op](None if have is MISSING else have, value)
                if have is MISSING:  # a key it lacks: "not equal" and "not in", as qdrant's
                    held = op in ("ne", "nin")
                ok = ok and held
            answers.append(ok)
        else:
            answers.append(have is not MISSING and have == want)
    return all(answers)


def ids_of(
    user_id: str | None,
    agent_id: str | None,
    run_id: str | None,
    *,
    filters: dict[str, Any] | None = None,
    needed: bool,
    purpose: str = "",
) -> dict[str, str]:
    """The ids given (as arguments, or in ``filters`` as mem0 also takes them), checked."""
    given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    for key in IDS:
        if given[key] is None and filters and plain(filters.get(key)):
            given[key] = filters[key]
    if filters and "user_id" in filters and not plain(filters["user_id"]):
        raise Mem0InvalidError("a user_id filter names one user here (each user is a bank)")
    try:  # mem0 trims an id, and refuses one left empty
        ids = {
            k: identifier(v.strip() if isinstance(v, str) else v, k)
            for k, v in given.items()
            if v is not None
        }
    except InvalidArgumentError as e:
        raise Mem0InvalidError(e.message) from None
    if needed and not ids and not any(k in (filters or {}) for k in IDS):
        raise Mem0InvalidError(
            "at least one of 'user_id', 'agent_id' or 'run_id' is needed"
            + (f" to {purpose} (reset() retires every memory)" if purpose else "")
        )
    return ids


def plain(value: object) -> bool:
    """Whether an id filter names one id (not ``"*"`` nor an operator)."""
    return isinstance(value, str) and value != "*"


def limit_of(limit: object, top_k: object) -> int:
    """The row count asked for: ``limit``, or ``top_k`` (newer mem0's name), 100 by default."""
    if limit is not None and top_k is not None:
        raise Mem0InvalidError("give limit or top_k (its newer name), not both")
    chosen = limit if limit is not None else top_k if top_k is not None else 100
    if not isinstance(chosen, int) or isinstance(chosen, bool) or chosen < 1:
        raise Mem0InvalidError("limit (top_k) must be a positive integer")
    return chosen


def messages_of(messages: object) -> list[dict[str, str]]:
    """mem0's messages: a string (one user message), a message, or a list of messages."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, dict):
        messages = [messages]
    if not isinstance(messages, list):
        raise Mem0InvalidError("messages must be a string, a message or a list of them")
    out = []
    for m in messages:
        if not isinstance(m, dict) or not isinstance(m.get("content"), str):
            raise Mem0InvalidError('each message must be {"role": ..., "content": "..."}')
        role = m.get("role", "user")
        if role not in ("user", "assistant", "system"):
            raise Mem0InvalidError(f"unknown message role {role!r}")
        name = m.get("name")
        out.append({"role": role, "content": m["content"], **({"name": name} if name else {})})
    return out
