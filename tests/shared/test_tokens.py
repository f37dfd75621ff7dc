"""Token counts (``shared/text/tokens.py``): the encoding's parameters are cached per user, and an
encoder built from the cache counts exactly as tiktoken's own."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

tiktoken = pytest.importorskip("tiktoken")

from shared.text import tokens  # noqa: E402

TEXTS = [
    "hello world, how are you",
    "The user prefers tabs over spaces; 東京 in März, naïve café — <|endoftext|> stays text.",
    "def f(x):\n    return x ** 2  # 12345678901234567890\r\n\t\t",
    "",
]


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if "TIKTOKEN_CACHE_DIR" not in os.environ:  # the BPE files litellm ships
        found = tokens._litellm_tokenizer_dir()
        if found is None:
            pytest.skip("no BPE files on disk")
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(found))
    return tmp_path


def test_the_cache_is_written_once_and_then_read(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = tokens._load("cl100k_base")
    path = tokens._cache_path("cl100k_base", tiktoken.__version__)
    assert path is not None and path.is_file() and path.parent.parent == cache_home
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    from tiktoken_ext import openai_public

    def no_file() -> None:
        raise AssertionError("the BPE file was read although the cache holds it")

    monkeypatch.setattr(openai_public, "cl100k_base", no_file)
    cached = tokens._load("cl100k_base")
    reference = tiktoken.get_encoding("cl100k_base")
    for text in TEXTS:
        assert cached.encode_ordinary(text) == fresh.encode_ordinary(text)
        assert cached.encode_ordinary(text) == reference.encode_ordinary(text)


def test_a_damaged_cache_is_built_again(cache_home: Path) -> None:
    path = tokens._cache_path("o200k_base", tiktoken.__version__)
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x00not marshal")
    enc = tokens._load("o200k_base")
    assert enc.encode_ordinary(TEXTS[1]) == tiktoken.get_encoding("o200k_base").encode_ordinary(
        TEXTS[1]
    )
    assert tokens._cached_params(path) is not None  # rewritten whole
