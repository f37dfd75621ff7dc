"""A user and a password written as a pair with no noun before it (shared/redact/pairs.py):
``bob:<pw>``, ``admin/<pw>``, ``deploy:<pw>@db.internal``, and a Wi-Fi network and its
password (``wifi: HomeNet / <pw>``). Only a strong value counts (three of lower, upper, digit,
symbol; 8+ characters) on a short line or near a word that says login; times, ratios, URLs,
paths, versions, image tags and hashes stay."""

from __future__ import annotations

import pytest

from shared.redact import Redaction, redact

PW = "Vn4#qRt8zLx2"  # fake, shaped like a human password
PW2 = "blue-Otter-73!"  # fake
PW3 = "Tr0ub4dor&3"  # fake
PW4 = "Hx7mQp2vLk9w"  # fake: upper, lower, digits, no symbol

PAIRS = [
    (f"bob:{PW}", PW),
    (f"admin/{PW}", PW),
    (f"deploy:{PW}@db.internal", PW),
    (f"root:{PW3}@10.0.0.5", PW3),
    (f"  - jenkins:{PW2}", PW2),
    (f"staging: ops:{PW4}", PW4),
    (f"ssh into the bastion as ec2-user:{PW} after the deploy window closes tonight", PW),
    (f"the db account for reporting on the analytics replica is reporter/{PW3}", PW3),
    (f'"svc_backup:{PW}"', PW),
    (f"wifi: HomeNet / {PW}", PW),
    (f"WiFi - Guest-5G / {PW2}", PW2),
    (f"wlan: Office Net / {PW3}", PW3),
]

PAIR_PROSE = [
    "12:30:45 the build started",
    "ratio 16:9 and 4:3",
    "see https://example.com/Docs/Page-2",
    "src/Main2.java:120",
    "origin/Feature-123",
    "python:3.12-slim-bookworm",
    "nginx:1.25.3-Alpine",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "and/or TCP/IP I/O",
    "std::vector<int>",
    "git@github.com:Org/Repo-2.git",
    "arn:aws:iam::123456789012:role/Admin-Role1",
    "urn:uuid:123e4567-e89b-12d3-a456-426614174000",
    "Note:Remember2Check the logs",
    "Error: FileNotFound2 in module",
    "module.Class:Method2Name",
    "C:\\Users\\Bob2\\AppData",
    "the wifi: slow / patchy all day",
    "wifi: HomeNet / see the sticker",
    "user: bob / pass: see the vault",
    "x: List[int] = []",
    "{color:Red}",
    "localhost:8080",
    "v1.2.3/Release-Notes",
]


@pytest.mark.parametrize(("text", "secret"), PAIRS, ids=[p[0][:32] for p in PAIRS])
def test_a_user_and_password_pair_is_redacted(text: str, secret: str) -> None:
    result = redact(text)

    assert secret not in result.text
    assert result.text == text.replace(secret, "[REDACTED:password]", 1)


# A model id or an image tag after a scheme or a name: parts that are words, acronyms and
# short codes ("MiniLM", "L6", "v2", "7B"), not a password.
NAMES = [
    "local:all-MiniLM-L6-v2",
    'embedder = "local:all-MiniLM-L6-v2"',
    "model: local:paraphrase-MiniLM-L3-v2",
    "huggingface:Qwen2-VL-7B",
    "openai:GPT-4o-Mini",
    "ollama:Llama3-70B-Q4",
    "postgres:Alpine-V16a",
    "the embedder local:all-MiniLM-L6-v2 is fast enough",
]
# A password with the same separators: classes mixed inside a part, or no word at all.
NAMED_LIKE = [f"bob:{PW4}-x", "bob:Pa55w0rd-x", "bob:qWeRtY-7x", "admin/Zq8-Lm3-Kx9"]


@pytest.mark.parametrize("text", NAMED_LIKE)
def test_a_password_with_dashes_is_still_a_pair(text: str) -> None:
    assert redact(text).labels == ("password",)


# --- a default account and its password, spaced or weaker -------------------------

ACCOUNTS = [
    ("admin / hunter2 for the router", "hunter2"),
    ("wifi admin page: admin / P@ssw0rd123", "P@ssw0rd123"),
    ("log in as root / toor42x", "toor42x"),
    ("default creds for the camera: admin / 12345abc", "12345abc"),
    ("Synology NAS -> admin / Nas2024pw", "Nas2024pw"),
    ("root / Toor#2024", "Toor#2024"),
    ("grafana is admin:Gr4fana", "Gr4fana"),
]
ACCOUNT_PROSE = [
    "scopes: admin:read:org, repo",
    "image: postgres:16-alpine",
    "FROM ubuntu:22.04",
    "chmod root:root /etc/x && chown admin:staff file",
    "the admin / settings page, then root / cause analysis",
    "guest:5672 is the vhost",
    "docker pull ubuntu:jammy-20240111",
    "ratio 3 / 4 for the layout, admin / users page",
    "root:x:0:0:root:/root:/bin/bash",
    "GET /admin/v2/users",
]


@pytest.mark.parametrize(("text", "secret"), ACCOUNTS)
def test_a_default_account_and_its_password_is_redacted(text: str, secret: str) -> None:
    assert redact(text).text == text.replace(secret, "[REDACTED:password]", 1)


_SURVIVES: list[str] = [
    # pairs that are no credential survive
    *PAIR_PROSE,
    # a model id or image tag is no pair
    *NAMES,
    # a default account without a password survives
    *ACCOUNT_PROSE,
]


@pytest.mark.parametrize("text", _SURVIVES)
def test_text_without_a_secret_survives(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())
