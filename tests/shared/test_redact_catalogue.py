"""The credential catalogue (shared/redact/credentials.toml): every entry's sample is
redacted with its label inside a sentence, every look-alike survives, the file is validated,
and the catalogue's checksummed samples are true to their formats."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

import shared.redact.engine as engine
from shared.contract.errors import UnknownError
from shared.redact import redact
from shared.redact.catalogue import (
    CHECKS,
    KINDS,
    Format,
    base58check_ok,
    catalogue,
    github_checksum_ok,
    parse_catalogue,
)
from tests.golden.redaction.cases import load, rows

CASES = load("catalogue")

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
    text = resources.files("shared.redact").joinpath("credentials.toml").read_text(encoding="utf-8")
    assert parse_catalogue(text) == FORMATS
    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert '"shared.redact" = ["credentials.toml", "plan.json"]' in pyproject  # with its plan


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
    # Decision (shared/redact/__init__.py): a well-formed token is redacted whether its tail
    # verifies.
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
    rows(CASES["a_broken_catalogue_is_refused_with_a_typed_error"], "toml", "message"),
)
def test_a_broken_catalogue_is_refused_with_a_typed_error(toml: str, message: str) -> None:
    with pytest.raises(UnknownError, match=message):
        parse_catalogue(toml)


# Where an entry was widened from a public secret scanner, it names the rule: a trufflehog
# detector's Go file or a secretlint rule package on npm.
_CITE = re.compile(
    r"trufflesecurity/trufflehog pkg/detectors/[a-z0-9_]+(?:/v\d+)?/[a-z0-9_]+\.go"
    r"|npm @secretlint/secretlint-rule-[a-z0-9-]+ \(rule @secretlint/secretlint-rule-[a-z0-9-]+\)"
)
CITED = [f for f in FORMATS if f.cite]


def test_the_catalogue_is_widened_from_public_scanners() -> None:
    assert len(CITED) >= 42
    assert {f.cite.split()[0] for f in CITED} == {"trufflesecurity/trufflehog", "npm"}


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.id)
def test_every_entry_says_where_it_comes_from(fmt: Format) -> None:
    assert fmt.source.strip()
    assert not fmt.cite or _CITE.fullmatch(fmt.cite), fmt.cite


# The ways a pasted credential is framed: quoted in an assignment, a JSON value, a header, a
# line of its own, a shell export.
_FRAMES = (
    'API_TOKEN="{}"',
    '{{"token": "{}"}}',
    "Authorization: Bearer {}",
    "{}",
    "export SERVICE_KEY={}\nthen run it",
)


@pytest.mark.parametrize("fmt", CITED, ids=lambda f: f.id)
def test_no_piece_of_a_cited_sample_stays_visible_in_any_frame(fmt: Format) -> None:
    secret = _secret(fmt)
    pasted = fmt.sample if fmt.kind == "keyword" else secret  # (one needs its vendor's name)
    for frame in _FRAMES:
        text = frame.format(pasted)

        result = redact(text)

        left = re.sub(r"\[REDACTED:[a-z0-9_]+\]", " ", result.text)
        visible = [p for p in re.findall(r"[A-Za-z0-9]{6,}", secret) if p in left]
        assert result.labels and not visible, (frame, result.text)


def test_an_empty_cite_is_refused() -> None:
    entry = (
        "[[format]]\nid='a'\nlabel='a'\nkind='prefix'\npattern='a_[0-9]{9}'\n"
        "sample='a_123456789'\nlookalike='a'\nsource='s'\ncite=' '\n"
    )
    with pytest.raises(UnknownError, match="cite"):
        parse_catalogue(entry)


def test_duplicate_ids_are_refused() -> None:
    entry = (
        "[[format]]\nid='a'\nlabel='a'\nkind='prefix'\npattern='a_[0-9]{9}'\n"
        "sample='a_123456789'\nlookalike='a'\nsource='s'\n"
    )
    with pytest.raises(UnknownError, match="duplicate"):
        parse_catalogue(entry * 2)


# Formats an earlier catalogue let through whole (every value a synthetic fake).
_XPRV = (
    "xprv9s21ZrQH143KYXC4ZTbZo9x4uN4BgRhs8JwdhZZ9cLFDLS2NXk6UtaE3MK1TPNopRSbkfir4qNHDaamfwfG11"
    "anf5FwjN8c72c3RTBoTnSC"
)
_RSA_BODY = (
    "MIIEpAIBAAKCAQEAi1Yc8sc7haplivBzy/FlmTpn8cQExo9GDPmB3fRkppSpnWiZqL5udDbworM30kSj\n"
    "Q2xw8TyUbq4Lm0Fn7cd3Xk9Zr1AbPq6Hs5Tg2Wd8Yv0Jc4Ue7Nf1Ri9Kb3Mh6Lp2Oq5Ss8Tt1Vw4Xx7Yz0Ab3"
)
_SOLANA = "[" + ",\n  ".join(str((i * 37 + 11) % 256) for i in range(64)) + "]"


@pytest.mark.parametrize(
    ("text", "secret", "label"),
    [
        (f"xprv: {_XPRV}", _XPRV[20:60], "private_key"),
        (f"backup {_XPRV}", _XPRV[20:60], "private_key"),
        *rows(CASES["formats_are_redacted"], "text", "secret", "label", _RSA_BODY=_RSA_BODY),
        (f"cat ~/.config/solana/id.json\n{_SOLANA}", _SOLANA[:40], "private_key"),
    ],
)
def test_formats_are_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)
    assert secret not in result.text
    assert label in result.labels


# Automation and chat webhooks whose URL is itself the credential (synthetic keys).
@pytest.mark.parametrize(
    ("text", "secret"),
    rows(CASES["webhook_urls_are_redacted"], "text", "secret"),
)
def test_webhook_urls_are_redacted(text: str, secret: str) -> None:
    result = redact(text)
    assert secret not in result.text
    assert result.labels == ("chat_webhook",)


_STAYS: list[str] = rows(CASES["stays"], "text")


@pytest.mark.parametrize("text", _STAYS)
def test_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text
