"""Real token counts, offline, without importing litellm (a recall budget is counted in the
target model's tokens, so an estimate would over- or under-fill it).

tiktoken needs its BPE files on disk; litellm ships the cl100k_base and o200k_base files inside
its package, so we point ``TIKTOKEN_CACHE_DIR`` there, found with ``importlib.util.find_spec``
(which locates the package without running its import, which takes seconds).
Without tiktoken or those files the counter falls back to a documented estimate (4 chars per
token) and says so in ``exact``; ``doctor`` reports it.

Loading an encoding took ~0.13 s of every process that counts (measured on a one-shot
``memory --data-dir D save``): ~75 ms to read and base64-decode the 100k-line BPE file, ~50 ms for
tiktoken to build its encoder. The decoded parameters are cached per user
(``$XDG_CACHE_HOME/agent-memory/tiktoken-<encoding>-<tiktoken version>.marshal``, written
atomically, 0600) and read back in ~20 ms; tiktoken checks the BPE file's SHA-256 when it
loads it, so the cache only ever holds a checked file's ranks. A missing or unreadable cache
costs the slow load, nothing else.
"""

from __future__ import annotations

import importlib.util
import marshal
import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any


def _litellm_tokenizer_dir() -> Path | None:
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return path if path.is_dir() else None


def _encoding_name(model: str | None) -> str:
    """Which BPE a model uses; o200k for the GPT-4o/4.1/o-series/5 family, else cl100k."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    if name in ("cl100k_base", "o200k_base"):
        return name
    if name.startswith(("gpt-4o", "gpt-4.1", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")):
        return "o200k_base"
    return "cl100k_base"


_PARAMS = ("name", "pat_str", "mergeable_ranks", "special_tokens")


def _cache_path(encoding: str, version: str) -> Path | None:
    try:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except RuntimeError:  # no home to cache in
        return None
    return base / "agent-memory" / f"tiktoken-{encoding}-{version}.marshal"


def _cached_params(path: Path) -> dict[str, Any] | None:
    try:
        params = marshal.loads(path.read_bytes())  # marshal.load(file) reads it piecemeal: 4x
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(params, dict) or set(params) != set(_PARAMS):
        return None
    return params


def _store_params(path: Path, params: dict[str, Any]) -> None:
    """Atomically (a temporary name, then rename); a failure only costs the next process."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            marshal.dump({k: params[k] for k in _PARAMS}, fh)
        os.replace(tmp, path)
    except (OSError, ValueError):
        tmp.unlink(missing_ok=True)


def _load(encoding: str) -> Any:
    """tiktoken's encoding, its parameters from this user's cache when it has them."""
    import tiktoken

    path = _cache_path(encoding, tiktoken.__version__)
    params = _cached_params(path) if path is not None else None
    if params is not None and params["name"] == encoding:
        return tiktoken.Encoding(**params)
    from tiktoken_ext import openai_public  # type: ignore[import-untyped]

    made = getattr(openai_public, encoding, None)
    if made is None:  # an encoding this cache does not know: tiktoken's own way
        return tiktoken.get_encoding(encoding)
    params = made()  # reads the BPE file and checks its SHA-256
    if path is not None:
        _store_params(path, params)
    return tiktoken.Encoding(**params)


@lru_cache(maxsize=4)
def _encoder(encoding: str) -> Callable[[str], int] | None:
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        found = _litellm_tokenizer_dir()
        if found is not None:
            os.environ["TIKTOKEN_CACHE_DIR"] = str(found)
    try:
        enc = _load(encoding)
    except Exception:  # no tiktoken, or no BPE file offline: fall back to the estimate
        return None
    # tiktoken documents encode_ordinary as ``encode(text, disallowed_special=())``: special
    # tokens count as plain text. It skips the special-token scan, a third of a save's count.
    return lambda text: len(enc.encode_ordinary(text))


class TokenCounter:
    """Counts tokens of text for one model; ``exact`` is False when estimating."""

    def __init__(self, model: str | None = None) -> None:
        self.model = model
        self.encoding = _encoding_name(model)

    @property
    def _count(self) -> Callable[[str], int] | None:
        # loaded on the first count, not here: the BPE takes ~0.3 s to load, and a store
        # opened for one recall (`memory --data-dir D recall`) may never count, and a one-shot
        # CLI command should not pay for what it never uses
        return _encoder(self.encoding)

    @property
    def exact(self) -> bool:
        return self._count is not None

    def count(self, text: str) -> int:
        if not text:
            return 0
        counter = self._count
        if counter is None:
            return max(1, (len(text) + 3) // 4)
        return counter(text)
