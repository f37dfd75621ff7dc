"""Secrets written in source code (shared/redact/sources.py and the literal forms of
shared/redact/assignments.py): prefixed and triple-quoted string literals, subscripts
and calls that name a credential in a string, setters, credential calls with positional
arguments, SQL, PowerShell's SecureString, Go's MySQL DSN and name/value pairs."""

from __future__ import annotations

import pytest

from shared.redact import Redaction, redact
from tests.golden.redaction.cases import load, rows

CASES = load("sources")

PW = "Vn4#qRt8zLx2"  # fake, shaped like a human password
PW2 = "blue-Otter-73!"  # fake
KEY = "k7Hq2WmZ9xPb4LrT8vNc3Yds"  # fake, 24 random base62 characters

# (text, the secret in it, its label)
SOURCES = rows(CASES["sources"], "text", "secret", "label", KEY=KEY, PW=PW, PW2=PW2)

# Code and prose that name a credential and hold none.
SOURCE_PROSE = rows(CASES["source_prose"], "text")


@pytest.mark.parametrize(("text", "secret", "label"), SOURCES, ids=[s[0][:32] for s in SOURCES])
def test_a_secret_in_source_code_is_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)

    assert secret not in result.text
    assert result.text == text.replace(secret, f"[REDACTED:{label}]", 1)


# A call whose password is its n-th argument, as each library's signature puts it;
# the user before it stays (Go's PlainAuth kept the password and redacted the user).
POSITIONAL = rows(CASES["positional"], "text", PW=PW)
POSITIONAL_PROSE = rows(CASES["positional_prose"], "text")


@pytest.mark.parametrize("text", POSITIONAL, ids=[t[:40] for t in POSITIONAL])
def test_a_password_in_its_place_among_positional_arguments_is_redacted(text: str) -> None:
    assert redact(text) == Redaction(
        text=text.replace(PW, "[REDACTED:password]"), labels=("password",)
    )


# Terraform's variable default under a credential's name, and JSON whose quotes are escaped.
ESCAPED_AND_HCL = rows(CASES["escaped_and_hcl"], "text", "secret", "label", KEY=KEY, PW=PW, PW2=PW2)
ESCAPED_AND_HCL_PROSE = rows(CASES["escaped_and_hcl_prose"], "text")


@pytest.mark.parametrize(("text", "secret", "label"), ESCAPED_AND_HCL)
def test_a_terraform_default_or_escaped_json_value_is_redacted(
    text: str, secret: str, label: str
) -> None:
    assert redact(text) == Redaction(
        text=text.replace(secret, f"[REDACTED:{label}]"), labels=(label,)
    )


@pytest.mark.parametrize(
    "secret", rows(CASES["a_percent_sign_in_a_password_is_no_format_slot"], "secret")
)
def test_a_percent_sign_in_a_password_is_no_format_slot(secret: str) -> None:
    text = f'requests.get(url, auth=HTTPBasicAuth("svc", "{secret}"))'

    assert redact(text).text == text.replace(secret, "[REDACTED:password]")


@pytest.mark.parametrize(
    ("text", "secret"),
    rows(CASES["postgres_role_password_is_redacted"], "text", "secret"),
)
def test_postgres_role_password_is_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text).text


@pytest.mark.parametrize("text", rows(CASES["postgres_role_lookalikes_stay"], "text"))
def test_postgres_role_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text


_SURVIVES: list[str] = [
    # code naming a credential without a literal survives
    *SOURCE_PROSE,
    # positional calls without a literal password survive
    *POSITIONAL_PROSE,
    # terraform and escaped json without a secret survive
    *ESCAPED_AND_HCL_PROSE,
]


@pytest.mark.parametrize("text", _SURVIVES)
def test_text_without_a_secret_survives(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())
