"""The semantic arm: FakeEmbedder, the vectors.jsonl sidecar, rebuilds, degradation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shared.contract.clock import FakeClock
from shared.contract.errors import SourceUnavailableError
from store_worker.core import MemoryStore
from store_worker.recall.embed import FakeEmbedder
from store_worker.storage.bank import vector_key

TEXTS = {
    "astro": "astronomers observe distant galaxies through telescopes",
    "cook": "the chef bakes sourdough bread every morning",
    "code": "python programmers write unit tests with pytest",
}


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def store(data_dir: Path, embedder: FakeEmbedder) -> Iterator[MemoryStore]:
    s = MemoryStore(data_dir, clock=FakeClock(), embedder=embedder)
    for key, text in TEXTS.items():
        s.save(text, id=key)
    yield s
    s.close()


def sidecar(data_dir: Path, bank: str = "main") -> list[dict[str, object]]:
    raw = (data_dir / bank / "vectors.jsonl").read_bytes()
    return [json.loads(line) for line in raw.split(b"\n") if line.strip()]


def latest(rows: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for row in rows:
        out[str(row["id"])] = row
    return out


def test_fake_embedder_is_deterministic_unit_and_similar_for_shared_words() -> None:
    e = FakeEmbedder(dim=64)
    a, b, c = e.embed(["galaxies and telescopes", "telescopes see galaxies", "sourdough bread"])
    assert e.embed(["galaxies and telescopes"])[0] == a
    assert sum(x * x for x in a) == pytest.approx(1.0)
    cos = lambda u, v: sum(x * y for x, y in zip(u, v, strict=True))  # noqa: E731
    assert cos(a, b) > cos(a, c)
    assert len(a) == 64


def test_semantic_recall(store: MemoryStore) -> None:
    res = store.recall("telescopes galaxies", mode="semantic")
    assert res.retrieval == "semantic"
    assert res.memories[0].memory.id == "astro"
    assert all(0 <= h.relevance_score <= 1 for h in res.memories)
    assert all(h.score > 0 for h in res.memories)


def test_hybrid_uses_the_cosine(store: MemoryStore, data_dir: Path) -> None:
    hyb = store.recall("galaxies telescopes")
    assert hyb.retrieval == "hybrid"
    store.close()  # one store per data dir at a time (its lock)
    plain = MemoryStore(data_dir, clock=FakeClock())  # same files, no embedder
    lex = plain.recall("galaxies telescopes")
    assert lex.retrieval == "lexical"
    top_h = {h.memory.id: h.score for h in hyb.memories}
    top_l = {h.memory.id: h.score for h in lex.memories}
    assert top_h["astro"] > top_l["astro"]  # + 2.2 · cosine
    plain.close()


def test_sidecar_written_on_save(
    store: MemoryStore, data_dir: Path, embedder: FakeEmbedder
) -> None:
    rows = latest(sidecar(data_dir))
    assert set(rows) == set(TEXTS)
    for key, row in rows.items():
        assert row["model"] == embedder.name
        assert row["fp"] == vector_key(store.get(key).memory)
        assert isinstance(row["v"], list) and len(row["v"]) == embedder.dim
    m = store.save("a brand new fact about volcanoes").memory
    assert latest(sidecar(data_dir))[m.id]["fp"] == vector_key(m)


def test_text_edit_refreshes_the_vector(store: MemoryStore, data_dir: Path) -> None:
    store.update("cook", text="the chef grills fish on fridays")
    fresh = vector_key(store.get("cook").memory)
    assert latest(sidecar(data_dir))["cook"]["fp"] == fresh
    assert store.recall("grills fish", mode="semantic").memories[0].memory.id == "cook"


def test_reload_keeps_vectors_without_re_embedding(store: MemoryStore, data_dir: Path) -> None:
    store.close()
    again_embedder = FakeEmbedder()
    again = MemoryStore(data_dir, clock=FakeClock(), embedder=again_embedder)
    assert again_embedder.calls == 0  # every vector was fresh on disk
    assert again.recall("telescopes", mode="semantic").memories[0].memory.id == "astro"
    assert again_embedder.calls == 1  # the query only
    again.close()


def test_deleted_sidecar_is_rebuilt(store: MemoryStore, data_dir: Path) -> None:
    (data_dir / "main" / "vectors.jsonl").unlink()
    store.reload()
    assert set(latest(sidecar(data_dir))) == set(TEXTS)
    assert store.recall("telescopes", mode="semantic").memories[0].memory.id == "astro"


def test_model_change_rebuilds_the_sidecar(store: MemoryStore, data_dir: Path) -> None:
    store.close()
    other = FakeEmbedder(dim=32)
    again = MemoryStore(data_dir, clock=FakeClock(), embedder=other)
    rows = sidecar(data_dir)
    assert {r["model"] for r in rows} == {"fake-32"}  # rewritten whole, old model gone
    assert {len(r["v"]) for r in rows} == {32}  # type: ignore[arg-type]
    assert set(latest(rows)) == set(TEXTS)
    assert again.recall("telescopes", mode="semantic").memories[0].memory.id == "astro"
    again.close()


def test_stale_fingerprint_is_re_embedded(store: MemoryStore, data_dir: Path) -> None:
    path = data_dir / "main" / "vectors.jsonl"
    rows = sidecar(data_dir)
    for row in rows:
        if row["id"] == "code":
            row["fp"] = "fp0000000000000000"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    store.reload()
    assert latest(sidecar(data_dir))["code"]["fp"] == vector_key(store.get("code").memory)


def test_a_title_or_entities_edit_refreshes_the_vector(
    store: MemoryStore, data_dir: Path, embedder: FakeEmbedder
) -> None:
    # The vector is of the title, text and entities; an edit of the title alone kept the
    # text's fingerprint, and the vector made for the old title was kept with it
    saved = store.save("notes from the club meeting", title="telescopes and stars").memory
    assert store.recall("telescopes stars", mode="semantic").memories[0].memory.id in (
        saved.id,
        "astro",
    )
    before = embedder.calls
    store.update(saved.id, title="recipes for grilled fish")
    edited = store.get(saved.id).memory
    assert edited.fingerprint == saved.fingerprint  # the text did not change
    store.recall("grilled fish recipes", mode="semantic")
    assert embedder.calls > before + 1  # the record again, not the query alone
    assert latest(sidecar(data_dir))[saved.id]["fp"] == vector_key(edited)
    store.update(saved.id, entities=["Orion"])
    store.recall("orion", mode="semantic")
    assert latest(sidecar(data_dir))[saved.id]["fp"] == vector_key(store.get(saved.id).memory)
    # and a reload finds every vector fresh: nothing embedded again
    store.close()
    again_embedder = FakeEmbedder()
    again = MemoryStore(data_dir, clock=FakeClock(), embedder=again_embedder)
    assert again_embedder.calls == 0
    again.close()


def test_a_sidecar_from_before_titles_were_keyed_is_kept(
    store: MemoryStore, data_dir: Path
) -> None:
    # Given a sidecar written when the key was the text's fingerprint alone
    titled = store.save("a fact about rivers", title="geography", entities=["Nile"]).memory
    store.close()
    path = data_dir / "main" / "vectors.jsonl"
    rows = sidecar(data_dir)
    for row in rows:
        if row["id"] == titled.id:
            row["fp"] = titled.fingerprint
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    # When the store opens, then its vectors are taken as they are: nothing is embedded
    again_embedder = FakeEmbedder()
    again = MemoryStore(data_dir, clock=FakeClock(), embedder=again_embedder)
    assert again_embedder.calls == 0
    # and an edit of the title from then on is told apart
    again.update(titled.id, title="history")
    again.recall("history rivers", mode="semantic")
    assert latest(sidecar(data_dir))[titled.id]["fp"] == vector_key(again.get(titled.id).memory)
    again.close()


def test_garbage_sidecar_lines_are_ignored(store: MemoryStore, data_dir: Path) -> None:
    path = data_dir / "main" / "vectors.jsonl"
    junk = b'5\n[1, 2]\n{"id": 1}\n{"id": "code", "fp": "x", "model": "fake-64", "v": "abc"}\n'
    path.write_bytes(b"not json\n" + path.read_bytes() + junk)
    store.reload()
    assert store.recall("telescopes", mode="semantic").memories[0].memory.id == "astro"


def test_retired_records_leave_semantic_recall_and_the_rebuilt_sidecar(
    store: MemoryStore, data_dir: Path
) -> None:
    store.delete("astro")
    assert "astro" not in [
        h.memory.id for h in store.recall("telescopes", mode="semantic").memories
    ]
    (data_dir / "main" / "vectors.jsonl").unlink()
    store.reload()
    assert "astro" not in latest(sidecar(data_dir))


def test_semantic_respects_filters(store: MemoryStore) -> None:
    store.save("telescope maintenance checklist", id="tagged", tags=["ops"])
    res = store.recall("telescopes galaxies", mode="semantic", tag="ops")
    assert [h.memory.id for h in res.memories] == ["tagged"]


def test_a_failing_embedder_never_fails_a_write_and_catches_up(
    store: MemoryStore, embedder: FakeEmbedder, data_dir: Path
) -> None:
    # Given the embedder goes down
    embedder.fail = True
    m = store.save("volcanoes erupt lava and ash").memory
    assert m.id not in latest(sidecar(data_dir))
    assert store.recall("volcanoes").retrieval == "lexical"
    with pytest.raises(SourceUnavailableError):
        store.recall("volcanoes", mode="semantic")
    # When it comes back
    embedder.fail = False
    res = store.recall("volcanoes lava", mode="semantic")
    # Then the missing vector is filled before the query runs
    assert res.memories[0].memory.id == m.id
    assert latest(sidecar(data_dir))[m.id]["fp"] == vector_key(m)


def test_boot_with_a_failing_embedder_still_opens(data_dir: Path) -> None:
    s = MemoryStore(data_dir, clock=FakeClock())
    s.save("no vectors yet")
    s.close()
    broken = FakeEmbedder(fail=True)
    again = MemoryStore(data_dir, clock=FakeClock(), embedder=broken)
    assert again.recall("vectors").retrieval == "lexical"
    assert again.recall("vectors").memories[0].memory.text == "no vectors yet"
    again.close()


def test_capabilities_list_semantic_only_with_an_embedder(
    store: MemoryStore, data_dir: Path
) -> None:
    assert "semantic" in store.capabilities()["recall_modes"]
    store.close()  # one store per data dir at a time (its lock)
    plain = MemoryStore(data_dir, clock=FakeClock())
    assert "semantic" not in plain.capabilities()["recall_modes"]
    plain.close()


def test_a_repeated_query_is_embedded_once(store: MemoryStore, embedder: FakeEmbedder) -> None:
    before = embedder.calls
    first = store.recall("who bakes bread in the morning?")
    again = store.recall("who bakes bread in the morning?", include_superseded=True)
    assert embedder.calls == before + 1
    assert [h.memory.id for h in first.memories] == [h.memory.id for h in again.memories]


def test_a_query_that_is_a_memory_text_reuses_its_vector(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    # The consolidator asks each memory's own text for its neighbours: no embedding calls
    before = embedder.calls
    got = store.recall(TEXTS["cook"], mode="semantic")
    assert embedder.calls == before
    assert got.memories[0].memory.id == "cook"
    assert got.memories[0].score == pytest.approx(1.0)


def test_a_consolidation_pass_embeds_nothing(store: MemoryStore, embedder: FakeEmbedder) -> None:
    from consolidate_worker.core import Consolidator

    before = embedder.calls
    report = Consolidator(store).run_pass()
    assert report.ok and report.scanned == len(TEXTS)
    assert embedder.calls == before


def test_records_waiting_for_a_vector_are_tracked_not_scanned(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    bank = store.banks["main"]
    assert bank.unembedded == set()
    # Given the model down while a memory is saved
    embedder.fail = True
    saved = store.save("lighthouses guide ships along rocky coasts").memory
    assert bank.unembedded == {saved.id}
    # When it answers again, the next recall embeds exactly that one record
    embedder.fail = False
    before = embedder.calls
    got = store.recall("lighthouses guide ships", mode="semantic")
    assert embedder.calls == before + 2  # the waiting record, then the query
    assert bank.unembedded == set() and got.memories[0].memory.id == saved.id
    # And a retired record stops waiting
    embedder.fail = True
    other = store.save("a record that is deleted before the model is back").memory
    store.delete(other.id)
    assert other.id not in bank.unembedded


class _AngleEmbedder:
    """2-d unit vectors at the angle a text names ("ang30"): cosines chosen by the test."""

    name = "angle"

    def embed(self, texts: list[str]) -> list[list[float]]:
        import math
        import re

        out = []
        for text in texts:
            found = re.search(r"ang(\d+)", text)
            theta = math.radians(int(found.group(1))) if found else math.pi / 2
            out.append([math.cos(theta), math.sin(theta)])
        return out


@pytest.mark.parametrize("history", [False, True])
def test_the_semantic_pool_never_changes_a_ranking(
    fresh_store: Any, monkeypatch: pytest.MonkeyPatch, history: bool
) -> None:
    # Given a retired record close to the query whose successor is far from it, and
    # fillers in between (more than the smallest pool)
    from store_worker.recall import scoring as recall_mod

    store = fresh_store(embedder=_AngleEmbedder())
    store.save("retired ang5", id="r")
    store.save("successor ang80", id="s")
    store.supersede("r", "s")
    for a in range(10, 60, 4):
        store.save(f"filler ang{a}", id=f"f{a}")

    def ranking(pool: int, limit: int) -> list[str]:
        monkeypatch.setattr(recall_mod, "SEMANTIC_POOL", pool)
        got = store.recall("ang0", limit=limit, include_superseded=history)
        return [h.memory.id for h in got.memories]

    # Then a pool of 4·limit ranks exactly as no pool at all
    for limit in (1, 3, 10):
        assert ranking(0, limit) == ranking(10_000, limit)


def test_a_close_match_by_meaning_alone_reads_as_relevant(fresh_store: Any) -> None:
    # Given memories the query shares no word with, one of them very close in meaning
    store = fresh_store(embedder=_AngleEmbedder())
    store.save("close ang10", id="close")
    store.save("far ang80", id="far")
    got = store.recall("ang0")
    # Then the ranking follows the cosine, and the close one reads as a solid match
    assert [h.memory.id for h in got.memories] == ["close", "far"]
    assert got.memories[0].relevance_score > 0.5 > got.memories[1].relevance_score


def test_a_hybrid_query_is_always_embedded_as_asked(
    store: MemoryStore, embedder: FakeEmbedder
) -> None:
    # A memory's stored vector (of its text and entities) stands in for the query only in the
    # raw semantic arm; a hybrid recall embeds exactly the text it was given
    before = embedder.calls
    store.recall(TEXTS["cook"])
    assert embedder.calls == before + 1


def test_a_recall_query_reaches_the_embedder_redacted(data_dir: Path) -> None:
    """A query is a user's raw prompt; a remote embedding model is a third party: what the
    embedder is sent is the redacted text (through recall, preview and pre_generate)."""
    token = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"

    sent: list[str] = []

    class Spy(FakeEmbedder):
        def embed(self, texts: list[str]) -> list[list[float]]:
            sent.extend(texts)
            return super().embed(texts)

    s = MemoryStore(data_dir, clock=FakeClock(), embedder=Spy())
    s.save("the deploy host is prod-eu-1")
    s.recall(f"deploy with GITHUB_TOKEN={token}", mode="hybrid")
    s.preview(f"my token {token} for deploy")
    prompt = [{"role": "user", "content": f"deploy with {token} please"}]
    s.pre_generate("sess-q", None, 0, prompt, None)
    s.close()

    queries = [t for t in sent if "deploy" in t and "prod-eu-1" not in t]
    assert queries and not any("ghp_" in t for t in sent)
