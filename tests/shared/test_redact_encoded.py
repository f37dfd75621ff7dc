"""Base64 with no shape of its own where the context says it is secret
(shared/redact/encoded.py): a Kubernetes Secret's ``data:``/``stringData:`` values under any
key, in YAML or JSON; a value said to be a credential's base64 ("the creds are base64 <v>");
an ``auth`` value that decodes to ``user:password``. And ``kubectl create secret
--from-literal`` values under any key (shared/redact/commands.py)."""

from __future__ import annotations

import base64

import pytest

from shared.redact import Redaction, redact
from tests.golden.redaction.cases import load, rows

CASES = load("encoded")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


PW = "Vn4#qRt8zLx2"  # fake, shaped like a human password
BLOB = b64("sunflower-77")  # fake: base64 of a password with no shape of its own
USER = b64("admin")

MANIFEST = (
    "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  labels:\n    app: web\n"
    f"type: Opaque\ndata:\n  username: {USER}\n  blob: {BLOB}\n"
)


def test_every_value_under_a_secrets_data_is_redacted_whatever_its_key() -> None:
    result = redact(MANIFEST)

    assert BLOB not in result.text and USER not in result.text
    assert result.text == MANIFEST.replace(USER, "[REDACTED:secret]").replace(
        BLOB, "[REDACTED:secret]"
    )
    assert "name: db" in result.text and "app: web" in result.text


SECRETS = rows(CASES["secrets"], "text", "secrets", BLOB=BLOB)


@pytest.mark.parametrize(("text", "secrets"), SECRETS, ids=range(len(SECRETS)))
def test_a_secret_manifests_values_are_redacted(text: str, secrets: list[str]) -> None:
    result = redact(text)

    assert not [s for s in secrets if s in result.text]
    assert "secret" in result.labels


NOT_SECRETS = rows(CASES["not_secrets"], "text", BLOB=BLOB)


SAID = [
    f"the creds are base64 {b64('admin:hunter2')}",
    f"the token, base64-encoded, is {b64('tok-123456')}",
    f"db password in b64: {b64('sunflower')}",
    f"API key (base64): {b64('k-77-alpha')}",
]


@pytest.mark.parametrize("text", SAID)
def test_a_value_said_to_be_a_credentials_base64_is_redacted(text: str) -> None:
    value = text.rsplit(" ", 1)[1]

    assert value not in redact(text).text


SAID_PROSE = rows(CASES["said_prose"], "text")


@pytest.mark.parametrize(
    "text",
    [
        f"auth: {b64('deploy:' + PW)}",
        f'"auth": "{b64("bob:pw12")}"',
        f"_auth={b64('bob:hunter2')}",
    ],
)
def test_an_auth_value_that_decodes_to_a_user_and_password_is_redacted(text: str) -> None:
    assert redact(text).labels == ("basic_auth",)


def test_every_from_literal_of_a_created_secret_is_redacted() -> None:
    text = (
        "kubectl create secret generic db --from-literal=username=admin "
        "--from-literal=conn=sunflower --from-literal='pw=hunter two'"
    )

    assert redact(text).text == (
        "kubectl create secret generic db --from-literal=username=[REDACTED:secret] "
        "--from-literal=conn=[REDACTED:secret] --from-literal='pw=[REDACTED:secret]'"
    )


# Found by the round-7 probe: base64 said after the value, a Basic credential being made.
@pytest.mark.parametrize(
    ("text", "secret"),
    rows(
        CASES["base64_said_after_the_value_or_made_with_echo_is_redacted"],
        "text",
        "secret",
        BLOB=BLOB,
        PW=PW,
    ),
)
def test_base64_said_after_the_value_or_made_with_echo_is_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text).text


_SURVIVES: list[str] = [
    *rows(CASES["survives"], "text"),
    *NOT_SECRETS,
    *SAID_PROSE,
    f"auth: {b64('hello world')}",
]


@pytest.mark.parametrize("text", _SURVIVES)
def test_text_without_a_secret_survives(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())
