"""The extractor's run log: each job it ran, newest first, kept in the store's sibling state
(extraction jobs are leased by a replica, not Ray tasks; the console's outbox page reads it)."""

from __future__ import annotations

from pathlib import Path

from ulid import ULID

from extract_worker.core import MAX_RUNS, RUNS_KEY, STATE_OWNER, Extractor
from extract_worker.settings import ExtractorSettings
from shared.contract.clock import FakeClock
from shared.llm import FakeLLM
from store_worker.core import MemoryStore

REPLY = '{"memories": [{"text": "The user keeps bees"}], "rules": []}'


def _turn(store: MemoryStore, text: str) -> str:
    job = store.turn_completed(f"s-{ULID()}", str(ULID()), [{"role": "user", "content": text}])
    assert job.job_id
    return job.job_id


def test_each_drain_prepends_its_runs_and_the_log_stays_bounded(tmp_path: Path) -> None:
    clock = FakeClock()
    store = MemoryStore(str(tmp_path / "data"), clock=clock)
    ex = Extractor(
        store, FakeLLM.of(REPLY), ExtractorSettings(extraction_model="fake"), clock=clock
    )
    # Given one job, drained
    first = _turn(store, "I keep bees on the roof")
    before = clock.now_ms()
    assert ex.drain().done == 1
    (run,) = store.state_get(STATE_OWNER, RUNS_KEY)
    # Then its run is logged with its outcome, what it saved, and when
    assert (run["job_id"], run["outcome"], run["saved"]) == (first, "done", 1)
    assert before < run["at"] <= clock.now_ms() and isinstance(run["duration_ms"], int)
    # Given more jobs than the log keeps, drained in two rounds
    for i in range(MAX_RUNS):
        _turn(store, f"I keep {i} hives")
    ex.drain(max_jobs=MAX_RUNS - 1)
    last = _turn(store, "I also keep a goat")
    ex.drain()
    runs = store.state_get(STATE_OWNER, RUNS_KEY)
    # Then the newest comes first and the oldest fell off
    assert len(runs) == MAX_RUNS
    assert runs[0]["job_id"] == last and first not in {r["job_id"] for r in runs}


def test_a_failed_job_is_logged_with_its_redacted_error(tmp_path: Path) -> None:
    store = MemoryStore(str(tmp_path / "data"))
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    ex = Extractor(
        store, FakeLLM.of(ValueError(f"bad {secret}")), ExtractorSettings(extraction_model="f")
    )
    job = _turn(store, "I like tea")
    ex.drain()
    (run,) = store.state_get(STATE_OWNER, RUNS_KEY)
    assert run["job_id"] == job and run["outcome"] in {"retry", "dead"}
    assert "ValueError" in run["error"] and secret not in run["error"]
