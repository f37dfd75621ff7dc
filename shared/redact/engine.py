"""Secret redaction on every write path (DESIGN §6 "Secret redaction", seeds/003 "Secrets are
redacted, deterministically", issue 12).

Public API
    redact(text) -> Redaction(text, labels)
        Replaces each secret it recognises with ``[REDACTED:<label>]`` and reports the sorted,
        unique labels of what it replaced, so events can say *what* was redacted, never the
        value. ``redact_text`` and ``contains_secret`` are shorthands over it.
    redact_many(texts) -> [Redaction]
        The parts of one request redacted together: a secret recognised in one part (by its
        shape or its context) is redacted wherever the parts repeat it, context or not ("my
        password is X" in the user's message, "I won't repeat X" in the reply). ``redact``
        does the same within one text. ``Redaction.values`` holds what was taken out (never
        printed in its repr); ``repeats(values, text)`` names those a text repeats (a tag
        that is the password the save's text named goes whole).
    redact_json(value, found) -> value
        Every string in a JSON value (dicts, lists, tuples) redacted together, keys kept; the
        labels go into ``found``. For the JSON a caller hands the store to keep (an outbox
        reply, a sibling's state).
    find_credential(value) -> str | None
        For identifier fields (``id``, ``session_id``, ``recorded_by``, ``project``): a label
        of a credential found in the whole value or any part of it, or None. A caller
        refuses such a value (``invalid_argument``) rather than rewriting it: an id must not
        hold a secret, and silently changing a caller's id would be worse.
    PLACEHOLDER, is_placeholder(token), strip_placeholders(text)
        What a redaction leaves behind, in any case (``[REDACTED:aws_access_key]``,
        ``[redacted:aws_access_key]`` after folding), and its pieces (``redacted``,
        ``openai-key-redacted-openai-key``, ``openai_key]``): callers never derive ids, slugs,
        tags or entities from them; ``strip_placeholders`` blanks every placeholder out of a
        text before anything is derived from it.

What it covers
    * The credential catalogue, ``shared/redact/credentials.toml`` (274 formats; fields and kinds in
      shared/redact/catalogue.py): payment card numbers (Luhn-checked), cloud (AWS, Azure,
      GCP, Alibaba, Tencent, DigitalOcean, Heroku, Cloudflare, Vercel, Netlify, Fly.io,
      Vault, Doppler, Terraform ...), VCS (GitHub, GitLab, Bitbucket, Atlassian,
      Sourcegraph), CI (CircleCI, Buildkite, JFrog, SonarQube,
      Harness ...), chat (Slack, Discord bot tokens and webhooks, Telegram, Teams), payments
      (Stripe, Square, Braintree, Plaid ...), LLM/AI APIs (OpenAI, Anthropic, OpenRouter, Groq,
      xAI, Hugging Face, Replicate, LangSmith, Pinecone ...), databases (PlanetScale, Neon,
      Supabase, MongoDB Atlas), package registries (npm, PyPI, RubyGems, NuGet, Docker Hub,
      crates.io ...), observability (Datadog, New Relic, Sentry, Grafana, Dynatrace ...),
      email/SMS (SendGrid, Mailgun, Mailchimp, Brevo, Twilio ...), auth providers (Okta,
      Auth0, Clerk, Ory), private keys (PEM blocks, age, PuTTY, WireGuard, Bitcoin WIF, nsec),
      OpenVPN static keys, SCRAM verifiers, JWTs. Formats that identify themselves (a prefix,
      a structure, a checksum) are matched anywhere; formats without a shape of their own
      only next to their vendor's name ("the Datadog API key is <32 hex>").
    * Context, in shared/redact/context.py: ``Authorization: Bearer|Basic|Token <t>``,
      credentialed URLs and connection strings (only the password goes), ``AccountKey=``,
      URL signatures, ``aws_secret_access_key``, labelled assignments and flags whose name
      says credential (``DB_PASSWORD=``, ``"token": "..."``, ``clientSecret:``, ``--password
      <pw>``, ``STRIPE_KEY=`` with a key-shaped value), commands that take a password on their
      command line (``mysql -p<pw>``, ``sshpass -p '<pw>'``, ``redis-cli -a``, ``curl -u
      user:<pw>``), and "my password is <pw>" / "the key is <key-shaped value>" — also with
      no verb ("the secret <v>", "api key <v>", "wifi password <pw>"), where the value must
      look more like a key (20+ characters mixing digits and both cases, or 32+ hex) or a
      password (8+, not a plain word); XML ``key``/``name`` and ``value`` attributes in either
      order; the cells of a pipe table's column whose header names a credential (``| user |
      password |``), the other columns kept.
    * Other tools' command lines, in shared/redact/commands.py (``zip -P``, ``7z -p``,
      ``openssl -k``, ``ldapsearch -w``, ``smbclient -U user%<pw>``, ``htpasswd -b``,
      ``sqlplus user/<pw>@db``, ``net use``, ``setx``, a password piped to ``sudo -S`` or
      ``--password-stdin``, ``npm config set ..._authToken``, ``gh secret set --body``,
      ``kubectl create secret --from-literal``), and codes said as such, in
      shared/redact/codes.py (one-time codes, backup code lists, TOTP seeds, seed words,
      BitLocker and FileVault recovery keys).
    * Source code, in shared/redact/sources.py: a credential named in a string and given
      beside it (``define('DB_PASSWORD', '...')``, ``os.Setenv("TOKEN", "...")``), setters
      (``setPassword("...")``), calls that take a user then a password (``smtp.login(u,
      "...")``, ``BasicAuth("bob", "...")``, ``mysqli_connect(h, u, "...")``), SQL
      (``IDENTIFIED BY '...'``, ``WITH PASSWORD '...'``), ``ConvertTo-SecureString '...'``,
      Go's ``user:<pw>@tcp(host)/db`` and name/value pairs (a Kubernetes ``env`` entry,
      ``{"name": "DB_PASSWORD", "value": "..."}``), a password by its place among a call's
      arguments (``smtp.PlainAuth("", user, "...", host)``, ``Net::SMTP.start(...)``,
      ``ftplib.FTP(host, user, "...")``), Terraform's ``variable "db_password" { default =
      "..." }`` and JSON with escaped quotes (``{&quot;password&quot;:&quot;...&quot;}``).
      The assignments of shared/redact/context.py also read a literal's prefix and triple quotes
      (``password = r'...'``) and a subscript (``os.environ["DB_PASSWORD"] = "..."``).
    * Base64 the context says is secret, in shared/redact/encoded.py: every value of a
      Kubernetes Secret's ``data:``/``stringData:`` (YAML or JSON, any key), a value said to
      be a credential's base64 ("the creds are base64 <v>", "<v> (base64)"), ``echo -n
      'user:<pw>' | base64``, and an ``auth`` value that decodes to ``user:password``.
    * Values whose context is on the line before, in shared/redact/lines.py: "here is the
      password for X" or a bare ``Password`` label then the value alone on the next line, a
      command that prints a credential (``cat master.key``, ``| base64 -d``, ``openssl
      rand``, ``get-login-password``) then its output; also ODBC's braced ``PWD={...}`` and
      a key named only ``key`` with a key-shaped value; the second line of a two-line
      credentials file (OpenVPN's ``auth-user-pass``) under its name. ``redact_many`` reads
      a part that is one word after the last line of the part before it (a secret split over
      two messages).
    * Configuration lines, in shared/redact/files.py: ``.pgpass`` lines, directives
      (``requirepass <pw>``, ``username admin password 0 <pw>``), a label alone on its line
      and the value on the next, Redis' ``AUTH``, Cookie headers' session ids, Wi-Fi (the QR
      code's ``WIFI:...;P:<pw>;;``, "the wifi key is ..."), Redis Sentinel's ``auth-pass``,
      ``CONFIG SET requirepass``, an ACL user's ``><pw>``, pgbouncer's ``userlist.txt``, SNMP
      communities, a cookies.txt line, OpenVPN's inline ``<auth-user-pass>``, and the column
      of a CSV, TSV or ";" table whose header names a credential.

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
      password", "the token budget is 2000", "my password manager is great", "the key point
      is ...", "token of appreciation") never match: no separator, or no key-shaped value.
    * ``PWD=/some/dir`` is the shell's working directory, not a password; a ``cache_key=`` or
      ``sort_key:`` value stays unless it is 12+ characters of mixed-case letters and digits.
    * A credentialed URL keeps everything but the password; ``host:443/path@scope`` is a port
      and a path, not a password.
    * The most specific shape wins: ``OPENAI_API_KEY=sk-...`` is labelled ``openai_key``; a
      vendor named next to a value beats a shape shared by several vendors.
    * Certificates, public keys and publishable keys (``pk_live_``, Sentry DSNs) pass.
    * Checksums: GitHub's ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` tokens end in a CRC32 of
      their random part; a prefix-and-length match is redacted whether or not that tail
      verifies. The prefix never occurs in prose, so the check would buy no precision, while
      a token with a bad tail is still most likely a real one mistyped or cut (or a format
      revision), and letting it through would be the leak this module exists to prevent.
      ``github_checksum_ok`` verifies the tail and tests hold the catalogue's samples to it.
      A checksum *gates* a match only where the shape alone is weak: Bitcoin WIF keys
      (base58check) next to a wallet keyword.
    * Unicode: the text is NFKC-normalised before matching, so a key typed in full-width or
      other compatibility characters is found; an odd space (no-break, thin, ideographic)
      inside a run that reads as a key is dropped, and Cyrillic or Greek look-alike letters in
      a word that mixes them with Latin ones ("раssword") are read as Latin (words in one
      script, "пароль", keep theirs). When something is redacted the result is the
      normalised text with the markers in it, so it holds no secret in any normal form; when
      nothing is, the caller's text comes back untouched.

A denylist of shapes: only what is listed is recognised and an unknown format passes
untouched, which is why the extraction prompt still forbids secrets. There is deliberately no
generic high-entropy rule: git SHAs, sha256 hashes, UUIDs, ULIDs and base64 in prose would
drown it. Where the shapes come from: the vendors' documented prefixes and lengths (GitHub's
"Behind GitHub's new authentication token formats", GitLab's token prefix table, Slack's token
types, Stripe's API keys page, AWS IAM "unique identifier prefixes", ...; each catalogue entry
names its source), RFC 7519 for JWT, RFC 7468 for PEM, RFC 3986 §3.2.1 for userinfo; the
gitleaks default rule set and Yelp's detect-secrets plugins were read as catalogues of shapes;
no code or pattern was copied from either.

Mechanics: the rules run in order, most specific first (PEM blocks, the catalogue with its
vendor-keyword entries first, then the context rules). A match never spans an existing marker,
so a marker is never re-redacted, though lookbehinds and judges see the whole text. A match a
judge turns down swallows nothing (the search resumes one character on), and a "value" that is
itself the next ``key=`` is left to that key. Passes repeat until nothing changes: a pass that
changes anything turns at least one character into part of a marker, so this ends, and the
result is a fixed point, which makes ``redact`` idempotent by construction. (A pass stops at
the last rule that changed the text in the pass before, when it has changed nothing so far:
the rules after it would see the text they already left alone.) Every rule has anchors
(literals read off its own pattern, one of which every match holds; see
shared/redact/anchors.py); the gate (shared/redact/gate.py) finds which anchors occur and only
their rules run, so most prose runs no rule at all; the answer is the same. The catalogue is
read and compiled on the first call, once per process.
"""

from __future__ import annotations

import bisect
import importlib
import itertools
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.redact.gate import Rule
    from shared.redact.rule import Scan

__all__ = [
    "PLACEHOLDER",
    "Redaction",
    "contains_secret",
    "find_credential",
    "is_placeholder",
    "redact",
    "redact_json",
    "redact_text",
    "strip_placeholders",
]


@dataclass(frozen=True)
class Redaction:
    """The redacted text and the sorted, unique labels of what was redacted. ``values`` holds
    the secrets themselves with their labels (``redact_many`` redacts them wherever else they
    are repeated); it is never printed, so a logged ``Redaction`` shows no secret."""

    text: str
    labels: tuple[str, ...]
    values: tuple[tuple[str, str], ...] = field(default=(), repr=False, compare=False)


# A secret shorter than this is not looked for elsewhere (a 3-digit code would take every
# number of the text with it).
MIN_ECHO = 4


class _Found:
    """What a redaction found: the labels, and each secret (its first label)."""

    __slots__ = ("labels", "values")

    def __init__(self) -> None:
        self.labels: set[str] = set()
        self.values: dict[str, str] = {}

    def add(self, label: str, value: str) -> None:
        self.labels.add(label)
        value = value.strip()
        if len(value) >= MIN_ECHO and "[REDACTED:" not in value and not is_placeholder(value):
            self.values.setdefault(value, label)


# The rules' modules (their patterns, the contextual judges, the gate) are imported on the first
# call: a process that never redacts (a CLI recall, issue 13) does not compile ~40 patterns
# (~13 ms). Each function below imports what it uses; after the first call that is a lookup.
# Names tests/shared/test_redact.py reaches through this module, resolved on first use.
_LAZY = {
    "_FOLD": ("shared.redact.anchors", "FOLD"),
    "_anchors": ("shared.redact.anchors", "anchors"),
    "_folded": ("shared.redact.anchors", "folded"),
    "_occurs": ("shared.redact.anchors", "occurs"),
    "_candidates": ("shared.redact.gate", "candidates"),
}


def __getattr__(name: str) -> Any:
    """``_RULES`` and ``_GATE``, built on first use (PEP 562): importing this module reads no
    file and compiles no rule; the names in ``_LAZY`` import their module then. (Any other
    name, such as the ``__path__`` an import statement asks about, imports nothing.)"""
    if name in ("_RULES", "_GATE"):
        from shared.redact.gate import engine

        return engine().rules if name == "_RULES" else engine().gate
    if name in _LAZY:
        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- engine ---------------------------------------------------------------------------------------


def _secret_span(m: re.Match[str]) -> tuple[int, int]:
    """The part to replace: the ``secret`` or ``bare`` group when the rule has one, else all."""
    for name in ("secret", "bare"):
        if name in m.re.groupindex and m.group(name) is not None:
            return m.span(name)
    return m.span()


def _gaps(text: str) -> list[tuple[int, int]]:
    """The spans of ``text`` outside existing markers: the only places rules look."""
    from shared.redact.rule import MARKER

    bounds = [0]
    for marker in MARKER.finditer(text):
        bounds += marker.span()
    return list(zip(bounds[::2], [*bounds[1::2], len(text)], strict=True))


def _finder(rule: Rule, scan: Scan) -> Any:
    """``search(pos, endpos)`` for ``rule`` over the scanned text: the regex's own search, or
    for a rule that seeks, a match tried only at the starts it names (the same leftmost
    match); None when it names none."""
    text = scan.text
    if rule.seek is None:
        return lambda pos, endpos: rule.pattern.search(text, pos, endpos)
    starts = rule.seek(scan)
    if not starts:
        return None
    match = rule.pattern.match

    def search(pos: int, endpos: int) -> re.Match[str] | None:
        for start in starts[bisect.bisect_left(starts, pos) :]:
            if start >= endpos:
                return None
            if (m := match(text, start, endpos)) is not None:
                return m
        return None

    return search


def _apply_rule(rule: Rule, scan: Scan, gaps: list[tuple[int, int]], found: _Found) -> str:
    """Like ``pattern.sub`` outside markers, with two differences: a match never spans a
    marker, though lookbehinds and judges still see the whole text (a marker earlier on the
    line is still "earlier on the line"); and a match the judge turns down swallows nothing,
    the search resumes one character later (``PASSWORD: JWT_SECRET: 'x'``)."""
    out: list[str] = []
    kept_to, text = 0, scan.text
    search = _finder(rule, scan)
    if search is None:
        return text  # the rule names no place it could start
    for low, high in gaps:
        search_from = low
        while (m := search(search_from, high)) is not None:
            start, end = _secret_span(m)
            label = rule.judge(m, text[start:end])
            if label is None:
                search_from = m.start() + 1
                continue
            found.add(label, text[start:end])
            out += (text[kept_to:start], f"[REDACTED:{label}]")
            kept_to, search_from = end, max(m.end(), m.start() + 1)
    if not out:
        return text
    out.append(text[kept_to:])
    return "".join(out)


def _one_pass(text: str, found: _Found, rules: tuple[Rule, ...], until: int) -> tuple[str, int]:
    """Every rule once, in order; the text and the index of the last rule that changed it
    (-1 for none). Past ``until``, a pass that has changed nothing stops: those rules saw
    this very text in the previous pass and changed nothing, and they are pure."""
    from shared.redact.rule import Scan

    scan, gaps = Scan(text), _gaps(text)
    changed_at = -1
    for i, rule in enumerate(rules):
        if i > until and changed_at < 0:
            break
        redacted = _apply_rule(rule, scan, gaps, found)
        if redacted is not scan.text:
            scan, gaps, changed_at = Scan(redacted), _gaps(redacted), i
    return scan.text, changed_at


def _fixed_point(text: str, rules: tuple[Rule, ...], found: _Found) -> str:
    # Each pass that changes the text shrinks what lies outside markers, so len(text) + 1
    # passes always reach the fixed point; in practice it is two, the second one short.
    until = len(rules) - 1
    for _ in range(len(text) + 1 if rules else 0):
        text, until = _one_pass(text, found, rules, until)
        if until < 0:
            break
    return text


# Invisible characters NFKC keeps (zero-width space, joiners, word joiner, BOM, soft hyphen):
# one inside a token ("ghp_aBc\u200bDeF...") would hide it from every rule.
_INVISIBLE = re.compile("[\u00ad\u200b-\u200d\u2060\ufeff]")


# Spaces other than ASCII's (no-break, the typographic widths, ideographic): NFKC makes each a
# space, so one typed inside a token ("ghp_aBcDeFgHiJ\u00a0kLmNo...") splits it in two. One
# between runs of token characters is dropped when the runs, joined, read as a key (16+
# characters mixing letter cases or digits); "10\u00a0km", "Jean\u00a0Dupont" and a
# French "mot\u00a0:" keep theirs.
_ODD_SPACE = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_SPLIT_RUN = re.compile("[\\w+/=.-]+(?:[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000][\\w+/=.-]+)+")
# Cyrillic and Greek letters drawn as Latin ones (the single-letter mappings of Unicode's
# confusables.txt, UTS #39): a word that mixes them with Latin letters ("раssword" with a
# Cyrillic р and а, "tоken" with a Cyrillic о) is spelled to slip past a filter, and its
# look-alikes are read as the letters they imitate. A word in one script ("пароль", "токен",
# "ΑΒΓ") is left as written.
_CONFUSABLE = str.maketrans(
    "аеорсухѕіјԁԛԝһүвкмнтАВЕКМНОРСТХУЅІЈαονικυχεΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxsijdqwhyBkmHTABEKMHOPCTXYSIJaovikuxeABEZHIKMNOPTYX",
)
_MIXED = re.compile("[A-Za-z][\u0370-\u03ff\u0400-\u04ff]|[\u0370-\u03ff\u0400-\u04ff][A-Za-z]")
_LETTERS = re.compile(r"[^\W\d_]{2,}")


def _glue(run: re.Match[str]) -> str:
    from shared.redact.catalogue import is_random

    joined = _ODD_SPACE.sub("", run.group())
    key = unicodedata.normalize("NFKC", joined)
    return joined if len(key) >= 16 and is_random(key) else run.group()


def _unmix(word: re.Match[str]) -> str:
    text = word.group()
    return text.translate(_CONFUSABLE) if _MIXED.search(text) is not None else text


def _nfkc(text: str) -> str:
    """The form rules see: no invisible characters, no odd space inside a key, NFKC, and
    look-alike letters in a word of mixed scripts read as Latin."""
    if text.isascii():
        return text
    if _INVISIBLE.search(text) is not None:
        text = _INVISIBLE.sub("", text)
    if _ODD_SPACE.search(text) is not None:
        text = _SPLIT_RUN.sub(_glue, text)
    if not unicodedata.is_normalized("NFKC", text):
        text = unicodedata.normalize("NFKC", text)
    if _MIXED.search(text) is not None:
        text = _LETTERS.sub(_unmix, text)
    return text


def _redact_with(text: str, rules: tuple[Rule, ...] | None = None) -> Redaction:
    """``rules`` (by default the candidates) over the NFKC form of ``text``: the redacted
    normal form when something was redacted, else ``text`` itself, untouched."""
    from shared.redact.gate import candidates, engine

    normal = _nfkc(text)
    gated = rules is None
    if rules is None:
        rules = candidates(normal)
    found = _Found()
    redacted = _fixed_point(normal, rules, found) if rules else normal
    while gated and redacted is not normal:
        # A marker can make an anchor where the text had none: ``...qshodan api key: x`` has
        # no word "shodan" until the token glued before it is a marker. The gate is asked
        # again about what came out; a rule it adds reruns the whole, in catalogue order.
        have = {id(rule) for rule in rules}
        more = [rule for rule in candidates(redacted) if id(rule) not in have]
        if not more:
            break
        rank = engine().rank
        rules = tuple(sorted((*rules, *more), key=lambda rule: rank[id(rule)]))
        found = _Found()
        redacted = _fixed_point(normal, rules, found)
    if not found.labels:
        return Redaction(text, ())
    # a secret recognised once by its context ("my password is X") is redacted where the
    # text repeats it without one ("... and X again")
    if found.values:
        redacted = _echoes(found.values).sub(_marker(found.values), redacted)
    values = tuple(sorted(found.values.items()))
    return Redaction(text=redacted, labels=tuple(sorted(found.labels)), values=values)


def _echoes(values: dict[str, str]) -> re.Pattern[str]:
    """Any of ``values`` standing alone, in any case (a tag is casefolded, and a password
    in another case still gives most of it away): not inside a longer run of word
    characters at an end that is one ("1234" is not taken out of "12345"), longest first."""
    parts = []
    for value in sorted(values, key=lambda v: (-len(v), v)):
        part = re.escape(value)
        if value[0].isalnum() or value[0] == "_":
            part = r"(?<!\w)" + part
        if value[-1].isalnum() or value[-1] == "_":
            part += r"(?!\w)"
        parts.append(part)
    return re.compile("|".join(parts), re.IGNORECASE)


def _label_of(values: dict[str, str]) -> Callable[[str], str]:
    folded = {value.casefold(): label for value, label in values.items()}
    return lambda found: values.get(found) or folded.get(found.casefold(), "password")


def _marker(values: dict[str, str]) -> Callable[[re.Match[str]], str]:
    label = _label_of(values)
    return lambda m: f"[REDACTED:{label(m.group())}]"


# --- public API -----------------------------------------------------------------------------------


def redact(text: str) -> Redaction:
    """Replace every recognised secret in ``text`` with ``[REDACTED:<label>]``. Matching runs
    on the NFKC form; see "Unicode" in the module docstring for what comes back."""
    if not text:  # a save's absent title: no rule can match nothing (~25 µs of a save)
        return Redaction(text, ())
    return _redact_with(text)


def redact_many(texts: Sequence[str]) -> list[Redaction]:
    """Each text redacted, and every secret found in any of them redacted in all of them:
    the parts of one request (a turn's messages, a save's text and its tags) are read
    together, so a password recognised in the user's message ("my password is X") is
    redacted too where the assistant's reply repeats it bare ("I won't repeat X"), and a
    part that is only a value is read after the line before it ("the password is" then
    "X" as the next message)."""
    results = [redact(text) for text in texts]
    values: dict[str, str] = {}
    for result in results:
        for value, kind in result.values:
            values.setdefault(value, kind)
    values.update({v: k for v, k in _across(texts).items() if v not in values})
    if not values:
        return results
    echoes, marker, label = _echoes(values), _marker(values), _label_of(values)
    out = []
    for text, result in zip(texts, results, strict=True):
        base = result.text if result.labels else _nfkc(text)
        repeated = {m.group() for m in echoes.finditer(base)}
        if not repeated:
            out.append(result)
            continue
        labels = {*result.labels, *(label(v) for v in repeated)}
        found = {v: label(v) for v in repeated}
        found.update(result.values)
        out.append(
            Redaction(
                text=echoes.sub(marker, base),
                labels=tuple(sorted(labels)),
                values=tuple(sorted(found.items())),
            )
        )
    return out


def _across(texts: Sequence[str]) -> dict[str, str]:
    """Secrets split over two parts: a part that is one run of non-blanks, read after the
    last line of the part before it ("the db password is" then "<pw>" as the next message,
    "here is the token for prod" then "<token>"). Only such a one-word part costs a call."""
    found: dict[str, str] = {}
    for before, text in itertools.pairwise(texts):
        word = text.strip()
        if len(word) < MIN_ECHO or len(word) > 4096 or len(word.split()) != 1:
            continue
        tail = before.rstrip().rsplit("\n", 1)[-1].strip()
        if not tail:
            continue
        for value, label in redact(f"{tail}\n{word}").values:
            if value in word:
                found.setdefault(value, label)
    return found


def repeats(values: Sequence[tuple[str, str]], text: str) -> tuple[str, ...]:
    """The labels of those of ``values`` (a ``Redaction``'s) that ``text`` repeats."""
    if not values or not text:
        return ()
    table = dict(values)
    label = _label_of(table)
    return tuple(sorted({label(m.group()) for m in _echoes(table).finditer(_nfkc(text))}))


def redact_text(text: str) -> str:
    """``redact(text).text``."""
    return redact(text).text


def redact_json(value: Any, found: set[str] | None = None) -> Any:
    """``value`` with every string in it redacted (a dict's values, not its keys; a tuple
    comes back a list, as JSON has it), read together as ``redact_many`` reads a request's
    parts; the labels found go into ``found`` when one is given. A key that is not a string
    raises ``TypeError``: no JSON has one."""
    strings: list[str] = []
    _strings_of(value, strings)
    results = iter(redact_many(strings))

    def rebuilt(x: Any) -> Any:
        if isinstance(x, str):
            result = next(results)
            if found is not None:
                found.update(result.labels)
            return result.text
        if isinstance(x, dict):
            return {k: rebuilt(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [rebuilt(v) for v in x]
        return x

    return rebuilt(value)


def _strings_of(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("a JSON object's keys are strings")
        for x in value.values():
            _strings_of(x, out)
    elif isinstance(value, list | tuple):
        for x in value:
            _strings_of(x, out)


def contains_secret(text: str) -> bool:
    """Whether ``redact`` would replace anything in ``text``."""
    return bool(redact(text).labels)


_ID_SEPARATORS = "-_./:@+"


def find_credential(value: str) -> str | None:
    """A label of a credential in ``value`` (the whole of it or any part; the first in label
    order), or None. For identifier fields, which refuse a secret rather than rewrite it.
    A token glued to
    another word (``note-ghp_...``) is no token to ``redact``, so the value is also read with
    each separator in turn taken for a space; and a token whose own shape has that separator
    (``note-xoxb-123-456-abc``: a Slack token is hyphenated) is read from each place a
    separator starts a new part."""
    from shared.redact.gate import candidates

    spaced = (value.replace(sep, " ") for sep in _ID_SEPARATORS if sep in value)
    # A tail's anchors are all in the whole value, so with no candidate rule for the whole
    # there is none for a tail: an ordinary id (a UUID session id) costs no extra calls.
    glued = bool(candidates(_nfkc(value)))
    tails = (value[i + 1 :] for i, ch in enumerate(value) if glued and ch in _ID_SEPARATORS)
    for text in (value, *spaced, *tails):
        labels = redact(text).labels
        if labels:
            return labels[0]
    return None


# ``[REDACTED:label]`` in any case, as redact writes it or as a fold left it.
PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9_]+\]", re.I)
# The tail of a placeholder cut at its colon (``openai_key]``), and the words of a slug.
_LABEL_TAIL = re.compile(r"\W*[a-z0-9_]+\]\W*", re.I)
_WORDS = re.compile(r"[a-z0-9]+")


def is_placeholder(token: str) -> bool:
    """Whether ``token`` is a placeholder or a piece of one: ``[REDACTED:jwt]`` in any case,
    a label's tail ``openai_key]``, or anything with the word ``redacted`` in it
    (``redacted``, ``redacted-openai-key``, ``openai-key-redacted-openai-key``). Never an id,
    a slug, a tag or an entity."""
    if PLACEHOLDER.search(token) or _LABEL_TAIL.fullmatch(token):
        return True
    return "redacted" in _WORDS.findall(token.lower())


def strip_placeholders(text: str) -> str:
    """``text`` with every placeholder blanked to one space: what ids, slugs, tags and
    entities may be derived from."""
    return PLACEHOLDER.sub(" ", text)
