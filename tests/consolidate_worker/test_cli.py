"""``memory consolidate --now [--dry-run] [--bank B] [--json]`` through the real CLI parser."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from consolidate_worker.spec import WORKER
from shared import cli
from shared.client.workers import discover
from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    store = MemoryStore(folder, clock=FakeClock())
    store.save("The user prefers dark mode in the editor")
    store.save("The user prefers dark mode in their editor")
    store.save("The user prefers dark mode in the editor", bank="other", type="feedback")
    store.save("The user prefers dark mode in their editor", bank="other", type="feedback")
    store.close()
    return folder


@pytest.fixture
def memory(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run ``memory <argv>``; a worker verb prints to the process's stdout (shared.cli)."""

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        err = io.StringIO()
        code = cli.run(list(argv), out=io.StringIO(), err=err)
        return code, capsys.readouterr().out, err.getvalue()

    return run


def live(folder: Path, bank: str) -> int:
    store = MemoryStore(folder, clock=FakeClock())
    try:
        return store.list(bank=bank).total
    finally:
        store.close()


def test_the_worker_is_discovered_with_its_verb() -> None:
    assert WORKER in discover()
    assert (WORKER.name, WORKER.actor_name, WORKER.order) == (
        "consolidator",
        "memory-consolidator",
        20,
    )
    help_text = cli.build_parser([WORKER]).format_help()
    assert "consolidate" in help_text and "consolidation pass" in help_text


def test_dry_run_json_in_embedded_mode_writes_nothing(
    data_dir: Path, memory: Callable[..., tuple[int, str, str]]
) -> None:
    code, out, _ = memory(
        "--data-dir", str(data_dir), "consolidate", "--now", "--dry-run", "--json"
    )
    report = json.loads(out)
    assert code == 0 and report["dry_run"] is True
    assert sorted(g["bank"] for g in report["groups"]) == ["main", "other"]
    assert live(data_dir, "main") == 2 and live(data_dir, "other") == 2


def test_one_bank_pass_with_flags_after_the_verb(
    data_dir: Path, memory: Callable[..., tuple[int, str, str]]
) -> None:
    code, out, _ = memory("consolidate", "--now", "--bank", "other", "--data-dir", str(data_dir))
    assert code == 0
    assert "merged=1" in out and "[other] near-duplicate" in out
    assert live(data_dir, "other") == 1 and live(data_dir, "main") == 2


def test_without_now_is_a_usage_error(
    data_dir: Path, memory: Callable[..., tuple[int, str, str]]
) -> None:
    code, _, err = memory("--data-dir", str(data_dir), "consolidate")
    assert code == 2 and "--now" in err


def test_an_unknown_bank_is_reported_as_an_error_exit(
    data_dir: Path, memory: Callable[..., tuple[int, str, str]]
) -> None:
    code, out, _ = memory("--data-dir", str(data_dir), "consolidate", "--now", "--bank", "nope")
    assert code == 1 and "not_found" in out


def test_an_embedded_pass_uses_the_configured_judge(
    tmp_path: Path,
    memory: Callable[..., tuple[int, str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given a grey-band pair and the judge turned on through the environment (its litellm call
    # answered by litellm's mock provider)
    from consolidate_worker import judge as judge_mod
    from shared.llm import LiteLLMBackend

    folder = tmp_path / "grey"
    store = MemoryStore(folder, clock=FakeClock())
    old = store.save("Use pytest fixtures instead of setUp methods in tests").memory.id
    store.save("Use pytest fixtures rather than setUp methods in tests")
    store.close()
    monkeypatch.setenv("MEMORY_CONSOLIDATE_JUDGE_ENABLED", "true")
    monkeypatch.setenv("MEMORY_CONSOLIDATE_JUDGE_MODEL", "openai/gpt-4o-mini")
    reply = json.dumps({"decision": "duplicate", "keep": old, "reason": "same advice"})
    monkeypatch.setattr(judge_mod, "create_llm", lambda **_: LiteLLMBackend(mock_response=reply))
    # When `memory --data-dir consolidate --now` runs
    code, out, _ = memory("--data-dir", str(folder), "consolidate", "--now")
    # Then the judge was asked and its verdict printed and applied
    assert code == 0
    assert "judge, ambiguous: " in out and f"duplicate (keep {old}): same advice" in out
    assert live(folder, "main") == 1
