"""A user and a password written as a pair with no noun before it (shared/redact/pairs.py):
``bob:<pw>``, ``admin/<pw>``, ``deploy:<pw>@db.internal``, and a Wi-Fi network and its
password (``wifi: HomeNet / <pw>``). Only a strong value counts (three of lower, upper, digit,
symbol; 8+ characters) on a short line or near a word that says login; times, ratios, URLs,
paths, versions, image tags and hashes stay."""

from __future__ import annotations

import pytest

from shared.redact import Redaction, redact
from tests.golden.redaction.cases import load, rows

CASES = load("pairs")

PW = "Vn4#qRt8zLx2"  # fake, shaped like a human password
PW2 = "blue-Otter-73!"  # fake
PW3 = "Tr0ub4dor&3"  # fake
PW4 = "Hx7mQp2vLk9w"  # fake: upper, lower, digits, no symbol

PAIRS = rows(CASES["pairs"], "text", "secret", PW=PW, PW2=PW2, PW3=PW3, PW4=PW4)

PAIR_PROSE = rows(CASES["pair_prose"], "text")


@pytest.mark.parametrize(("text", "secret"), PAIRS, ids=[p[0][:32] for p in PAIRS])
def test_a_user_and_password_pair_is_redacted(text: str, secret: str) -> None:
    result = redact(text)

    assert secret not in result.text
    assert result.text == text.replace(secret, "[REDACTED:password]", 1)


# A model id or an image tag after a scheme or a name: parts that are words, acronyms and
# short codes ("MiniLM", "L6", "v2", "7B"), not a password.
NAMES = rows(CASES["names"], "text")
# A password with the same separators: classes mixed inside a part, or no word at all.
NAMED_LIKE = rows(CASES["named_like"], "text", PW4=PW4)


@pytest.mark.parametrize("text", NAMED_LIKE)
def test_a_password_with_dashes_is_still_a_pair(text: str) -> None:
    assert redact(text).labels == ("password",)


# --- a default account and its password, spaced or weaker -------------------------

ACCOUNTS = rows(CASES["accounts"], "text", "secret")
ACCOUNT_PROSE = rows(CASES["account_prose"], "text")


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
