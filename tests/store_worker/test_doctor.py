"""doctor: honest health; ``ok`` only when every required check passes."""

from __future__ import annotations

import shutil
from pathlib import Path

from shared.contract.clock import FakeClock
from shared.contract.models import DoctorResponse
from store_worker.core import MemoryStore
from store_worker.recall.embed import FakeEmbedder

REQUIRED = {"data_dir_writable", "roundtrip", "index_consistent", "rules_readable"}
ADVISORY = {
    "log_integrity",
    "files_readable",
    "tokenizer",
    "embeddings",
    "siblings",
    "extraction",
    "outbox",
}


def checks(report: DoctorResponse) -> dict[str, tuple[bool, bool, str]]:
    return {c.name: (c.ok, c.required, c.detail) for c in report.checks}


def test_healthy_store_is_ok(store: MemoryStore) -> None:
    store.save("a healthy memory", tags=["x"])
    report = store.doctor()
    found = checks(report)
    assert report.ok is True
    assert set(found) == REQUIRED | ADVISORY
    for name in REQUIRED:
        ok, required, detail = found[name]
        assert ok and required, (name, detail)
    for name in ADVISORY:
        assert found[name][1] is False
    assert found["log_integrity"][0] is True
    assert "embedded" in found["siblings"][2]


def test_doctor_on_a_fresh_store(store: MemoryStore) -> None:
    assert store.doctor().ok is True


def test_roundtrip_leaves_no_trace(store: MemoryStore, data_dir: Path) -> None:
    store.save("existing fact")
    before = sorted(str(p.relative_to(data_dir)) for p in data_dir.rglob("*"))
    banks = set(store.banks)
    heard: list[object] = []
    store.subscribe("listener", heard.append)
    cursor = store.events.cursor
    store.doctor()
    assert heard == [] and store.events_since(cursor).events == ()  # the probe made no news
    after = sorted(str(p.relative_to(data_dir)) for p in data_dir.rglob("*"))
    assert set(store.banks) == banks
    assert [p for p in after if "doctor" in p] == []
    assert [p for p in after if p not in before and not p.startswith(".trash")] == []
    trash = data_dir / ".trash"
    assert not trash.exists() or list(trash.iterdir()) == []  # the scratch bank was purged
    assert store.list().total == 1


def test_corrupt_and_torn_lines_are_reported_but_advisory(data_dir: Path) -> None:
    s = MemoryStore(data_dir, clock=FakeClock())
    s.save("good one")
    s.save("good two", bank="work")
    s.close()
    log = data_dir / "main" / "memories.jsonl"
    log.write_bytes(b"garbage line\n" + log.read_bytes() + b'{"id": "half')
    s2 = MemoryStore(data_dir, clock=FakeClock())
    report = s2.doctor()
    ok, required, detail = checks(report)["log_integrity"]
    assert not ok and not required
    assert "main: 1 corrupt, 1 torn" in detail
    assert "work" not in detail
    assert report.ok is True
    s2.close()


def test_unwritable_data_dir_fails_a_required_check(store: MemoryStore, data_dir: Path) -> None:
    store.save("x")
    # as root chmod does not bite; replacing the folder with a file does
    shutil.rmtree(data_dir)
    data_dir.write_text("now a file")
    report = store.doctor()
    assert report.ok is False
    assert checks(report)["data_dir_writable"][0] is False
    assert checks(report)["roundtrip"][0] is False


def test_index_inconsistency_fails_a_required_check(store: MemoryStore) -> None:
    m = store.save("indexed fact").memory
    store.banks["main"].index.remove(m.id)  # RAM drifted from the files
    report = store.doctor()
    assert report.ok is False
    ok, required, detail = checks(report)["index_consistent"]
    assert not ok and required and "main" in detail
    store.reload()
    assert store.doctor().ok is True  # reload rebuilds the index from the files


def test_index_drift_from_the_files_is_reported(store: MemoryStore, data_dir: Path) -> None:
    m = store.save("indexed fact").memory
    extra = m.model_copy(update={"id": "written-by-hand", "fingerprint": "fp0123456789abcdef"})
    with open(data_dir / "main" / "memories.jsonl", "a", encoding="utf-8") as fh:
        fh.write(extra.to_line() + "\n")
    ok, required, _ = checks(store.doctor())["index_consistent"]
    assert required and not ok  # the files hold a record the index does not


def test_siblings_are_advisory(store: MemoryStore) -> None:
    down = store.doctor(siblings=lambda: {"memory-extractor": False, "memory-consolidator": True})
    ok, required, detail = checks(down)["siblings"]
    assert not ok and not required and "memory-extractor" in detail
    assert down.ok is True
    up = store.doctor(siblings=lambda: {"memory-extractor": True})
    assert checks(up)["siblings"][0] is True


def test_a_crashing_probe_is_a_failed_check_not_a_crash(store: MemoryStore) -> None:
    def boom() -> dict[str, bool]:
        raise RuntimeError("ray is gone")

    report = store.doctor(siblings=boom)
    assert checks(report)["siblings"][0] is False and "ray is gone" in checks(report)["siblings"][2]


def test_details_say_what_failed_without_exception_class_names(
    store: MemoryStore, data_dir: Path
) -> None:
    def boom() -> dict[str, bool]:
        raise RuntimeError("ray is gone")

    store.save("x")
    (data_dir / "main" / "bank.yaml").write_text("description: [unclosed\n", "utf-8")
    report = store.doctor(siblings=boom)
    found = checks(report)
    assert found["siblings"][2] == "ray is gone"
    assert "not YAML" in found["files_readable"][2]  # a hand-edit problem, said in words
    for name, (_, _, detail) in found.items():
        assert "Error" not in detail, (name, detail)  # RuntimeError, ScannerError, ...


def test_embeddings_check(tmp_path: Path) -> None:
    good = MemoryStore(tmp_path / "a", clock=FakeClock(), embedder=FakeEmbedder())
    assert checks(good.doctor())["embeddings"][0] is True
    bad_embedder = FakeEmbedder()
    bad = MemoryStore(tmp_path / "b", clock=FakeClock(), embedder=bad_embedder)
    bad_embedder.fail = True
    report = bad.doctor()
    assert checks(report)["embeddings"][0] is False
    assert report.ok is True  # the semantic arm is optional
    good.close()
    bad.close()
