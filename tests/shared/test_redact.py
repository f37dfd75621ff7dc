"""Secret redaction (shared/redact/): a corpus of secrets that must go, a corpus of
look-alikes that must stay byte-identical, and properties over arbitrary text.

Every secret below is fake but correctly shaped, and assembled at import time (prefix +
generated body) so that no real-looking secret literal sits in the repository.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shared.redact.engine as engine
from shared.redact import Redaction, contains_secret, redact, redact_text
from tests.golden.redaction.cases import load, rows
from tests.shared.conftest import cpu_seconds

CASES = load("redact")

B62 = string.ascii_letters + string.digits
B64URL = B62 + "_-"
B64 = B62 + "+/"
HEX = "0123456789abcdef"
UPPER_ALNUM = string.ascii_uppercase + string.digits


def fake(n: int, alphabet: str = B62, *, seed: int) -> str:
    """A deterministic fake body; base62 ones always mix digit, lower and upper like real keys."""
    rng = random.Random(seed)
    body = "".join(rng.choice(alphabet) for _ in range(n))
    return "x7Q" + body[3:] if alphabet in (B62, B64URL, B64) else body


def b64(raw: str, *, url: bool = False) -> str:
    encode = base64.urlsafe_b64encode if url else base64.b64encode
    return encode(raw.encode()).decode()


def fake_jwt() -> str:
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}), url=True).rstrip("=")
    payload = b64(json.dumps({"sub": "1234567890", "name": "Ada"}), url=True).rstrip("=")
    return f"{header}.{payload}.{fake(43, B64URL, seed=99)}"


def fake_pem(kind: str, *, seed: int) -> str:
    lines = [fake(64, B64, seed=seed + i) for i in range(4)] + [fake(24, B64, seed=seed) + "=="]
    label = f"{kind} PRIVATE KEY".strip()
    return "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----"])


@dataclass(frozen=True)
class Case:
    """``before + secret + after`` must come back as ``before + [REDACTED:label] + after``."""

    label: str
    before: str
    secret: str
    after: str

    @property
    def text(self) -> str:
        return self.before + self.secret + self.after

    def __str__(self) -> str:
        return f"{self.label}:{self.before.strip()[:24]}"


PASSWORD = "Tr0ub4dor&3xK9"  # shaped like a human password: letters, digits, a symbol

SECRETS = [
    # Provider API keys.
    Case("openai_key", "my key is ", "sk-" + fake(48, seed=1), ", do not share it."),
    Case("openai_key", "export OPENAI_API_KEY=", "sk-proj-" + fake(120, B64URL, seed=2), "\n"),
    Case("openai_key", "service account ", "sk-svcacct-" + fake(80, B64URL, seed=3), " rotated"),
    Case(
        "anthropic_key",
        "ANTHROPIC_API_KEY=",
        "sk-ant-api03-" + fake(93, B64URL, seed=4) + "AA",
        " in .env",
    ),
    Case("openrouter_key", "router key ", "sk-or-v1-" + fake(64, HEX, seed=5), " works."),
    Case("google_api_key", "maps uses ", "AIza" + fake(35, B64URL, seed=6), " as its key."),
    Case("groq_key", "Groq: ", "gsk_" + fake(52, seed=7), " is set"),
    Case("xai_key", "the xAI key ", "xai-" + fake(80, seed=8), " expired"),
    Case(
        "huggingface_token",
        "HF login with ",
        "hf_" + fake(34, string.ascii_letters, seed=9),
        " worked.",
    ),
    Case("aws_access_key", "aws_access_key_id = ", "AKIA" + fake(16, UPPER_ALNUM, seed=10), "\n"),
    Case("aws_access_key", "temporary creds ", "ASIA" + fake(16, UPPER_ALNUM, seed=11), " expire."),
    Case("aws_secret_key", "[default]\naws_secret_access_key = ", fake(40, B64, seed=12), "\n"),
    # Code hosts, chat, payments, registries.
    Case("github_token", "pushed with ", "ghp_" + fake(36, seed=13), " yesterday"),
    Case("github_token", "OAuth app token ", "gho_" + fake(36, seed=14), "."),
    Case(
        "github_token",
        "clone https://x-access-token:",
        "ghs_" + fake(36, seed=15),
        "@github.com/org/repo.git now",
    ),
    Case(
        "github_token",
        "fine-grained ",
        "github_pat_" + fake(22, seed=16) + "_" + fake(59, seed=17),
        " expires in May.",
    ),
    Case("gitlab_token", "GITLAB_TOKEN=", "glpat-" + fake(20, B64URL, seed=18), "\n"),
    Case(
        "slack_token",
        "bot token ",
        "xoxb-"
        + fake(12, string.digits, seed=19)
        + "-"
        + fake(13, string.digits, seed=20)
        + "-"
        + fake(24, seed=21),
        " posts to #ops.",
    ),
    Case(
        "slack_token",
        "user token ",
        "xoxp-" + fake(12, string.digits, seed=22) + "-" + fake(40, seed=23),
        ".",
    ),
    Case(
        "slack_webhook",
        "alerts go to ",
        "https://hooks.slack.com/services/T"
        + fake(8, UPPER_ALNUM, seed=24)
        + "/B"
        + fake(8, UPPER_ALNUM, seed=25)
        + "/"
        + fake(24, seed=26),
        " every hour.",
    ),
    Case("stripe_key", "STRIPE_SECRET=", "sk_" + "live_" + fake(24, seed=27), "\n"),
    Case("stripe_key", "restricted ", "rk_" + "live_" + fake(24, seed=28), " for reports."),
    Case("stripe_key", "in staging use ", "sk_" + "test_" + fake(24, seed=29), " please."),
    Case("npm_token", "//registry.npmjs.org/:_authToken=", "npm_" + fake(36, seed=30), "\n"),
    Case(
        "sendgrid_key",
        "mail via ",
        "SG." + fake(22, B64URL, seed=31) + "." + fake(43, B64URL, seed=32),
        " works.",
    ),
    Case("twilio_key", "Twilio API key ", "SK" + fake(32, HEX, seed=33), " belongs to ops."),
    Case("vault_token", "VAULT_TOKEN is ", "hvs." + fake(24, B64URL, seed=34), " today."),
    Case("pypi_token", "twine uses ", "pypi-AgEIcHlwaS5vcmc" + fake(60, B64URL, seed=35), " now."),
    Case("digitalocean_token", "doctl auth init -t ", "dop_v1_" + fake(64, HEX, seed=38), "\n"),
    Case(
        "telegram_bot_token",
        "the bot answers to ",
        fake(10, string.digits, seed=39) + ":AA" + fake(33, B64URL, seed=39),
        " on Telegram.",
    ),
    Case(
        "discord_webhook",
        "post to ",
        "https://discord.com/api/webhooks/"
        + fake(18, string.digits, seed=41)
        + "/"
        + fake(68, B64URL, seed=42),
        " when done.",
    ),
    Case(
        "url_signature",
        "presigned https://bucket.s3.amazonaws.com/a.pdf?X-Amz-Expires=300&X-Amz-Signature=",
        fake(64, HEX, seed=43),
        " expires soon.",
    ),
    # HTTP auth, JWTs, private keys.
    Case("bearer_token", "curl -H 'Authorization: Bearer ", fake(32, seed=36), "' https://api.x"),
    Case("bearer_token", "send Bearer ", fake(40, B64URL, seed=37), " with each request."),
    Case("basic_auth", "Authorization: Basic ", b64("deploy:" + PASSWORD), "\nAccept: */*"),
    Case("jwt", "the session cookie was ", fake_jwt(), " until logout."),
    Case("jwt", "Authorization: Bearer ", fake_jwt(), "\n"),
    Case(
        "private_key",
        "Here is the deploy key:\n",
        fake_pem("RSA", seed=40),
        "\nRotate it tomorrow.",
    ),
    Case("private_key", "id_ed25519:\n", fake_pem("OPENSSH", seed=50), "\n"),
    Case("private_key", "", fake_pem("EC", seed=60), " was in the bucket."),
    Case(
        "private_key",
        '{"private_key": "',
        fake_pem("", seed=70).replace("\n", "\\n"),
        '\\n", "type": "service_account"}',
    ),
    # Credentialed URLs and connection strings: only the password goes.
    Case("credential_url", "mirror at https://ci-bot:", PASSWORD, "@git.example.com/repo.git"),
    Case(
        "connection_string",
        "DATABASE_URL=postgres://app:",
        PASSWORD,
        "@db.internal:5432/app?sslmode=require",
    ),
    Case("connection_string", "mysql://root:", fake(16, seed=71), "@127.0.0.1:3306/shop"),
    Case(
        "connection_string",
        "mongodb+srv://admin:",
        fake(20, seed=72),
        "@cluster0.ab1cd.mongodb.net/test",
    ),
    Case("connection_string", "cache at redis://:", fake(24, seed=73), "@redis.internal:6379/0"),
    Case("connection_string", "amqp://guest:", fake(12, seed=74), "@rabbit:5672/ vhost"),
    Case(
        "azure_key",
        "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=",
        fake(86, B64, seed=75) + "==",
        ";EndpointSuffix=core.windows.net",
    ),
    # Labelled assignments: the key stays, the value goes.
    Case("password", "DB_PASSWORD=", PASSWORD, "\n"),
    Case("password", "db:\n  passwd: ", PASSWORD, "\n  user: app"),
    Case("password", "login pwd=", PASSWORD, " then logout"),
    Case("password", "Server=sql;User Id=sa;Password=", PASSWORD + "!", ";"),
    Case("password", "my password is ", PASSWORD, ", please remember it."),
    Case("password", "mysql --password ", PASSWORD, " -h db"),
    Case("secret", '{"client_id": "abc", "client_secret": "', fake(40, B64URL, seed=76), '"}'),
    Case("secret", "JWT_SECRET: '", fake(32, seed=77), "'"),
    Case("api_key", 'client = Client(api_key="', fake(32, seed=78), '")'),
    Case("api_key", "X-Api-Key: ", fake(32, seed=79), "\n"),
    Case("token", "export SERVICE_TOKEN=", fake(40, seed=80), "\n"),
    Case("token", "open https://example.com/cb?access_token=", fake(30, seed=81), "&state=xyz"),
    Case("token", "the bot's token: ", fake(28, seed=82), " (keep safe)"),
]

LOOKALIKES = rows(CASES["lookalikes"], "text")


@pytest.mark.parametrize("case", SECRETS, ids=str)
def test_secret_is_replaced_by_its_label_and_the_prose_survives(case: Case) -> None:
    # When
    result = redact(case.text)

    # Then
    assert result.text == f"{case.before}[REDACTED:{case.label}]{case.after}"
    assert case.secret not in result.text
    assert result.labels == (case.label,)


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalike_comes_back_byte_identical(text: str) -> None:
    assert redact(text) == Redaction(text=text, labels=())
    assert not contains_secret(text)


@pytest.mark.parametrize("case", SECRETS, ids=str)
def test_redaction_is_idempotent_on_the_corpus(case: Case) -> None:
    once = redact(case.text)
    twice = redact(once.text)
    assert twice == Redaction(text=once.text, labels=())


def test_corpus_sizes() -> None:
    assert len(SECRETS) >= 30
    assert len({case.label for case in SECRETS}) >= 25
    assert len(LOOKALIKES) >= 25


def test_several_secrets_in_one_text_give_sorted_unique_labels() -> None:
    # Given
    aws_id = "AKIA" + fake(16, UPPER_ALNUM, seed=200)
    github = "ghp_" + fake(36, seed=201)
    github_too = "ghp_" + fake(36, seed=202)
    text = (
        f"Rotate {github} and {github_too}.\n"
        f"aws_access_key_id = {aws_id}\n"
        f"jwt={fake_jwt()}\n"
        f"DB_PASSWORD={PASSWORD}\n"
    )

    # When
    result = redact(text)

    # Then
    assert result.labels == ("aws_access_key", "github_token", "jwt", "password")
    assert result.text == (
        "Rotate [REDACTED:github_token] and [REDACTED:github_token].\n"
        "aws_access_key_id = [REDACTED:aws_access_key]\n"
        "jwt=[REDACTED:jwt]\n"
        "DB_PASSWORD=[REDACTED:password]\n"
    )


def test_multiline_pem_block_inside_a_paragraph() -> None:
    # Given
    pem = fake_pem("RSA", seed=300)
    text = f"The old deploy key was\n\n{pem}\n\nand it must be rotated by Friday (see OPS-12)."

    # When
    result = redact(text)

    # Then
    assert result.text == (
        "The old deploy key was\n\n[REDACTED:private_key]\n\n"
        "and it must be rotated by Friday (see OPS-12)."
    )
    assert all(line not in result.text for line in pem.splitlines()[1:-1])


def test_a_private_key_cut_off_before_its_end_line_still_loses_its_body() -> None:
    pem = fake_pem("OPENSSH", seed=310)
    truncated = "\n".join(pem.splitlines()[:3])

    result = redact(f"pasted:\n{truncated}\nthen the chat cut it off.")

    assert result.text == "pasted:\n[REDACTED:private_key]\nthen the chat cut it off."


def test_json_stays_valid_and_keeps_its_keys() -> None:
    secret = fake(40, B64URL, seed=400)
    document = json.dumps({"user": "ada", "password": secret, "token": None, "retries": 3})

    redacted = json.loads(redact_text(document))

    assert redacted == {
        "user": "ada",
        "password": "[REDACTED:password]",
        "token": None,
        "retries": 3,
    }


def test_the_most_specific_label_wins_over_the_key_name() -> None:
    key = "sk-proj-" + fake(100, B64URL, seed=500)

    assert redact(f"OPENAI_API_KEY={key}").labels == ("openai_key",)


def test_a_plain_word_value_is_kept_mid_sentence_but_not_on_its_own_line() -> None:
    assert redact_text("then set the password: correcthorse") == (
        "then set the password: correcthorse"
    )
    assert redact_text("password: correcthorse") == "password: [REDACTED:password]"


def test_a_value_that_is_the_next_key_is_left_to_that_key() -> None:
    secret = fake(32, seed=700)

    assert redact_text(f"PASSWORD: JWT_SECRET: '{secret}'") == (
        "PASSWORD: JWT_SECRET: '[REDACTED:secret]'"
    )
    assert redact_text(f"Authorization: DB_PASSWORD={PASSWORD}") == (
        "Authorization: DB_PASSWORD=[REDACTED:password]"
    )


def test_ampersand_ends_a_value_only_in_a_query_string() -> None:
    assert redact_text("DB_PASSWORD=Tr0ub&dor9 next") == "DB_PASSWORD=[REDACTED:password] next"
    assert redact_text("/cb?token=Tr0ub&dor=9") == "/cb?token=[REDACTED:token]&dor=9"


def test_markers_are_never_redacted_again() -> None:
    text = "password=[REDACTED:password] Authorization: Bearer [REDACTED:jwt] [REDACTED:x_y]"

    assert redact(text) == Redaction(text=text, labels=())


def test_helpers_agree_with_redact() -> None:
    text = f"key ghp_{fake(36, seed=600)} here"

    assert redact_text(text) == redact(text).text == "key [REDACTED:github_token] here"
    assert contains_secret(text)
    assert not contains_secret("nothing to see here")
    assert redact("") == Redaction(text="", labels=())


ADVERSARIAL_UNITS = {
    "pem-begins": "-----BEGIN PRIVATE KEY-----\n",
    "url-without-at": "https://u:",
    "keys-without-values": "password=",
    "key-chain": "PASSWORD: JWT_SECRET: ",
    "sk-dashes": "sk-",
    "open-quote": 'token="a\\',
    # the rules of shared/redact/files.py, shared/redact/sources.py and shared/redact/said.py
    "pgpass": "a:1:b:c:",
    "pgpass-host": "a" * 300 + "\n:::::",
    "directive": "requirepass ",
    "label-line": "password:\n",
    "cookie": "Cookie: a=b; ",
    "stdin": "echo x | ",
    "named-pair": "define('password', ",
    "setter": "setPassword('",
    "login-call": "login(a, ",
    "sql": "IDENTIFIED BY ",
    "name-value": "- name: password\n  ",
    "wifi": "WIFI:S:x;",
    "go-dsn": "a:b@tcp(",
    "said-pair": "credentials a:",
    "email-pair": "a@b.c:",
    # default accounts, logging in, other languages' key nouns, cookies, service files and
    # delimited tables
    "account-pair": "root:",
    "account-slash": "admin / ",
    "login-with": "log in with ",
    "use-to-log-in": "use a to log in ",
    "romance-key": "chiave API ",
    "said-cookie": "cookie: ",
    "sentinel": "sentinel auth-pass ",
    "acl-user": "user a on >",
    "userlist": '"a" "',
    "tsv": "password\t-\n",
    "csv": "password,-\n",
    "userlist-lines": '"a" "-"\n',
    "cookie-file": "a\tTRUE\t/\tTRUE\t1\t",
    "two-lines": "cat auth.txt\n",
}


@pytest.mark.parametrize("unit", ADVERSARIAL_UNITS.values(), ids=ADVERSARIAL_UNITS.keys())
def test_adversarial_input_stays_fast(unit: str) -> None:
    # 30,000 characters: linear work is ~0.1 s here, while the quadratic slips these inputs
    # once caught (a URL scan without an "@", one fixed-point pass per key) took seconds.
    text = unit * (30_000 // len(unit))

    assert cpu_seconds(redact, text, within=0.75) < 0.75


# --- properties --------------------------------------------------------------------------------

FRAGMENTS = rows(CASES["fragments"], "text")
ADVERSARIAL_TEXT = st.lists(
    st.one_of(st.sampled_from(FRAGMENTS), st.text(alphabet=B64URL + "=+/ ", max_size=12)),
    max_size=24,
).map("".join)
FAST = settings(
    max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


@FAST
@given(st.one_of(st.text(max_size=200), ADVERSARIAL_TEXT))
def test_redact_never_raises_and_is_idempotent(text: str) -> None:
    once = redact(text)

    assert redact(once.text).text == once.text
    assert list(once.labels) == sorted(set(once.labels))
    assert not once.labels or once.text != text


@FAST
@given(st.lists(st.one_of(st.text(max_size=40), st.sampled_from(SECRETS)), max_size=6))
def test_inserted_secrets_never_survive_in_arbitrary_text(pieces: list[str | Case]) -> None:
    # Given: corpus snippets on their own lines among arbitrary text
    text = "\n".join(p.text if isinstance(p, Case) else p for p in pieces)
    fillers = "\n".join(p for p in pieces if isinstance(p, str))

    # When
    result = redact(text)

    # Then
    for case in (p for p in pieces if isinstance(p, Case)):
        if case.secret not in fillers:
            assert case.secret not in result.text
        assert case.label in result.labels


# --- the anchor shortcut: skipping a rule never changes an answer -------------------------------


def test_every_rule_has_anchors_and_plain_prose_runs_no_rule() -> None:
    assert all(rule.anchors for rule in engine._RULES)
    assert engine._GATE is not None
    assert engine._candidates("The user moved Kestrel to Fly.io in March; Ana agreed.") == ()


@pytest.mark.parametrize("text", [c.text for c in SECRETS] + LOOKALIKES)
def test_every_match_of_every_rule_on_the_corpus_holds_an_anchor_of_each_set(text: str) -> None:
    whole = engine._folded(text)
    for rule in engine._RULES:
        for m in rule.pattern.finditer(text):
            span, folded = m.group(0), engine._folded(m.group(0))
            for anchors in rule.anchors or ():
                if anchors == rule.text_anchors:  # held by the text, or the judge says no
                    held = any(engine._occurs(a, text, whole) for a in anchors)
                    assert held or rule.judge(m, m.group(0)) is None, (rule, span)
                    continue
                assert any(engine._occurs(a, span, folded) for a in anchors), (rule, span)


@pytest.mark.parametrize("case", SECRETS, ids=str)
def test_the_shortcut_keeps_the_rule_that_redacts_each_corpus_secret(case: Case) -> None:
    assert redact(case.text) == engine._redact_with(case.text, engine._RULES)
    assert any(rule.pattern.search(case.text) for rule in engine._candidates(case.text))


@pytest.mark.parametrize(
    ("pattern", "anchors"),
    [
        (r"ab(?:c|d)e", [{("abce", False), ("abde", False)}]),
        (r"(?i:key)[_-]?id=", [{("key_id=", True), ("key-id=", True), ("keyid=", True)}]),
        (r"x+\d{4}secret", [{("secret", False)}, {("x", False)}]),
        (r"(?<![a-z])tok(?=en)", [{("tok", False)}]),
        (r"(?i)pass[ \t]*[:=]", [{("pass", True)}, {(":", False), ("=", False)}]),
        (r"[a-z]+\d*", None),  # no literal at all
        (r"a*|b", None),  # one alternative may match nothing
    ],
)
def test_anchor_derivation(pattern: str, anchors: list[set[tuple[str, bool]]] | None) -> None:
    derived = engine._anchors(re.compile(pattern))
    assert (None if derived is None else [set(s) for s in derived]) == anchors


def test_fold_lists_every_character_re_matches_to_an_ascii_letter() -> None:
    everything = "".join(chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000)
    for letter in string.ascii_lowercase:
        for char in re.findall(f"(?i){letter}", everything):
            assert char.translate(engine._FOLD) == letter, hex(ord(char))


@pytest.mark.parametrize(
    "text",
    ["pa\u017fsword=" + PASSWORD, "API_\u212aEY: " + PASSWORD, "\u0130ts TOKEN=" + PASSWORD],
)
def test_case_folding_look_alikes_still_reach_the_keyword_rules(text: str) -> None:
    assert redact(text) == engine._redact_with(text, engine._RULES)
    assert redact(text).labels


CASE_FRAGMENTS = rows(CASES["case_fragments"], "text")


@FAST
@given(
    st.lists(
        st.one_of(
            st.sampled_from(FRAGMENTS + CASE_FRAGMENTS),
            st.sampled_from([c.text for c in SECRETS]),
            st.text(alphabet=B64URL + "=+/: .\n", max_size=16),
            st.text(max_size=12),
        ),
        max_size=16,
    ).map("".join)
)
def test_the_shortcut_agrees_with_running_every_rule(text: str) -> None:
    assert redact(text) == engine._redact_with(text, engine._RULES)
