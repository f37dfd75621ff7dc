"""The ``ray.util.metrics`` each actor exports are recorded, with the values they claim.

No Ray cluster: the actor shells are plain classes (``ray.remote`` is applied in
``start_detached``), so each is built in-process over a plain ``MemoryStore`` and driven
through its real methods. ``ray.util.metrics``' classes are replaced by a recording fake that
keeps Ray's own rules (declared tag keys only, histogram boundaries), so a metric that is not
recorded, or recorded under an undeclared tag, fails here.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from ulid import ULID

from shared.contract.errors import UnknownError
from shared.llm import Completion, FakeLLM
from store_worker.core import MemoryStore

DUPLICATES = (
    "The user prefers dark mode in the editor",
    "The user prefers dark mode in their editor",
)


class FakeMetric:
    """Records every ``inc``/``observe``/``set`` per tag set, as Ray's metric would export."""

    registry: ClassVar[dict[str, FakeMetric]] = {}

    def __init__(
        self,
        name: str,
        description: str = "",
        boundaries: Sequence[float] | None = None,
        tag_keys: tuple[str, ...] | None = None,
    ) -> None:
        assert name not in self.registry, f"metric {name} registered twice"
        assert description, f"metric {name} has no description"
        self.name, self.boundaries, self.tag_keys = name, boundaries, tuple(tag_keys or ())
        self.calls: list[tuple[str, float, dict[str, str]]] = []
        self.registry[name] = self

    def _record(self, kind: str, value: float, tags: dict[str, str] | None) -> None:
        tags = dict(tags or {})
        # Ray raises for a tag key the metric did not declare, and for a declared one left out
        assert set(tags) == set(self.tag_keys), (self.name, tags, self.tag_keys)
        self.calls.append((kind, float(value), tags))

    def inc(self, value: float = 1.0, tags: dict[str, str] | None = None) -> None:
        assert value > 0, "Ray counters only go up"
        self._record("inc", value, tags)

    def observe(self, value: float, tags: dict[str, str] | None = None) -> None:
        assert self.boundaries, "a histogram needs boundaries"
        self._record("observe", value, tags)

    def set(self, value: float, tags: dict[str, str] | None = None) -> None:
        self._record("set", value, tags)

    # -- what a scrape would show -------------------------------------------------------------

    def total(self, **tags: str) -> float:
        """A counter's value for these tags."""
        return sum(v for k, v, t in self.calls if k == "inc" and t == tags)

    def observed(self, **tags: str) -> list[float]:
        return [v for k, v, t in self.calls if k == "observe" and t == tags]

    def gauge(self) -> dict[tuple[tuple[str, str], ...], float]:
        """A gauge's last value per tag set."""
        last: dict[tuple[tuple[str, str], ...], float] = {}
        for kind, value, tags in self.calls:
            if kind == "set":
                last[tuple(sorted(tags.items()))] = value
        return last


@pytest.fixture
def metrics(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, FakeMetric]]:
    """Every metric created during the test, by name (the actors import ray lazily)."""
    from ray.util import metrics as ray_metrics

    FakeMetric.registry = {}
    for kind in ("Counter", "Histogram", "Gauge"):
        monkeypatch.setattr(ray_metrics, kind, FakeMetric)
    yield FakeMetric.registry
    FakeMetric.registry = {}


class Serialized:
    """One call at a time into a plain store, as the store actor serves them
    (``max_concurrency=1``): the extractor's drain thread and the test share it."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._lock = threading.RLock()

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return method(*args, **kwargs)

        return call


def _turn(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "Noted."}]


# -- store -------------------------------------------------------------------------------------


def test_store_actor_records_recall_latency_writes_and_live_memories(
    metrics: dict[str, FakeMetric], tmp_path: Path
) -> None:
    from store_worker.actor import StoreActor

    # Given the store actor's class, built in-process over a fresh data dir
    env = {"MEMORY_DATA_DIR": str(tmp_path / "data")}
    actor: Any = StoreActor(env)
    writes = metrics["memory_store_writes"]
    recall_ms = metrics["memory_store_recall_latency_ms"]
    live = metrics["memory_store_live_memories"]
    assert writes.tag_keys == ("method",) and recall_ms.boundaries
    # When memories are written into two banks, read, recalled and one deleted
    saved = actor.save("The user prefers tabs over spaces", tags=["style"])
    first, default = saved.memory, saved.bank
    actor.save("The user deploys on Fridays", tags=["ops"])
    actor.bank_create("work")
    actor.save("The build uses uv and ruff", bank="work")
    actor.get(first.id)
    actor.list()
    recalled = actor.recall("tabs spaces")
    actor.recall("ruff", bank="work")
    actor.delete(first.id)
    # Then writes count by method, and reads/recalls are not writes
    assert writes.total(method="save") == 3
    assert writes.total(method="delete") == 1
    assert writes.total(method="bank_create") == 1
    for read in ("get", "list", "recall"):
        assert writes.total(method=read) == 0
    # and each recall is one latency observation in ms, tagged with its bank
    assert recalled.bank == default
    assert len(recall_ms.observed(bank=default)) == 1
    assert len(recall_ms.observed(bank="work")) == 1
    assert all(0 <= v < 60_000 for v in recall_ms.observed(bank=default))
    # and the gauge holds each bank's live memories after the last write
    assert live.gauge()[(("bank", default),)] == 1  # two saved, one deleted
    assert live.gauge()[(("bank", "work"),)] == 1
    # and the outbox depth by state, after a finished turn queued a job
    actor.turn_completed("s1", str(ULID()), _turn("I publish on Tuesdays"))
    depth = metrics["memory_store_outbox_depth"].gauge()
    assert depth == {(("state", "queued"),): 1, (("state", "leased"),): 0, (("state", "dead"),): 0}
    # and its repr (the dashboard's Actors page) says where it serves and how much
    assert repr(actor) == f"StoreActor({tmp_path / 'data'}: 2 live memories in 2 banks)"

    # When the actor restarts on the same files, the gauge is set at boot from the replay
    metrics.clear()  # the fixture's dict is the registry: the new actor registers anew
    actor.store.close()  # the old one is gone: its data dir lock goes with it
    StoreActor(env)
    assert metrics["memory_store_live_memories"].gauge()[(("bank", default),)] == 1
    assert metrics["memory_store_live_memories"].gauge()[(("bank", "work"),)] == 1


# -- extractor ---------------------------------------------------------------------------------


@dataclasses.dataclass
class TimedLLM(FakeLLM):
    """``FakeLLM`` whose calls report a latency (``FakeLLM`` reports 0 ms, which is skipped)."""

    latency_ms: float = 37.5

    def complete(self, messages: list[Any], **kwargs: Any) -> Completion:
        done = super().complete(messages, **kwargs)
        return dataclasses.replace(done, latency_ms=self.latency_ms)


def test_extractor_actor_records_jobs_by_outcome_llm_latency_and_tokens(
    metrics: dict[str, FakeMetric], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import extract_worker.actor as extract_actor
    import shared.client.ray

    # Given the extractor actor's class over a plain store (its StoreClient replaced), and an
    # LLM that answers once and then fails for good (a permanent error dead-letters at once)
    plain = MemoryStore(tmp_path / "data")
    store = Serialized(plain)
    monkeypatch.setattr(shared.client.ray, "StoreClient", lambda *a, **kw: store)
    monkeypatch.setattr(extract_actor, "Wake", lambda name: lambda: None)  # no Ray lookup
    reply = json.dumps({"memories": [{"text": "The user publishes on Tuesdays."}], "rules": []})
    llm = TimedLLM(replies=[reply, UnknownError("bad request", False)], tokens_per_call=(90, 30))
    env = {"MEMORY_EXTRACTION_MODEL": "fake/x", "MEMORY_POLL_INTERVAL_S": "3600"}
    actor = extract_actor.ExtractorActor(env, llm=llm)
    try:
        # When two turns are completed and drained (one by one: the LLM script is ordered)
        store.turn_completed("s1", str(ULID()), _turn("I publish on Tuesdays"))
        actor.drain()
        store.turn_completed("s2", str(ULID()), _turn("Something else"))
        actor.drain()
    finally:
        actor.stop()
        actor._thread.join(timeout=30)  # woken by stop(): it must not outlive the store
        plain.close()
    assert not actor._thread.is_alive()
    # Then (whichever drain thread ran them) one job is done and one dead-lettered ...
    jobs = metrics["memory_extractor_jobs"]
    assert jobs.total(outcome="done") == 1 and jobs.total(outcome="dead") == 1
    assert jobs.total(outcome="retry") == 0
    assert actor.stats()["totals"] == {"done": 1, "dead": 1, "tokens": 120}
    # ... the successful LLM call's latency and the job's tokens are observed once each
    assert metrics["memory_extractor_llm_latency_ms"].observed() == [37.5]
    assert metrics["memory_extractor_tokens_per_job"].observed() == [120.0]
    # and its repr says the outbox depth at the last drain and the last job
    assert repr(actor).startswith("ExtractorActor(on (fake/x); outbox 0 queued, 0 leased, 1 dead;")
    last = actor.metrics.last
    assert last is not None and f"last job {last.job_id} dead at " in repr(actor)


def test_extractor_metrics_count_retries(metrics: dict[str, FakeMetric], tmp_path: Path) -> None:
    from extract_worker.actor import _Metrics
    from extract_worker.core import Extractor
    from extract_worker.settings import ExtractorSettings
    from shared.contract.clock import FakeClock
    from shared.contract.config import StoreSettings

    # Given the actor's metrics wired as the actor wires them (on_result=metrics.observe)
    clock = FakeClock()
    store_settings = StoreSettings(data_dir=str(tmp_path / "data"), outbox_max_attempts=2)
    store = MemoryStore(settings=store_settings, clock=clock)
    recorder = _Metrics()
    settings = ExtractorSettings(extraction_model="fake/x")
    ex = Extractor(store, TimedLLM.of("no json here"), settings, clock=clock)
    ex.on_result = recorder.observe
    # When a job fails to parse twice (retry, then dead at the store's outbox_max_attempts)
    store.turn_completed("s1", str(ULID()), _turn("I publish on Tuesdays"))
    ex.drain()
    clock.advance(ms=store_settings.outbox_backoff_max_ms)
    ex.drain()
    store.close()
    # Then both outcomes are counted, and both LLM calls' latencies observed
    jobs = metrics["memory_extractor_jobs"]
    assert (jobs.total(outcome="retry"), jobs.total(outcome="dead")) == (1, 1)
    assert metrics["memory_extractor_llm_latency_ms"].observed() == [37.5, 37.5]


# -- consolidator ------------------------------------------------------------------------------


def test_consolidator_actor_records_each_pass_report(
    metrics: dict[str, FakeMetric], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import shared.client.ray
    from consolidate_worker.actor import ConsolidatorActor

    # Given duplicates in a plain store behind the consolidator actor's class (no boot pass)
    store = MemoryStore(tmp_path / "data")
    old = store.save(DUPLICATES[0]).memory
    new = store.save(DUPLICATES[1]).memory
    store.save("The user wants commit messages in the imperative mood")
    monkeypatch.setattr(shared.client.ray, "StoreClient", lambda *a, **kw: store)
    actor = ConsolidatorActor({"MEMORY_CONSOLIDATE_RUN_ON_BOOT": "false"})
    try:
        # When a dry run and then a real pass run on demand
        dry = actor.run_now(dry_run=True)
        report = actor.run_now()
    finally:
        actor.shutdown()
        store.close()
    # Then each pass is counted by outcome, and merges by memory
    assert [{c.id, c.survivor} for c in report.merged] == [{old.id, new.id}] and not dry.merged
    passes = metrics["memory_consolidator_passes"]
    assert (passes.total(outcome="dry_run"), passes.total(outcome="ok")) == (1, 1)
    assert passes.total(outcome="error") == 0
    assert metrics["memory_consolidator_merged"].total() == 1
    # and the gauge shows the last pass's figures, field by field
    last = {
        dict(k)["field"]: v for k, v in metrics["memory_consolidator_last_pass"].gauge().items()
    }
    assert last == {
        "duration_ms": report.duration_ms,
        "scanned": report.scanned,
        "groups": len(report.groups),
        "merged": 1,
        "skipped_pinned": 0,
        "capped": 0,
        "errors": 0,
    }
    assert report.scanned == 3
    # and its repr says what the last pass did
    assert ": 3 scanned, 1 merged in " in repr(actor) and " UTC ok: " in repr(actor)


def test_a_pass_with_errors_is_counted_as_an_error(metrics: dict[str, FakeMetric]) -> None:
    from consolidate_worker.actor import _Metrics
    from consolidate_worker.report import PassError, Report

    # Given a pass whose supersede was refused (the store's ConflictError, kept in the report)
    error = PassError(bank="default", id="m1", category="conflict", message="already merged")
    failed = Report(started_at=1, duration_ms=5, dry_run=False, banks=("default",), errors=(error,))
    # When the actor's metrics record it, then it is an error pass with nothing merged
    _Metrics().record(failed)
    passes = metrics["memory_consolidator_passes"]
    assert (passes.total(outcome="error"), passes.total(outcome="ok")) == (1, 0)
    assert metrics["memory_consolidator_merged"].calls == []  # nothing merged: no inc(0)
    assert metrics["memory_consolidator_last_pass"].gauge()[(("field", "errors"),)] == 1
