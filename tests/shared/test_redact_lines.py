"""Values whose context is on another line, or in a form no assignment reads
(``shared/redact/lines.py``), and secrets split over two parts (``redact_many``). Every value
is a synthetic fake."""

from __future__ import annotations

import pytest

from shared.redact import redact, redact_many
from tests.golden.redaction.cases import load, rows

CASES = load("lines")

_B64 = "UzRuZEM0c3RsZSVqUDN0dwo"


@pytest.mark.parametrize(
    ("text", "secret", "label"),
    rows(CASES["values_on_another_line_are_redacted"], "text", "secret", "label"),
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
    rows(CASES["a_one_word_reply_with_no_credential_before_it_stays"], "texts"),
)
def test_a_one_word_reply_with_no_credential_before_it_stays(texts: list[str]) -> None:
    assert [r.text for r in redact_many(texts)] == texts


# --- a credentials file of two lines (OpenVPN's auth-user-pass) ----------------------

_VPN_PW = "Vpn!Pass2024"  # fake


@pytest.mark.parametrize(
    "text",
    rows(CASES["the_second_line_of_a_credentials_file_is_redacted"], "text", _VPN_PW=_VPN_PW),
)
def test_the_second_line_of_a_credentials_file_is_redacted(text: str) -> None:
    assert redact(text).text == text.replace(_VPN_PW, "[REDACTED:password]", 1)


_STAYS: list[str] = rows(CASES["stays"], "text")


@pytest.mark.parametrize("text", _STAYS)
def test_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text
