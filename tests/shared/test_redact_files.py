"""Secrets in the lines of configuration files and tools' output (shared/redact_files.py):
.pgpass lines, directive lines (``requirepass <pw>``, a router's ``password 0 <pw>``), Redis'
``AUTH``, Cookie headers, Wi-Fi (the QR code's ``WIFI:`` string, "the wifi key is ..."), and the
prompts of ``aws configure``."""

from __future__ import annotations

import pytest

from shared.redact import Redaction, redact

PW = "Vn4#qRt8zLx2"  # fake, shaped like a human password
PW2 = "blue-Otter-73!"  # fake
KEY = "k7Hq2WmZ9xPb4LrT8vNc3Yds"  # fake, 24 random base62 characters
AWS_SECRET = "Jt5/Kp8qWz2+Lm4nRx7bVc9dFg3hSj6kYa1eUo0i"  # fake, 40 characters
HEX32 = "9F2C4A7E1B3D5F60A8C2E4B6D8F0A1C3"  # fake, a session id's shape

# (text, the secret in it, its label)
FILES = [
    # ~/.pgpass: hostname:port:database:username:password
    (f"db.internal:5432:app:appuser:{PW}", PW, "password"),
    (f"localhost:*:*:postgres:{PW2}", PW2, "password"),
    ("db.internal:5432:app:app:p@ss:W0rd#99", "p@ss:W0rd#99", "password"),
    (f"cat ~/.pgpass\n*:5432:shop:reporting:{KEY}\n", KEY, "password"),
    # directive lines: the name of a credential, blanks, the value
    (f"requirepass {PW}", PW, "password"),
    (f"masterauth {PW2}", PW2, "password"),
    (f"bindpw {PW}", PW, "password"),
    (f"olcRootPW: {PW}", PW, "password"),
    (f"    auth_pass {PW2}", PW2, "password"),
    (f"username admin privilege 15 password 0 {PW}", PW, "password"),
    (f"enable password {PW2}", PW2, "password"),
    (f" key-string {PW}", PW, "secret"),
    (f"pre-shared-key {PW}", PW, "secret"),
    (f"DB_PASSWORD {PW2}", PW2, "password"),
    (f'CONFIG SET requirepass "{PW}"', PW, "password"),
    (f"127.0.0.1:6379> AUTH {PW}", PW, "password"),
    (f"AUTH default {PW2}", PW2, "password"),
    # Cookie headers: every value shaped like a session id
    (f"Cookie: JSESSIONID={HEX32}", HEX32, "credential"),
    (f"curl -H 'Cookie: session={KEY}' https://x.example.com", KEY, "credential"),
    (f"Cookie: theme=dark; PHPSESSID={KEY}", KEY, "credential"),
    (f"Set-Cookie: connect.sid=s%3A{KEY}.Xy; Path=/; HttpOnly", f"s%3A{KEY}.Xy", "credential"),
    # Wi-Fi
    (f"WIFI:T:WPA;S:HomeNet;P:{PW};;", PW, "password"),
    (f'WIFI:S:Cafe;T:WPA2;P:"{PW2}";H:false;;', f'"{PW2}"', "password"),
    (f"The WiFi key is {PW}", PW, "password"),
    (f"wlan key: {PW2}", PW2, "password"),
    (f"network key {PW}", PW, "password"),
    (f'psk="{PW}"', PW, "password"),
    (f"wpa-psk {PW2}", PW2, "password"),
    # a label alone on its line, the value alone on the next
    (f"Password:\n{PW}", PW, "password"),
    (f"Username:\nbob\nPassword:\n{PW2}\n", PW2, "password"),
    (f"**Token:**\n{KEY}", KEY, "token"),
    # a YAML block scalar keeps a "#" as part of its value
    (f"password: |\n  {PW}\n", PW, "password"),
    (f"db:\n  password: >-\n    {PW}\n", PW, "password"),
    (f"token:\n  ab#{KEY}\n", f"ab#{KEY}", "token"),
    # aws configure
    (f"AWS Secret Access Key [None]: {AWS_SECRET}", AWS_SECRET, "aws_secret_key"),
    (f"AWS Secret Access Key [****************ABCD]: {AWS_SECRET}", AWS_SECRET, "aws_secret_key"),
]

FILE_PROSE = [
    "12:30:45 the build started",
    "10:30:45:123:done",
    "localhost:8080:api:v1:health",
    "fe80:0000:0000:0000:0202:b3ff:fe1e:8329",
    "fe80:0:0:0:202:b3ff:fe1e:8329",
    "aa:bb:cc:dd:ee:ff",
    "root:x:0:0:root:/root:/bin/bash",
    "localhost:5432:app:appuser:*",
    "see ~/.pgpass for hostname:port:database:username:password",
    "requirepass foobared",
    "requirepass",
    "# requirepass <password>",
    "password policy",
    "Password reset flow",
    "Secret sauce recipe",
    "token limits apply",
    "enable secret 5 is a hash",
    "AUTH is required for writes",
    "Cookie: theme=dark; lang=en-US",
    "Cookie: _ga=GA1.2.1234567890.1699999999",
    "the cookie jar is empty",
    "the network key insight is latency",
    "the wifi key is on the router sticker",
    "WIFI: the office network is down",
    "psk mode is WPA2",
    "AWS Secret Access Key [None]:",
    "Password:\nsee the vault",
    "Password\nReset it from the login page.",
    "Token:\n2000",
    "password: |\n  # see the vault\n",
    "password:\n  file: /etc/pw # the file\n",
    "## Password policy\nlong",
    # code
    "    except KeyboardInterrupt:\n        pass\n    finally:\n        server.stop(1.0)",
    "_WIFI_KEY = re.compile(",
    "chpasswd <<-END_OF_USERS",
    "passwd --stdin bob < new-pw.txt",
    "WIFI:T:WPA;S:<ssid>;P:<password>;;",
]


@pytest.mark.parametrize(("text", "secret", "label"), FILES, ids=[f[0][:32] for f in FILES])
def test_a_secret_in_a_config_line_is_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)

    assert secret not in result.text
    assert result.text == text.replace(secret, f"[REDACTED:{label}]", 1)


@pytest.mark.parametrize("text", FILE_PROSE)
def test_a_config_line_without_a_secret_survives(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())
