"""Credentials said in prose beyond "my password is X" (shared/redact/said.py): a user and a
password after a noun that says credentials, an e-mail address and its password, and an API
key or a token named in another language; and a said password whose value starts the next
line (shared/redact/prose.py)."""

from __future__ import annotations

import pytest

from shared.redact import Redaction, redact
from tests.golden.redaction.cases import load, rows

CASES = load("said")

PW = "Vn4#qRt8zLx2"  # fake, shaped like a human password
KEY = "k7Hq2WmZ9xPb4LrT8vNc3Yds"  # fake, 24 random base62 characters

# (text, the secret in it, its label)
SAID = rows(CASES["said"], "text", "secret", "label", KEY=KEY, PW=PW)

SAID_PROSE = rows(CASES["said_prose"], "text")


@pytest.mark.parametrize(("text", "secret", "label"), SAID, ids=[s[0][:32] for s in SAID])
def test_a_credential_said_in_prose_is_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)

    assert secret not in result.text
    assert result.text == text.replace(secret, f"[REDACTED:{label}]", 1)


# --- a password said with logging in, Romance nouns for an API key, a session cookie -

LOGIN = rows(CASES["login"], "text", PW=PW)
LOGIN_PROSE = rows(CASES["login_prose"], "text")


@pytest.mark.parametrize("text", LOGIN)
def test_a_password_said_with_logging_in_is_redacted(text: str) -> None:
    secret = PW if PW in text else "hunter2x"
    assert redact(text).text == text.replace(secret, "[REDACTED:password]", 1)


ROMANCE = rows(CASES["romance"], "text", KEY=KEY)
ROMANCE_PROSE = rows(CASES["romance_prose"], "text")


@pytest.mark.parametrize("text", ROMANCE)
def test_an_api_key_named_in_a_romance_language_is_redacted(text: str) -> None:
    assert redact(text).text == text.replace(KEY, "[REDACTED:api_key]", 1)


SID = "s%3AaB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0x.Zx9Lq2Wm4Rt7Vp3Nb8Kc5Hs1Jd6Fg0Ye"  # fake
COOKIES = rows(CASES["cookies"], "text", SID=SID)
COOKIE_PROSE = rows(CASES["cookie_prose"], "text")


@pytest.mark.parametrize("text", COOKIES)
def test_a_session_cookie_said_in_prose_is_redacted(text: str) -> None:
    assert redact(text).text == text.replace(SID, "[REDACTED:credential]", 1)


_SURVIVES: list[str] = [
    # prose that names a credential without one survives
    *SAID_PROSE,
    # logging in without a password survives
    *LOGIN_PROSE,
    # a romance noun without a key survives
    *ROMANCE_PROSE,
    # a cookie without a session id survives
    *COOKIE_PROSE,
]


@pytest.mark.parametrize("text", _SURVIVES)
def test_text_without_a_secret_survives(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


_STAYS: list[str] = rows(CASES["stays"], "text")


@pytest.mark.parametrize("text", _STAYS)
def test_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text


_REDACTED: list[tuple[str, str]] = rows(CASES["redacted"], "text", "secret")


@pytest.mark.parametrize(("text", "secret"), _REDACTED)
def test_secrets_are_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text).text
