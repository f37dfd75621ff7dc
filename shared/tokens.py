"""Real token counts, offline, without importing litellm (DESIGN §2 ``tokens``).

tiktoken needs its BPE files on disk; litellm ships the cl100k_base and o200k_base files inside
its package, so we point ``TIKTOKEN_CACHE_DIR`` there, found with ``importlib.util.find_spec``
(which locates the package without running its 6-second import: FACTS.md "litellm").
Without tiktoken or those files the counter falls back to a documented estimate (4 chars per
token) and says so in ``exact``; ``doctor`` reports it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path


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


@lru_cache(maxsize=4)
def _encoder(encoding: str) -> Callable[[str], int] | None:
    if "TIKTOKEN_CACHE_DIR" not in os.environ:
        found = _litellm_tokenizer_dir()
        if found is not None:
            os.environ["TIKTOKEN_CACHE_DIR"] = str(found)
    try:
        import tiktoken

        enc = tiktoken.get_encoding(encoding)
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
        # opened for one recall (`memory --data-dir D recall`) may never count (issue 13)
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
