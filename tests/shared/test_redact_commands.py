"""Passwords on other tools' command lines (``shared/redact/commands.py``). Every value is a
synthetic fake."""

from __future__ import annotations

import pytest

from shared.redact import redact


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # csh's setenv and fish's set -x: an environment variable with no "="
        ("setenv DB_PASSWORD Qx7Lm2#hGdld", "Qx7Lm2#hGdld"),
        ("set -x DB_PASSWORD 'Blu3Moon!CTod9'", "Blu3Moon!CTod9"),
        ("set -gx API_TOKEN abc123XYZ789defGHI", "abc123XYZ789defGHI"),
        ("set --export --global STRIPE_SECRET_KEY Zq8vLm3Kx9Pw2Rt7", "Zq8vLm3Kx9Pw2Rt7"),
        # Pulumi: --secret anywhere on the line, or a key named for a credential
        ("pulumi config set --secret dbPassword Qx7Lm2%SkLeb", "Qx7Lm2%SkLeb"),
        ("pulumi config set dbPassword Qx7Lm2%N9i83 --secret", "Qx7Lm2%N9i83"),
        ("pulumi config set -s prod apiToken Zq8vLm3Kx9Pw2Rt7", "Zq8vLm3Kx9Pw2Rt7"),
        ("pulumi config set --secret mysql:rootPw Vk9Pz4&os5gj", "Vk9Pz4&os5gj"),
        ("rclone obscure 'S4ndC4stle%jP3tw'", "S4ndC4stle%jP3tw"),
        ("rar a -hpVk9Pz4&os5gj backup.rar docs/", "Vk9Pz4&os5gj"),
        ("psexec \\\\srv01 -u CORP\\admin -p S4ndC4stle-2up08 cmd", "S4ndC4stle-2up08"),
        ("PsExec.exe \\\\srv01 -u admin -p 'Gr33nHill#H4VUT' ipconfig", "Gr33nHill#H4VUT"),
        # expect -c: the prompt and the send on one line
        (
            'expect -c \'spawn ssh root@h; expect "password:"; send "Gr33nHill#H4VUT\\r"\'',
            "Gr33nHill#H4VUT",
        ),
    ],
)
def test_command_line_passwords_are_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text).text


@pytest.mark.parametrize(
    "text",
    [
        "set -x PATH $PATH /opt/bin",
        "setenv PATH /usr/local/bin:/usr/bin",
        "we set -x to debug the password prompt",
        "set the password to something memorable",
        "setenv DB_PASSWORD $DB_SECRET",
        "set -x GITHUB_TOKEN (cat ~/.config/gh/token)",
        "setenv CACHE_KEY users",
        "pulumi config set aws:region us-west-2",
        "pulumi config set app:replicas 3",
        "rclone obscure -",
        "rar a -r backup.rar docs/",
        "psexec \\\\srv01 -s cmd",
    ],
)
def test_command_line_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("FROM node:20\nENV DB_PASSWORD Qx7Lm2#b1WdX\nRUN npm ci", "Qx7Lm2#b1WdX"),
        ("  ENV API_TOKEN 8fJk2Lm9Qr4Tz7Wp1Xv3", "8fJk2Lm9Qr4Tz7Wp1Xv3"),
    ],
)
def test_dockerfile_env_without_equals_is_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text).text


@pytest.mark.parametrize(
    "text", ["ENV NODE_ENV production", "ENV DB_PASSWORD_FILE /run/secrets/db", "the ENV token"]
)
def test_dockerfile_env_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text
