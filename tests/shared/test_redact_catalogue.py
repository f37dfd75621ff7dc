"""The credential catalogue (shared/credentials.toml, issue 12): every entry's sample is
redacted with its label inside a sentence, every look-alike survives, the file is validated,
and the catalogue's checksummed samples are true to their formats."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

import shared.redact as engine
from shared.errors import UnknownError
from shared.redact import redact
from shared.redact_catalogue import (
    CHECKS,
    KINDS,
    Format,
    base58check_ok,
    catalogue,
    github_checksum_ok,
    parse_catalogue,
)

FORMATS = catalogue()


def _secret(fmt: Format) -> str:
    """The part of the sample the entry's pattern calls the secret."""
    m = re.search(fmt.pattern, fmt.sample)
    assert m is not None, fmt.id
    return m.group("secret") if fmt.has_context else m.group(0)


def test_the_catalogue_is_broad_and_well_formed() -> None:
    assert len(FORMATS) >= 150
    assert len({f.id for f in FORMATS}) == len(FORMATS)
    assert {f.kind for f in FORMATS} == KINDS
    assert all(f.check is None or f.check in CHECKS for f in FORMATS)
    assert all(f.source and f.sample != f.lookalike for f in FORMATS)


def test_the_catalogue_ships_as_package_data() -> None:
    text = resources.files("shared").joinpath("credentials.toml").read_text(encoding="utf-8")
    assert parse_catalogue(text) == FORMATS
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert 'shared = ["credentials.toml", "redact_plan.json"]' in pyproject  # with its plan


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.id)
def test_each_sample_is_redacted_inside_a_sentence_with_its_label(fmt: Format) -> None:
    # Given
    text = f"Earlier today {fmt.sample} and then we moved on."
    secret = _secret(fmt)

    # When
    result = redact(text)

    # Then
    assert result.labels == (fmt.label,)
    assert secret not in result.text
    assert result.text == text.replace(secret, f"[REDACTED:{fmt.label}]", 1)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.id)
def test_each_lookalike_survives_byte_identical(fmt: Format) -> None:
    text = f"Note that {fmt.lookalike} in the docs."
    assert redact(text).text == text


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.id)
def test_the_shortcut_agrees_with_every_rule_on_each_entry(fmt: Format) -> None:
    for text in (f"x {fmt.sample} y", f"x {fmt.lookalike} y"):
        assert redact(text) == engine._redact_with(text, engine._RULES)


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f.id.startswith("github_gh")], ids=str)
def test_github_samples_carry_a_valid_crc32_tail(fmt: Format) -> None:
    assert github_checksum_ok(fmt.sample)
    broken = fmt.sample[:-1] + ("A" if fmt.sample[-1] != "A" else "B")
    assert not github_checksum_ok(broken)
    # Decision (shared/redact.py): a well-formed token is redacted whether its tail verifies.
    assert redact(f"token {broken} here").labels == ("github_token",)


def test_a_checksum_gates_the_bitcoin_wif_entry() -> None:
    fmt = next(f for f in FORMATS if f.id == "bitcoin_wif")
    key = _secret(fmt)
    corrupted = key[:-2] + ("z" if key[-2] != "z" else "y") + key[-1]
    assert base58check_ok(key) and not base58check_ok(corrupted)

    assert redact(f"bitcoin wif key: {key}").labels == ("private_key",)
    # (a labelled key-shaped value is still redacted, by the generic "key: ..." rule)
    assert "private_key" not in redact(f"bitcoin wif key: {corrupted}").labels


def test_the_discord_entry_checks_that_the_token_names_a_bot_id() -> None:
    fmt = next(f for f in FORMATS if f.id == "discord_bot_token")
    rest = fmt.sample.split(".", 1)[1]
    not_an_id = "MTIzNDU2Nzg5MDEyYWJjZGVm"  # base64 of "123456789012abcdef": no bot id
    assert CHECKS["discord_id"](fmt.sample)
    assert redact(f"bot {not_an_id}.{rest} x").text == f"bot {not_an_id}.{rest} x"


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[[format]]\nid = 'a'\n", "lacks"),
        (
            "[[format]]\nid='a'\nlabel='a'\nkind='prefix'\npattern='a_[0-9]{9}'\ncheck='nope'\n"
            "sample='a_123456789'\nlookalike='a'\nsource='s'\n",
            "unknown check",
        ),
        (
            "[[format]]\nid='a'\nlabel='A B'\nkind='prefix'\npattern='x'\nsample='x'\n"
            "lookalike='y'\nsource='s'\n",
            "bad kind or label",
        ),
        (
            "[[format]]\nid='a'\nlabel='a'\nkind='prefix'\npattern='('\nsample='x'\n"
            "lookalike='y'\nsource='s'\n",
            "missing",
        ),
        (
            "[[format]]\nid='a'\nlabel='a'\nkind='keyword'\nsample='x'\nlookalike='y'\n"
            "source='s'\n",
            "needs a pattern",
        ),
        ("[[format]\n", "credentials.toml"),
    ],
)
def test_a_broken_catalogue_is_refused_with_a_typed_error(toml: str, message: str) -> None:
    with pytest.raises(UnknownError, match=message):
        parse_catalogue(toml)


def test_duplicate_ids_are_refused() -> None:
    entry = (
        "[[format]]\nid='a'\nlabel='a'\nkind='prefix'\npattern='a_[0-9]{9}'\n"
        "sample='a_123456789'\nlookalike='a'\nsource='s'\n"
    )
    with pytest.raises(UnknownError, match="duplicate"):
        parse_catalogue(entry * 2)
