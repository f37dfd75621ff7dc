"""Values whose context is on another line, or in a form no assignment reads
(``shared/redact/lines.py``), and secrets split over two parts (``redact_many``). Every value
is a synthetic fake."""

from __future__ import annotations

import pytest

from shared.redact import redact, redact_many

_B64 = "UzRuZEM0c3RsZSVqUDN0dwo"


@pytest.mark.parametrize(
    ("text", "secret", "label"),
    [
        # a value alone on the line after what announces it
        (
            "here is the password for the staging box\nTr0ub4dor-Z0mGU",
            "Tr0ub4dor-Z0mGU",
            "password",
        ),
        ("Password\nTr0ub4dor-Z0mGU\n", "Tr0ub4dor-Z0mGU", "password"),
        (
            "the api token for prod:\n58eYq0m7Aj2gG9UB91fWlRS7gxtcYqp6MUb0IJHN",
            "58eYq0m7Aj2g",
            "secret",
        ),
        ("Mot de passe du NAS\nGr33nHill*nruYj", "Gr33nHill*nruYj", "password"),
        ("the db password\n`Qx7Lm2#hGdld`", "Qx7Lm2#hGdld", "password"),
        # a command's output on the line after it
        ("$ cat config/master.key\n94aa4ace6bd435b3eba45eae24133194", "94aa4ace6bd4", "secret"),
        (
            "kubectl get secret db -o jsonpath='{.data.password}' | base64 -d\nS4ndC4stle%jP3tw",
            "S4ndC4stle%jP3tw",
            "secret",
        ),
        ("$ openssl rand -base64 32\nq7Lm2Xk9Pw4Rt8Zs1Vb6Nc3Hd5Jf0Ga=", "q7Lm2Xk9Pw4R", "secret"),
        (
            "$ aws ecr get-login-password --region eu-west-1\neyJwYXlsb2FkIjoiSk5",
            "eyJwYXlsb2Fk",
            "secret",
        ),
        ("$ terraform output -raw db_password\nVk9Pz4&os5gj", "Vk9Pz4&os5gj", "secret"),
        # ODBC's braced value, a key named "key"
        (
            "DRIVER={PostgreSQL};SERVER=db;UID=app;PWD={Tr0ub4dor-iqBM1};",
            "Tr0ub4dor-iqBM1",
            "password",
        ),
        ("Server=sql01;Password={Tr0ub;4dor}}x};", "Tr0ub;4dor", "password"),
        (
            '"Jwt": {\n  "Key": "KC3oR7Ktkw5VKgZtwVDbqz0ZglGuGwMILiRkPrbo",',
            "KC3oR7Ktkw5V",
            "api_key",
        ),
        ("key=KC3oR7Ktkw5VKgZtwVDbqz0ZglGuGwMILiRkPrbo", "KC3oR7Ktkw5V", "api_key"),
    ],
)
def test_values_on_another_line_are_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)
    assert secret not in result.text
    assert label in result.labels


def test_a_part_that_is_only_a_value_is_read_after_the_part_before() -> None:
    # "the password is" ends one message, the password is the next (a chat's two lines)
    texts = [
        "what is the db password?",
        "the db password is",
        "Blu3Moon_0qDIt",
        "ok, Blu3Moon_0qDIt",
    ]
    out = [r.text for r in redact_many(texts)]
    assert out == [*texts[:2], "[REDACTED:password]", "ok, [REDACTED:password]"]


@pytest.mark.parametrize(
    "texts",
    [
        ["what is your favourite word?", "sunflower"],
        ["run the tests", "Done."],
        ["which version?", "v1.2.3-rc1"],
        ["the password manager", "1Password"],
    ],
)
def test_a_one_word_reply_with_no_credential_before_it_stays(texts: list[str]) -> None:
    assert [r.text for r in redact_many(texts)] == texts


# --- a credentials file of two lines (OpenVPN's auth-user-pass) ----------------------

_VPN_PW = "Vpn!Pass2024"  # fake


@pytest.mark.parametrize(
    "text",
    [
        f"$ cat /etc/openvpn/auth.txt\nvpnuser\n{_VPN_PW}\n",
        f"auth-user-pass creds.txt\n# creds.txt:\njdoe\n{_VPN_PW}\n",
        f"$ cat ~/.config/vpn/creds\nalice\n{_VPN_PW}\n$ ",
    ],
)
def test_the_second_line_of_a_credentials_file_is_redacted(text: str) -> None:
    assert redact(text).text == text.replace(_VPN_PW, "[REDACTED:password]", 1)


_STAYS: list[str] = [
    # line lookalikes stay
    "Reset your password\nhere",
    "Password requirements\n-----",
    "def check(password):\n    pass",
    "if token:\n    return_value_2",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYI\n-----END PUBLIC KEY-----",
    "the commit hash of the token fix\n9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
    "tokens used\n2048",
    "the secret sauce\nKetchup2024",
    "password file\n./secrets/pw.txt",
    "cat notes.txt\nhello",
    "$ cat token.txt\ncat: token.txt: No such file or directory",
    "$ openssl rand -hex 32\n$ echo done",
    'conn = f"DRIVER={{x}};PWD={password};"',
    "PWD={cfg.db_password};",
    '{"key": "welcome_message_title"}',
    "https://s3.example.com/b?key=uploads/2024/IMG_1234Photo.jpg",
    "the key to 8fJk2Lm9Qr4Tz7Wp1Xv3 is patience",
    # code that names a credential stays
    # this repository's own code, as it was before these rules (false positives found by
    # running redact over its 12-line blocks)
    "    (\n        _TOOL_PASSWORD,\n        _judge_tool_password,\n        _starts(\n",
    '    (f"echo {PW} | sudo -S apt update", PW),\n'
    "    (f\"echo '{PW2}' | docker login -u bob --password-stdin\", PW2),\n"
    "    (f\"echo -n '{PW}' | passwd --stdin bob\", PW),",
    # two lines that are no credentials file stay
    "cat auth.py\nimport os\nprint(x)\n",
    "$ cat auth.txt\nvpnuser\nhello\n",
    "$ cat login.csv\nuser\nalice2024x\nbob2025y\ncarol2026z\n",  # a longer file
    "the auth flow\nchanged\nv2.3.1\n",
]


@pytest.mark.parametrize("text", _STAYS)
def test_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text
