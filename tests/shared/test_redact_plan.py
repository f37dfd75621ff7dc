"""The shipped redaction plan (``shared/redact/plan.json``, ``shared/redact/gate.py``): it is
exactly what the derivation gives for the code and catalogue beside it, an engine built from
it redacts as a derived one does, a stale plan is never used, and a rule compiles only when
the gate names it."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

import shared.redact.gate as gate
from shared.redact import redact
from shared.redact.catalogue import catalogue

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh_engine() -> Iterator[None]:
    """Each test builds its own engine; the process's cached one comes back afterwards."""
    gate._engine.cache_clear()
    gate._shipped.cache_clear()
    yield
    gate._engine.cache_clear()
    gate._shipped.cache_clear()


def test_the_shipped_plan_is_the_derivation_of_this_code() -> None:
    """Fails after a change to the catalogue or the rules' code until the plan is written
    again: ``python -m shared.redact.gate``."""
    shipped = json.loads(resources.files("shared.redact").joinpath(gate.PLAN).read_text("utf-8"))
    assert shipped["key"] == gate.plan_key(), "stale plan: run python -m shared.redact.gate"
    assert shipped == json.loads(json.dumps(gate.build_plan()))  # tuples read back as lists


def texts() -> list[str]:
    found = []
    for fmt in catalogue():
        found += [fmt.sample, fmt.lookalike, f"see {fmt.sample} there", f"x{fmt.sample}"]
    return [*found, "The user moved Kestrel to Fly.io in March; Ana agreed.", "password: hunter2x!"]


def test_an_engine_from_the_plan_redacts_as_a_derived_one(
    fresh_engine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert gate._shipped() is not None
    planned = gate.engine()
    from_plan = {t: redact(t) for t in texts()}
    gate._engine.cache_clear()
    monkeypatch.setattr(gate, "_shipped", lambda: None)
    derived = gate.engine()
    assert derived is not planned
    assert [r.anchors for r in derived.rules] == [r.anchors for r in planned.rules]
    assert [r.pattern.pattern for r in derived.rules] == [r.pattern.pattern for r in planned.rules]
    assert (
        derived.gate.pattern,
        derived.words,
        derived.vendors,
        derived.widths,
    ) == (
        planned.gate.pattern,
        planned.words,
        planned.vendors,
        planned.widths,
    )
    assert {t: redact(t) for t in texts()} == from_plan
    assert sum(bool(r.labels) for r in from_plan.values()) > len(catalogue())


def pieces() -> list[str]:
    """Every sample, look-alike and context text, and each one's heads and tails: the
    identifiers, labels and short lines the width check decides for."""
    out = []
    for text in texts():
        for n in range(1, len(text), max(1, len(text) // 5)):
            out += [text[:n], text[-n:]]
    return [*out, "m0001234", "01JH2K3M4N5P6Q7R8S9T0V1W2X", "4111 1111 1111 1111", "pin 1234"]


def test_no_match_is_shorter_than_its_rules_width() -> None:
    current = gate.engine()
    for text in texts():
        for rule, width in zip(current.rules, current.widths, strict=True):
            for m in rule.pattern.finditer(text):
                assert len(m.group()) >= width, (rule.pattern.pattern, m.group())


def test_the_width_check_changes_no_redaction(
    fresh_engine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate drops a rule whose shortest match is longer than the text; with every width
    taken as 0 (no rule dropped) each piece redacts the same, and ids refused the same."""
    from shared.redact.engine import find_credential

    cases = pieces()
    checked = {t: (redact(t), find_credential(t)) for t in cases}
    current = gate.engine()
    unchecked = dataclasses.replace(current, widths=(0,) * len(current.widths))
    monkeypatch.setattr(gate, "engine", lambda: unchecked)
    assert {t: (redact(t), find_credential(t)) for t in cases} == checked
    assert sum(bool(r.labels) for r, _ in checked.values()) > len(catalogue())


def test_a_plan_for_other_code_is_not_used(
    fresh_engine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate, "CODE_KEY", "a key of some other code")
    assert gate._shipped() is None
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    assert redact(f"the token {token}").text == "the token [REDACTED:github_token]"
    assert all("pattern" in rule.__dict__ for rule in gate.engine().rules)  # derived: compiled


def test_a_rule_from_the_plan_compiles_when_the_gate_names_it(fresh_engine: None) -> None:
    rules = gate.engine().rules
    catalogued = [r for r in rules if isinstance(r.source, str)]
    assert catalogued and not any("pattern" in r.__dict__ for r in catalogued)
    redact("The user moved Kestrel to Fly.io in March; Ana agreed.")
    assert not any("pattern" in r.__dict__ for r in catalogued)  # plain prose: no rule runs
    assert redact("key AKIA" + "IOSFODNN7EXAMPLE here").labels
    compiled = [r for r in catalogued if "pattern" in r.__dict__]
    assert 0 < len(compiled) < 10


# -- 4. the plan's key describes the files on disk, not the code that is running ------------

_RUNNING = """
import sys
import shared.redact, shared.redact.gate, shared.redact.context  # a store that has only read
print("ready", flush=True)
sys.stdin.readline()  # meanwhile the package on disk is upgraded
from shared.redact import redact
print(redact(
    "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey="
    "x7Y2kQ9LmN4pR8sT1uV6wZ3aB5cD0eF2gH7jK9mN1pQ4rS6tU8vW0xY2zA4bC6dE8fG0hJ2kL4mN6pQ8rS0tU2vW4x=="
).text, flush=True)
"""


def test_a_plan_written_for_other_code_than_the_running_one_is_not_used(tmp_path: Path) -> None:
    """A long-running process (the store actor, a gateway) whose package is upgraded in
    place must keep redacting with its own rules: the plan's key is taken when the rules'
    modules are imported (``CODE_KEY``), so a newer release's plan on disk (here it swaps two
    context rules, and gates the Azure key rule on the AWS rule's anchors) is not used."""
    pkg = tmp_path / "site"
    shutil.copytree(REPO / "shared", pkg / "shared", ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(pkg), "PYTHONDONTWRITEBYTECODE": "1"}
    running = subprocess.Popen(
        [sys.executable, "-c", _RUNNING],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    try:
        assert running.stdout is not None and running.stdin is not None
        assert running.stdout.readline().strip() == "ready"
        # the upgrade: a release that reorders two context rules and ships its plan
        context = pkg / "shared" / "redact" / "context.py"
        aws = '    (_AWS_SECRET, _fixed("aws_secret_key"), _aws_secret_starts),\n'
        azure = '    (_AZURE_KEY, _fixed("azure_key"), None),\n'
        text = context.read_text(encoding="utf-8")
        assert aws + azure in text
        context.write_text(text.replace(aws + azure, azure + aws), encoding="utf-8")
        subprocess.run(
            [sys.executable, "-m", "shared.redact.gate"],
            check=True,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            timeout=120,
        )
        out, err = running.communicate("go\n", timeout=60)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == 0, err[-3000:]
    assert out.strip() == (
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=[REDACTED:azure_key]"
    )


# -- concurrent first redactions ------------------------------------------------------------


def test_concurrent_first_redactions_all_succeed() -> None:
    """Threads that redact before the engine is built wait for one engine: the rules of two
    engines never compare equal (each has its own judge closures), and one redaction mixing
    them (``candidates`` from one, ``order`` from the other) raised ValueError."""
    texts = [f"see {f.sample} there" for f in catalogue()]
    errors: list[str] = []
    interval = sys.getswitchinterval()
    gate._engine.cache_clear()
    sys.setswitchinterval(1e-6)
    try:

        def work() -> None:
            try:
                for text in texts:
                    redact(text)
            except Exception as e:
                errors.append(repr(e))

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(interval)
        gate._engine.cache_clear()
    assert errors == []
