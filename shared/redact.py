"""Secret redaction on every write path (DESIGN §6 "Secret redaction", seeds/003 "Secrets are
redacted, deterministically").

``redact(text)`` replaces each secret it recognises with ``[REDACTED:<label>]`` and reports the
sorted, unique labels of what it replaced, so events can say *what* was redacted, never the
value. ``redact_text`` and ``contains_secret`` are shorthands over it. Pure: stdlib ``re`` only,
no I/O, every pattern compiled once at import.

What it covers (label: shape)
    private_key         PEM ``-----BEGIN ... PRIVATE KEY-----`` blocks through END (RSA, EC,
                        DSA, OPENSSH, ENCRYPTED, PGP ... BLOCK; one-line ``\\n``-escaped JSON
                        too; a block cut off before END loses its base64 lines), age keys
    jwt                 three base64url segments, the first starting ``eyJ``
    openai_key          ``sk-``, ``sk-proj-``, ``sk-svcacct-``, ``sk-admin-`` (and the ``sk-`` +
                        hex keys of OpenAI-compatible vendors); anthropic_key ``sk-ant-``;
                        openrouter_key ``sk-or-v1-``; groq_key ``gsk_``; xai_key ``xai-``;
                        perplexity_key ``pplx-``; huggingface_token ``hf_``;
                        replicate_token ``r8_``
    google_api_key      ``AIza`` + 35; google_oauth_secret ``GOCSPX-``; google_oauth_token
                        ``ya29.``
    aws_access_key      ``AKIA``/``ASIA``/``ABIA``/``ACCA``/``A3T?`` + 16
    aws_secret_key      40 base64 chars after ``aws_secret_access_key``/``SecretAccessKey``
    github_token        ``ghp_ gho_ ghu_ ghs_ ghr_ github_pat_``; gitlab_token ``glpat-`` & co.
    slack_token         ``xoxb- xoxp- xoxa- ... xapp-``; slack_webhook / discord_webhook URLs
    stripe_key          ``sk_live_ sk_test_ rk_live_ rk_test_ whsec_``
    npm_token ``npm_``, pypi_token ``pypi-AgEIcHlwaS5vcmc``, sendgrid_key ``SG.x.y``,
    twilio_key ``SK`` + 32 hex, mailgun_key ``key-`` + 32 hex, shopify_token ``shpat_``...,
    digitalocean_token ``dop_v1_``..., vault_token ``hvs.``..., databricks_token ``dapi``,
    linear_key ``lin_api_``, postman_key ``PMAK-``, telegram_bot_token ``<id>:AA...``
    bearer_token        ``Authorization: Bearer|Token <t>`` and a random-looking ``Bearer <t>``
    basic_auth          ``Authorization: Basic <b64>`` and a random-looking ``Basic <b64>``
    azure_key           ``AccountKey=`` / ``SharedAccessKey=`` in Azure connection strings
    url_signature       ``sig=`` / ``Signature=`` / ``X-Amz-Signature=`` query parameters
    connection_string   the password of ``postgres|mysql|mongodb+srv|redis|amqp|...://u:p@h``
    credential_url      the password of any other ``scheme://user:pass@host``
    password, secret, token, api_key, private_key
                        the value of a labelled assignment: ``key=value``, ``key: value``,
                        ``"key": "value"``, ``export KEY=value``, ``--key value``, where the key
                        ends in password/passwd/pwd/pass/passphrase/passcode, secret,
                        (secret|signing|encryption|master)_key, private_key, api_key/apikey,
                        access_key or token (``DB_PASSWORD``, ``clientSecret``, ``X-Api-Key``);
                        the key stays so the text reads; plus "my password is <value>"

A denylist of shapes: only what is listed above is recognised and an unknown format passes
untouched, which is why the extraction prompt still forbids secrets. There is deliberately no
generic high-entropy rule: git SHAs, sha256 hashes, UUIDs, ULIDs and base64 in prose would
drown it. Where the shapes come from: the vendors' documented prefixes and lengths (GitHub's
"Behind GitHub's new authentication token formats", GitLab's token prefix table, Slack's token
types, Stripe's API keys page, AWS IAM "unique identifier prefixes", OpenAI/Anthropic key
pages, RFC 7519 for JWT, RFC 7468 for PEM, RFC 3986 §3.2.1 for userinfo), cross-checked
against the gitleaks default rule set and Yelp's detect-secrets plugins as catalogues of shapes;
no code was copied from either.

Decisions on the ambiguous cases
    * A value that names where a secret comes from is not a secret and stays: an empty
      ``password=``, ``<your-password>``, ``$VAR``, ``${VAR}``, ``%VAR%``, ``{{ var }}``,
      ``***``/``xxxx`` masks.
    * Code is not a literal: ``token = get_token()``, ``password = os.environ["PW"]``,
      ``token=self.token``, ``process.env.X``, ``None``/``null``, ``f(api_key=api_key)`` stay;
      ``token = "literal"`` is redacted.
    * Prose: after a *spaced* ``:`` or ``=`` in the middle of a line, a plain word (letters,
      ``_``, ``-``) is prose or a variable and stays ("the secret: keep it short"). The same
      value on a line of its own (YAML, INI, .env, HTTP header) or after a tight ``key=``, and
      any value with a digit or symbol ("token: 2000"), is redacted. Bare words ("I forgot my
      password", "the token budget is 2000", "keep it secret") never match: no separator.
    * ``PWD=/some/dir`` is the shell's working directory, not a password.
    * A credentialed URL keeps everything but the password; ``host:443/path@scope`` is a port
      and a path, not a password.
    * The most specific shape wins: ``OPENAI_API_KEY=sk-...`` is labelled ``openai_key``.
    * Certificates and public keys are public and pass.

Mechanics: the rules run in order, most specific first. A match never spans an existing marker,
so a marker is never re-redacted, though lookbehinds and judges see the whole text. A match a
judge turns down swallows nothing (the search resumes one character on), and a "value" that is
itself the next ``key=`` is left to that key. Whole passes repeat until nothing changes: a pass
that changes anything turns at least one character into part of a marker, so this ends, and the
result is a fixed point, which makes ``redact`` idempotent by construction. A rule whose
anchors (literals read off its own pattern, one of which every match holds) are all absent
from the text is skipped, so most prose runs no rule at all; the answer is the same.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = ["Redaction", "contains_secret", "redact", "redact_text"]


@dataclass(frozen=True)
class Redaction:
    """The redacted text and the sorted, unique labels of what was redacted."""

    text: str
    labels: tuple[str, ...]


# A judge looks at one match and names its label, or None to leave the match alone.
_Judge: TypeAlias = Callable[[re.Match[str], str], str | None]


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    judge: _Judge
    # Sets of strings such that every match holds one string of each set, the most selective
    # set first (see "anchors" below); None when none could be derived.
    anchors: tuple[frozenset[tuple[str, bool]], ...] | None = field(init=False)
    probes: tuple[_Probe, ...] = field(init=False)

    def __post_init__(self) -> None:
        anchors = _anchors(self.pattern)
        object.__setattr__(self, "anchors", anchors)
        object.__setattr__(self, "probes", tuple(map(_Probe.build, anchors or ())))

    def may_match(self, text: str, folded: str) -> bool:
        """False only when the text lacks every string of some anchor set."""
        return all(probe.hit(text, folded) for probe in self.probes)


_MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")

# --- value predicates -------------------------------------------------------------------------

_DIGIT = re.compile(r"\d")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")
_LETTER = re.compile(r"[A-Za-z]")
_SYMBOL_OR_DIGIT = re.compile(r"[^A-Za-z]")
_HEX32 = re.compile(r"[0-9a-f]{32,}")
# lower, Capitalized, snake_case, kebab-case, UPPER_SNAKE: words and identifiers, not keys.
_PLAIN = re.compile(r"[A-Z]?[a-z]+(?:[_-][a-z]+)*|[A-Z]+(?:[_-][A-Z]+)*")
_PLACEHOLDER = re.compile(
    r"""
      \$[A-Za-z_][A-Za-z0-9_]*                     # $DB_PASSWORD
    | \$\{[^{}\n]*\} | \$?\{\{[^\n]*\}\}           # ${DB_PASSWORD}, {{ secrets.X }}
    | %[A-Za-z_][A-Za-z0-9_]*%                     # %DB_PASSWORD%
    | <[^<>\n]*> | \[[^\[\]\n]*\]                  # <your-password>, [token]
    | \*+ | x{3,} | X{3,} | \.{3,} | \u2026 | \u2022+   # masks
    """,
    re.VERBOSE,
)
_CODE_VALUE = re.compile(
    r"(?:None|null|nil|undefined|true|false|True|False)"
    r"|(?:self|this|cls|settings|secrets|env|process\.env|import\.meta\.env|os\.environ)\.[\w.]+"
)
_LINE_LEAD = re.compile(r"[ \t>*#/-]*(?:export[ \t]+)?")


def _is_random(value: str) -> bool:
    """At least two of digit / lower / inner upper: a key, not a word or a Capitalized Word."""
    classes = (_DIGIT.search(value), _LOWER.search(value), _UPPER.search(value[1:]))
    return sum(found is not None for found in classes) >= 2


def _is_strong(value: str) -> bool:
    """Digit, lower and upper (base62 keys) or 32+ lowercase hex."""
    mixed = _DIGIT.search(value) and _LOWER.search(value) and _UPPER.search(value)
    return bool(mixed) or _HEX32.fullmatch(value) is not None


def _is_plain(value: str) -> bool:
    return _PLAIN.fullmatch(value) is not None


def _is_placeholder(value: str) -> bool:
    return not value or _PLACEHOLDER.fullmatch(value) is not None


def _looks_like_password(value: str) -> bool:
    """For prose ("my password is ..."): six or more, a letter and a digit or symbol."""
    return len(value) >= 6 and bool(_LETTER.search(value) and _SYMBOL_OR_DIGIT.search(value))


def _line_lead(m: re.Match[str]) -> str:
    return m.string[m.string.rfind("\n", 0, m.start()) + 1 : m.start()]


# --- judges ------------------------------------------------------------------------------------


def _fixed(label: str, ok: Callable[[str], bool] | None = None) -> _Judge:
    """Always ``label``, or ``label`` only when ``ok(secret)`` holds."""

    def judge(m: re.Match[str], secret: str) -> str | None:
        return label if ok is None or ok(secret) else None

    return judge


def _is_next_key(m: re.Match[str], group: str = "secret") -> bool:
    """``PASSWORD: JWT_SECRET: 'x'``: the "value" is the key of the next assignment."""
    return _KEY_SEP.match(m.string, m.start(group)) is not None


def _judge_auth_header(m: re.Match[str], secret: str) -> str | None:
    if _is_plain(secret) or _is_placeholder(secret) or _is_next_key(m):
        return None  # "Authorization: Bearer YOUR_TOKEN", "authorization: required"
    scheme = (m.group("scheme") or "").lower()
    return "basic_auth" if scheme == "basic" else "bearer_token"


def _judge_bearer(m: re.Match[str], secret: str) -> str | None:
    if len(secret) < 16 or not _is_random(secret) or _is_next_key(m):
        return None
    return "bearer_token"


def _judge_basic(m: re.Match[str], secret: str) -> str | None:
    # base64 comes in quads; "Basic English" is a Capitalized word, not base64 of user:pass.
    return "basic_auth" if len(secret) % 4 == 0 and _is_random(secret) else None


_DB_SCHEMES = frozenset(
    "postgres postgresql mysql mariadb mongodb mongodb+srv redis rediss amqp amqps mssql "
    "sqlserver oracle cockroachdb clickhouse couchdb neo4j neo4j+s bolt cassandra".split()
)
_PORT_THEN_PATH = re.compile(r"\d*/")


def _judge_url(m: re.Match[str], secret: str) -> str | None:
    if _PORT_THEN_PATH.match(secret):
        return None  # https://registry.npmjs.org:443/@scope/pkg: a port and a path
    return "connection_string" if m.group("scheme").lower() in _DB_SCHEMES else "credential_url"


_KEYWORD_LABELS = ("password", "private_key", "api_key", "secret", "token")


def _keyword_label(m: re.Match[str]) -> str:
    return next(label for label in _KEYWORD_LABELS if m.group(f"k_{label}") is not None)


def _judge_cli_flag(m: re.Match[str], secret: str) -> str | None:
    if _is_plain(secret) or _is_placeholder(secret) or _CODE_VALUE.fullmatch(secret):
        return None  # "pass the --token flag"
    return None if _is_next_key(m) else _keyword_label(m)


def _is_code(m: re.Match[str], value: str) -> bool:
    """A call, a subscript, an attribute read, a null, or ``f(api_key=api_key)``."""
    after = m.string[m.end() : m.end() + 1]
    if after == "(" or (after == "[" and not _MARKER.match(m.string, m.end())):
        return True
    key = m.group("key").strip("\"'-")
    return _CODE_VALUE.fullmatch(value) is not None or value.lower() == key.lower()


def _is_loose_prose(m: re.Match[str], value: str) -> bool:
    """A plain word after a spaced separator mid-line: prose or a variable, not a value."""
    spaced = m.group("sep") != m.group("sep").strip()
    return spaced and _is_plain(value) and _LINE_LEAD.fullmatch(_line_lead(m)) is None


def _is_working_dir(m: re.Match[str], value: str) -> bool:
    return (m.group("k_password") or "").lower() == "pwd" and value[:1] in ("/", "~")


def _judge_assignment(m: re.Match[str], secret: str) -> str | None:
    if m.group("ref") is not None or _is_placeholder(secret):
        return None
    if m.group("bare") is not None and (
        _is_code(m, secret)
        or _is_loose_prose(m, secret)
        or _is_working_dir(m, secret)
        or _is_next_key(m, "bare")
    ):
        return None
    return _keyword_label(m)


# --- anchors: a cheap proof that a rule cannot match -------------------------------------------
#
# Most text holds no secret, and running every rule over it was most of the cost of a save.
# Each rule's *anchor sets* are sets of literal strings read off its own compiled pattern
# (one set per required part: "password" ... then ":" or "=") such that every match contains
# a string of each set; an anchor remembers whether its letters match case-insensitively. A
# rule is skipped when some set has no string in the text, and when no rule is left the text
# comes back untouched. Derived from the patterns, never hand-written, so an edited pattern
# cannot outrun its anchors; a pattern with none derivable gets None and always runs.
# tests/shared/test_redact.py checks the derivation against the corpus and compares
# ``redact`` with running every rule.

# An anchor: (string, ignore case); a case-insensitive one is stored lowercase.
_Anchor: TypeAlias = tuple[str, bool]
_Strings: TypeAlias = frozenset[_Anchor]
# (exact, anchors): ``exact`` is every string a node can match, when few; ``anchors`` a set
# one of which every match contains; None where nothing can be said.
_Facts: TypeAlias = tuple[_Strings | None, _Strings | None]

_ANCHOR_CAP = 64  # most strings one set may hold before it gives up on being exact
_EMPTY: _Strings = frozenset({("", False)})
_UNKNOWN: _Facts = (None, None)
_ZERO_WIDTH = frozenset({"AT", "ASSERT", "ASSERT_NOT"})
_REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})
# Under re.I, Python's engine also matches these non-ASCII characters to ASCII letters
# (dotted and dotless i, long s, Kelvin sign): fold them before looking for a lowercase
# anchor. tests/shared/test_redact.py proves the list complete over every code point.
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def _join(a: _Anchor, b: _Anchor) -> _Anchor:
    if not a[0] or not b[0]:
        return b if not a[0] else a
    if a[1] == b[1]:
        return a[0] + b[0], a[1]
    return (a[0] + b[0]).lower(), True  # mixed: case-insensitive matching is the superset


def _product(left: _Strings | None, right: _Strings | None) -> _Strings | None:
    if left is None or right is None or len(left) * len(right) > _ANCHOR_CAP:
        return None
    return frozenset(_join(a, b) for a in left for b in right)


def _usable(strings: _Strings | None) -> _Strings | None:
    """An anchor set that proves something: no empty alternative."""
    return strings if strings and all(s for s, _ in strings) else None


def _better(a: _Strings | None, b: _Strings | None) -> _Strings | None:
    """The more selective anchor set: longest shortest member, then fewest members."""
    if a is None or b is None:
        return a if b is None else b
    key_a = (min(len(s) for s, _ in a), -len(a))
    key_b = (min(len(s) for s, _ in b), -len(b))
    return a if key_a >= key_b else b


def _seq_facts(items: Any, icase: bool, every: list[_Strings] | None = None) -> _Facts:
    """A sequence: runs of exact nodes concatenate; the best run or inner anchor set wins.
    Each of them is required, so ``every`` collects them all when given."""
    found: list[_Strings | None] = []
    run: _Strings | None = _EMPTY
    whole: _Strings | None = _EMPTY
    for op, av in items:
        exact, anchors = _node_facts(str(op), av, icase)
        whole = _product(whole, exact)
        joined = _product(run, exact)
        if joined is not None:
            run = joined
            continue
        found += (_usable(run), _usable(exact) or anchors)
        run = exact if exact is not None else _EMPTY
    found.append(_usable(run))
    usable = [f for f in found if f is not None]
    if every is not None:
        every += usable
    best: _Strings | None = None
    for candidate in usable:
        best = _better(best, candidate)
    return whole, best


def _branch_facts(alternatives: list[Any], icase: bool) -> _Facts:
    facts = [_seq_facts(alt, icase) for alt in alternatives]
    exact: _Strings | None = frozenset()
    anchors: _Strings | None = frozenset()
    for alt_exact, alt_anchors in facts:
        exact = None if exact is None or alt_exact is None else exact | alt_exact
        alt = _usable(alt_exact) or alt_anchors
        anchors = None if anchors is None or alt is None else anchors | alt
    return (exact if exact is not None and len(exact) <= _ANCHOR_CAP else None), anchors


def _class_facts(members: list[Any], icase: bool) -> _Facts:
    if any(str(op) != "LITERAL" for op, _ in members):
        return _UNKNOWN  # ranges, categories, negation: too many characters to list
    return frozenset(_literal(code, icase) for _, code in members), None


def _literal(code: int, icase: bool) -> _Anchor:
    char = chr(code)
    return (char.lower(), True) if icase and char.lower() != char.upper() else (char, False)


def _repeat_facts(low: int, high: int, body: Any, icase: bool) -> _Facts:
    exact, anchors = _seq_facts(body, icase)
    anchors = (_usable(exact) or anchors) if low else None
    if exact is None or high > 3:
        return None, anchors
    counts = [_EMPTY]  # "={1,3}", "x?": spell every count out
    for _ in range(high):
        step = _product(counts[-1], exact)
        if step is None:
            return None, anchors
        counts.append(step)
    return frozenset().union(*counts[low:]), anchors


def _node_facts(op: str, av: Any, icase: bool) -> _Facts:
    if op == "LITERAL":
        return frozenset({_literal(av, icase)}), None
    if op in _ZERO_WIDTH:
        return _EMPTY, None  # consumes nothing, so adds nothing to a match
    if op == "IN":
        return _class_facts(av, icase)
    if op == "SUBPATTERN":
        _, add, remove, body = av
        return _seq_facts(body, bool((icase or add & re.I) and not remove & re.I))
    if op == "ATOMIC_GROUP":
        return _seq_facts(av, icase)
    if op == "BRANCH":
        return _branch_facts(av[1], icase)
    if op == "GROUPREF_EXISTS":
        return _branch_facts([av[1], av[2] or []], icase)
    if op in _REPEATS:
        return _repeat_facts(av[0], av[1], av[2], icase)
    return _UNKNOWN  # ANY, NOT_LITERAL, CATEGORY, GROUPREF, ...


def _implies(a: _Anchor, b: _Anchor) -> bool:
    """Whenever ``a`` occurs, so does ``b``."""
    return b[0] in a[0].lower() if b[1] else not a[1] and b[0] in a[0]


def _minimal(anchors: _Strings) -> _Strings:
    """Without anchors that imply another: the set answers the same with fewer tests."""
    return frozenset(a for a in anchors if not any(b != a and _implies(a, b) for b in anchors))


def _anchors(pattern: re.Pattern[str]) -> tuple[_Strings, ...] | None:
    """Anchor sets of ``pattern``: every match holds one string of each set, the most
    selective set comes first; None when no set can be found."""
    every: list[_Strings] = []
    try:
        parser: Any = importlib.import_module("re._parser")  # CPython 3.11+
        tree = parser.parse(pattern.pattern, pattern.flags)
        exact, best = _seq_facts(tree, bool(pattern.flags & re.I), every)
    except Exception:  # another engine or parser: no shortcut, the rule always runs
        return None
    best = _usable(exact) or best
    if best is None:
        return None
    rest = [_minimal(s) for s in every if s != best]
    return (_minimal(best), *dict.fromkeys(rest))


def _folded(text: str) -> str:
    return text.lower() if text.isascii() else text.translate(_FOLD).lower()


def _occurs(anchor: _Anchor, text: str, folded: str) -> bool:
    return anchor[0] in (folded if anchor[1] else text)


def _pivoted(anchor: _Anchor) -> str:
    """``anchor`` as a regex that starts at its rarest character (a symbol, a digit, an inner
    capital), so a search skips ahead on that one character and checks the rest around it."""
    text, icase = anchor
    rank = [_pivot_rank(char, i, icase) for i, char in enumerate(text)]
    at = rank.index(min(rank))
    flags = "(?i:{})" if icase else "{}"
    behind = f"(?<={flags.format(re.escape(text[: at + 1]))})" if at else ""
    ahead = f"(?={flags.format(re.escape(text[at + 1 :]))})" if at + 1 < len(text) else ""
    head = re.escape(text[at])
    return (flags.format(head) if icase and text[at].isalpha() else head) + behind + ahead


def _pivot_rank(char: str, at: int, icase: bool) -> int:
    if char.isalpha() and icase:
        return 9  # stands for two characters: no single-character skip
    if not char.isalnum():
        return {".": 4, " ": 5}.get(char, 0)
    if char.isdigit():
        return 1
    return (2 if at else 3) if char.isupper() else 6


def _is_word(anchor: _Anchor) -> bool:
    """Letters only, none of them a capital to pivot on: found with ``in``."""
    text, icase = anchor
    return text.isascii() and text.isalpha() and (icase or text.islower())


@dataclass(frozen=True)
class _Probe:
    """Whether a text holds one of a set of anchors: a regex for those with a rare character
    to pivot on, ``in`` tests for plain words and for sets too small to need a regex."""

    pattern: re.Pattern[str] | None
    plain: tuple[_Anchor, ...]

    @classmethod
    def build(cls, anchors: _Strings) -> _Probe:
        pivoted = sorted(a for a in anchors if not _is_word(a))
        if len(pivoted) <= 3:
            return cls(None, tuple(sorted(anchors)))
        pattern = re.compile("|".join(map(_pivoted, pivoted)))
        return cls(pattern, tuple(sorted(a for a in anchors if _is_word(a))))

    def hit(self, text: str, folded: str) -> bool:
        if self.pattern is not None and self.pattern.search(text) is not None:
            return True
        return any(_occurs(anchor, text, folded) for anchor in self.plain)


# --- patterns ----------------------------------------------------------------------------------


def _token(body: str) -> re.Pattern[str]:
    """A prefixed token that is a whole word: nothing token-like glued to either end."""
    return re.compile(rf"(?<![A-Za-z0-9_-])(?:{body})(?![A-Za-z0-9_-])")


_PEM_LABEL = r"-----{0}[A-Z0-9 ]{{0,30}}PRIVATE KEY(?: BLOCK)?-----"
_PEM = re.compile(
    _PEM_LABEL.format("BEGIN")
    # The body never holds "-----", so the scan for END stops at the first one: linear.
    + r"(?:(?:[^-]|-(?!----)){0,20000}"
    + _PEM_LABEL.format("END")
    # A block cut off before its END loses its header fields and base64 lines; a lone BEGIN
    # line in prose ("the file starts with -----BEGIN ... PRIVATE KEY-----") is no key.
    + r"|(?:(?:\\n|\s)+(?:[A-Za-z0-9+/=]{16,}|(?:Proc-Type|DEK-Info|Comment):[^\n\\]*))+)"
)

_VENDOR_RULES: tuple[tuple[str, str, Callable[[str], bool] | None], ...] = (
    (r"sk-ant-[A-Za-z0-9_-]{32,}", "anthropic_key", _is_random),
    (r"sk-or-v1-[0-9a-f]{64}", "openrouter_key", None),
    # Legacy sk- + 48 base62, sk-proj-/sk-svcacct-/sk-admin- + base64url, and the sk- + hex
    # keys of OpenAI-compatible vendors; "sk-learn-compatible-..." lacks the mix.
    (r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}", "openai_key", _is_strong),
    (r"gsk_[A-Za-z0-9]{40,}", "groq_key", _is_random),
    (r"xai-[A-Za-z0-9]{40,}", "xai_key", _is_random),
    (r"pplx-[A-Za-z0-9]{40,}", "perplexity_key", _is_random),
    (r"hf_[A-Za-z0-9]{30,}", "huggingface_token", _is_random),
    (r"r8_[A-Za-z0-9]{30,}", "replicate_token", _is_random),
    (r"AIza[0-9A-Za-z_-]{35}", "google_api_key", None),
    (r"GOCSPX-[A-Za-z0-9_-]{28}", "google_oauth_secret", None),
    (r"ya29\.[A-Za-z0-9_-]{20,}", "google_oauth_token", None),
    (r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}", "aws_access_key", None),
    (r"gh[pousr]_[A-Za-z0-9]{36,255}", "github_token", None),
    (r"github_pat_[A-Za-z0-9_]{30,255}", "github_token", None),
    (
        r"gl(?:pat|dt|rt|ptt|cbt|oas|imt|soat|ffct|ft|agent)-[A-Za-z0-9_-]{20,}"
        r"(?:\.[A-Za-z0-9_-]+)*",
        "gitlab_token",
        None,
    ),
    (r"xox[abeoprs]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{20,}", "slack_token", None),
    (r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,}", "stripe_key", None),
    (r"npm_[A-Za-z0-9]{36}", "npm_token", None),
    (r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}", "pypi_token", None),
    (r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", "sendgrid_key", None),
    (r"SK[0-9a-f]{32}", "twilio_key", None),
    (r"key-[0-9a-f]{32}", "mailgun_key", None),
    (r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}", "shopify_token", None),
    (r"do[opr]_v1_[a-f0-9]{64}", "digitalocean_token", None),
    (r"hv[sbr]\.[A-Za-z0-9_-]{24,}", "vault_token", None),
    (r"dapi[a-f0-9]{32}(?:-\d)?", "databricks_token", None),
    (r"lin_api_[A-Za-z0-9]{40}", "linear_key", None),
    (r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}", "postman_key", None),
    (r"\d{8,10}:AA[A-Za-z0-9_-]{33}", "telegram_bot_token", None),
    (r"AGE-SECRET-KEY-1[0-9A-Z]{58}", "private_key", None),
)

_JWT = _token(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_=-]*")
_WEBHOOKS = (
    (r"https?://hooks\.slack\.com/(?:services|workflows|triggers)/[\w/-]+", "slack_webhook"),
    (r"https?://(?:[a-z]+\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w-]+", "discord_webhook"),
)

_AUTH_HEADER = re.compile(
    r"(?<![A-Za-z0-9-])(?i:(?:proxy-)?authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9-]*)[ \t]+)?(?P<secret>[A-Za-z0-9._~+/-]+=*)"
)
_BEARER = re.compile(r"(?<![A-Za-z0-9])(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]+=*)")
_BASIC = re.compile(
    r"(?<![A-Za-z0-9])Basic[ \t]+(?P<secret>[A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])"
)
_AWS_SECRET = re.compile(
    r"(?<![A-Za-z0-9])[\"']?(?i:aws[_.-]?secret[_.-]?(?:access[_.-]?)?key|secret[_.-]?access[_.-]?key)"
    r"[\"']?[ \t]*(?:=|:|=>)[ \t]*[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
_AZURE_KEY = re.compile(
    r"(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"
)
_URL_SIGNATURE = re.compile(
    r"(?<=[?&])(?:sig|Signature|X-Amz-Signature)=(?P<secret>[A-Za-z0-9%+/=_-]{16,})"
)
# RFC 3986 §3.2.1: userinfo is "user:password" before "@"; the user may be empty (redis).
# Bounded so "a://b:a://b:..." without an "@" stays linear.
_CREDENTIAL_URL = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{1,30})://"
    r"[^\s:@/?#]{0,256}:(?P<secret>[^\s@]{1,256})@"
)

_KEYWORDS = (
    r"(?:(?P<k_password>password|passwd|passphrase|passcode|pwd|(?<![A-Za-z0-9])pass)"
    r"|(?P<k_private_key>private[_.-]?key)"
    r"|(?P<k_api_key>api[_.-]?key|access[_.-]?key)"
    r"|(?P<k_secret>secret(?:[_.-]?key)?|(?:signing|encryption|master)[_.-]?key)"
    r"|(?P<k_token>token))"
)
_CLI_FLAG = re.compile(
    r"(?<!\S)--?(?:[A-Za-z0-9]+-){0,4}" + _KEYWORDS + r"[ \t]+[\"'`]?(?P<secret>(?!-)[^\s\"'`]+)",
    re.I,
)
_SAID_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9_])(?i:pass(?:word|phrase|code))[ \t]+(?i:is|was)[ \t]*:?[ \t]+[\"'`]?"
    r"(?P<secret>[^\s\"'`]*[^\s\"'`.,;:!?)])"
)
_STOP = r"\s\"'`,;|<>()\[\]{}"


def _bare(stop: str, enders: str) -> str:
    # A bare value drops sentence punctuation ("password=hunter2.") unless a separator ends it
    # ("Password=Hunter2!;" in a connection string keeps its "!"): the possessive first branch
    # takes the whole run or nothing. Capped at 2 KiB (an AWS session token fits) so that
    # runs like "password=password=..." stay linear.
    return rf"(?!=)(?:[^{stop}]{{1,2048}}+(?=[{enders}])|[^{stop}]{{0,2047}}[^{stop}.!?:])"


_BARE_IN_QUERY = _bare(_STOP + "&", ";&")
_BARE = _bare(_STOP, ";")
_KEY = r"(?P<key>[\"']?[A-Za-z0-9_.-]{0,64}?" + _KEYWORDS + r"[\"']?)"
_SEP = r"(?P<sep>[ \t]*(?::=|={1,3}(?!=)|=>|:)[ \t]*)"
_KEY_SEP = re.compile(_KEY + _SEP, re.I)
_ASSIGNMENT = re.compile(
    # In a query string (the key follows ? or &) "&" ends the value; elsewhere it is part of
    # it ("DB_PASSWORD=Tr0ub&dor").
    r"(?<![A-Za-z0-9_.-])(?P<query>(?<=[?&]))?"
    + _KEY
    + _SEP
    + r"(?:(?P<ref>\$\{[^}\n]*\}|\{\{[^}\n]*\}\})"
    r"|(?P<q>[\"'`])(?P<secret>(?:(?!(?P=q))[^\\\n]|\\.)*)(?P=q)"
    rf"|(?P<bare>(?(query){_BARE_IN_QUERY}|{_BARE})))",
    re.I,
)

_RULES: tuple[_Rule, ...] = (
    _Rule(_PEM, _fixed("private_key")),
    _Rule(_JWT, _fixed("jwt")),
    *(_Rule(_token(body), _fixed(label, ok)) for body, label, ok in _VENDOR_RULES),
    *(_Rule(re.compile(body), _fixed(label)) for body, label in _WEBHOOKS),
    _Rule(_CREDENTIAL_URL, _judge_url),
    _Rule(_AUTH_HEADER, _judge_auth_header),
    _Rule(_BEARER, _judge_bearer),
    _Rule(_BASIC, _judge_basic),
    _Rule(_AWS_SECRET, _fixed("aws_secret_key")),
    _Rule(_AZURE_KEY, _fixed("azure_key")),
    _Rule(_URL_SIGNATURE, _fixed("url_signature")),
    _Rule(_CLI_FLAG, _judge_cli_flag),
    _Rule(_SAID_PASSWORD, _fixed("password", _looks_like_password)),
    _Rule(_ASSIGNMENT, _judge_assignment),
)


# --- engine ------------------------------------------------------------------------------------


def _secret_span(m: re.Match[str]) -> tuple[int, int]:
    """The part to replace: the ``secret`` or ``bare`` group when the rule has one, else all."""
    for name in ("secret", "bare"):
        if name in m.re.groupindex and m.group(name) is not None:
            return m.span(name)
    return m.span()


def _gaps(text: str) -> list[tuple[int, int]]:
    """The spans of ``text`` outside existing markers: the only places rules look."""
    bounds = [0]
    for marker in _MARKER.finditer(text):
        bounds += marker.span()
    return list(zip(bounds[::2], [*bounds[1::2], len(text)], strict=True))


def _apply_rule(rule: _Rule, text: str, found: set[str]) -> str:
    """Like ``pattern.sub`` outside markers, with two differences: a match never spans a
    marker, though lookbehinds and judges still see the whole text (a marker earlier on the
    line is still "earlier on the line"); and a match the judge turns down swallows nothing,
    the search resumes one character later (``PASSWORD: JWT_SECRET: 'x'``)."""
    out: list[str] = []
    kept_to = 0
    for low, high in _gaps(text):
        search_from = low
        while (m := rule.pattern.search(text, search_from, high)) is not None:
            start, end = _secret_span(m)
            label = rule.judge(m, text[start:end])
            if label is None:
                search_from = m.start() + 1
                continue
            found.add(label)
            out += (text[kept_to:start], f"[REDACTED:{label}]")
            kept_to, search_from = end, max(m.end(), m.start() + 1)
    out.append(text[kept_to:])
    return "".join(out)


def _one_pass(text: str, found: set[str], rules: tuple[_Rule, ...]) -> str:
    for rule in rules:
        text = _apply_rule(rule, text, found)
    return text


def _gate(rules: tuple[_Rule, ...]) -> _Probe | None:
    """One probe for the first anchor set of every rule: no hit, no rule can match."""
    if any(rule.anchors is None for rule in rules):
        return None
    return _Probe.build(_minimal(frozenset().union(*(r.anchors[0] for r in rules if r.anchors))))


_GATE = _gate(_RULES)
# The rules each plain-word anchor of the gate stands for: those with a first-set anchor that
# holds the word ("password" holds "pass").
_BY_WORD: dict[_Anchor, frozenset[int]] = {
    word: frozenset(
        i
        for i, rule in enumerate(_RULES)
        if any(_implies(anchor, word) for anchor in (rule.anchors or ((),))[0])
    )
    for word in (_GATE.plain if _GATE is not None and _GATE.pattern is not None else ())
}


def _candidates(text: str) -> tuple[_Rule, ...]:
    """The rules that could match ``text``: those with an anchor in it. Later passes only
    look between markers, at pieces of this same text, so the answer holds for every pass."""
    folded = _folded(text)
    if _GATE is None or _GATE.pattern is None or _GATE.pattern.search(text) is not None:
        return tuple(rule for rule in _RULES if rule.may_match(text, folded))
    # No rare-character anchor: only the rules behind the plain words found can match.
    found = [_BY_WORD[word] for word in _GATE.plain if _occurs(word, text, folded)]
    if not found:
        return ()
    maybe = frozenset().union(*found)
    return tuple(
        rule for i, rule in enumerate(_RULES) if i in maybe and rule.may_match(text, folded)
    )


def _redact_with(text: str, rules: tuple[_Rule, ...]) -> Redaction:
    found: set[str] = set()
    # Each pass that changes the text shrinks what lies outside markers, so len(text) + 1
    # passes always reach the fixed point; in practice it is two.
    for _ in range(len(text) + 1 if rules else 0):
        redacted = _one_pass(text, found, rules)
        if redacted == text:
            break
        text = redacted
    return Redaction(text=text, labels=tuple(sorted(found)))


def redact(text: str) -> Redaction:
    """Replace every recognised secret in ``text`` with ``[REDACTED:<label>]``."""
    rules = _candidates(text)
    return _redact_with(text, rules) if rules else Redaction(text=text, labels=())


def redact_text(text: str) -> str:
    """``redact(text).text``."""
    return redact(text).text


def contains_secret(text: str) -> bool:
    """Whether ``redact`` would replace anything in ``text``."""
    return bool(redact(text).labels)
