"""Context-anchored secrets for shared/redact/engine.py: a value whose *surroundings* say it is a
credential (``DB_PASSWORD=...``, ``--token ...``, ``Authorization: Basic ...``, ``mysql -p...``,
``curl -u user:...``, "the key is ..."), each gated by the value's shape so that prose survives.
The decisions these judges encode are listed in shared/redact/engine.py ("Decisions").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import TypeAlias

from shared.redact.anchors import folded
from shared.redact.catalogue import entropy_bits, is_random, is_strong, looks_like_password

__all__ = [
    "AFTER_CATALOGUE",
    "BEFORE_CATALOGUE",
    "MARKER",
    "TEXT_ANCHORS",
    "Judge",
    "RuleSpec",
    "Scan",
    "Seek",
    "find_all",
]

# A judge looks at one match and names its label, or None to leave the match alone.
Judge: TypeAlias = Callable[[re.Match[str], str], str | None]
# Where a match may start, for a rule too slow to search for: every position where a match of
# the rule could begin, sorted (a superset is fine; a missing one is a bug).
Seek: TypeAlias = Callable[["Scan"], list[int]]
RuleSpec: TypeAlias = tuple[re.Pattern[str], Judge, Seek | None]

MARKER = re.compile(r"\[REDACTED:[a-z0-9_]+\]")

# --- value predicates -----------------------------------------------------------------------------

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
# What ``[A-Za-z0-9_.-]`` matches under re.I: ASCII and the four letters it folds to ASCII.
_KEY_CHARS = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-\u0130\u0131\u017f\u212a"
)
_LINE_LEAD = re.compile(r"[ \t>*#/-]*(?:export[ \t]+)?")


def _is_plain(value: str) -> bool:
    return _PLAIN.fullmatch(value) is not None


def _is_placeholder(value: str) -> bool:
    return not value or _PLACEHOLDER.fullmatch(value) is not None


def _line_lead(m: re.Match[str]) -> str:
    return m.string[m.string.rfind("\n", 0, m.start()) + 1 : m.start()]


# --- judges ---------------------------------------------------------------------------------------


def _fixed(label: str, ok: Callable[[str], bool] | None = None) -> Judge:
    """Always ``label``, or ``label`` only when ``ok(secret)`` holds."""

    def judge(m: re.Match[str], secret: str) -> str | None:
        return label if ok is None or ok(secret) else None

    return judge


def _is_next_key(m: re.Match[str], group: str = "secret") -> bool:
    """``PASSWORD: JWT_SECRET: 'x'``: the "value" is the key of the next assignment."""
    text, at = m.string, m.start(group)
    # Checked cheaply first: the full pattern tries its keywords at up to 64 places.
    if not _ends_in_separator(text, at + (text[at : at + 1] in "\"'")):
        return False
    return _KEY_SEP.match(text, at) is not None


def _judge_auth_header(m: re.Match[str], secret: str) -> str | None:
    if _is_plain(secret) or _is_placeholder(secret) or _is_next_key(m):
        return None  # "Authorization: Bearer YOUR_TOKEN", "authorization: required"
    scheme = (m.group("scheme") or "").lower()
    return "basic_auth" if scheme == "basic" else "bearer_token"


def _judge_bearer(m: re.Match[str], secret: str) -> str | None:
    if len(secret) < 16 or not is_random(secret) or _is_next_key(m):
        return None
    return "bearer_token"


def _judge_basic(m: re.Match[str], secret: str) -> str | None:
    # base64 comes in quads; "Basic English" is a Capitalized word, not base64 of user:pass.
    return "basic_auth" if len(secret) % 4 == 0 and is_random(secret) else None


_DB_SCHEMES = frozenset(
    "postgres postgresql mysql mariadb mongodb mongodb+srv redis rediss amqp amqps mssql "
    "sqlserver oracle cockroachdb clickhouse couchdb neo4j neo4j+s bolt cassandra".split()
)
_PORT_THEN_PATH = re.compile(r"\d*/")


def _judge_url(m: re.Match[str], secret: str) -> str | None:
    if _PORT_THEN_PATH.match(secret):
        return None  # https://registry.npmjs.org:443/@scope/pkg: a port and a path
    if m.group("bare") is not None and not _keyed_without_verb(secret):
        return None  # a user's name, not a token
    return "connection_string" if m.group("scheme").lower() in _DB_SCHEMES else "credential_url"


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


def _judge_cli_flag(m: re.Match[str], secret: str) -> str | None:
    if _is_plain(secret) or _is_placeholder(secret) or _CODE_VALUE.fullmatch(secret):
        return None  # "pass the --token flag"
    return None if _is_next_key(m) else _keyword_label(m, secret)


def _is_code(m: re.Match[str], value: str) -> bool:
    """A call, a subscript, an attribute read, a null, ``f(api_key=api_key)`` or
    ``self.api_key = api_key``."""
    after = m.string[m.end() : m.end() + 1]
    if after == "(" or (after == "[" and not MARKER.match(m.string, m.end())):
        return True
    # ``self.token = token``, ``this.apiKey = apiKey``: the attribute set from its namesake
    key = m.group("key").strip("\"'-]").rsplit(".", 1)[-1].lstrip("_")
    if _NAMED_VARIABLE.fullmatch(value) is not None:
        return True  # ``f(page_token=token)``, ``password=DB_PASSWORD``: a variable
    return _CODE_VALUE.fullmatch(value) is not None or value.lower() == key.lower()


# A name that is only a credential's noun, or ends in one after "_": a variable or a constant.
_NAMED_VARIABLE = re.compile(
    r"(?:[A-Za-z0-9]+_)*(?i:token|secret|key|password|passwd|pwd|pw|pass|credentials?)"
)


# What a regex has and a password has not: a group's "(?", an escape class, a bracket
# expression, a counted repeat.
_REGEX_SYNTAX = re.compile(r"\(\?|\\[dswbDSWB]|\[\^?[A-Za-z0-9\\]|\{\d+,?\d*\}")
# A string literal's prefix: Python's r/b/f/u, C#'s @ and $, C++'s L and u8.
_LITERAL_PREFIX = re.compile(r"[rbfu]{1,2}|[@$]{1,2}|L|u8", re.I)


def _is_literal_prefix(m: re.Match[str], value: str) -> bool:
    """``password = r'...'`` once its literal is a marker: the "r" is no value of its own."""
    after = m.string[m.end() : m.end() + 1]
    return after in ("'", '"') and _LITERAL_PREFIX.fullmatch(value) is not None


def _is_user_before_marker(m: re.Match[str], value: str) -> bool:
    """``username/password: admin/[REDACTED:password]``: the user's name, its password gone."""
    return value[-1:] in ("/", ":") and MARKER.match(m.string, m.end()) is not None


def _is_loose_prose(m: re.Match[str], value: str) -> bool:
    """A plain word after a spaced separator mid-line: prose or a variable, not a value."""
    spaced = m.group("sep") != m.group("sep").strip()
    return spaced and _is_plain(value) and _LINE_LEAD.fullmatch(_line_lead(m)) is None


def _is_working_dir(m: re.Match[str], value: str) -> bool:
    return (m.group("k_password") or "").lower() == "pwd" and value[:1] in ("/", "~")


# Type names a ``key: Type`` annotation names (Python, TypeScript, pydantic, Go, Rust).
_TYPE_NAME = re.compile(
    r"(?:str|bytes|int|float|bool|dict|list|tuple|Any|None|object|SecretStr|SecretBytes"
    r"|Optional|Union|Literal|string|number|boolean|String|Option|Vec|u8|i32|i64)"
    r"(?:\[.*\]|\|.*)?"
)
_DEFAULT_AFTER = re.compile(r"[ \t]*=(?!=)")
_YAML_TAG = re.compile(r"!!?[A-Za-z][A-Za-z_.:/-]*|!")
_WORDS_AFTER = re.compile(r"[ \t]+\w")


def _is_declaration(m: re.Match[str], value: str) -> bool:
    """``api_key: str``, ``token: int = 0``, ``secret: !vault |``, ``token: `gh auth
    token` ``: a type, a YAML tag or a command, not a literal. (A "!" after "=" is no tag:
    ``DB_PASSWORD=!Vault7xQ2``; nor is one with a digit: YAML's and CloudFormation's tags are
    words, ``!vault``, ``!Ref``, ``!GetAtt``.)"""
    if value.startswith("!"):
        return _YAML_TAG.fullmatch(value) is not None
    sep = m.group("sep").strip()
    if m.group("q") == "`" or value.startswith("$("):
        return True
    if ":" in sep and "=" in sep:  # annotated: a bare default is a name or a number
        return not is_random(value)
    if sep != ":":
        return False
    rest = m.string[m.end() : m.end() + 8]
    return _TYPE_NAME.fullmatch(value) is not None or _DEFAULT_AFTER.match(rest) is not None


def _is_prose_after_label(m: re.Match[str], value: str) -> bool:
    """ "Secret: she is planning a party", "password: see the vault": a plain word that more
    words follow is a sentence; a lone word ("password: sunshine") is still a value."""
    return _is_plain(value) and _WORDS_AFTER.match(m.string, m.end()) is not None


def _judge_assignment(m: re.Match[str], secret: str) -> str | None:
    if m.group("ref") is not None or _is_placeholder(secret):
        return None
    if m.group("q") == "`" and (" " in secret or secret.startswith("$")):
        return None  # token: `gh auth token`: a command substitution
    if "r" in (m.group("pre") or "").lower() and _REGEX_SYNTAX.search(secret):
        return None  # _KEY = r"(?P<key>[A-Za-z0-9_.-]{0,64}?": a raw string that is a regex
    if m.group("bare") is not None and (
        secret.lower() in _NO_VALUE  # "pw: n/a"
        or _is_code(m, secret)
        or _is_literal_prefix(m, secret)
        or _is_user_before_marker(m, secret)
        or _is_loose_prose(m, secret)
        or _is_working_dir(m, secret)
        or _is_next_key(m, "bare")
        or _is_declaration(m, secret)
        or _is_prose_after_label(m, secret)
    ):
        return None
    return _keyword_label(m, secret)


# --- patterns -------------------------------------------------------------------------------------

_AUTH_HEADER = re.compile(
    r"(?<![A-Za-z0-9-])(?i:(?:proxy-)?authorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9-]*)[ \t]+)?(?P<secret>[A-Za-z0-9._~+/-]+=*)"
)
_BEARER = re.compile(r"(?<![A-Za-z0-9])(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]+=*)")
_BASIC = re.compile(
    r"(?<![A-Za-z0-9])Basic[ \t]+(?P<secret>[A-Za-z0-9+/]{12,}={0,2})(?![A-Za-z0-9+/=])"
)
_AWS_SECRET = re.compile(
    # (blanks as a repeat, not a literal space: the gate would look at every space of every text)
    r"(?<![A-Za-z0-9])[\"']?(?i:aws(?:[_.-]|[ \t]+)?secret(?:[_.-]|[ \t]+)?"
    r"(?:access(?:[_.-]|[ \t]+)?)?key|secret(?:[_.-]|[ \t]+)?access(?:[_.-]|[ \t]+)?key)"
    # ``aws configure`` prompts with the value it has in brackets: "[None]", "[****ABCD]"
    r"[\"']?(?:[ \t]+\[[^\]\n]{0,40}\])?[ \t]*(?:=|:|=>)[ \t]*[\"']?"
    r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)
_AZURE_KEY = re.compile(
    r"(?<![A-Za-z0-9])(?:AccountKey|SharedAccessKey)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"
)
_URL_SIGNATURE = re.compile(
    r"(?<=[?&])(?:sig|[Ss]ignature|X-Amz-Signature|X-Goog-Signature)"
    r"=(?P<secret>[A-Za-z0-9%+/=_-]{16,})"
)
# ``?key=<key>`` (Google's and many APIs' query key), ``&auth=<token>``: a name that is only
# sometimes secret, so the value must look like a key (as "api key <value>" with no verb).
_URL_KEY = re.compile(r"(?<=[?&])(?:key|auth)=(?P<secret>[A-Za-z0-9_~.%+-]{20,}=*)(?![^\s&#\"'])")
# RFC 3986 §3.2.1: userinfo is "user:password" before "@"; the user may be empty (redis). A
# token alone is also sent as the user (``https://<token>@github.com/org/repo.git``, as
# GitHub's and GitLab's docs show for HTTPS clones): a user of 20+ characters shaped like a
# key, never a name ("https://bob@bitbucket.org/...").
# Bounded so "a://b:a://b:..." without an "@" stays linear.
_CREDENTIAL_URL = re.compile(
    r"(?<![A-Za-z0-9+.-])(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{1,30})://"
    r"(?:[^\s:@/?#]{0,256}:(?P<secret>[^\s@]{1,256})|(?P<bare>[A-Za-z0-9_.~+-]{20,256}))@"
)

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
# (a long flag may glue words before its keyword: ``--authtoken``, ``--dbpassword``,
# ``--clientsecret``; "pass", "pw" and "psk" must still start a word: ``--bypass``)
_CLI_FLAG = re.compile(
    r"(?<!\S)(?:--(?:[A-Za-z0-9]+-){0,4}[A-Za-z0-9]{0,16}?|-(?:[A-Za-z0-9]+-){0,4})"
    + _KEYWORDS
    + r"[ \t]+[\"'`]?(?P<secret>(?!-)[^\s\"'`]+)",
    re.I,
)
_SAID_PASSWORD = re.compile(
    # "my password is X", "the password for the router is X", "wifi password X"; a quoted
    # value is taken whole, spaces and all ("is 'purple monkey dishwasher'").
    # "password's X"; "I changed my password to X" (a "to" counts only after set/change/reset).
    # Also the short nouns ("pw", "pwd", "passwd", "the pass is X"), an arrow or a dash for
    # "is" ("password -> X", "Password - X"), and a colon after a qualifier ("password
    # (prod): X", "the password for bob@example.com: X", "pw for the nas = X") where an
    # assignment sees no key; "vnc password set to X".
    r"(?<![A-Za-z0-9_])(?P<noun>(?i:pass(?:word|phrase|code|wd)?|pwd?))"
    r"(?:[ \t]*(?:\([^()\n]{1,40}\)|\[[^\[\]\n]{1,40}\])[ \t]*(?P<colon>:)[ \t]*"
    # (once said, the value may start the next line: "my password is" then a line break)
    # (the English noun in a Romance sentence too: "la password del wifi è X")
    r"|[ \t]+(?i:for|to|of|on|at|del|della|dello|di|du|des|de|da|do)[ \t]+[^\n\"'`]{1,40}?"
    r"(?:[ \t]+(?P<verb>(?i:is|was|è|é|est|es|era))[ \t]*:?|[ \t]*(?P<colon2>[:=]))"
    r"(?:[ \t]+|[ \t]*\r?\n[ \t]*)"
    r"|(?:[ \t]+|(?=['\u2019]s[ \t]))"
    r"(?:(?P<verb2>(?i:(?:(?:is|was|has[ \t]+been|got)[ \t]+)?"
    r"(?:re)?(?:set|changed|updated|rotated)[ \t]+to|is|was|to|in|en|para|è|hai|['\u2019]s)"
    r"|->|=>|\u2192|[-\u2013\u2014])[ \t]*:?"
    r"(?:[ \t]+|[ \t]*\r?\n[ \t]*))?)"
    r"(?:(?P<q>[\"'`])(?P<secret>[^\n\"'`]{1,200})(?P=q)"
    r"|(?P<bare>[^\s\"'`]*[^\s\"'`.,;:?)]))"
)
# A PIN or a lock's code, said or labelled: "my PIN is 4821", "door code: 7391#", "PIN=2468".
_PIN_NOUN = (
    # (no literal with a space in it: the gate would look at every space of every text)
    r"(?:pin(?:(?:[ \t]+|-)(?:code|number))?|(?:door|gate|alarm|garage|safe|lock|keypad)[ \t]+code)"
)
_PIN = re.compile(
    r"(?<![^\W\d_])(?i:" + _PIN_NOUN + r"(?:[ \t]*[:=]|[ \t]+(?:is|was)(?![\w])))"
    r"[ \t]*:?[ \t]*(?P<secret>\d{4,8}#?)(?![\w#])"
)
# "pin" and "code" are in "shopping", "opinion" and every text about code: the rule is tried
# only where the noun is followed by a separator or "is"/"was" (on the folded text).
_PIN_AT = re.compile(_PIN_NOUN + r"(?:[ \t]*[:=]|[ \t]+(?:is|was)(?![\w]))")


def _pin_starts(scan: Scan) -> list[int]:
    text, low = scan.text, scan.folded
    starts = [at for at in scan.find("pin") if _PIN_AT.match(low, at)]
    for at in scan.find("code"):
        head = at - 1
        while head > 0 and text[head - 1].isalpha():
            head -= 1
        if head < at - 1 and _PIN_AT.match(low, head):
            starts.append(head)
    return sorted(starts)


# A password named in another language ("Passwort: X", "mot de passe : X", "la contraseña es
# X", "пароль: X", "密码是X", "비밀번호는 X"): the noun, a separator or the language's "is",
# then the value, judged as in English. The nouns are the common words for "password" in
# the languages most users write in (as password managers' and routers' localised UIs label
# the field); a language missing here is a known gap.
# Two rules, so that a text that only says "password" or "passed" costs one look at the
# places "pass" occurs (already found for the English rules), not a search for every noun.
_FOREIGN_PASS_NOUN = r"(?:passw(?:o|ö)rt(?:e?s)?|mot[ \t]+de[ \t]+passe|passord(?:et)?)"
_FOREIGN_NOUN = (
    r"(?:contrase(?:ñ|n)as?|senhas?|wachtwoord(?:en)?|l(?:ö|o)senord(?:et)?|has(?:ł|l)o"
    r"|пароль|парол(?:я|ем)|密码|密碼|パスワード|비밀번호|(?:ş|s)ifre(?:m|n|si)?"
    r"|salasana(?:ni|si)?|adgangskode(?:n)?|kodeord(?:et)?|jelsz(?:ó|o)(?:m)?|heslo"
    # (each noun in ASCII is one more word the gate looks for in every text: the common ones)
    r"|kennw(?:o|ö)rt(?:e?s)?|mdp|clave|parol(?:ă|a(?![ \t]+d['\u2019]))|парол(?:а|ата)"
    r"|κωδικ(?:ός|ος)|mật[ \t]+khẩu"
    r"|parola[ \t]+d['\u2019]ordine|kata[ \t]+sandi(?:nya)?|geslo|lozinka|лозинка|parool"
    r"|slaptažod(?:is|į)"
    # Hindi (and Marathi, Nepali) borrow the English word; Thai's "รหัสผ่าน"; Greek's full
    # "κωδικός πρόσβασης" is read as its first word. (Their vowel signs and tone marks are no
    # letters to str.isalpha; the gate's anchors count them in: shared/redact/anchors.is_word.)
    r"|पासवर्ड|कूटशब्द|รหัสผ่าน"
    r"|كلمة[ \t]+(?:المرور|السر)|رمز[ \t]+(?:عبور|ورود)|סיסמ(?:ה|א)|口令|암호)"
)
# "my" after the noun: Greek "ο κωδικός μου", Vietnamese "mật khẩu của tôi", Thai
# "รหัสผ่านของฉัน"; Greek "πρόσβασης" (of access) completes its noun.
_FOREIGN_POSSESSIVE = (
    r"(?:[ \t]+(?:μου|σου|μας|πρόσβασης)|[ \t]+của[ \t]+(?:tôi|bạn|mình|anh|em|tớ)"
    r"|[ \t]*ของ(?:ฉัน|ผม|คุณ|เรา))?"
)
_FOREIGN_VALUE = (
    # "Passwort für WLAN: X", "contraseña del wifi: X", "пароль от почты X"
    r"(?:[ \t]+(?i:für|fürs|zum|zur|vom|von|de|du|des|del|della|di|da|do|dos|das|van|voor"
    r"|för|til|for|per|dla|od|от|для|від|do|na)[ \t]+[^\n:=\"'`]{1,30}?)?"
    r"(?:는|은|は|이|가)?"
    # "รหัสผ่าน wifi คือ X", "mật khẩu wifi là X": a word naming what it opens, then "is"
    r"(?:[ \t]+[A-Za-z][\w.-]{1,20}(?=[ \t]*[:=]|[ \t]*คือ|[ \t]+(?:là|is|est|es|ist|é|è|jest"
    r"|to|je|adalah|είναι|है|hai)[ \t]))?"
    r"(?:[ \t]*(?P<sep>[:=])[ \t]*"
    r"|[ \t]*(?P<verb>是|为|為|は|คือ)[ \t]*"
    r"|[ \t]+(?P<verb2>(?i:is|ist|lautet|war|est|était|es|era|é|è|er|var|är|on|oli|jest|to|je"
    r"|van|adalah|là|είναι|е|este|היא|הוא|هي|هو|है|था|hai|—|-))[ \t]*:?[ \t]+"
    # "changed the password to X": "cambiado la contraseña a X", "changé le mot de passe en
    # X", "das Passwort auf X geändert" (the judge wants a verb of changing on the line)
    r"|[ \t]+(?P<to>(?i:a|en|in|para|auf|naar|till|na|на|w))[ \t]+"
    r"|[ \t]+)"
    r"(?:(?P<q>[\"'`«“„])(?P<secret>[^\n\"'`«»“”„]{1,200})[\"'`»”“]"
    r"|(?P<bare>[^\s\"'`]*[^\s\"'`.,;:?)!。，、]))"
)
# (a noun may follow a letter of a script written without spaces, "我的密码是...", or a
# Hebrew prefix, "הסיסמה": no other letter)
_FOREIGN_PASSWORD = re.compile(
    r"(?<![^\W\d_\u05d0-\u05ea\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af])(?i:"
    + _FOREIGN_NOUN
    + ")"
    + _FOREIGN_POSSESSIVE
    + _FOREIGN_VALUE
)
_FOREIGN_PASSWORD_PASS = re.compile(
    r"(?<![^\W\d_])(?i:" + _FOREIGN_PASS_NOUN + ")" + _FOREIGN_VALUE
)
_FOREIGN_PASS_AT = re.compile(r"passw(?:o|ö)rt|passe|passord")


def _foreign_pass_starts(scan: Scan) -> list[int]:
    """Where "passwort" or "passord" starts, or the "mot de" before a "passe"."""
    starts = []
    for at in scan.find("pass"):
        if _FOREIGN_PASS_AT.match(scan.folded, at):
            starts.append(scan.folded.rfind("mot", max(0, at - 12), at) if at >= 7 else at)
            starts.append(at)
    return sorted({at for at in starts if at >= 0})


def _judge_foreign_password(m: re.Match[str], secret: str) -> str | None:
    """As _judge_said_password reads one in English: said (a separator or "is"), a value
    like a password or 4+ digits; with neither, only a key-like value of 8+."""
    said = m.group("sep") or m.group("verb") or m.group("verb2")
    said = said or _FINAL_VERB.match(m.string, m.end())
    if m.group("to") is not None:  # "... a X", "... en X": only after a change's verb
        text = m.string
        line = text[text.rfind("\n", 0, m.start()) + 1 : m.start()] + text[m.end() : m.end() + 40]
        if _CHANGED.search(line.split("\n", 1)[0]) is None or secret.isdigit():
            return None  # ("changé le mot de passe en 2023": a year)
        said = m.group("to")
    if _is_placeholder(secret) or (m.group("bare") is not None and _is_next_key(m, "bare")):
        return None
    if m.group("q") is not None:
        return "password" if said and len(secret.strip()) >= 6 else None
    if said and (_DIGITS.fullmatch(secret) or looks_like_password(secret)):
        return "password"
    random = len(secret) >= 8 and is_random(secret) and looks_like_password(secret)
    return "password" if random else None


# A verb of changing or setting, in the languages of _FOREIGN_VALUE's "to" ("cambiado",
# "changé", "geändert", "mudei", "gewijzigd", "zmieniłem", "изменил").
_CHANGED = re.compile(
    r"(?i:cambi|chang|mud|alter|modific|redefin|wijzig|verander|geänder|geaender|änder|aender"
    r"|gesetzt|zmieni|измен|помен|смени|ändrade|endret|vaihdo|set|reset|updat)"
)


# The same in the Romance languages only: their "in", "en", "para" say the new value after an
# English noun ("ho cambiato la password in X"), where English "changed the password in
# 1Password" says where it is kept.
_CAMBIO = re.compile(r"(?i:cambi|mud|modific|alter|redefin|chang(?:é|er|ez))")


# The verb that ends a sentence after the value (Hindi "मेरा पासवर्ड X है", Korean "비밀번호
# X 입니다", Japanese "パスワードは X です"): said as one, as "is" before it says.
_FINAL_VERB = re.compile(r"[ \t]*(?:है|था|थी|हैं|입니다|이에요|예요|です|だ)(?![^\W\d_])")


# A passphrase or a wallet's seed phrase is several words: after "passphrase:" or "seed
# phrase is", the rest of the sentence goes, not only its first word.
_PASSPHRASE = re.compile(
    # (no literal with a space in it: the gate would look at every space of every text)
    r"(?<![A-Za-z0-9_])(?i:pass[_-]?phrase|(?:seed|recovery)[ \t_-]{1,3}phrase|mnemonic)"
    r"(?:[ \t]+(?i:for|to|of|on)[ \t]+[^\n:=\"'`]{1,40}?)?"
    r"[ \t]*(?:[ \t](?i:is|was)[ \t]*:?|:|=)[ \t]*[\"'`]?"
    r"(?P<secret>[^\n.;,\"'`]{0,300}[^\s.;,:?\"'`])"
)
# A JSON document inside a JSON string, as ``aws secretsmanager get-secret-value`` prints its
# SecretString: {\"username\":\"admin\",\"password\":\"...\"}.
_ESCAPED_JSON = re.compile(
    r'\\"[A-Za-z0-9_.-]{0,64}?' + _KEYWORDS + r'\\"[ \t]*:[ \t]*\\"(?P<secret>[^"\\\n]{1,2048})\\"',
    re.I,
)
# <add key="ApiKey" value="..."/>, <property name="db.password" value="..."/>, <param
# name="apiToken" value="..."/> (.NET appSettings, Spring and Hibernate configs, Ant, log4j):
# the key attribute names a credential, the value attribute holds it; <entry
# key="password">...</entry> (Java's properties XML) and <setting name="ClientSecret"
# ...><value>...</value> (.NET user settings) hold it as the element's text.
_XML_ATTRIBUTE = re.compile(
    r"<[A-Za-z][A-Za-z0-9_.:-]{0,64}[ \t][^<>]{0,200}?(?<=[ \t])(?:key|name)[ \t]*=[ \t]*"
    r"(?P<kq>[\"'])[A-Za-z0-9_.:-]{0,64}?" + _KEYWORDS + r"(?P=kq)"
    r"(?:[^<>]{0,200}?(?<=[ \t])value[ \t]*=[ \t]*(?P<q>[\"'])(?P<secret>[^\"'<>\n]{1,2048})(?P=q)"
    r"|[^<>]{0,200}>\s{0,40}(?:<value>)?(?P<bare>[^<>\s][^<>\n]{0,2047})<)",
    re.I,
)
# The same attributes the other way round: <add value="..." key="DbPassword"/>, <property
# value="..." name="apiToken"/> (attribute order means nothing in XML, and tools write both).
_XML_ATTRIBUTE_REVERSED = re.compile(
    r"<[A-Za-z][A-Za-z0-9_.:-]{0,64}[ \t][^<>]{0,200}?(?<=[ \t])value[ \t]*=[ \t]*"
    r"(?P<q>[\"'])(?P<secret>[^\"'<>\n]{1,2048})(?P=q)"
    r"[^<>]{0,200}?(?<=[ \t])(?:key|name)[ \t]*=[ \t]*"
    r"(?P<kq>[\"'])[A-Za-z0-9_.:-]{0,64}?" + _KEYWORDS + r"(?P=kq)",
    re.I,
)
# <password>...</password>, <ApiKey>...</ApiKey> (XML configs, SOAP, .NET settings).
_XML_ELEMENT = re.compile(
    r"<(?P<tag>[A-Za-z0-9_.:-]{0,64}?" + _KEYWORDS + r")>(?P<secret>[^<>\n]{1,2048})</(?P=tag)>",
    re.I,
)


# A YAML key whose value is on the next, indented line: a block scalar (``password: |``) or a
# plain value wrapped by a formatter (``token:`` then ``  Zx9Qm...``).
_YAML_NEXT_LINE = re.compile(
    r"(?m:^)[ \t]*(?:- )?[\"']?[A-Za-z0-9_.-]{0,64}?" + _KEYWORDS + r"[\"']?:"
    r"[ \t]*(?:[|>][-+0-9]{0,2})?[ \t]*\r?\n[ \t]+[\"']?"
    # a "#" after a blank starts a comment; glued to the value it is part of it (YAML 1.2 §6.6)
    r"(?P<secret>[^\s\"'#](?:[^\n\"'#]|(?<![ \t])#){0,2047}?)"
    r"[\"']?[ \t]*(?=\r?\n|$)",
    re.I,
)
# A table row whose first cell names a credential: Markdown (``| DB_PASSWORD | x |``) and CSV
# (``api_key,x``), as a coding assistant lists environment variables.
_TABLE_ROW = re.compile(
    # (the first cell may name it in words: "| API Token | <v> |")
    r"(?m:^)(?:\|[ \t]*`?[A-Za-z0-9_.-]{0,64}?(?:(?<=[A-Za-z0-9])[ \t])?"
    + _KEYWORDS
    + r"`?[ \t]*\|[ \t]*`?"
    r"(?P<secret>[^|`\n]*[^|`\s])`?[ \t]*\|"
    r"|[A-Za-z0-9_.-]{0,64}?(?P<c_key>(?:password|passwd|secret|token|api[_.-]?key|[_.-]key))"
    r",[ \t]*(?P<bare>[^,\s][^,\n]{0,2047}?)[ \t]*(?=\r?\n|$))",
    re.I,
)


# A column of a pipe table whose header names a credential (``| user | password |``, a
# separator line, then one row per account): each cell below that header, not the others. A
# cell match starts at the "|" before it, or at the line's start for a first cell written
# without one (then it ends at the "|" after it). Which cells sit under such a header is
# worked out once per text (_credential_cells) and the judge turns down every other cell.
# The header is outside the match, so the gate also needs one of its nouns in the text
# (TEXT_ANCHORS): a text with a "|" and none of them runs no table rule.
_TABLE_CELL = re.compile(
    r"\|[ \t]*(?P<secret>[^|\s](?:[^|\n]*[^|\s])?)"
    r"|(?m:^)[ \t]*(?P<bare>[^|\s](?:[^|\n]*[^|\s])?)[ \t]*\|"
)
# A header cell that names a credential, read as words (``DB_PASSWORD``, ``apiKey`` and
# ``**Client Secret**`` as "db password", "api key", "client secret"): up to three words
# before the noun ("initial admin password", "GitHub token"), none after it, so "password
# policy", "token count" and "max tokens" name no credential.
_CREDENTIAL_HEADER = re.compile(
    r"(?:[a-z0-9]+ ){0,3}(?:(?P<password>password|passwd|pwd|pass ?phrase)"
    r"|(?P<private_key>private key)|(?P<api_key>api ?key|access key)"
    r"|(?P<secret>secret(?: key)?)|(?P<token>token)"
    # short nouns and other languages' (as ASCII: the header is read in ASCII words): a
    # value under them must look like one ("| suite | pass |" counts tests)
    r"|(?P<pw>pass|pw|creds|credentials?|passwort|kennwort|wachtwoord|senha|contrase a"
    r"|mot de passe|parola|salasana|passord|adgangskode|haslo|heslo|geslo|lozinka))"
)
_TABLE_SEPARATOR = re.compile(r"[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)*[ \t]*:?-+:?[ \t]*\|?[ \t]*\r?")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_HEADER_JUNK = re.compile(r"\([^)]*\)|[^A-Za-z0-9]+")
# What a credential column holds when it holds none: a dash, "n/a", a yes/no.
_NO_VALUE = frozenset(
    """- -- --- — – n/a na none null nil tbd todo ? yes no y n true false ok required optional
    same unset hidden unknown empty default set changed reset expired revoked""".split()
)
# One of these (case-insensitive) is in every header _CREDENTIAL_HEADER reads as a credential.
_HEADER_WORDS = (
    "pass",
    "pwd",
    "secret",
    "token",
    "key",
    "pw",
    "creds",
    "credential",
    "kennwort",
    "wachtwoord",
    "senha",
    "contrase",
    "parola",
    "salasana",
    "adgangskode",
    "haslo",
    "heslo",
    "geslo",
    "lozinka",
)


def _cells(line: str) -> list[tuple[int, str]]:
    """The cells of a table line: (offset of the match start in the line, the cell's text).
    A cell's match starts at the "|" before it, or at 0 for a first cell with none."""
    pipes = [i for i, ch in enumerate(line) if ch == "|"]
    lead = line[: pipes[0]].strip() == "" if pipes else False
    bounds = pipes if lead else [0, *pipes]
    cells = []
    for k, start in enumerate(bounds):
        end = bounds[k + 1] if k + 1 < len(bounds) else len(line)
        cells.append((start, line[start + (1 if lead or k else 0) : end]))
    if cells and not cells[-1][1].strip() and len(cells) > 1:
        cells.pop()  # the trailing "|"
    return cells


def _header_label(cell: str) -> str | None:
    words = _HEADER_JUNK.sub(" ", _CAMEL.sub(" ", cell)).lower().split()
    found = _CREDENTIAL_HEADER.fullmatch(" ".join(words))
    if found is None:
        return None
    return next(name for name, value in found.groupdict().items() if value is not None)


@lru_cache(maxsize=8)
def _credential_cells(text: str) -> dict[int, str]:
    """Where each cell under a credential header starts in ``text`` (see _TABLE_CELL), and
    the label its header gives. A table is a header line, a separator line (``|---|---|``)
    and the rows that follow it, each with a "|"; without a separator line, the header and
    every row must have the same number of cells."""
    lines, at = [], 0
    for line in text.split("\n"):
        lines.append((at, line))
        at += len(line) + 1
    found: dict[int, str] = {}
    i = 0
    while i < len(lines) - 1:
        header = lines[i][1]
        cells = _cells(header) if "|" in header else []
        labels = {k: label for k, (_, cell) in enumerate(cells) if (label := _header_label(cell))}
        if not labels or len(cells) < 2:
            i += 1
            continue
        j = i + 1
        ruled = "-" in lines[j][1] and _TABLE_SEPARATOR.fullmatch(lines[j][1]) is not None
        j += ruled
        if not ruled:  # a short or foreign noun heads only a Markdown table: "(f'echo {PW} |"
            labels = {k: label for k, label in labels.items() if label != "pw"}
            if not labels:
                i += 1
                continue
        while j < len(lines) and "|" in lines[j][1]:
            row_at, row = lines[j]
            row_cells = _cells(row)
            if not ruled and len(row_cells) != len(cells):
                break
            for k, label in labels.items():
                if k < len(row_cells):
                    found[row_at + row_cells[k][0]] = label
            j += 1
        i = max(j, i + 1)
    return found


_CELL_END = re.compile(r"[ \t]*(?:\||\r?\n|$)")


def _judge_table_cell(m: re.Match[str], secret: str) -> str | None:
    label = _credential_cells(m.string).get(m.start())
    if label is None:
        return None
    end = m.end("secret") if m.group("secret") is not None else m.end("bare")
    if _CELL_END.match(m.string, end) is None:
        return None  # cut short by a marker: what is left of the cell is another rule's
    return _cell_label(label, secret.strip("`*").strip())


def _cell_label(label: str, value: str) -> str | None:
    """The label of a value in a column whose header gave ``label``, or None: a note, a dash,
    a count or a plain word where a key must look like one (also the delimited tables of
    shared/redact/files.py)."""
    if _is_placeholder(value) or value.lower() in _NO_VALUE:
        return None
    if " " in value and not _is_random_line(value):
        return None  # "at least 12 characters", "same as staging": a note, not a value
    if label == "password":
        return label  # any one word under "password" is one, "sunshine" too
    if _is_plain(value) or value.isdigit() or len(value) < 6:
        return None  # "| hello | 15339 |" under "token": a tokenizer's id, not a credential
    if label == "pw":  # a short or foreign noun: a value shaped like a password or a key
        return "password" if looks_like_password(value) or is_random(value) else None
    return label if is_random(value) or looks_like_password(value) else None


def _judge_keyword_value(m: re.Match[str], secret: str) -> str | None:
    if _is_placeholder(secret) or _is_plain(secret.strip()):
        return None
    return _keyword_label(m, secret)


def _judge_next_line(m: re.Match[str], secret: str) -> str | None:
    """The value on the next line, unless that line is a key of its own (a nested mapping:
    ``password:`` then ``  file: /etc/pw``), a placeholder, code or a sentence."""
    if _KEY_LINE.match(secret) or (" " in secret.strip() and not _is_random_line(secret)):
        return None
    return _judge_keyword_value(m, secret.strip())


_KEY_LINE = re.compile(r"[A-Za-z0-9_.-]+:(?:\s|$)")


def _is_random_line(value: str) -> bool:
    """A diceware-like phrase or a key with spaces is rare; a value with spaces on its own
    line is kept only when it looks like a key (digits and letters, no sentence)."""
    return is_random(value) and not _WORDS_AFTER.search(value)


# Lines a YAML key with its value on the next line could start (a line ending in ":" or in a
# block indicator), and lines a table row could start ("|...", or a first CSV cell with no
# space in it): the two rules are tried only there, so prose costs them one scan.
_KEY_ALONE = re.compile(r"(?m)^(?=[^\n]{1,90}:[ \t]*(?:[|>][-+0-9]{0,2})?[ \t]*\r?\n[ \t])")
_ROW_START = re.compile(r"(?m)^(?:\||[A-Za-z0-9_.-]{1,80},)")


def _yaml_starts(scan: Scan) -> list[int]:
    return [m.start() for m in _KEY_ALONE.finditer(scan.text)]


def _row_starts(scan: Scan) -> list[int]:
    return [m.start() for m in _ROW_START.finditer(scan.text)]


def _judge_table_row(m: re.Match[str], secret: str) -> str | None:
    if m.group("c_key") is not None:  # CSV: the label from the column name
        if _is_placeholder(secret) or _is_plain(secret) or " " in secret:
            return None
        key = m.group("c_key").lower()
        return "password" if key.startswith("pass") else "api_key" if "key" in key else key
    if " " in secret.strip() and not _is_random_line(secret):
        return None  # "| Token | see the vault |": a note, not a value
    return _judge_keyword_value(m, secret)


_STOP = r"\s\"'`,;|<>()\[\]{}"


def _bare(stop: str, enders: str) -> str:
    # A bare value drops sentence punctuation ("password=hunter2.") unless a separator ends it
    # ("Password=Hunter2!;" in a connection string keeps its "!"): the possessive first branch
    # takes the whole run or nothing. Capped at 2 KiB (an AWS session token fits) so that
    # runs like "password=password=..." stay linear.
    # A closing "!" stays with the value: passwords end in one far more often than a
    # sentence stated as an assignment does, and redacting one "!" too many costs nothing.
    return rf"(?!=)(?:[^{stop}]{{1,2048}}+(?=[{enders}])|[^{stop}]{{0,2047}}[^{stop}.?:])"


_BARE_IN_QUERY = _bare(_STOP + "&", ";&")
_BARE = _bare(_STOP, ";")
# A Markdown label in bold ("**Password**: x", "**Password:** x") is a key like any other.
# A quoted key may close a subscript: ``os.environ["DB_PASSWORD"] = "..."``.
_KEY = r"(?P<key>[\"']?[A-Za-z0-9_.-]{0,64}?" + _KEYWORDS + r"(?:[\"']\]?|\*\*)?)"
# ``: Type`` before an ``=`` is an annotation: ``api_key: str = "sk-..."`` assigns the literal.
_SEP = (
    r"(?P<sep>(?:[ \t]*:[ \t]*[A-Za-z_][\w\[\],. |]{0,40}?(?=[ \t]*=[^=]))?"
    r"[ \t]*(?::=|={1,3}(?!=)|=>|:(?:\*\*(?=[ \t]))?)[ \t]*)"
)
_KEY_SEP = re.compile(_KEY + _SEP, re.I)
_ASSIGNMENT = re.compile(
    # In a query string (the key follows ? or &) "&" ends the value; elsewhere it is part of
    # it ("DB_PASSWORD=Tr0ub&dor").
    r"(?<![A-Za-z0-9_.-])(?P<query>(?<=[?&]))?"
    + _KEY
    + _SEP
    + r"(?:(?P<ref>\$\{[^}\n]*\}|\{\{[^}\n]*\}\})"
    # A literal's prefix (Python's r/b/f, C#'s @ and $, C++'s L and u8) and triple quotes
    # belong to the quoting: ``password = r'...'`` assigns what is inside the quotes.
    # A literal wrapped in parentheses, maybe on the next line: ``password = (\n    "..."``.
    r"|(?:\((?:[ \t]*\r?\n)?[ \t]*)?(?P<pre>[rbfu]{1,2}|[@$]{1,2}|L|u8)?(?P<q>\"\"\"|'''|[\"'`])"
    r"(?P<secret>(?:(?!(?P=q))[^\\\n]|\\.)*)(?P=q)"
    rf"|(?P<bare>(?(query){_BARE_IN_QUERY}|{_BARE})))",
    re.I,
)


# --- commands that take a password on their command line ------------------------------------------
#
# mysql & co take ``-p<password>`` glued (a spaced ``-p`` prompts), sshpass ``-p <password>``,
# redis-cli ``-a <password>``, the mongo shells ``-p <password>``; curl ``-u user:<password>``
# (also ``--user``; the user may be empty, ``-u :<token>``), HTTPie/xh ``-a user:<password>``.
# The command must come first on the same line, before any pipe or separator, so "-p"
# elsewhere in prose is left alone.

_VALUE = (
    r"(?:(?P<q>[\"'])(?P<secret>(?:(?!(?P=q))[^\n\\]|\\.)+)(?P=q)"
    r"|(?P<bare>(?![-\"'`])[^\s\"'`]+))"
)
_COMMAND_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9_./-])(?P<cmd>mysql(?:dump|admin|import|sh)?|mariadb(?:-dump)?|sshpass"
    r"|redis-cli|mongo(?:sh|dump|restore)?|sqlcmd|(?:docker|podman|az)[ \t]+login)"
    r"(?![A-Za-z0-9_-])"
    r"[^\n|;&]{0,200}?(?<=[ \t])(?P<flag>-p|-a|-P)(?P<gap>[ \t]*)" + _VALUE
)
# The flag that takes the password (every other command: -p). ``docker login`` only: in
# ``docker run -p 8080:80`` the flag is a port.
_FLAG_OF = {"sshpass": "-p", "redis-cli": "-a", "sqlcmd": "-P"}
_CURL_USER = re.compile(
    r"(?<![A-Za-z0-9_./-])(?:curl|https?|xh)(?![A-Za-z0-9_:-])[^\n|;&]{0,300}?(?<=[ \t])"
    r"(?:-u|--user|-a|--auth)(?:[ \t]+|=)?(?P<q>[\"']?)[^\s:\"'@]*:"
    r"(?P<secret>[^\s\"'`]+)(?P=q)"
)


def _aws_secret_starts(scan: Scan) -> list[int]:
    """Where ``aws...`` or ``secret...`` starts, or the quote before it."""
    found = scan.find("aws", "secret")
    return sorted({start for at in found for start in (at - 1, at) if start >= 0})


def _command_starts(scan: Scan) -> list[int]:
    """Where a command of _COMMAND_PASSWORD starts (the pattern is case-sensitive)."""
    names = ("mysql", "mariadb", "sshpass", "redis-cli", "mongo", "sqlcmd", "docker", "podman")
    return sorted({*find_all(scan.text, names), *find_all(scan.text, ("az ", "az\t"))})


def _curl_starts(scan: Scan) -> list[int]:
    return find_all(scan.text, ("curl", "http", "xh"))


def _judge_command_password(m: re.Match[str], secret: str) -> str | None:
    command = " ".join(m.group("cmd").lower().split())
    if m.group("flag") != _FLAG_OF.get(command, "-p") or _is_placeholder(secret):
        return None
    if not m.group("gap"):
        return "password"  # glued: "-proot" is always the password
    if command.startswith(("mysql", "mariadb")):
        return None  # a spaced -p prompts; what follows is the database
    # "sshpass -p is in the docs": a bare plain word after a spaced flag is prose.
    return None if m.group("bare") is not None and _is_plain(secret) else "password"


def _judge_password_value(m: re.Match[str], secret: str) -> str | None:
    return None if _is_placeholder(secret) else "password"


# --- "the <vendor> key is <value>" ----------------------------------------------------------------
#
# A credential noun, "is"/"was", then one run of 16+ key characters with a digit, a letter and
# 3+ bits of entropy per character: "the key is 9fQ2...", not "the key point is", "the token
# is 2000" or "the secret is patience". The catalogue's keyword entries name the vendor when
# they know it; this catches the rest.

_SAID_KEY = re.compile(
    # also labelled ("API key: ...", "**Encryption key:** ...") and glued to a name by "_"
    # ("client_secret 8fJk..."); the value's shape decides, as after "is"
    r"(?<![A-Za-z0-9])(?i:(?P<k_api_key>(?:api[ _-]?)?key)|(?P<k_token>token)"
    r"|(?P<k_secret>secret))s?(?:\*\*)?"
    # "the token for the CI bot is <v>": a qualifier, then only with "is"/"was"
    r"(?:[ \t]*(?:\([^()\n]{1,40}\)|\[[^\[\]\n]{1,40}\])"
    r"|[ \t]+(?i:for|of|on)[ \t]+[^\n:=\"'`]{1,40}?(?=[ \t]+(?i:is|was)[ \t]))?"
    # ("es", "est", "ist", "é", "è": "el token es <v>" and the like, with an English noun)
    r"(?:[ \t]*(?P<colon>:)(?:\*\*)?[ \t]*"
    r"|[ \t]+(?:(?P<verb>(?i:is|was|to|es|est|ist|é|è))[ \t]*:?[ \t]+)?)[\"'`]?"
    r"(?P<secret>[A-Za-z0-9_+/=.~-]{15,}[A-Za-z0-9_+/=~-])"
)
# "to" is a verb only after one that sets: "I set the webhook secret to <v>", "rotated the
# token to <v>" ("the key to 8fJk..." alone says nothing).
_SETS_BEFORE = re.compile(r"(?i:\b(?:re)?set|chang|updat|rotat)\w*[ \t]+(?:\S+[ \t]+){0,4}$")
_FILE_NAME = re.compile(r"\.[A-Za-z][A-Za-z0-9]{1,4}$")
_SAID_LABELS = (
    ("k_api_key", "api_key"),
    ("k_token", "token"),
    ("k_secret", "secret"),
)


def _judge_said_key(m: re.Match[str], secret: str) -> str | None:
    shaped = _DIGIT_RE.search(secret) and _LETTER_RE.search(secret) and not _is_plain(secret)
    if not shaped or entropy_bits(secret) < 3.0:
        return None
    if _FILE_NAME.search(secret):
        return None  # "the S3 key is uploads/2024/IMG_1234.jpg": an object's name
    # After a bare label ("API key: ...") as with no verb: a cache key or a sort key is
    # labelled so too, and only a value shaped like a key counts.
    verb = m.group("verb")
    if verb is not None and verb.lower() == "to":
        line_start = m.string.rfind("\n", 0, m.start()) + 1
        if not _SETS_BEFORE.search(m.string, max(line_start, m.start() - 60), m.start()):
            return None
    elif verb is None and not _keyed_without_verb(secret):
        return None
    return next(label for group, label in _SAID_LABELS if m.group(group) is not None)


def _judge_url_key(m: re.Match[str], secret: str) -> str | None:
    if not _keyed_without_verb(secret) or _FILE_NAME.search(secret):
        return None  # ?key=uploads/2024/IMG_1234.jpg: an object's name
    return "api_key" if m.string[m.start() : m.start() + 3] == "key" else "token"


def _keyed_without_verb(secret: str) -> bool:
    """With no "is" between noun and value ("the secret 8fJk2/Lm9...", "aws key AKIA..."),
    only a value of 20+ characters that mixes digits, lower and upper case (or is 32+ hex)
    counts: "cache key user-1234-profile" and a lowercase UUID stay."""
    return len(secret) >= 20 and is_strong(secret) and entropy_bits(secret) >= 3.5


def _judge_passphrase(m: re.Match[str], secret: str) -> str | None:
    """Three or more words that read as no sentence, or one password-shaped run: "correct
    horse battery staple", not "is set in the vault" or "mnemonic: see the docs"."""
    words = secret.split()
    if _is_placeholder(secret):
        return None
    if len(words) >= 3 and not _PROSE_WORDS.intersection(w.lower() for w in words):
        return "password"
    return "password" if len(words) == 1 and looks_like_password(secret) else None


# Words a sentence about a passphrase has and a passphrase (diceware, BIP-39) has not.
_PROSE_WORDS = frozenset(
    """the a an in into on at to of for with by from is are was were be been it its this that
    my your our their his her stored saved kept written set required needed same different
    long short too not no see use used using""".split()
)


def _judge_said_password(m: re.Match[str], secret: str) -> str | None:
    """A password said as one ("my password is hunter2!", "the password for the router is
    'purple monkey dishwasher'", "the passcode is 739104", "I set the password to X"), and
    with no verb ("the wifi password Xk9#mP2qL") a value of 8+ characters that mixes
    letters with digits or symbols and is no plain word."""
    noun = m.group("noun").lower()
    if _is_placeholder(secret) or (noun == "pwd" and secret.startswith(("/", "~", "."))):
        return None  # "pwd ~/src": the working directory
    said = m.group("verb") or m.group("verb2") or m.group("colon") or m.group("colon2")
    if noun == "pass" and (not said or secret.isdigit()):
        return None  # "tests pass v1.2.3-beta", "the bus pass is 2024"
    if (said or "").lower() == "to" and _SET_BEFORE.search(_line_lead(m)[-60:]) is None:
        return None  # "I moved my password to 1Password"
    if (said or "").lower() in ("in", "en", "para") and not _CAMBIO.search(_line_lead(m)[-60:]):
        return None  # "changed the password in 1Password"; "ho cambiato la password in X"
    if m.group("q") is not None:  # quoted: spaces and all, but no quote of prose after it
        # ('"password (prod): " before a marker': a quote closes and the next one opens)
        return "password" if len(secret.strip()) >= 6 and said and secret[:1] != " " else None
    if said and _DIGITS.fullmatch(secret):
        return "password"  # a numeric password or passcode, said as one
    if not looks_like_password(secret) or secret.lower() in _ENCODINGS:
        return None  # "the password is base64 encoded", "... is sha256 hashed"
    if not said and (len(secret) < 8 or not is_random(secret) or secret.startswith("-")):
        return None  # "$env:PW -AsPlainText": a flag
    return "password"


# Names of encodings and hashes, which "the password is ..." says of a password, not as one.
_ENCODINGS = frozenset(
    "base64 base32 base58 base64url b64 hex sha1 sha256 sha384 sha512 md5 bcrypt scrypt argon2"
    " argon2id pbkdf2 utf8 utf-8 utf16 rot13 aes128 aes256 x509 pkcs12 pkcs8".split()
)
# "I set / changed / reset my password to X": what makes "to" say the value.
_SET_BEFORE = re.compile(r"(?i)\b(?:set|chang(?:e|ed|ing)|reset|updat(?:e|ed|ing)|rotated)\b")
_DIGITS = re.compile(r"\d{4,12}")
_DIGIT_RE = re.compile(r"\d")
_LETTER_RE = re.compile(r"[A-Za-z]")


# --- seek: where a match can start ----------------------------------------------------------------
#
# The assignment pattern starts with an optional quote and up to 64 key characters before its
# keyword, so a search tries it at every word: most of its cost on a typical text. A match
# starts where a run of key characters starts (its lookbehind forbids a key character before
# it) or at the quote before one, and that run holds a keyword; so the starts are found from
# the keywords, walking back, and the pattern is only tried there.

# Keywords are found with ``str.find`` in the folded text (shared/redact/anchors.folded:
# lowercase, with the characters ``re.I`` matches to ASCII letters mapped to them): several
# times faster than a regex alternation. Folding keeps every character's position (each folds
# to one character; tests/shared/test_redact_context.py checks every code point).


def find_all(haystack: str, needles: tuple[str, ...]) -> list[int]:
    """Every position where one of ``needles`` starts in ``haystack``, sorted."""
    found = []
    for needle in needles:
        at = haystack.find(needle)
        while at >= 0:
            found.append(at)
            at = haystack.find(needle, at + 1)
    return sorted(found)


class Scan:
    """One text as the seeks see it: its folded form, and where each keyword occurs in it,
    found once however many rules ask."""

    __slots__ = ("_found", "folded", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.folded = folded(text)
        self._found: dict[str, list[int]] = {}

    def find(self, *words: str) -> list[int]:
        """Every position where one of ``words`` (lowercase) occurs, case-insensitively as
        ``re.I`` sees it, sorted."""
        for word in words:
            if word not in self._found:
                self._found[word] = find_all(self.folded, (word,))
        if len(words) == 1:
            return self._found[words[0]]
        return sorted(at for word in words for at in self._found[word])


# Every keyword of _KEYWORDS holds one of these (``private_key`` and the like hold ``key``;
# the walk back from it reaches the key's start all the same).
_ASSIGNMENT_WORDS = (
    "pass",
    "pw",
    "psk",
    "secret",
    "token",
    "key",
    "auth",
    "cred",
    "cookie",
    "sess",
    "salt",
    "pepper",
)


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


def _assignment_starts(scan: Scan) -> list[int]:
    text = scan.text
    found = scan.find(*_ASSIGNMENT_WORDS)
    starts: set[int] = set()
    for at in found:
        if not _ends_in_separator(text, at, keyword=True):
            continue  # the run that holds this keyword is no key, or has no value
        low = max(0, at - 64 - len("encryption_"))  # the prefix, then the keyword's head
        while at > low and text[at - 1] in _KEY_CHARS:
            at -= 1
        starts.add(at)
        if at and text[at - 1] in "\"'":
            starts.add(at - 1)
    return sorted(starts)


# "the key is ...", "my password is ...": a match starts at its keyword.
# What must follow the noun for _SAID_KEY / _SAID_PASSWORD to match, on folded text.
# With no verb, the value's first character must follow the blanks.
_SAID_KEY_TAIL = re.compile(
    r"(?:key|token|secret)s?(?:\*\*)?"
    r"(?:[ \t]*[:(\[]|[ \t]+(?:is|was|to|es|est|ist|é|è|for|of|on|[\"'`]?[a-z0-9_+/=.~-]{16}))"
)
_SAID_PASSWORD_TAIL = re.compile(
    r"(?:pass(?:word|phrase|code|wd)?|pwd?)"
    r"(?:[ \t]*[(\[]"
    r"|[ \t]+(?:is|was|has|got|è|hai|for|to|in|en|para|of|on|at|d[eiauo]|des|(?:re)?set"
    r"|changed|updated|rotated"
    r"|->|=>|\u2192|[-\u2013\u2014]|[\"'`]|[^\s]{8})"
    r"|['\u2019]s[ \t])"
)


def _said_key_starts(scan: Scan) -> list[int]:
    """Where "key", "token" or "secret" (and an "api" before "key") starts, followed by
    "is", "was" or what may be a value."""
    low = scan.folded
    found = scan.find("key", "token", "secret")
    found = [at for at in found if _SAID_KEY_TAIL.match(low, at)]
    return sorted({start for at in found for start in (at - 4, at - 3, at) if start >= 0})


def _passphrase_starts(scan: Scan) -> list[int]:
    """Up to 12 characters before each "phrase" or "mnemonic" (the keyword's start lies
    there: "recovery phrase"), so a text that only says "password" costs no search."""
    found = scan.find("phrase", "mnemonic")
    return sorted({start for at in found for start in range(max(at - 12, 0), at + 1)})


def _said_password_starts(scan: Scan) -> list[int]:
    found = scan.find("pass", "pw")
    return [at for at in found if _SAID_PASSWORD_TAIL.match(scan.folded, at)]


def _flag_starts(scan: Scan) -> list[int]:
    """Each ``-`` at the start of the text or after whitespace."""
    text = scan.text
    return [at for at in find_all(text, ("-",)) if not at or text[at - 1].isspace()]


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

# The rules around the catalogue, in the order they run: most specific first.
BEFORE_CATALOGUE: tuple[RuleSpec, ...] = ((_PEM, _fixed("private_key"), None),)
AFTER_CATALOGUE: tuple[RuleSpec, ...] = (
    (_CREDENTIAL_URL, _judge_url, None),
    (_AUTH_HEADER, _judge_auth_header, None),
    (_BEARER, _judge_bearer, None),
    (_BASIC, _judge_basic, None),
    (_AWS_SECRET, _fixed("aws_secret_key"), _aws_secret_starts),
    (_AZURE_KEY, _fixed("azure_key"), None),
    (_URL_SIGNATURE, _fixed("url_signature"), None),
    (_URL_KEY, _judge_url_key, None),
    (_COMMAND_PASSWORD, _judge_command_password, _command_starts),
    (_CURL_USER, _judge_password_value, _curl_starts),
    (_CLI_FLAG, _judge_cli_flag, _flag_starts),
    (_PASSPHRASE, _judge_passphrase, _passphrase_starts),
    (_SAID_PASSWORD, _judge_said_password, _said_password_starts),
    (_PIN, _fixed("pin"), _pin_starts),
    (_FOREIGN_PASSWORD_PASS, _judge_foreign_password, _foreign_pass_starts),
    (_FOREIGN_PASSWORD, _judge_foreign_password, None),
    (_SAID_KEY, _judge_said_key, _said_key_starts),
    (_ESCAPED_JSON, _judge_keyword_value, None),
    (_XML_ATTRIBUTE, _judge_keyword_value, None),
    (_XML_ATTRIBUTE_REVERSED, _judge_keyword_value, None),
    (_XML_ELEMENT, _judge_keyword_value, None),
    (_YAML_NEXT_LINE, _judge_next_line, _yaml_starts),
    (_TABLE_ROW, _judge_table_row, _row_starts),
    (_TABLE_CELL, _judge_table_cell, None),
    (_ASSIGNMENT, _judge_assignment, _assignment_starts),
)
# Anchors that hold for the text rather than the match, for a rule whose judge reads past its
# match: the gate skips the rule when the text has none of them, as it does for an anchor set
# read off the pattern.
TEXT_ANCHORS: dict[re.Pattern[str], tuple[str, ...]] = {_TABLE_CELL: _HEADER_WORDS}
