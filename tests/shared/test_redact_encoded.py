"""Base64 with no shape of its own where the context says it is secret
(shared/redact/encoded.py): a Kubernetes Secret's ``data:``/``stringData:`` values under any
key, in YAML or JSON; a value said to be a credential's base64 ("the creds are base64 <v>");
an ``auth`` value that decodes to ``user:password``. And ``kubectl create secret
--from-literal`` values under any key (shared/redact/commands.py)."""

from __future__ import annotations

import base64

import pytest

from shared.redact import Redaction, redact


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


SECRETS = [
    # stringData: plain values, quoted or not, and a block scalar (a whole file)
    (
        "kind: Secret\napiVersion: v1\nstringData:\n  conn: hunter-prod\n  other: 'x y z'\n"
        "  app.ini: |\n    [db]\n    pass = sunflower\n",
        ["hunter-prod", "x y z", "[db]", "sunflower"],
    ),
    # a list from `kubectl get secrets -o yaml`: the item's kind is after its data
    (
        f"apiVersion: v1\nitems:\n- apiVersion: v1\n  data:\n    blob: {BLOB}\n  kind: Secret\n"
        "  metadata:\n    name: x\nkind: List\n",
        [BLOB],
    ),
    # several documents: only the Secret's
    (f"---\nkind: ConfigMap\ndata:\n  a: plain\n---\nkind: Secret\ndata:\n  k: {BLOB}\n", [BLOB]),
    # JSON, one line or pretty-printed
    (
        f'{{"apiVersion":"v1","kind":"Secret","metadata":{{"name":"db"}},"data":{{"k":"{BLOB}"}}}}',
        [BLOB],
    ),
    (f'{{\n  "data": {{\n    "blob": "{BLOB}"\n  }},\n  "kind": "Secret"\n}}', [BLOB]),
]


@pytest.mark.parametrize(("text", "secrets"), SECRETS, ids=range(len(SECRETS)))
def test_a_secret_manifests_values_are_redacted(text: str, secrets: list[str]) -> None:
    result = redact(text)

    assert not [s for s in secrets if s in result.text]
    assert "secret" in result.labels


NOT_SECRETS = [
    f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  blob: {BLOB}\n",
    f'{{"kind":"ConfigMap","data":{{"blob":"{BLOB}"}}}}',
    "kind: Secret\nstringData:\n  password: {{ .Values.db.password | quote }}\n"
    '  user: "{{ .Values.user }}"\n',
    "kind: Secret\ndata:\n  k: ''\n  t: <base64>\n",
    "kind: ExternalSecret\nspec:\n  data:\n  - secretKey: pw\n",
    "The secret data: keys are arbitrary strings",
]


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


SAID_PROSE = [
    "the image is base64 encoded in the payload",
    "base64 of the logo: iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ",
    "use base64 encoding for the token field",
    "the password is base64 encoded before it is hashed",
]


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
    [
        (f"The Secret's value is {BLOB} (base64)", BLOB),
        ("echo -n 'admin:sunflower42' | base64", "sunflower42"),
        (f"echo deploy:{PW} | base64", PW),
    ],
)
def test_base64_said_after_the_value_or_made_with_echo_is_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text).text


_SURVIVES: list[str] = [
    # data that is no secrets survives
    *NOT_SECRETS,
    # base64 said of no credential survives
    *SAID_PROSE,
    # an auth value that is no user and password survives
    "auth: required",
    '"auth": "none"',
    f"auth: {b64('hello world')}",
    # a from literal template survives
    "kubectl create secret generic NAME --from-literal=key=value",
    "kubectl create secret generic db --from-literal=password=$DB_PASSWORD",
    "kubectl create configmap cfg --from-literal=mode=fast",
    # base64 made of no credential survives
    "the logo (base64) is big",
    "echo $USER:$PASS | base64",
    "echo -n user:password | base64",
    "echo hello:world | base64",
]


@pytest.mark.parametrize("text", _SURVIVES)
def test_text_without_a_secret_survives(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())
