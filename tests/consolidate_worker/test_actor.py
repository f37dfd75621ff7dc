"""The ``memory-consolidator`` Ray shell in the shared session cluster (catch-up, run_now)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from consolidate_worker.core import LAST_RUN_KEY, OWNER
from consolidate_worker.report import Report
from consolidate_worker.spec import ACTOR_NAME, WORKER

HOUR_MS = 3_600_000

pytestmark = pytest.mark.ray


def start(bank: str, n: int) -> Any:
    # Only the test's own bank: the session's store actor holds other tests' banks too. A name
    # per start, so a killed actor's name being freed asynchronously cannot race the next one.
    env = {"MEMORY_CONSOLIDATE_BANKS": bank}
    return WORKER.start(env, name=f"{ACTOR_NAME}-{bank}-{n}")


def stop(ray: Any, handle: Any) -> None:
    ray.get(handle.shutdown.remote())
    ray.kill(handle, no_restart=True)


def test_a_fresh_actor_catches_up_once_then_waits(
    ray_cluster: Any, store_actor: Any, unique_bank: str
) -> None:
    ray = ray_cluster
    # Given duplicates and a last clean pass two days ago, in the store's sibling state
    old = store_actor.save("The user prefers dark mode in the editor", bank=unique_bank).memory
    new = store_actor.save("The user prefers dark mode in their editor", bank=unique_bank).memory
    stale = time.time_ns() // 1_000_000 - 48 * HOUR_MS
    store_actor.state_set(OWNER, LAST_RUN_KEY, {"at": stale})

    # When the consolidator actor starts
    handle = start(unique_bank, 1)
    try:
        boot: Report | None = ray.get(handle.wait_boot.remote(60), timeout=90)
        # Then it ran one pass at boot, through the store actor, and moved the checkpoint
        assert boot is not None and [(c.id, c.survivor) for c in boot.merged] == [(old.id, new.id)]
        assert store_actor.get(old.id, bank=unique_bank).memory.superseded_by == new.id
        assert store_actor.state_get(OWNER, LAST_RUN_KEY)["at"] == boot.started_at
        status = ray.get(handle.status.remote())
        assert status["last_run"] == boot.started_at and not status["running"]
        assert status["next_run"] >= boot.started_at + 24 * HOUR_MS - 60_000
    finally:
        stop(ray, handle)

    # When a fresh actor starts right after (a recent checkpoint)
    handle = start(unique_bank, 2)
    try:
        # Then it does not run at boot, and run_now still works on demand
        assert ray.get(handle.wait_boot.remote(60), timeout=90) is None
        store_actor.save("The user wants commit messages in the imperative mood", bank=unique_bank)
        store_actor.save(
            "The user wants commit messages written in the imperative mood", bank=unique_bank
        )
        report: Report = ray.get(handle.run_now.remote(dry_run=True), timeout=90)
        assert report.dry_run and len(report.groups) == 1 and report.merged == ()
        assert ray.get(handle.last_report.remote()) == report
    finally:
        stop(ray, handle)


def test_the_cli_verb_runs_a_pass_against_the_cluster(
    ray_cluster: Any,
    store_actor: Any,
    unique_bank: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import io
    import json

    from shared import cli

    # Given duplicates in the shared store actor (the CLI finds it by name)
    store_actor.save("The user prefers dark mode in the editor", bank=unique_bank)
    store_actor.save("The user prefers dark mode in their editor", bank=unique_bank)
    # When `memory consolidate --now --bank B --json` runs (through a running
    # memory-consolidator if there is one, else in-process over the store client)
    capsys.readouterr()
    code = cli.run(
        ["consolidate", "--now", "--bank", unique_bank, "--json"],
        out=io.StringIO(),
        err=io.StringIO(),
        store=store_actor,
    )
    report = json.loads(capsys.readouterr().out)
    # Then one pass over that bank merged the pair
    assert code == 0 and report["banks"] == [unique_bank] and len(report["merged"]) == 1


def test_the_repr_dates_the_next_pass_and_knows_the_last_one_after_a_restart(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from consolidate_worker import actor as consolidator_actor
    from store_worker.core import MemoryStore

    # Given a clean pass six hours ago, remembered in the store's sibling state, and a fresh
    # consolidator process (a restart: Ray reads its repr once, when it starts)
    store = MemoryStore(tmp_path / "data")
    last = time.time_ns() // 1_000_000 - 6 * HOUR_MS
    store.state_set(OWNER, LAST_RUN_KEY, {"at": last})
    monkeypatch.setattr(
        consolidator_actor.ShardedStoreClient, "connect", staticmethod(lambda **kw: store)
    )
    shell = consolidator_actor.ConsolidatorActor({})
    try:
        # Then its repr names that pass, and the next one with its date (a time alone read as
        # overdue: "no pass yet; next pass 05:29 UTC")
        def utc(ms: int) -> str:
            return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ms / 1000))

        assert repr(shell) == (
            f"ConsolidatorActor(last clean pass {utc(last)}; next pass {utc(last + 24 * HOUR_MS)})"
        )
    finally:
        shell.shutdown()
        store.close()
