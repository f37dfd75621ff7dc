"""Secrets in the lines of configuration files and tools' output (shared/redact/files.py):
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


# --- Redis Sentinel and ACLs, pgbouncer's userlist, SNMP, cookies.txt, OpenVPN ------

RPW = "Xk9#Lm2pQz7w"  # fake
MD5 = "md5a3f5b8c9d2e1f4a7b6c5d8e9f0a1b2c3"  # fake: "md5" and 32 hex
SERVICE_FILES = [
    (f"sentinel auth-pass mymaster {RPW}", RPW, "password"),
    ("sentinel auth-pass mymaster s3cr3tR3dis", "s3cr3tR3dis", "password"),
    (f'sentinel auth-pass prod-master "{RPW}"', RPW, "password"),
    (f"SENTINEL SET mymaster auth-pass {RPW}", RPW, "password"),
    (f'redis-cli -h 10.0.0.5 CONFIG SET requirepass "{RPW}"', RPW, "password"),
    (f"127.0.0.1:6379> CONFIG SET masterauth {RPW}", RPW, "password"),
    (f"user default on >{RPW} ~* +@all", RPW, "password"),
    (f"ACL SETUSER ci on >{RPW} ~ci:* +@read", RPW, "password"),
    (f'"app" "{MD5}"', MD5, "password"),
    (f'# /etc/pgbouncer/userlist.txt\n"report" "{RPW}"\n', RPW, "password"),
    ('auth_file = userlist.txt\n"report" "sunshine"', "sunshine", "password"),
    (f"snmp-server community {RPW} RW", RPW, "password"),
    (f"rocommunity {RPW} 10.0.0.0/8", RPW, "password"),
    (
        ".example.com\tTRUE\t/\tTRUE\t1767225600\tsessionid\tk2j4h6g8f0d2s4a6q8w0e2r4t6y8u0i2",
        "k2j4h6g8f0d2s4a6q8w0e2r4t6y8u0i2",
        "credential",
    ),
    (f"<auth-user-pass>\nvpnuser\n{RPW}\n</auth-user-pass>", RPW, "password"),
]

SERVICE_FILE_PROSE = [
    "sentinel monitor mymaster 127.0.0.1 6379 2",
    "sentinel auth-pass <master-name> <password>",
    "requirepass is set in redis.conf",
    "redis-cli CONFIG SET maxmemory 2gb",
    "user default on nopass ~* +@all",
    "if x > 3 and user.is_admin: return",
    "the user said > 5 is too many",
    '"pgbouncer" ""',
    '"AppID" "440"\n"LaunchOptions" "-novid -high"',
    "snmp-server community public RO",
    "rocommunity public",
    ".example.com\tTRUE\t/\tFALSE\t0\ttheme\tdark",
    "<auth-user-pass>\n</auth-user-pass>",
    "auth-user-pass\nauth-nocache\nremote vpn.example.com 1194",
]


@pytest.mark.parametrize(
    ("text", "secret", "label"), SERVICE_FILES, ids=[f[0][:32] for f in SERVICE_FILES]
)
def test_a_secret_in_a_service_file_is_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)

    assert result.text == text.replace(secret, f"[REDACTED:{label}]", 1)


# --- a delimited table whose header names a credential -----------------------------

DELIMITED = [
    (
        "username\tpassword\tnotes\nalice\tQw8#mLz2Rt\tprod\nbob\tZp4$kWq9Lm\tstaging\n",
        ["Qw8#mLz2Rt", "Zp4$kWq9Lm"],
    ),
    (
        "user,password,role\nalice,Xr7!pLm3Qz,admin\nbob,Kw2@zRt8Vn,dev\n",
        ["Xr7!pLm3Qz", "Kw2@zRt8Vn"],
    ),
    ("name,api_token,team\nci-bot,Tq9Lm2Xw8Rz4Vp7Nb3Kc,infra\n", ["Tq9Lm2Xw8Rz4Vp7Nb3Kc"]),
    ("service;secret;owner\nbilling;Mz3Qw9Lp2Xr8Tv4Nb;ana\n", ["Mz3Qw9Lp2Xr8Tv4Nb"]),
    ('"email","password"\n"a@x.io","Summer#2025x"\n', ["Summer#2025x"]),
    ("host\tuser\tpass\ndb1\troot\tsunflower77\n", ["sunflower77"]),
    ("url\tusername\tpassword\nhttps://x.io\tbob\tsunshine\n", ["sunshine"]),
]

DELIMITED_PROSE = [
    "name,version,sha\nrequests,2.31.0,a1b2c3d4\n",
    "id\ttitle\tpassword_changed_at\n1\treset\t2024-01-02\n",
    "user,password_policy,enabled\nalice,strict,true\n",
    "count\tpass\tfail\n12\t10\t2\n",
    "key,value\nfoo,bar\nretries,3\n",
    "token,count\nthe,42\nof,17\n",
    "user,password\nalice,-\nbob,n/a\n",
    "NAME\tTYPE\tDATA\tAGE\ndb-creds\tOpaque\t2\t5d\n",
    # a line of code split at its commas is no header
    "        or _is_code(m, secret)\n        or _is_literal_prefix(m, secret)\n",
    "    assert bearer_matches(header, TOKEN)\n    assert bearer_matches(header.encode(), TOKEN)",
]


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
