"""What the context rules share: the credential nouns a key may hold (``_KEYWORDS``) and the
label each gives, the key-and-separator grammar of an assignment, and the predicates on a value
(a plain word, a placeholder, code, a sentence) that let prose survive. The decisions these
judges encode are listed in shared/redact/__init__.py ("Decisions")."""

from __future__ import annotations

import re

from shared.redact.catalogue import entropy_bits, is_random, is_strong

# lower, Capitalized, snake_case, kebab-case, UPPER_SNAKE: words and identifiers, not keys.
_PLAIN = re.compile(r"[A-Z]?[a-z]+(?:[_-][a-z]+)*|[A-Z]+(?:[_-][A-Z]+)*")

_PLACEHOLDER = re.compile(
    r"""
      \$[A-Za-z_][A-Za-z0-9_]*                     # $DB_PASSWORD
    | \$\{[^{}\n]*\} | \$?\{\{[^\n]*\}\}           # ${DB_PASSWORD}, {{ secrets.X }}
    | %[A-Za-z_][A-Za-z0-9_]*%                     # %DB_PASSWORD%
    | <[^<>\n]*> | \[[^\[\]\n]*\]                  # <your-password>, [token]
    | \{[A-Za-z_][\w.]{0,80}\}                    # {r.next_page_token}: a format field
    | \*+ | x{3,} | X{3,} | \.{3,} | \u2026 | \u2022+   # masks
    """,
    re.VERBOSE,
)

_CODE_VALUE = re.compile(
    r"(?:None|null|nil|undefined|true|false|True|False)"
    # a PowerShell cmdlet: ``$pw = Read-Host -AsSecureString`` (its approved verbs)
    r"|(?:Get|Set|New|Read|ConvertTo|ConvertFrom|Import|Export|Invoke|Out|Write|Add|Remove"
    r"|Test|Resolve|Find|Select|Join|Split|Format|Protect|Unprotect)-[A-Z][A-Za-z]+"
    r"|(?:self|this|cls|settings|secrets|env|process\.env|import\.meta\.env|os\.environ)\.[\w.]+"
    # an attribute read whose name says what it holds: ``token = page.next_page_token``,
    # ``token=gateway.token``, ``key = cfg.api_key`` (no token ends in a word after a dot)
    r"|[A-Za-z_]\w{0,40}(?:\.[A-Za-z_]\w{0,40}){0,4}\.\w{0,40}?(?i:token|secret|key|password|passwd|pwd)"
)

_LINE_LEAD = re.compile(r"[ \t>*#/-]*(?:export[ \t]+)?")


def _is_plain(value: str) -> bool:
    return _PLAIN.fullmatch(value) is not None


def _is_placeholder(value: str) -> bool:
    return not value or _PLACEHOLDER.fullmatch(value) is not None


def _line_lead(m: re.Match[str]) -> str:
    return m.string[m.string.rfind("\n", 0, m.start()) + 1 : m.start()]


def _is_next_key(m: re.Match[str], group: str = "secret") -> bool:
    """``PASSWORD: JWT_SECRET: 'x'``: the "value" is the key of the next assignment."""
    text, at = m.string, m.start(group)
    # Checked cheaply first: the full pattern tries its keywords at up to 64 places.
    if not _ends_in_separator(text, at + (text[at : at + 1] in "\"'")):
        return False
    return _KEY_SEP.match(text, at) is not None


# Keyword group -> label; ``k_key`` is any other ``*_key`` / ``*-key`` / ``*.key`` name.
_KEYWORD_LABELS = (
    ("k_password", "password"),
    ("k_private_key", "private_key"),
    ("k_api_key", "api_key"),
    ("k_secret", "secret"),
    ("k_token", "token"),
    ("k_key", "api_key"),
    ("k_salt", "secret"),
    ("k_credential", "credential"),
)


def _keyword_label(m: re.Match[str], value: str) -> str | None:
    """The label the key's name gives, or None when the name is only ``*_key`` (a cache key,
    a sort key, a file) and the value does not look like a key of 12+ random characters."""
    group = next(g for g, _ in _KEYWORD_LABELS if m.group(g) is not None)
    if group in ("k_key", "k_salt", "k_credential") and not (len(value) >= 12 and is_strong(value)):
        if group != "k_credential" or not _is_session_id(m, value):
            return None
    return dict(_KEYWORD_LABELS)[group]


# A session id as servers issue them: 20+ lowercase base32/base36 (PHP's PHPSESSID) or 24+
# hex in one case (Java's JSESSIONID, ASP's), with digits and letters.
_SESSION_ID = re.compile(r"[0-9a-z]{20,}|[0-9A-F]{24,}")


def _is_session_id(m: re.Match[str], value: str) -> bool:
    """A value under a session id's name shaped like one (``PHPSESSID=``, ``JSESSIONID=``)."""
    if "sess" not in m.group("k_credential").lower():
        return False
    return (
        _SESSION_ID.fullmatch(value) is not None and is_random(value) and entropy_bits(value) >= 3.5
    )


_WORDS_AFTER = re.compile(r"[ \t]+\w")

# ``k_key`` and ``k_credential`` name things that are only sometimes secret (a cache key, a
# session id, ``bot_auth = oauth2``): their value must look like a key (see _keyword_label).
# A keyword may end in a word that says how the value is written (Rails' ``SECRET_KEY_BASE``,
# ``TOKEN_VALUE``, ``API_KEY_B64``).
_KEYWORDS = (
    # keytool's -storepass/-keypass, Redis' requirepass/masterauth, LDAP's bindpw/rootpw and
    # a Wi-Fi psk name a password glued to another word
    r"(?:(?:(?P<k_password>password|passwd|passphrase|passcode|pwd|(?<![A-Za-z0-9])pw"
    r"|(?:(?:src|dest)?(?:store|key)|trust(?:store)?)pass|requirepass|sshpass|masterauth|(?:bind|root)pw"
    r"|(?<![A-Za-z0-9])pass|(?<![A-Za-z0-9])psk)"
    r"|(?P<k_private_key>private[_.-]?key)"
    r"|(?P<k_api_key>api[_.-]?key|access[_.-]?key)"
    r"|(?P<k_secret>secret(?:[_.-]?key)?|(?:signing|encryption|master|(?:pre[_.-]?)?shared)[_.-]?key)"
    r"|(?P<k_token>token)"
    # (a salt or pepper named as such, WordPress' ``NONCE_SALT``, Django's ``HASHID_SALT``:
    # judged as a ``*_key`` is, so ``SALT_ROUNDS=12`` stays)
    r"|(?P<k_key>[_.-]key)|(?P<k_salt>[_.-](?:salt|pepper))"
    # (spelled so that "author", "credit", "cookies" and "session" in prose hold none of them)
    r"|(?P<k_credential>auth[_.-]?key|credentials?|creds|sess(?:ion)?[_.-]?id"
    r"|[_.-](?:auth|cookie|session)))"
    r"(?:[_.-](?:base(?:64)?|b64|hex|value|raw|plain(?:text)?|str(?:ing)?))?)"
)

# What a credential column holds when it holds none: a dash, "n/a", a yes/no.
_NO_VALUE = frozenset(
    """- -- --- — – n/a na none null nil tbd todo ? yes no y n true false ok required optional
    same unset hidden unknown empty default set changed reset expired revoked""".split()
)


def _judge_keyword_value(m: re.Match[str], secret: str) -> str | None:
    if _is_placeholder(secret) or _is_plain(secret.strip()):
        return None
    return _keyword_label(m, secret)


def _is_random_line(value: str) -> bool:
    """A diceware-like phrase or a key with spaces is rare; a value with spaces on its own
    line is kept only when it looks like a key (digits and letters, no sentence)."""
    return is_random(value) and not _WORDS_AFTER.search(value)


# A Markdown label in bold ("**Password**: x", "**Password:** x") is a key like any other.
# A quoted key may close a subscript: ``os.environ["DB_PASSWORD"] = "..."``.
_KEY = r"(?P<key>[\"']?[A-Za-z0-9_.-]{0,64}?" + _KEYWORDS + r"(?:[\"']\]?|\*\*)?)"

# ``: Type`` before an ``=`` is an annotation: ``api_key: str = "sk-..."`` assigns the literal.
_SEP = (
    r"(?P<sep>(?:[ \t]*:[ \t]*[A-Za-z_][\w\[\],. |]{0,40}?(?=[ \t]*=[^=]))?"
    r"[ \t]*(?::=|={1,3}(?!=)|=>|:(?:\*\*(?=[ \t]))?)[ \t]*)"
)

_KEY_SEP = re.compile(_KEY + _SEP, re.I)

_FILE_NAME = re.compile(r"\.[A-Za-z][A-Za-z0-9]{1,4}$")


def _keyed_without_verb(secret: str) -> bool:
    """With no "is" between noun and value ("the secret 8fJk2/Lm9...", "aws key AKIA..."),
    only a value of 20+ characters that mixes digits, lower and upper case (or is 32+ hex)
    counts: "cache key user-1234-profile" and a lowercase UUID stay."""
    return len(secret) >= 20 and is_strong(secret) and entropy_bits(secret) >= 3.5


# A key is at most a quote, 64 characters and a keyword of up to 20; a keyword found by
# _ASSIGNMENT_WORDS ends at most 20 characters on. Possessive and bounded, so a run of 30,000
# key characters costs each keyword found in it a short look, not a scan to its end.
_KEY_THEN_SEP = re.compile(r"[A-Za-z0-9_.-]{0,90}+(?:[\"']\]?|\*\*)?" + _SEP, re.I)

# How a value of _ASSIGNMENT can begin: a quote, ``{{``, a character a bare value takes, or
# a parenthesis before a literal.
# Inside the pattern, so that a separator read as ``: Type =`` and followed by no value
# (``password: UXo3I3ZMcDIhZVI=`` then a newline: a padded base64 value, as a Kubernetes
# Secret's ``data:`` holds) gives way to the plain ``:`` as it does in _ASSIGNMENT.
_KEYWORD_THEN_SEP = re.compile(
    r"[A-Za-z0-9_.-]{0,24}+(?:[\"']\]?|\*\*)?"
    + _SEP
    + r"(?=[\"'`]|\{\{|[^\s\"'`,;|<>()\[\]{}=]|\(\s*[A-Za-z0-9@$]{0,2}[\"'`])",
    re.I,
)


def _ends_in_separator(text: str, at: int, *, keyword: bool = False) -> bool:
    """Whether the run of key characters at ``at`` (a key's start, or with ``keyword`` a
    keyword's) ends within reach and is followed by an optional quote, blanks and a
    separator, and for a keyword by something a value can start with: what every key of
    _KEY_SEP is, since none of those is a key character, so its keyword ends where the run
    does."""
    return (_KEYWORD_THEN_SEP if keyword else _KEY_THEN_SEP).match(text, at) is not None
