"""Secrets in the lines of configuration files and tools' output (shared/redact/files.py):
.pgpass lines, directive lines (``requirepass <pw>``, a router's ``password 0 <pw>``), Redis'
``AUTH``, Cookie headers, Wi-Fi (the QR code's ``WIFI:`` string, "the wifi key is ..."), and the
prompts of ``aws configure``."""

from __future__ import annotations

import pytest

from shared.redact import Redaction, redact
from tests.golden.redaction.cases import load, rows

CASES = load("files")

PW = "Vn4#qRt8zLx2"  # fake, shaped like a human password
PW2 = "blue-Otter-73!"  # fake
KEY = "k7Hq2WmZ9xPb4LrT8vNc3Yds"  # fake, 24 random base62 characters
AWS_SECRET = "Jt5/Kp8qWz2+Lm4nRx7bVc9dFg3hSj6kYa1eUo0i"  # fake, 40 characters
HEX32 = "9F2C4A7E1B3D5F60A8C2E4B6D8F0A1C3"  # fake, a session id's shape

# (text, the secret in it, its label)
FILES = rows(
    CASES["files"],
    "text",
    "secret",
    "label",
    AWS_SECRET=AWS_SECRET,
    HEX32=HEX32,
    KEY=KEY,
    PW=PW,
    PW2=PW2,
)

FILE_PROSE = rows(CASES["file_prose"], "text")


@pytest.mark.parametrize(("text", "secret", "label"), FILES, ids=[f[0][:32] for f in FILES])
def test_a_secret_in_a_config_line_is_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)

    assert secret not in result.text
    assert result.text == text.replace(secret, f"[REDACTED:{label}]", 1)


# --- Redis Sentinel and ACLs, pgbouncer's userlist, SNMP, cookies.txt, OpenVPN ------

RPW = "Xk9#Lm2pQz7w"  # fake
MD5 = "md5a3f5b8c9d2e1f4a7b6c5d8e9f0a1b2c3"  # fake: "md5" and 32 hex
SERVICE_FILES = rows(CASES["service_files"], "text", "secret", "label", MD5=MD5, RPW=RPW)

SERVICE_FILE_PROSE = rows(CASES["service_file_prose"], "text")


@pytest.mark.parametrize(
    ("text", "secret", "label"), SERVICE_FILES, ids=[f[0][:32] for f in SERVICE_FILES]
)
def test_a_secret_in_a_service_file_is_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)

    assert result.text == text.replace(secret, f"[REDACTED:{label}]", 1)


# --- a delimited table whose header names a credential -----------------------------

DELIMITED = rows(CASES["delimited"], "text", "secrets")

DELIMITED_PROSE = rows(CASES["delimited_prose"], "text")


@pytest.mark.parametrize(("text", "secrets"), DELIMITED, ids=[d[0][:24] for d in DELIMITED])
def test_a_column_under_a_credential_header_is_redacted(text: str, secrets: list[str]) -> None:
    result = redact(text)

    for secret in secrets:
        assert secret not in result.text
    assert result.text.splitlines()[0] == text.splitlines()[0]  # the header stays


def test_an_openvpn_static_key_goes_whole() -> None:
    body = "6acef03f62675b4b1bbd03e53b187727\n423cea742242106cb2916a8a4c829756"  # fake
    text = (
        "<tls-auth>\n-----BEGIN OpenVPN Static key V1-----\n"
        f"{body}\n-----END OpenVPN Static key V1-----\n</tls-auth>\nkey-direction 1"
    )

    result = redact(text)

    assert result.text == "<tls-auth>\n[REDACTED:private_key]\n</tls-auth>\nkey-direction 1"


def test_a_scram_verifier_in_a_userlist_is_redacted() -> None:
    verifier = (  # fake
        "SCRAM-SHA-256$4096:Zm9vYmFyYmF6cXV4$Qk1FUnd6eXh3dnV0c3JxcG9ubWxramloZ2ZlZGNiYQ==:"
        "V2hhdGV2ZXJzZXJ2ZXJrZXlpc2hlcmVvbmVwbHVz"
    )
    text = f'"admin" "{verifier}"\n'

    assert redact(text).text == '"admin" "[REDACTED:password]"\n'


_SURVIVES: list[str] = [
    # a config line without a secret survives
    *FILE_PROSE,
    # a service file line without a secret survives
    *SERVICE_FILE_PROSE,
    # a delimited table without a credential column survives
    *DELIMITED_PROSE,
]


@pytest.mark.parametrize("text", _SURVIVES)
def test_text_without_a_secret_survives(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())
