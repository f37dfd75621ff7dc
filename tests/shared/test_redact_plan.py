"""The shipped redaction plan (``shared/redact_plan.json``, ``shared/redact_gate.py``): it is
exactly what the derivation gives for the code and catalogue beside it, an engine built from
it redacts as a derived one does, a stale plan is never used, and a rule compiles only when
the gate names it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources

import pytest

import shared.redact_gate as gate
from shared.redact import redact
from shared.redact_catalogue import catalogue


@pytest.fixture
def fresh_engine() -> Iterator[None]:
    """Each test builds its own engine; the process's cached one comes back afterwards."""
    gate.engine.cache_clear()
    gate._shipped.cache_clear()
    yield
    gate.engine.cache_clear()
    gate._shipped.cache_clear()


def test_the_shipped_plan_is_the_derivation_of_this_code() -> None:
    """Fails after a change to the catalogue or the rules' code until the plan is written
    again: ``python -m shared.redact_gate``."""
    shipped = json.loads(resources.files("shared").joinpath(gate.PLAN).read_text("utf-8"))
    assert shipped["key"] == gate.plan_key(), "stale plan: run python -m shared.redact_gate"
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
    gate.engine.cache_clear()
    monkeypatch.setattr(gate, "_shipped", lambda: None)
    derived = gate.engine()
    assert derived is not planned
    assert [r.anchors for r in derived.rules] == [r.anchors for r in planned.rules]
    assert [r.pattern.pattern for r in derived.rules] == [r.pattern.pattern for r in planned.rules]
    assert (derived.gate.pattern, derived.words, derived.vendors) == (
        planned.gate.pattern,
        planned.words,
        planned.vendors,
    )
    assert {t: redact(t) for t in texts()} == from_plan
    assert sum(bool(r.labels) for r in from_plan.values()) > len(catalogue())


def test_a_plan_for_other_code_is_not_used(
    fresh_engine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate, "plan_key", lambda: "a key of some other code")
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
