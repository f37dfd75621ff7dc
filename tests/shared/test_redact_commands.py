"""Passwords on other tools' command lines (``shared/redact/commands.py``). Every value is a
synthetic fake."""

from __future__ import annotations

import pytest

from shared.redact import redact
from tests.golden.redaction.cases import load, rows

CASES = load("commands")


@pytest.mark.parametrize(
    ("text", "secret"),
    rows(CASES["command_line_passwords_are_redacted"], "text", "secret"),
)
def test_command_line_passwords_are_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text).text


@pytest.mark.parametrize("text", rows(CASES["command_line_lookalikes_stay"], "text"))
def test_command_line_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "secret"),
    rows(CASES["dockerfile_env_without_equals_is_redacted"], "text", "secret"),
)
def test_dockerfile_env_without_equals_is_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text).text


@pytest.mark.parametrize("text", rows(CASES["dockerfile_env_lookalikes_stay"], "text"))
def test_dockerfile_env_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text
