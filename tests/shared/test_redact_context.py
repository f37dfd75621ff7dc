"""Context-anchored secrets, Unicode normal forms, the public helpers and the properties of
``shared.redact``, and the false-positive gate over real conversations."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import shared.redact.engine as engine
from shared.redact import (
    PLACEHOLDER,
    Redaction,
    find_credential,
    is_placeholder,
    redact,
    strip_placeholders,
)
from shared.redact.anchors import folded
from shared.redact.catalogue import catalogue
from tests.golden.redaction.cases import load, rows
from tests.shared.conftest import cpu_seconds

CASES = load("context")

PW = "Tr0ub4dor&3xK9"  # fake, shaped like a human password
KEY = "9fQ2xLmZ7bR4kWp1HsN8dYc3"  # fake, 24 random base62 characters
SECRET_STRING = '{"SecretString": "{\\"username\\":\\"admin\\",\\"password\\":\\"' + PW + '\\"}"}'
AWS_SECRET = "8fJk2/Lm9QpR4sTuVwXyZ0aBcDeFgHiJkLmNoPqR"  # fake, shaped like an AWS secret key
# fakes: base64 of a made-up PEM key and docker config, a Telegram bot token, a Feishu hook
B64_PEM = (
    "LS0tLS1CRUdJTiBFQyBQUklWQVRFIEtFWS0tLS0tCk1IY0NBUUVFSUZha2VGYWtlRmFrZUZha2VGYWtlRmFr"
    "ZUZha2VGYWtlRmFrZQo="
)
B64_DOCKER = "eyJhdXRocyI6eyJnaGNyLmlvIjp7ImF1dGgiOiJZMms2Wm1GclpWQmhjM04zYjNKa01USXoifX19"
TG = "5512983347:AAHq9_Zt4LmN8pRx2VsBw7CyKd3EfGhJ0kL"
FEISHU = "https://open.larksuite.com/open-apis/bot/v2/hook/0f3b2c1d-9e8a-4b7c-a6d5-e4f3a2b1c0d9"

# (text, the secret in it, its label)
CONTEXT = [
    *rows(
        CASES["context"],
        "text",
        "secret",
        "label",
        AWS_SECRET=AWS_SECRET,
        B64_DOCKER=B64_DOCKER,
        B64_PEM=B64_PEM,
        FEISHU=FEISHU,
        KEY=KEY,
        PW=PW,
        SECRET_STRING=SECRET_STRING,
        TG=TG,
    ),
    (f"heroku config:set SECRET_KEY_BASE={'5e2f' * 16}", "5e2f" * 16, "secret"),
]

PROSE = rows(CASES["prose"], "text")


@pytest.mark.parametrize(("text", "secret", "label"), CONTEXT, ids=[c[0][:30] for c in CONTEXT])
def test_a_context_anchored_secret_is_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)

    assert secret not in result.text
    assert label in result.labels
    assert result.text == text.replace(secret, f"[REDACTED:{label}]", 1) or len(result.labels) > 1


@pytest.mark.parametrize("text", PROSE)
def test_prose_with_credential_words_survives(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


# --- Unicode -----------------------------------------------------------------------------------

FULLWIDTH = str.maketrans({chr(c): chr(c + 0xFEE0) for c in range(0x21, 0x7F)})
SAMPLES = [f.sample for f in catalogue() if not f.has_context]


def _forms(text: str) -> list[str]:
    return [unicodedata.normalize(form, text) for form in ("NFC", "NFD", "NFKC", "NFKD")]


@pytest.mark.parametrize("sample", SAMPLES[::10])
def test_a_key_typed_in_fullwidth_characters_is_redacted(sample: str) -> None:
    text = f"my key {sample.translate(FULLWIDTH)} is here"

    result = redact(text)

    assert result.labels
    assert all(sample not in form for form in _forms(result.text))


def test_a_text_without_a_secret_keeps_its_own_normal_form() -> None:
    text = "ﬁne: Ｃａｆé ① — no key here"
    assert redact(text) == Redaction(text=text, labels=())


def test_folding_keeps_every_position() -> None:
    # The seeks and the gate find keywords in the folded text and use the positions in the
    # text itself: every code point must fold to exactly one.
    everything = "".join(chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000)
    assert len(folded(everything)) == len(everything)


def test_compatibility_characters_in_a_keyword_do_not_hide_the_value() -> None:
    text = f"ＰＡＳＳＷＯＲＤ={PW}"
    assert redact(text) == Redaction(text="PASSWORD=[REDACTED:password]", labels=("password",))


# --- the public helpers ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", f"note-{SAMPLES[0]}", f"password={PW}"],
)
def test_find_credential_names_a_credential_in_an_identifier(value: str) -> None:
    assert find_credential(value) is not None


@pytest.mark.parametrize(
    "value", rows(CASES["find_credential_passes_ordinary_identifiers"], "value")
)
def test_find_credential_passes_ordinary_identifiers(value: str) -> None:
    assert find_credential(value) is None


@pytest.mark.parametrize(
    "token",
    rows(CASES["is_placeholder_knows_a_placeholder_and_its_pieces"], "token"),
)
def test_is_placeholder_knows_a_placeholder_and_its_pieces(token: str) -> None:
    assert is_placeholder(token)


@pytest.mark.parametrize("token", rows(CASES["is_placeholder_leaves_ordinary_words"], "token"))
def test_is_placeholder_leaves_ordinary_words(token: str) -> None:
    assert not is_placeholder(token)


def test_strip_placeholders_blanks_every_marker() -> None:
    text = redact(f"use {SAMPLES[0]} and [redacted:jwt] here").text
    stripped = strip_placeholders(text)
    assert PLACEHOLDER.search(stripped) is None
    assert "redacted" not in stripped.lower()


# --- properties --------------------------------------------------------------------------------

FAST = settings(
    max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
PIECES = st.lists(
    st.one_of(st.sampled_from(SAMPLES), st.text(max_size=30), st.sampled_from(PROSE)),
    max_size=6,
)


GLUED_VENDOR_WORD = (
    "SSWS 00szPGlpVVZ2i-D8UTMm1lCsrF1W5yrXD41b0kMpgqshodan"
    " api key: u5bcqdYPgObXbMzxbjnwt2TepJ3z9JRi"
)


@FAST
@given(PIECES)
def test_redact_is_idempotent(pieces: list[str]) -> None:
    once = redact(" ".join(pieces))
    assert redact(once.text) == Redaction(text=once.text, labels=())


@FAST
@given(PIECES)
def test_no_catalogue_sample_survives_in_any_normal_form(pieces: list[str]) -> None:
    text = "\n".join(pieces)
    fillers = "\n".join(p for p in pieces if p not in SAMPLES)

    result = redact(text)

    for sample in (p for p in pieces if p in SAMPLES):
        if not any(sample in form for form in _forms(fillers)):
            assert all(sample not in form for form in _forms(result.text))


@FAST
@given(st.lists(st.sampled_from([f.label for f in catalogue()]), min_size=1, max_size=4))
def test_placeholders_are_stable(labels: list[str]) -> None:
    text = " and ".join(f"[REDACTED:{label}]" for label in labels)
    assert redact(text) == Redaction(text=text, labels=())
    assert all(is_placeholder(f"[REDACTED:{label}]") for label in labels)


CATALOGUE_FRAGMENTS = [
    *rows(CASES["catalogue_fragments"], "text"),
    *(f.sample for f in catalogue()),
    *(f.lookalike for f in catalogue()),
]


@FAST
@given(
    st.lists(
        st.one_of(st.sampled_from(CATALOGUE_FRAGMENTS), st.text(max_size=12)), max_size=10
    ).map("".join)
)
@example(GLUED_VENDOR_WORD)
def test_the_gate_agrees_with_running_every_rule(text: str) -> None:
    assert redact(text) == engine._redact_with(text, engine._RULES)


def test_a_marker_that_frees_a_glued_vendor_word_lets_its_rule_run() -> None:
    # "shodan" is glued to the Okta token, so no rule for it is a candidate until the token
    # is a marker: the gate is asked again about what a pass left.
    text = GLUED_VENDOR_WORD

    result = redact(text)

    assert result.labels == ("okta_token", "shodan_key")
    assert "u5bcqdYP" not in result.text


ADVERSARIAL_UNITS = {
    "mysql-p": "mysql -p",
    "curl-u": "curl -u a:",
    "said-key": "the key is ",
    "vendor": "datadog api key: ",
    "sshpass": "sshpass -p ",
    "pivots": "sk-_-.AKIA:",
    "keys": "DB_PASSWORD_KEY_TOKEN",
    "net-use": "net use \\\\a\\b ",
    "setx": "setx PASSWORD ",
    "sqlplus": "sqlplus a/",
    "otp": "otp is 1234 ",
    "code-list": "backup codes: 1234 ",
    "seed-words": "seed words: abcd ",
    "xml-attribute": "<a key='password' ",
}


@pytest.mark.parametrize("unit", ADVERSARIAL_UNITS.values(), ids=ADVERSARIAL_UNITS.keys())
def test_adversarial_input_stays_fast(unit: str) -> None:
    # 30,000 characters: linear work is well under a second here.
    text = unit * (30_000 // len(unit))

    assert cpu_seconds(redact, text, within=1.5) < 1.5


# --- the false-positive gate -------------------------------------------------------------------

LOCOMO = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "locomo-dev"


def _turns() -> list[str]:
    texts = []
    for path in sorted(LOCOMO.glob("*.json")):
        conversation = json.loads(path.read_text())
        for key, turns in conversation.items():
            if key.startswith("session_") and isinstance(turns, list):
                texts += [t[f] for t in turns for f in ("text", "blip_caption") if f in t]
    return texts


@pytest.mark.skipif(
    not LOCOMO.is_dir(), reason=f"LoCoMo dev conversations not found at {LOCOMO.resolve()}"
)
def test_no_turn_of_the_dev_conversations_changes() -> None:
    turns = _turns()
    changed = [(t, redact(t).labels) for t in turns if redact(t).text != t]

    assert len(turns) > 3000
    assert changed == []


def test_an_invisible_character_inside_a_token_does_not_hide_it() -> None:
    token = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
    for mark in ("\u200b", "\u200d", "\u2060", "\ufeff", "\u00ad"):
        result = redact(f"ci uses {token[:12]}{mark}{token[12:]} now")
        assert result.labels == ("github_token",), mark
        assert "ghp_" not in result.text


@pytest.mark.parametrize(
    "text",
    rows(CASES["a_token_with_a_marked_prefix_is_a_token_glued_by_a_separator"], "text"),
)
def test_a_token_with_a_marked_prefix_is_a_token_glued_by_a_separator(text: str) -> None:
    """ "key-ghp_...", "old_sk_live_...": a prefix that ends in "_" or "-" marks a token even
    when a name is glued to it by a separator (a letter or digit glued to it still is a word)."""
    result = redact(text)
    assert result.labels and not any(p in result.text for p in ("ghp_", "sk_live_", "glpat-"))


def test_a_marked_prefix_inside_a_word_is_left_alone() -> None:
    assert redact("task_re_abcdefghijklmnopqrstuvwxyz0123").labels == ()
    assert redact("xghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789").labels == ()


# --- passwords on other tools' command lines (shared/redact/commands.py) -----------------------

PW2 = "q8!Zr2vLw#4n"  # fake
COMMAND_LINES = rows(CASES["command_lines"], "text", "secret", KEY=KEY, PW=PW, PW2=PW2)
COMMAND_PROSE = rows(CASES["command_prose"], "text")


@pytest.mark.parametrize(("text", "secret"), COMMAND_LINES, ids=[c[0][:30] for c in COMMAND_LINES])
def test_a_password_on_a_tools_command_line_is_redacted(text: str, secret: str) -> None:
    result = redact(text)

    assert secret not in result.text
    assert result.text == text.replace(secret, f"[REDACTED:{result.labels[0]}]", 1)


@pytest.mark.parametrize("text", COMMAND_PROSE)
def test_a_tools_flag_without_a_password_survives(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


# --- XML attributes and URLs -------------------------------------------------------------------

HEX40 = "3f9a1b2c4d5e6f708192a3b4c5d6e7f8091a2b3c"  # fake, a classic 40-hex token's shape
XML_AND_URLS = rows(
    CASES["xml_and_urls"], "text", "secret", "label", HEX40=HEX40, KEY=KEY, PW=PW, PW2=PW2
)
XML_AND_URL_PROSE = rows(CASES["xml_and_url_prose"], "text")


@pytest.mark.parametrize(
    ("text", "secret", "label"), XML_AND_URLS, ids=[c[0][:30] for c in XML_AND_URLS]
)
def test_a_secret_in_an_xml_attribute_or_a_url_is_redacted(
    text: str, secret: str, label: str
) -> None:
    result = redact(text)

    assert result.labels == (label,)
    assert result.text == text.replace(secret, f"[REDACTED:{label}]", 1)


@pytest.mark.parametrize("text", XML_AND_URL_PROSE)
def test_xml_and_urls_without_a_secret_survive(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


# --- odd spaces and look-alike letters ---------------------------------------------------------

GHP = "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"  # fake


@pytest.mark.parametrize(
    "space", rows(CASES["an_odd_space_inside_a_token_does_not_hide_it"], "space")
)
def test_an_odd_space_inside_a_token_does_not_hide_it(space: str) -> None:
    for token, label in ((GHP, "github_token"), (f"sk-proj-{KEY}{KEY}", "openai_key")):
        result = redact(f"ci uses {token[:14]}{space}{token[14:]} now")
        assert result.labels == (label,), (space, token)
        assert token[14:] not in result.text


def test_an_odd_space_between_words_is_no_token() -> None:
    # Given a key, and no-break spaces that join a number to its unit, digits in groups and
    # a name's two parts
    text = f"deploy key is {GHP}: 10\u00a0km, 1\u202f000\u202f000 for Jean\u00a0Dupont"

    # When it is redacted, the NFKC form comes back, with its spaces
    result = redact(text)

    # Then only the key is gone
    assert result.text == "deploy key is [REDACTED:github_token]: 10 km, 1 000 000 for Jean Dupont"


@pytest.mark.parametrize(
    ("text", "label"),
    rows(
        CASES["look_alike_letters_in_a_keyword_do_not_hide_the_value"],
        "text",
        "label",
        KEY=KEY,
        PW=PW,
        PW2=PW2,
    ),
)
def test_look_alike_letters_in_a_keyword_do_not_hide_the_value(text: str, label: str) -> None:
    result = redact(text)

    assert result.labels == (label,)
    assert PW not in result.text and KEY not in result.text and PW2 not in result.text


@pytest.mark.parametrize("text", rows(CASES["words_in_one_script_keep_their_letters"], "text"))
def test_words_in_one_script_keep_their_letters(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


# --- one-time codes, backup codes, TOTP seeds, seed words (shared/redact/codes.py) -------------

SEED_12 = "witch collapse practice feed shame open despair creek road again ice least"  # fake
SEED_24 = (
    "cabin orbit velvet harsh lunar tiger meadow quote spider rally ocean frost "
    "glide nephew pistol random salad thumb umbrella vivid walnut yellow zebra anchor"
)  # fake
BITLOCKER = "233453-683320-108757-284636-469260-034815-052228-592064"  # fake, blocks of 11k
CODES = [
    *rows(
        CASES["codes"],
        "text",
        "secret",
        "label",
        BITLOCKER=BITLOCKER,
        SEED_12=SEED_12,
        SEED_24=SEED_24,
    ),
    (f"12 words: {SEED_12.replace(' ', ', ')}.", SEED_12.replace(" ", ", "), "seed_phrase"),
]
CODE_PROSE = rows(CASES["code_prose"], "text")


@pytest.mark.parametrize(("text", "secret", "label"), CODES, ids=[c[0][:30] for c in CODES])
def test_a_code_said_as_one_is_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)

    assert result.labels == (label,)
    assert result.text == text.replace(secret, f"[REDACTED:{label}]", 1)


@pytest.mark.parametrize("text", CODE_PROSE)
def test_a_code_or_words_in_prose_survive(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


# Codes in lowercase groups with no digit, after a noun that says what they are.
SPACED_CODES = rows(CASES["spaced_codes"], "text", "secret", "label")
SPACED_CODE_PROSE = rows(CASES["spaced_code_prose"], "text")


@pytest.mark.parametrize(
    ("text", "secret", "label"), SPACED_CODES, ids=[c[0][:30] for c in SPACED_CODES]
)
def test_a_spaced_lowercase_code_after_its_noun_is_redacted(
    text: str, secret: str, label: str
) -> None:
    assert redact(text) == Redaction(
        text=text.replace(secret, f"[REDACTED:{label}]"), labels=(label,)
    )


@pytest.mark.parametrize("text", SPACED_CODE_PROSE)
def test_four_letter_words_after_the_noun_survive(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


# --- a vendor-shaped id written with its secret -------------------------------------------------

TWILIO_SID = "AC0f1e2d3c4b5a69788796a5b4c3d2e1f0"  # fakes
# (text, the id that stays, the secret that goes, its label)
ID_SECRET_PAIRS = rows(
    CASES["id_secret_pairs"], "text", "ident", "secret", "label", TWILIO_SID=TWILIO_SID
)


@pytest.mark.parametrize(("text", "ident", "secret", "label"), ID_SECRET_PAIRS)
def test_a_secret_written_after_its_vendor_shaped_id_is_redacted(
    text: str, ident: str, secret: str, label: str
) -> None:
    result = redact(text)

    assert result.labels == (label,)
    assert result.text == text.replace(secret, f"[REDACTED:{label}]")
    assert ident in result.text


@pytest.mark.parametrize("text", rows(CASES["a_vendor_shaped_id_alone_stays"], "text"))
def test_a_vendor_shaped_id_alone_stays(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


# --- XML attributes the other way round: the value before the key ------------------------------

PW2 = "Qz7#vLp2!eR"  # fakes
TOKEN2 = "tk9aZ2mQ8xLw4Rp7"

XML_REVERSED = rows(
    CASES["xml_reversed"], "text", "secret", "label", KEY=KEY, PW2=PW2, TOKEN2=TOKEN2
)


@pytest.mark.parametrize(("text", "secret", "label"), XML_REVERSED, ids=range(len(XML_REVERSED)))
def test_an_xml_value_before_the_key_naming_a_credential_is_redacted(
    text: str, secret: str, label: str
) -> None:
    result = redact(text)

    assert result.labels == (label,)
    assert result.text == text.replace(secret, f"[REDACTED:{label}]")


def test_both_attribute_orders_redact_alike() -> None:
    forward = redact(f'<add key="DbPassword" value="{PW2}"/>')
    reversed_ = redact(f'<add value="{PW2}" key="DbPassword"/>')

    assert forward.labels == reversed_.labels == ("password",)
    assert PW2 not in forward.text and PW2 not in reversed_.text


@pytest.mark.parametrize("text", rows(CASES["xml_without_a_secret_stays"], "text"))
def test_xml_without_a_secret_stays(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


# --- a credential column of a pipe table -------------------------------------------------------

# (text, the secrets that go, in order, their labels)
TABLE_SECRETS = rows(
    CASES["table_secrets"], "text", "secrets", "label", KEY=KEY, PW=PW, PW2=PW2, TOKEN2=TOKEN2
)


@pytest.mark.parametrize(("text", "secrets", "label"), TABLE_SECRETS, ids=range(len(TABLE_SECRETS)))
def test_a_cell_under_a_header_naming_a_credential_is_redacted(
    text: str, secrets: list[str], label: str
) -> None:
    result = redact(text)

    assert result.labels == (label,)
    expected = text
    for secret in secrets:
        expected = expected.replace(secret, f"[REDACTED:{label}]", 1)
    assert result.text == expected
    assert redact(result.text) == Redaction(result.text, ())


def test_only_the_credential_column_goes_and_the_other_cells_stay() -> None:
    text = (
        f"| user | password | role |\n|---|---|---|\n| alice | {PW2} | admin |\n"
        f"| bob | {PW} | dev |"
    )

    result = redact(text).text

    for kept in ("| user | password | role |", "| alice |", "| admin |", "| bob |", "| dev |"):
        assert kept in result
    assert PW2 not in result and PW not in result


@pytest.mark.parametrize(
    "text",
    rows(CASES["a_table_without_a_credential_in_a_credential_column_stays"], "text"),
)
def test_a_table_without_a_credential_in_a_credential_column_stays(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


# Command lines an earlier rule set let keep their password (fakes).
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
    "text",
    rows(CASES["code_that_reads_a_credential_attribute_stays"], "text"),
)
def test_code_that_reads_a_credential_attribute_stays(text: str) -> None:
    # an attribute read or a format field is code, not a literal (once false positives on this
    # repository's own code)
    assert redact(text).text == text


# A salt or pepper named as such, and a table column under a short or foreign noun.
_WP_SALT = "CEP;eP<5G(ADY9*VmTidEa|E+c%/j|vZqn!>h,fjM$VFX.9z7:x3|6wF<(_LvC?f"


@pytest.mark.parametrize(
    ("text", "secret", "label"),
    rows(
        CASES["salts_and_short_table_nouns_are_redacted"],
        "text",
        "secret",
        "label",
        _WP_SALT=_WP_SALT,
    ),
)
def test_salts_and_short_table_nouns_are_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)
    assert secret not in result.text
    assert label in result.labels


@pytest.mark.parametrize("text", rows(CASES["salt_and_table_lookalikes_stay"], "text"))
def test_salt_and_table_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize("text", rows(CASES["a_first_cell_naming_a_credential_in_words"], "text"))
def test_a_first_cell_naming_a_credential_in_words(text: str) -> None:
    result = redact(text)
    assert "miknhCtFxS0O88" not in result.text and "Gr33nHill" not in result.text


@pytest.mark.parametrize("text", rows(CASES["first_cell_lookalikes_stay"], "text"))
def test_first_cell_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text


# --- a value that starts with "!" is a password, a YAML tag is not ---------------------


@pytest.mark.parametrize(
    "text",
    rows(CASES["a_password_that_starts_with_a_bang_is_redacted"], "text"),
)
def test_a_password_that_starts_with_a_bang_is_redacted(text: str) -> None:
    assert redact(text).text == text.replace("!Vault7xQ2", "[REDACTED:password]")


@pytest.mark.parametrize("text", rows(CASES["a_yaml_tag_after_a_credential_key_stays"], "text"))
def test_a_yaml_tag_after_a_credential_key_stays(text: str) -> None:
    assert redact(text).text == text


# --- "changed the password to X" in other languages, the English noun in them --------

_CHANGED_PW = "Camb1o!Nuevo"  # fake


@pytest.mark.parametrize(
    "text",
    rows(
        CASES["a_password_changed_to_in_another_language_is_redacted"],
        "text",
        _CHANGED_PW=_CHANGED_PW,
    ),
)
def test_a_password_changed_to_in_another_language_is_redacted(text: str) -> None:
    assert redact(text).text == text.replace(_CHANGED_PW, "[REDACTED:password]")


@pytest.mark.parametrize(
    "text",
    rows(CASES["a_password_changed_without_a_new_value_stays"], "text"),
)
def test_a_password_changed_without_a_new_value_stays(text: str) -> None:
    assert redact(text).text == text
