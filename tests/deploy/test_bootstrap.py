"""``python -m deploy.bootstrap``'s waiting: the head runs it before its own ``ray start``, so
it must outwait a cluster that is not there yet, and still fail in one line when told not to."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from deploy import bootstrap
from shared.contract.errors import SourceUnavailableError


def _flaky(failures: int) -> tuple[list[int], object]:
    calls: list[int] = []

    def run(workers: Sequence[str], env: dict[str, str]) -> int:
        calls.append(1)
        if len(calls) <= failures:
            raise SourceUnavailableError("no Ray cluster is running")
        return 0

    return calls, run


def test_it_retries_until_the_cluster_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    calls, run = _flaky(2)
    monkeypatch.setattr(bootstrap, "_bootstrap", run)
    monkeypatch.setattr(bootstrap, "RETRY_S", 0.0)
    assert bootstrap.main(["--wait-s", "30"]) == 0
    assert len(calls) == 3


def test_without_a_wait_it_fails_at_once_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls, run = _flaky(5)
    monkeypatch.setattr(bootstrap, "_bootstrap", run)
    assert bootstrap.main([]) == 2
    assert len(calls) == 1
    assert capsys.readouterr().err == "error: source_unavailable: no Ray cluster is running\n"
