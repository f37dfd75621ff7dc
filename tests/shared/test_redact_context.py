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
from tests.shared.conftest import cpu_seconds

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
    (f"curl -u deploy:{PW} https://api.example.com/v1", PW, "password"),
    (f"curl --user deploy:{PW} https://x.example.com", PW, "password"),
    (f"curl -s -X POST -u 'ci-bot:{PW}' https://x.example.com", PW, "password"),
    (f"http -a admin:{PW} POST example.com", PW, "password"),
    (f"mysql -u root -p{PW} -h db.internal app", PW, "password"),
    (f"mysqldump -uroot -p'{PW}' shop > shop.sql", PW, "password"),
    (f"sshpass -p '{PW}' ssh deploy@10.0.0.5", PW, "password"),
    (f"sshpass -p{PW} scp a.txt host:", PW, "password"),
    (f"redis-cli -h cache -a {PW} ping", PW, "password"),
    (f"psql --password {PW} -h db", PW, "password"),
    (f"run it with --api-key {KEY} tonight", KEY, "api_key"),
    (f"STRIPE_KEY={KEY}", KEY, "api_key"),
    (f'{{"session_key": "{KEY}"}}', KEY, "api_key"),
    (f"token: {KEY}", KEY, "token"),
    (f'"password": "{PW}"', PW, "password"),
    (f"Authorization: Basic {KEY}==", f"{KEY}==", "basic_auth"),
    (f"the Acme API key is {KEY}, keep it safe", KEY, "api_key"),
    (f"the deploy token was {KEY}.", KEY, "token"),
    (f"my password is {PW}", PW, "password"),
    # no verb between the noun and the value
    (f"and the secret {AWS_SECRET} for the same user", AWS_SECRET, "secret"),
    (f"use api key {KEY} for staging", KEY, "api_key"),
    (f"the wifi password {PW} works", PW, "password"),
    (f"my password for the router is {PW}", PW, "password"),
    ("the password to the wifi was 'blue sky 99 river'", "blue sky 99 river", "password"),
    ("passphrase: correct horse battery staple", "correct horse battery staple", "password"),
    (
        "my wallet seed phrase is abandon ability able about above absent absorb abstract",
        "abandon ability able about above absent absorb abstract",
        "password",
    ),
    ("pass=Summer2024!", "Summer2024!", "password"),
    (f'api_key: str = "{KEY}"', KEY, "api_key"),  # an annotation before the literal
    (f'const token: string = "{KEY}";', KEY, "token"),
    (f"docker login -u bob -p {PW} registry.example.com", PW, "password"),
    (f"sqlcmd -S db -U sa -P {PW}", PW, "password"),
    (f"az login -u bob@example.com -p {PW}", PW, "password"),
    # aws secretsmanager get-secret-value: a JSON document inside a JSON string
    (SECRET_STRING, PW, "password"),
    (f"<password>{PW}</password>", PW, "password"),
    (f"<ApiKey>{KEY}</ApiKey>", KEY, "api_key"),
    # the value on the next line, or in a table
    (f"password: |\n  {PW}\n", PW, "password"),
    (f"config:\n  token:\n    {KEY}\n", KEY, "token"),
    (f"| Name | Value |\n|---|---|\n| DB_PASSWORD | {PW} |", PW, "password"),
    (f"name,value\napi_key,{KEY}", KEY, "api_key"),
    # a padded base64 value followed by more text (a Kubernetes Secret's data:)
    (
        "kind: Secret\ndata:\n  password: UXo3I3ZMcDIhZVI=\n  user: YWRtaW4=\n",
        "UXo3I3ZMcDIhZVI=",
        "password",
    ),
    (
        "data:\n  api-token: c2pGTUt2WG1hZmVjaFJTWE1uSHlEQTdOS1BuNldVV1k=\n",
        "c2pGTUt2WG1hZmVjaFJTWE1uSHlEQTdOS1BuNldVV1k=",
        "token",
    ),
    ("DB_PASSWORD=cGFzc3dvcmQxMjM0NQ== # from the vault", "cGFzc3dvcmQxMjM0NQ==", "password"),
    # base64 of a PEM private key or of a docker config (tls.key, .dockerconfigjson)
    (f"  tls.key: {B64_PEM}\n", B64_PEM, "private_key"),
    (f"data:\n  .dockerconfigjson: {B64_DOCKER}\n", B64_DOCKER, "docker_config"),
    # webhook and bot URLs whose secret is a path segment or glued to a word
    (f"curl https://api.telegram.org/bot{TG}/sendMessage -d text=hi", TG, "telegram_bot_token"),
    (f"alerts: {FEISHU}", FEISHU, "chat_webhook"),
    # a PHP array or Perl hash: the "=>" separator
    (f"'password' => '{PW}',", PW, "password"),
    ("$cfg = ['db_pass' => 'n0t-Real!pw'];", "n0t-Real!pw", "password"),
    # keywords: "pw", a keyword with a suffix saying how the value is written, and names that
    # are only sometimes secret (auth, credentials, cookie, session) with a key-shaped value
    (f"wifi_pw: {PW}", PW, "password"),
    (f"user: bob / pw: {PW}", PW, "password"),
    (f"heroku config:set SECRET_KEY_BASE={'5e2f' * 16}", "5e2f" * 16, "secret"),
    (f"TOKEN_VALUE={KEY}", KEY, "token"),
    (f"api_key_b64: {KEY}", KEY, "api_key"),
    (f"DB_CREDENTIALS=admin:{PW}", f"admin:{PW}", "credential"),
    (f'credentials = "{KEY}"', KEY, "credential"),
    (f"authkey={KEY}", KEY, "credential"),
    (f"bot_auth = '{KEY}'", KEY, "credential"),
    (f"session_cookie={KEY}", KEY, "credential"),
    (f"Cookie: sessionid={KEY}; theme=dark", KEY, "credential"),
    (f"--auth {KEY}", KEY, "credential"),
    # said in other ways: "password's", set/changed ... to, a numeric password, Italian "è"
    (f"my password's {PW}", PW, "password"),
    (f"I changed my password to {PW} yesterday", PW, "password"),
    ("we reset the router password to Kiwi-7733 last night", "Kiwi-7733", "password"),
    ("the passcode is 739104", "739104", "password"),
    ("my password is 58213467", "58213467", "password"),
    (f"la password è {PW}", PW, "password"),
    # a PIN or a lock's code, said or labelled
    ("my PIN is 4821.", "4821", "pin"),
    ("Bank card PIN: 90317", "90317", "pin"),
    ("the garage code is 7391#", "7391#", "pin"),
    ("PIN=2468", "2468", "pin"),
    ("the pin number was 660412", "660412", "pin"),
    # a password named in another language, in any case
    (f"Passwort: {PW}", PW, "password"),
    ("mein Passwort ist sonne123", "sonne123", "password"),
    (f"mot de passe : {PW}", PW, "password"),
    ('La contraseña es "Perro2020"', "Perro2020", "password"),
    (f"a senha é {PW}", PW, "password"),
    (f"wachtwoord: {PW}", PW, "password"),
    (f"Lösenord: {PW}", PW, "password"),
    (f"HASŁO: {PW}", PW, "password"),
    (f"Пароль: {PW}", PW, "password"),
    (f"мой пароль {PW}", PW, "password"),
    (f"密码是{PW}", PW, "password"),
    (f"パスワード: {PW}", PW, "password"),
    (f"비밀번호는 {PW}", PW, "password"),
    (f"Şifre: {PW}", PW, "password"),
    (f"salasana on {PW}", PW, "password"),
    (f"passordet er {PW}", PW, "password"),
    # Markdown labels and a key's label with a colon
    (f"**Password:** {PW}", PW, "password"),
    (f"- **Token**: {KEY}", KEY, "token"),
    (f"- **API key**: {KEY}", KEY, "api_key"),
    (f"encryption key: {KEY}Zq=", f"{KEY}Zq=", "api_key"),
    (f"client_secret {AWS_SECRET}", AWS_SECRET, "secret"),
    # a password labelled with an arrow, a dash or a qualifier before its colon
    (f"Password - {PW}", PW, "password"),
    (f"password -> {PW}", PW, "password"),
    (f"password \u2192 {PW}", PW, "password"),
    (f"password (prod): {PW}", PW, "password"),
    (f"Password [staging]: {PW}", PW, "password"),
    (f"password for bob@example.com: {PW}", PW, "password"),
    (f"the admin password for the NAS: {PW}", PW, "password"),
    (f"API key (prod): {KEY}", KEY, "api_key"),
    # the short nouns: pw, pwd, passwd
    (f"user bob, pw {PW}", PW, "password"),
    (f"passwd {PW}", PW, "password"),
    (f"the pwd is {PW}", PW, "password"),
    (f"the pass is {PW}", PW, "password"),
    # other languages
    (f"Kennwort: {PW}", PW, "password"),
    (f"Das Passwort lautet {PW}", PW, "password"),
    (f"Passwort f\u00fcr WLAN: {PW}", PW, "password"),
    (f"mdp : {PW}", PW, "password"),
    (f"la clave es {PW}", PW, "password"),
    (f"contrase\u00f1a del wifi: {PW}", PW, "password"),
    (
        f"\u043f\u0430\u0440\u043e\u043b\u044c \u043e\u0442 \u043f\u043e\u0447\u0442\u044b {PW}",
        PW,
        "password",
    ),
    (f"\u03ba\u03c9\u03b4\u03b9\u03ba\u03cc\u03c2: {PW}", PW, "password"),
    (f"m\u1eadt kh\u1ea9u: {PW}", PW, "password"),
    (f"\u0643\u0644\u0645\u0629 \u0627\u0644\u0645\u0631\u0648\u0631: {PW}", PW, "password"),
    (f"\u05e1\u05d9\u05e1\u05de\u05d4: {PW}", PW, "password"),
    (f"\uc554\ud638: {PW}", PW, "password"),
    # Hindi (the verb before or after the value, and Hinglish), Thai (glued), a
    # possessive after the noun (Greek, Vietnamese, Thai), a word naming what it opens
    ("मेरा पासवर्ड है tiger8842", "tiger8842", "password"),
    ("मेरा पासवर्ड tiger8842 है", "tiger8842", "password"),
    (f"पासवर्ड: {PW}", PW, "password"),
    ("mera password hai tiger8842", "tiger8842", "password"),
    ("รหัสผ่านของฉันคือ tiger8842", "tiger8842", "password"),
    (f"รหัสผ่าน: {PW}", PW, "password"),
    ("รหัสผ่าน wifi คือ tiger8842", "tiger8842", "password"),
    ("ο κωδικός μου είναι tiger8842", "tiger8842", "password"),
    ("ο κωδικός πρόσβασης είναι tiger8842", "tiger8842", "password"),
    ("mật khẩu của tôi là tiger8842", "tiger8842", "password"),
    ("mật khẩu wifi là tiger8842", "tiger8842", "password"),
    ("비밀번호 tiger8842 입니다", "tiger8842", "password"),
    ("пароль від пошти tiger8842", "tiger8842", "password"),
    # found by the round-7 probe: "=" after a qualifier, "set to" with no "is"
    ("pw for the nas = meadowlark44", "meadowlark44", "password"),
    (f"vnc password set to {PW}", PW, "password"),
    # keys named as a key-store's or Wi-Fi's password
    (f"PreSharedKey = {KEY}=", f"{KEY}=", "secret"),
    (f"keyStorePass={PW}", PW, "password"),
    # session ids under their cookies' names, and said as one
    ("PHPSESSID=q3v8n1k5m2b7c9x4z6l0p8r2t5", "q3v8n1k5m2b7c9x4z6l0p8r2t5", "credential"),
    (
        "JSESSIONID=9F2C4A7E1B3D5F60A8C2E4B6D8F0A1C3",
        "9F2C4A7E1B3D5F60A8C2E4B6D8F0A1C3",
        "credential",
    ),
]

PROSE = [
    # the Hindi, Thai, Greek and Vietnamese nouns in sentences with no password in them
    "मेरा पासवर्ड याद नहीं है",
    "पासवर्ड है क्या?",
    "mera password hai kya",
    "รหัสผ่านของฉันหายไป",
    "ใส่รหัสผ่าน แล้วกด ok",
    "mật khẩu của tôi là bí mật",
    "ο κωδικός μου είναι μυστικός",
    "мій пароль простий",
    "the password is base64 encoded before it is hashed",
    "the password set to expire in 90 days",
    "my password manager is great",
    "the key point is that we ship on Friday",
    "a token of appreciation for the team",
    "the secret is patience, honestly",
    "the token budget is 2000 per call",
    "I use mysql -p and type the password when it asks",
    "run mysql -u root -p then enter it",
    "sshpass -p is in the docs, but do not use it",
    "curl -u is how you pass a user",
    "curl -u $USER:$PASS https://x.example.com",
    "mysql -u root -p$MYSQL_PWD app",
    "the cache_key=user:42:profile is recomputed",
    "sort_key: name",
    "the key is TheQuickBrownFox",
    "the api key is in 1password under Ops",
    "Basic English is a controlled language",
    "pass the --password flag to prompt",
    "the cache key user-1234-profile-abcdefgh expired",
    "the secret santa list for 2024",
    "password reset links expire in 24h",
    "api key rotation happens monthly",
    "the passphrase is set in the vault",
    "mnemonic: see the docs",
    "the password for the admin account is in 1password",
    "Passphrases are long. Use one.",
    # declarations and tags are code, and a label that a sentence follows is prose
    "class Settings(BaseSettings):\n    openai_api_key: str\n    auth_token: bytes",
    'db_password: SecretStr = SecretStr("")',
    "token: int = 0",
    "password: Optional[str] = None",
    "secret: !vault |",
    "token: `gh auth token`",
    "Secret: she is planning a surprise party for Mel",
    "Token: I gave her a token of appreciation",
    "docker run -p 8080:80 nginx",
    "<password>required</password>",
    "password:\n  file: /etc/pw\n",
    "token:\n  The token is rotated monthly.\n",
    "| password | required |",
    "| Token | see the vault |",
    "password,required",
    # an attribute set from its namesake, and names that are only sometimes secret
    "self.token = token",
    "this.apiKey = apiKey;",
    "self._password = password",
    "auth: required",
    "auth: oauth2",
    "credentials: see the wiki",
    "session: 42",
    "session_id: abc-123",
    "cookie: chocolate chip",
    "auth_method: oauth",
    "session_timeout=3600",
    "the author=Tolkien field",
    "credentials_file: ~/.aws/credentials",
    "pw: see above",
    # a PIN, a code, a password word in prose or in another language, with no value
    "the LED pin is 13",
    "pin 4821 of the header",
    "ping: 4821 ms",
    "My PIN is secret.",
    "the door code changed last week",
    "error code is 404 and the zip code is 94107",
    "Mein Passwort ist zu kurz.",
    "Le mot de passe est dans le coffre.",
    "La contraseña es muy larga.",
    "I moved my password to 1Password",
    "**Token:** see the vault",
    "primary key: user_id_2024_v2_final",
    "cache key: user-1234-profile-abcdefgh",
    "the S3 key is uploads/2024/IMG_1234.jpg",
    # the new separators, nouns and languages, with no value
    "Password - see the vault",
    "password -> reset flow -> email",
    "password (optional): leave empty",
    "the pass is valid until Friday",
    "tests pass v1.2.3-beta on CI",
    "pwd ~/projects/app2",
    "pwd /srv/app-v2",
    "la clave es importante",
    "Das Passwort lautet anders",
    "the bypass flag -bypassCache 1 is off",
    "session_id=claude-code-5f0c2a",
    "pw: n/a",
    "session_id: 550e8400-e29b-41d4-a716-446655440000",
]


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
    "value", ["01JD8X3Q4Z5Y6W7V8T9S0R1P2N", "session-2026-12-01", "kestrel/api", "my-project"]
)
def test_find_credential_passes_ordinary_identifiers(value: str) -> None:
    assert find_credential(value) is None


@pytest.mark.parametrize(
    "token",
    [
        "[REDACTED:aws_access_key]",
        "[redacted:aws_access_key]",
        "redacted",
        "REDACTED",
        "redacted-openai-key",
        "openai-key-redacted-openai-key",
        "openai_key]",
        "[REDACTED:jwt].",
    ],
)
def test_is_placeholder_knows_a_placeholder_and_its_pieces(token: str) -> None:
    assert is_placeholder(token)


@pytest.mark.parametrize(
    "token", ["openai", "redaction", "unredacted", "deploy", "key", "aws_access_key"]
)
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
    *(f.sample for f in catalogue()),
    *(f.lookalike for f in catalogue()),
    "mysql -u root -p",
    "sshpass -p ",
    "curl -u a:",
    "redis-cli -a ",
    "--password ",
    "the ",
    " key is ",
    " token: ",
    "datadog",
    "Twilio",
    " api key = ",
    "_KEY=",
    "ＫＥＹ＝",
    "\n",
    " ",
    "'",
    '"',
    "=",
    ":",
    "-",
    "_",
    ".",
    "[REDACTED:jwt]",
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
    [
        "ci uses key-ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
        "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789_old",
        "old_sk_live_51HqLyjAbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "sk_live_51HqLyjAbCdEfGhIjKlMnOpQrStUvWxYz0123456789-rotated",
        "rotated-glpat-aB1cD2eF3gH4iJ5kL6mN",
    ],
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
COMMAND_LINES = [
    (f"htpasswd -b /etc/nginx/.htpasswd admin {PW}", PW),
    (f"htpasswd -bc .htpasswd bob '{PW2}'", PW2),
    (f"htpasswd -nb deploy {PW2}", PW2),
    (f"openssl enc -aes-256-cbc -salt -in a.txt -out a.enc -k {PW}", PW),
    (f"openssl enc -d -aes-256-cbc -in a.enc -k '{PW2}'", PW2),
    (f"zip -r -P {PW} backup.zip docs/", PW),
    (f"zip -P '{PW2}' notes.zip notes.txt", PW2),
    (f"7z a -p{PW} -mhe=on backup.7z docs/", PW),
    (f"7za x -p{PW2} backup.7z", PW2),
    (f"unrar x -p{PW} old.rar", PW),
    (f"ldapsearch -x -H ldap://dc1 -D cn=admin,dc=ex,dc=com -w {PW} -b dc=ex,dc=com", PW),
    (f"ldapmodify -h dc1 -p 389 -D cn=admin -w '{PW2}' -f change.ldif", PW2),
    (f"smbclient //fs01/share -U alice%{PW}", PW),
    (f"smbclient '\\\\fs01\\it' --user='CORP\\bob%{PW2}'", PW2),
    (f"sqlplus scott/{PW}@orcl", PW),
    (f"sqlplus -s system/{PW2}@//db.internal:1521/XEPDB1 @report.sql", PW2),
    (f'sqlplus "hr/{PW}@db.internal:1521/hr" @load.sql', PW),
    (f"net use \\\\fs01\\share {PW} /user:CORP\\alice", PW),
    (f"NET USE Z: \\\\fs01\\finance /user:bob {PW2} /persistent:no", PW2),
    (f"net user backup_admin {PW} /add", PW),
    (f"setx DB_PASSWORD {PW}", PW),
    (f'setx /M SERVICE_TOKEN "{KEY}"', KEY),
    (f"unzip -P {PW} backup.zip", PW),
    (f"keytool -importkeystore -srckeystore a.p12 -srcstorepass {PW}", PW),
    (f"keytool -importkeystore -deststorepass {PW2} -destkeystore b.jks", PW2),
    (f"jarsigner -keystore ks.jks -storepass {PW2} app.jar alias", PW2),
    (f"keytool -genkey -keypass {PW} -alias a", PW),
    # a password piped to a command that reads it from its standard input
    (f"echo {PW} | sudo -S apt update", PW),
    (f"echo '{PW2}' | docker login -u bob --password-stdin", PW2),
    (f'printf "%s" "{PW}" | podman login --username bob --password-stdin quay.io', PW),
    (f"echo -n '{PW}' | passwd --stdin bob", PW),
    (f"echo 'bob:{PW2}' | chpasswd", f"bob:{PW2}"),
    (f"echo -n {KEY} | gh secret set API_KEY", KEY),
    # config and secret-store commands that take the value as an argument
    (f"npm config set //registry.npmjs.org/:_authToken {KEY}", KEY),
    (f"npm config set _authToken={KEY}", KEY),
    (f"yarn config set npmAuthToken {KEY}", KEY),
    (f"poetry config http-basic.pypi __token__ {KEY}", KEY),
    (f"poetry config pypi-token.private {KEY}", KEY),
    (f"composer config --global http-basic.repo.example.com bob {PW}", PW),
    (f'dotnet user-secrets set "Db:Password" "{PW2}"', PW2),
    (f"gh secret set API_KEY --body {KEY}", KEY),
    (f"gh secret set DEPLOY_HOOK -b'{KEY}'", KEY),
    (f"aws ssm put-parameter --name /prod/db --value {PW} --type SecureString", PW),
    (f"aws secretsmanager put-secret-value --secret-id prod/db --secret-string {PW2}", PW2),
    (f"az keyvault secret set --vault-name kv --name db --value '{PW}'", PW),
    (f"kubectl create secret generic app --from-literal=url=x --from-literal=dsn={PW}", PW),
    (f"redis-cli -h cache --pass {PW}", PW),
    # Oracle's user/password@db in a JDBC URL
    (f"jdbc:oracle:thin:scott/{PW}@db.internal:1521:orcl", PW),
    (f"jdbc:oracle:thin:hr/{PW2}@//db:1521/XEPDB1", PW2),
    # a here-document or here-string read by a command that takes a password on its input
    (f"docker login -u bob --password-stdin <<EOF\n{PW}\nEOF", PW),
    (f"cat <<'EOF' | docker login -u bob --password-stdin\n  {PW2}\nEOF", PW2),
    (f"sudo -S apt-get update <<< '{PW}'", PW),
    (f"chpasswd <<-END\nbob:{PW2}\nEND", f"bob:{PW2}"),
    # vault login's positional token; the password flags of login brute-forcers and clients
    (f"vault login {KEY}", KEY),
    (f"vault login -address=https://vault.internal:8200 {KEY}", KEY),
    (f"hydra -l admin -p {PW} ssh://10.0.0.1", PW),
    (f"medusa -h 10.0.0.1 -u admin -p '{PW2}' -M ssh", PW2),
    (f"crackmapexec smb 10.0.0.0/24 -u bob -p {PW}", PW),
    (f"nxc winrm dc01 -u administrator -p '{PW2}'", PW2),
    (f"evil-winrm -i 10.0.0.9 -u Administrator -p {PW}", PW),
    (f"xfreerdp /v:10.0.0.9 /u:bob /p:{PW}", PW),
]
COMMAND_PROSE = [
    "use zip -P to set a password",
    "zip -P is weak encryption; prefer 7z -p",
    "7z a -p archive.7z docs/",
    "openssl enc -aes-256-cbc -in a.txt -k",
    "ldapsearch -x -W -h host -p 389 -b dc=ex,dc=com",
    "smbclient -L //fs01 -U alice",
    "htpasswd -c .htpasswd bob",
    "htpasswd -b file user password",
    "sqlplus /nolog",
    "sqlplus / as sysdba",
    "sqlplus username/password@db",
    "net use Z: \\\\fs01\\share /persistent:yes",
    "net use \\\\fs01\\ipc$ * /user:bob",
    "the net user count grew this quarter",
    "net user bob /domain",
    "setx PATH %PATH%;C:\\tools",
    "setx API_KEY %API_KEY%",
    "unzip -P to give the password",
    "keytool -list -storepass:env KS_PASS",
    "echo hello | sudo -S true",
    "echo $PW | sudo -S apt update",
    'echo "$DOCKER_TOKEN" | docker login -u bob --password-stdin',
    "cat token.txt | docker login -u bob --password-stdin",
    "echo done | tee log.txt",
    "npm config set registry https://registry.npmjs.org/",
    "npm config get _authToken",
    "poetry config virtualenvs.in-project true",
    "gh secret set API_KEY < key.txt",
    "gh secret list",
    "aws ssm put-parameter --name /prod/db --value file://pw.txt",
    'aws ssm put-parameter --name /app/db --value "$(cat pw.txt)" --type SecureString',
    "echo $PASSWORD | sudo -S true",
    "kubectl create secret generic app --from-file=key.pem",
    "jdbc:oracle:thin:@db.internal:1521:orcl",
    "docker login -u bob --password-stdin <<EOF\n$DOCKER_TOKEN\nEOF",
    "cat <<EOF > notes.txt\nhello world again\nEOF",
    "python - <<EOF\nprint(1)\nEOF",
    "vault login -method=oidc",
    "vault login -method=userpass username=bob",
    "vault login -",
    "vault login $VAULT_TOKEN",
    "hydra -l admin -P rockyou.txt ssh://10.0.0.1",
    "hydra -p is the single-password flag",
    "crackmapexec smb 10.0.0.0/24 -u users.txt -p passwords.txt",
    "xfreerdp /v:10.0.0.9 /u:bob /p:$PW",
]


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
XML_AND_URLS = [
    (f'<add key="ApiKey" value="{KEY}"/>', KEY, "api_key"),
    (f'<add key="SmtpPassword" value="{PW}" />', PW, "password"),
    (f"<property name='hibernate.connection.password' value='{PW2}'/>", PW2, "password"),
    (f'<param name="apiToken" value="{KEY}"/>', KEY, "token"),
    (f'<entry key="db.password">{PW}</entry>', PW, "password"),
    (f'<setting name="ClientSecret" serializeAs="String">\n<value>{KEY}</value>', KEY, "secret"),
    (f"git remote add origin https://{HEX40}@github.com/org/repo.git", HEX40, "credential_url"),
    (f"git clone https://{KEY}@gitlab.example.com/g/p.git", KEY, "credential_url"),
    (f"https://maps.example.com/api/js?key={KEY}&callback=init", KEY, "api_key"),
    (f"wss://push.example.com/feed?auth={KEY}Qz", f"{KEY}Qz", "token"),
    (f"https://x.example.com/f?expires=1700000000&signature={HEX40}", HEX40, "url_signature"),
]
XML_AND_URL_PROSE = [
    '<add key="PageSize" value="20"/>',
    '<add key="RequirePassword" value="true"/>',
    '<property name="url" value="jdbc:mysql://db/shop"/>',
    '<property name="passwordEncoder" ref="bcryptEncoder"/>',
    '<entry key="timeout">30</entry>',
    '<param name="token" value="${token}"/>',
    "https://bob@bitbucket.org/team/repo.git",
    "ssh://git@github.com/org/repo.git",
    "https://firstname.lastname.example@host.example.com/",
    "https://maps.example.com/api?key=value&q=paris",
    "https://s3.example.com/b?key=uploads/2024/IMG_1234Photo.jpg",
]


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


@pytest.mark.parametrize("space", ["\u00a0", "\u2009", "\u202f", "\u3000", "\u2002"])
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
    [
        (f"\u0440\u0430ssword: {PW}", "password"),  # Cyrillic р, а
        (f"t\u043eken: {KEY}", "token"),  # Cyrillic о
        (f"s\u0435cret={KEY}", "secret"),  # Cyrillic е
        (f"my p\u0430ssword is {PW}", "password"),
        (f"\u0391PI_K\u0395Y={KEY}", "api_key"),  # Greek Α, Ε
        (f"DB_PASSW\u039fRD={PW2}", "password"),  # Greek Ο
    ],
)
def test_look_alike_letters_in_a_keyword_do_not_hide_the_value(text: str, label: str) -> None:
    result = redact(text)

    assert result.labels == (label,)
    assert PW not in result.text and KEY not in result.text and PW2 not in result.text


@pytest.mark.parametrize("text", ["мой пароль слишком короткий", "токен: см. хранилище", "ΑΒΓ 123"])
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
    ("your verification code is 482913", "482913", "one_time_code"),
    ("the phone's unlock code is 739104", "739104", "one_time_code"),
    (f"BitLocker recovery key: {BITLOCKER}", BITLOCKER, "recovery_key"),
    (f"the recovery key is {BITLOCKER}.", BITLOCKER, "recovery_key"),
    (
        "FileVault recovery key: 7KQ2-M9XD-4HTP-Z8WC-3RNB-6FJA",
        "7KQ2-M9XD-4HTP-Z8WC-3RNB-6FJA",
        "recovery_key",
    ),
    ("Your Google verification code is G-730155.", "G-730155", "one_time_code"),
    ("2FA code: 551203", "551203", "one_time_code"),
    ("the OTP is 739201, valid for 5 minutes", "739201", "one_time_code"),
    ("sign-in code: 804 112", "804 112", "one_time_code"),
    ("Your one-time passcode is 55102918", "55102918", "one_time_code"),
    (
        "backup codes: 1234-5678 2345-6789 3456-7890",
        "1234-5678 2345-6789 3456-7890",
        "one_time_code",
    ),
    (
        "My GitHub recovery codes are 3f9a1-b2c4d 5e6f7-08192 a3b4c-5d6e7",
        "3f9a1-b2c4d 5e6f7-08192 a3b4c-5d6e7",
        "one_time_code",
    ),
    ("Google backup codes:\n4829 1038\n5729 3018", "4829 1038\n5729 3018", "one_time_code"),
    ("TOTP seed: JBSW Y3DP EHPK 3PXP GEZD GNBV", "JBSW Y3DP EHPK 3PXP GEZD GNBV", "totp_seed"),
    ("authenticator key: mfrg gzdf mztw q2lk", "mfrg gzdf mztw q2lk", "totp_seed"),
    (
        "MFA secret: GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ",
        "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ",
        "totp_seed",
    ),
    (f"my 12 words are: {SEED_12}", SEED_12, "seed_phrase"),
    (f"seed words: {SEED_24}", SEED_24, "seed_phrase"),
    (f"the 24-word recovery phrase is {SEED_24}. Keep it offline", SEED_24, "password"),
    (f"12 words: {SEED_12.replace(' ', ', ')}.", SEED_12.replace(" ", ", "), "seed_phrase"),
]
CODE_PROSE = [
    "the code is 404",
    # 48 digits whose blocks are no multiples of 11, and a template's letters
    "recovery key: 123456-234567-345678-456789-567890-678901-789012-890123",
    "recovery key: XXXX-XXXX-XXXX-XXXX-XXXX-XXXX",
    "the recovery key is stored in Azure AD",
    "error code 500 again",
    "the zip code is 94107",
    "my verification code expired, send another",
    "the OTP is sent by SMS",
    "security code is on the back",
    "backup codes are stored offline in the safe",
    "recovery codes: see the vault",
    "2FA key: this will come soon",
    "MFA is 100% required",
    "my twelve words of advice are: be kind",
    "my 12 words are: always be kind to others and yourself",
    "in other words, it was 2024",
    "the 24 words are the keys to the wallet",
    "the seed words are in my drawer",
    "550e8400-e29b-41d4-a716-446655440000",
    "commit 3f9a1b2c4d5e6f708192a3b4c5d6e7f8091a2b3c fixed it",
]


@pytest.mark.parametrize(("text", "secret", "label"), CODES, ids=[c[0][:30] for c in CODES])
def test_a_code_said_as_one_is_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)

    assert result.labels == (label,)
    assert result.text == text.replace(secret, f"[REDACTED:{label}]", 1)


@pytest.mark.parametrize("text", CODE_PROSE)
def test_a_code_or_words_in_prose_survive(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


# Codes in lowercase groups with no digit, after a noun that says what they are.
SPACED_CODES = [
    ("my gmail app password is abcd efgh ijkl mnop", "abcd efgh ijkl mnop", "password"),
    ("App password: qwer tyui opas dfgh", "qwer tyui opas dfgh", "password"),
    ("app-specific password: wxyz-abcd-efgh-ijkl", "wxyz-abcd-efgh-ijkl", "password"),
    ("Your app password for your device\nxkcd qrst uvwp lmno", "xkcd qrst uvwp lmno", "password"),
    ("yahoo app password is qwertyuiopasdfgh", "qwertyuiopasdfgh", "password"),
    ("secret key: jbsw y3dp ehpk 3pxp", "jbsw y3dp ehpk 3pxp", "totp_seed"),
    ("setup key: abcd efgh ijkl mnop qrst uvwx", "abcd efgh ijkl mnop qrst uvwx", "totp_seed"),
    ("2FA secret key: jbswy3dpehpk3pxp", "jbswy3dpehpk3pxp", "totp_seed"),
]
SPACED_CODE_PROSE = [
    "the app password: keep this safe from them",
    "app password: keep them safe here",
    "generate an app password from your account page",
    "the secret key: this will come soon",
    "setup key: none",
]


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
ID_SECRET_PAIRS = [
    (
        f"{TWILIO_SID}:7c6b5a49382716f5e4d3c2b1a0f9e8d7",
        TWILIO_SID,
        "7c6b5a49382716f5e4d3c2b1a0f9e8d7",
        "twilio_key",
    ),
    (
        f"account {TWILIO_SID}, 'a1b2c3d4e5f60718293a4b5c6d7e8f90'",
        TWILIO_SID,
        "a1b2c3d4e5f60718293a4b5c6d7e8f90",
        "twilio_key",
    ),
    (
        f"use {TWILIO_SID} / Zk4Qp9Lm2Xv7Rt1Wn6Bc3Hd8Fs5Jy0Ga",
        TWILIO_SID,
        "Zk4Qp9Lm2Xv7Rt1Wn6Bc3Hd8Fs5Jy0Ga",
        "twilio_key",
    ),
    (
        "Iv1.8a61f9b3a7aba766:0f9e8d7c6b5a49382716f5e4d3c2b1a0f9e8d7c6",
        "Iv1.8a61f9b3a7aba766",
        "0f9e8d7c6b5a49382716f5e4d3c2b1a0f9e8d7c6",
        "github_oauth_secret",
    ),
    (
        "GITHUB_APP=Iv23liQw3Er5Ty7Ui9Op / 1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d",
        "Iv23liQw3Er5Ty7Ui9Op",
        "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d",
        "github_oauth_secret",
    ),
]


@pytest.mark.parametrize(("text", "ident", "secret", "label"), ID_SECRET_PAIRS)
def test_a_secret_written_after_its_vendor_shaped_id_is_redacted(
    text: str, ident: str, secret: str, label: str
) -> None:
    result = redact(text)

    assert result.labels == (label,)
    assert result.text == text.replace(secret, f"[REDACTED:{label}]")
    assert ident in result.text


@pytest.mark.parametrize(
    "text",
    [
        "AC0f1e2d3c4b5a69788796a5b4c3d2e1f0 is the account SID",
        "client id Iv1.8a61f9b3a7aba766, see the app settings",
    ],
)
def test_a_vendor_shaped_id_alone_stays(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


# --- XML attributes the other way round: the value before the key ------------------------------

PW2 = "Qz7#vLp2!eR"  # fakes
TOKEN2 = "tk9aZ2mQ8xLw4Rp7"

XML_REVERSED = [
    (f'<add value="{PW2}" key="DbPassword"/>', PW2, "password"),
    (f'<property value="{TOKEN2}" name="apiToken"/>', TOKEN2, "token"),
    (f"<add value='{PW2}' key='ConnectionPassword' />", PW2, "password"),
    (f'<param value="{KEY}" type="string" name="client.secret"/>', KEY, "secret"),
    (f'<setting value="{KEY}" name="ApiKey"></setting>', KEY, "api_key"),
    (
        f'<appSettings>\n  <add value="{PW2}" key="Smtp.Password" />\n</appSettings>',
        PW2,
        "password",
    ),
]


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


@pytest.mark.parametrize(
    "text",
    [
        '<add value="true" key="EnableLogging"/>',
        '<property value="localhost" name="db.host"/>',
        '<add value="${DB_PASSWORD}" key="DbPassword"/>',
        '<add value="" key="DbPassword"/>',
        '<add value="changeme" key="PasswordPolicy"/>',
        '<input value="Sign in" name="submit"/> <label>Password</label>',
    ],
)
def test_xml_without_a_secret_stays(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


# --- a credential column of a pipe table -------------------------------------------------------

# (text, the secrets that go, in order, their labels)
TABLE_SECRETS = [
    (f"| user | password |\n|---|---|\n| alice | {PW2} |", [PW2], "password"),
    (  # several rows, a plain word under "password" too
        f"| user | password |\n| --- | --- |\n| alice | {PW2} |\n| bob | sunshine |\n"
        f"| carol | {PW} |",
        [PW2, "sunshine", PW],
        "password",
    ),
    (f"user | password\n---|---\nalice | {PW2}\nbob | {PW}", [PW2, PW], "password"),  # no outer |
    (f"password | user\n---|---\n{PW2} | alice", [PW2], "password"),  # the first column
    (f"| Login | Passwd |\r\n|:-|:-:|\r\n| root | {PW2} |\r\n", [PW2], "password"),
    (f"| Account | PWD | Notes |\n|--|--|--|\n| db | {PW2} | prod |", [PW2], "password"),
    (f"| Wallet | Passphrase |\n|---|---|\n| main | {PW2} |", [PW2], "password"),
    (f"| **User** | **DB_PASSWORD** |\n|---|---|\n| app | `{PW2}` |", [f"`{PW2}`"], "password"),
    (f"| Service | API Key |\n|---|---|\n| maps | {KEY} |", [KEY], "api_key"),
    (f"| service | api_key |\n|---|---|\n| maps | {KEY} |", [KEY], "api_key"),
    (f"| service | apiKey |\n|---|---|\n| maps | {KEY} |", [KEY], "api_key"),
    (f"| app | Client Secret |\n|---|---|\n| web | {KEY} |", [KEY], "secret"),
    (f"| bot | Token |\n|---|---|\n| ci | {TOKEN2} |", [TOKEN2], "token"),
    (f"| host | private key |\n|---|---|\n| web1 | {KEY} |", [KEY], "private_key"),
    (f"name | secret\nweb | {KEY}\napi | {TOKEN2}", [KEY, TOKEN2], "secret"),  # no separator
]


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
    [
        "| Name | Age |\n|---|---|\n| Alice | 30 |\n| Bob | 41 |",
        "| user | password |\n|---|---|\n| alice |  |\n| bob | - |\n| carol | n/a |\n"
        "| dan | *** |\n| eve | <your-password> |\n| fay | N/A |\n| gus | ${DB_PASSWORD} |",
        # a column about passwords, not of them
        "| System | Password policy |\n|---|---|\n| AD | at least 12 characters |\n"
        "| VPN | 8chars+1digit |",
        "| user | password |\n|---|---|\n| alice | same as staging |\n| bob | yes |",
        "| Model | Max tokens | Token count |\n|---|---|---|\n| gpt | 8192 | 1500 |",
        "| word | token |\n|---|---|\n| hello | 15339 |\n| world | 1917 |",  # a tokenizer's ids
        "| Character | Secret |\n|---|---|\n| Anna | she was adopted |",
        "| key | value |\n|---|---|\n| colour | blue |",
        "ps aux | grep token\nsort -u | head",
        "| password |\n|---|\n",  # a header with no rows
    ],
)
def test_a_table_without_a_credential_in_a_credential_column_stays(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())


# Command lines an earlier rule set let keep their password (fakes).
@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("helm registry login ghcr.io -u bob -p lisdOD103*cw", "lisdOD103*cw"),
        (
            "helm repo add corp https://charts.example.com --username bob --password Hq7#kLm2pX",
            "Hq7#kLm2pX",
        ),
        ("cqlsh -u cassandra -p bvpjHW269%jh 10.0.0.1", "bvpjHW269%jh"),
        ("mosquitto_pub -h broker -u dev -P pprqGM875#mj -t t -m hi", "pprqGM875#mj"),
        (
            "dotnet nuget add source https://nuget.example.com/v3/index.json -n x -u bob "
            "-p rjiqRR595!oq --store-password-in-clear-text",
            "rjiqRR595!oq",
        ),
        ("useradd -m -p pplyMQ801!kg bob", "pplyMQ801!kg"),
        ("ssh-keygen -t ed25519 -N 'nzyfMA893%eg' -f ~/.ssh/id_ed25519", "nzyfMA893%eg"),
        ("wpa_passphrase HomeNet ecnhFW315&sy > /etc/wpa.conf", "ecnhFW315&sy"),
        ('wpa_passphrase "Home Net" "ecnh FW315&sy"', "ecnh FW315&sy"),
        ("rabbitmqctl add_user app jkldOT329!uv", "jkldOT329!uv"),
        ("rabbitmqctl -n rabbit@mq change_password app gaczSL159*jq", "gaczSL159*jq"),
        ("mc alias set myminio http://10.0.0.5:9000 minioadmin vilaCI456&sw", "vilaCI456&sw"),
        ("cargo login 6xHZhM8JhXpOIWHe9y8wAQ2BzZge8212", "6xHZhM8JhXpOIWHe9y8wAQ2BzZge8212"),
        (
            "ngrok config add-authtoken FwCcHP9DzljUqQGLZJqTK_aw0TrrzjKoGgAsF",
            "FwCcHP9DzljUqQGLZJqTK",
        ),
        ("ngrok http 80 --authtoken BQwoc9k98CI5R4ygF0YuI6aPswZRyTp02LugzPro", "BQwoc9k98CI5R4yg"),
        ("deploy --dbpassword Xk9#mP2qLw --env prod", "Xk9#mP2qLw"),
        ("bot run --clientsecret 8fJk2Lm9Qr4Tz7Wp1Xv3 now", "8fJk2Lm9Qr4Tz7Wp1Xv3"),
        ("curl -u :K8Rhd2U1xcwyYTnDaSHApM7Irc0gyk02 https://api.example.com", "K8Rhd2U1xcwyYTnD"),
        ("SSHPASS=wsfgRB584#la sshpass -e ssh bob@host", "wsfgRB584#la"),
        ('expect "password:"\nsend "pvgdAQ750*nv\\r"', "pvgdAQ750*nv"),
        ("child.expect('Password:')\nchild.sendline('pvgdAQ750*nv')", "pvgdAQ750*nv"),
    ],
)
def test_command_line_passwords_are_redacted(text: str, secret: str) -> None:
    assert secret not in redact(text).text


@pytest.mark.parametrize(
    "text",
    [
        "run ssh-keygen -N to set a passphrase",
        "useradd -m -s /bin/bash bob",
        "helm install -n prod app ./chart --set replicas=2",
        "rabbitmqctl add_user app $RABBIT_PASSWORD",
        "mc alias list",
        "cargo login",
        "ngrok http 80",
        "ngrok http 80 --authtoken $NGROK_AUTHTOKEN",
        'expect "password:"\nsend "$pw\\r"',
        "curl -u bob https://api.example.com",
        "mytool --bypass-cache true --tokenizer bert",
        "mosquitto_sub -h broker -p 1883 -t sensors/#",
    ],
)
def test_command_line_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    "text",
    [
        "token = page.next_page_token",
        "        token = page.next_page_token if page else None",
        "return GrpcStoreClient(gateway.address, token=gateway.token, timeout=timeout)",
        "page = ctx.store.list(page_token=a.page_token, **kwargs)",
        "api_key = cfg.api_key",
        "page = store.list(page_token=token)\nwhile token:\n    page = next(page)",
        "password=DB_PASSWORD",
        'lines.append(f"next page: --page-token {r.next_page_token}")',
    ],
)
def test_code_that_reads_a_credential_attribute_stays(text: str) -> None:
    # an attribute read or a format field is code, not a literal (once false positives on this
    # repository's own code)
    assert redact(text).text == text


# A salt or pepper named as such, and a table column under a short or foreign noun.
_WP_SALT = "CEP;eP<5G(ADY9*VmTidEa|E+c%/j|vZqn!>h,fjM$VFX.9z7:x3|6wF<(_LvC?f"


@pytest.mark.parametrize(
    ("text", "secret", "label"),
    [
        (f"define( 'NONCE_SALT',       '{_WP_SALT}' );", _WP_SALT, "secret"),
        (f"define('SECURE_AUTH_SALT', '{_WP_SALT}');", _WP_SALT, "secret"),
        ("HASHID_SALT=Zq8vLm3Kx9Pw2Rt7Abc", "Zq8vLm3Kx9Pw2Rt7Abc", "secret"),
        ('SECURITY_PASSWORD_SALT = "Zq8vLm3Kx9Pw2Rt7Abc"', "Zq8vLm3Kx9Pw2Rt7Abc", "secret"),
        ("APP_PEPPER: Zq8vLm3Kx9Pw2Rt7Abc", "Zq8vLm3Kx9Pw2Rt7Abc", "secret"),
        (
            "| service | user | pass |\n|---|---|---|\n| db | app | Gr33nHill*nruYj |",
            "Gr33nHill",
            "password",
        ),
        ("| host | pw |\n|---|---|\n| nas | Gr33nHill*nruYj |", "Gr33nHill", "password"),
        ("| Dienst | Passwort |\n|---|---|\n| NAS | Gr33nHill*nruYj |", "Gr33nHill", "password"),
        ("| servicio | contraseña |\n|---|---|\n| db | Gr33nHill*nruYj |", "Gr33nHill", "password"),
        ("| env | creds |\n|---|---|\n| prod | Zq8vLm3Kx9Pw2Rt7Abc |", "Zq8vLm3Kx9", "password"),
    ],
)
def test_salts_and_short_table_nouns_are_redacted(text: str, secret: str, label: str) -> None:
    result = redact(text)
    assert secret not in result.text
    assert label in result.labels


@pytest.mark.parametrize(
    "text",
    [
        "SALT_ROUNDS=12",
        "BCRYPT_SALT=10",
        "salt = os.urandom(16)",
        "add sea_salt: 2 tsp",
        "| suite | pass | fail |\n|---|---|---|\n| unit | 120 | 3 |\n| e2e | PASSED | no |",
        "| player | pass % |\n|---|---|\n| Kane | 87.5% |",
        "| route | pass |\n|---|---|\n| A1 | Brenner |",
        "| step | pw |\n|---|---|\n| 1 | - |",
    ],
)
def test_salt_and_table_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text


@pytest.mark.parametrize(
    "text",
    [
        "| Key | Value |\n|---|---|\n| API Token | miknhCtFxS0O88s2ik56REpnqmOwGTipTuypn99K |",
        "| Setting | Value |\n|---|---|\n| DB Password | Gr33nHill*nruYj |",
    ],
)
def test_a_first_cell_naming_a_credential_in_words(text: str) -> None:
    result = redact(text)
    assert "miknhCtFxS0O88" not in result.text and "Gr33nHill" not in result.text


@pytest.mark.parametrize(
    "text", ["| Max tokens | 4096 |", "| Token count | 5 |", "| API Token | see the vault |"]
)
def test_first_cell_lookalikes_stay(text: str) -> None:
    assert redact(text).text == text


# --- a value that starts with "!" is a password, a YAML tag is not ---------------------


@pytest.mark.parametrize(
    "text",
    [
        "ADMIN_PASSWORD=!Vault7xQ2",
        "export DB_PASSWORD=!Vault7xQ2",
        "ADMIN_PASSWORD: !Vault7xQ2",
    ],
)
def test_a_password_that_starts_with_a_bang_is_redacted(text: str) -> None:
    assert redact(text).text == text.replace("!Vault7xQ2", "[REDACTED:password]")


@pytest.mark.parametrize(
    "text",
    [
        "DbPassword: !Ref DbPasswordParam",
        "secret: !vault |\n  $ANSIBLE_VAULT;1.1;AES256",
        "api_key: !secret openai_key",
        "password: !ENV ${DB_PW}",
        "password = !self.ok",
    ],
)
def test_a_yaml_tag_after_a_credential_key_stays(text: str) -> None:
    assert redact(text).text == text


# --- "changed the password to X" in other languages, the English noun in them --------

_CHANGED_PW = "Camb1o!Nuevo"  # fake


@pytest.mark.parametrize(
    "text",
    [
        f"He cambiado la contraseña a {_CHANGED_PW}",
        f"J'ai changé le mot de passe en {_CHANGED_PW}",
        f"Ich habe das Passwort auf {_CHANGED_PW} geändert",
        f"Mudei a senha para {_CHANGED_PW}",
        f"ho cambiato la password in {_CHANGED_PW}",
        f"la password del wifi è {_CHANGED_PW}",
        f"el password de la base es {_CHANGED_PW}",
    ],
)
def test_a_password_changed_to_in_another_language_is_redacted(text: str) -> None:
    assert redact(text).text == text.replace(_CHANGED_PW, "[REDACTED:password]")


@pytest.mark.parametrize(
    "text",
    [
        "J'ai changé le mot de passe en 2023",
        "hay que cambiar la contraseña a menudo",
        "la password del sistema è cambiata",
        "I changed the password in 1Password",
        "I changed my password in March",
        "the password in the vault is old",
        "store the password in Vault2 now",
        "the password of the day is in the vault",
    ],
)
def test_a_password_changed_without_a_new_value_stays(text: str) -> None:
    assert redact(text).text == text
