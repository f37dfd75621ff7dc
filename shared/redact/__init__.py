"""Secret redaction on every write path: each secret the rules recognise becomes
``[REDACTED:<label>]`` before anything is written, logged or sent. It is deterministic (shapes
and contexts, no model and no network call), so the same text always comes out the same.

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
    * The credential catalogue, ``shared/redact/credentials.toml`` (316 formats, 42 of them
      widened from public secret scanners' rules, each citing its rule; fields and kinds in
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
    * Context, in the families that shared/redact/context.py puts in order (web.py,
      shell.py, prose.py, languages.py, markup.py, tables.py, assignments.py, and what they
      share in keywords.py): ``Authorization: Bearer|Basic|Token <t>``,
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
      The assignments of shared/redact/assignments.py also read a literal's prefix and triple
      quotes (``password = r'...'``) and a subscript (``os.environ["DB_PASSWORD"] = "..."``).
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

Importing the package costs nothing: each public name is imported from its module on first use
(PEP 562, below), so a process that never redacts (a CLI recall) or that imports one rule
family's module pays for no more. The engine is shared/redact/engine.py.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.redact.engine import (
        Redaction,
        contains_secret,
        find_credential,
        redact,
        redact_json,
        redact_many,
        redact_text,
        repeats,
    )
    from shared.redact.placeholders import PLACEHOLDER, is_placeholder, strip_placeholders

__all__ = [
    "PLACEHOLDER",
    "Redaction",
    "contains_secret",
    "find_credential",
    "is_placeholder",
    "redact",
    "redact_json",
    "redact_many",
    "redact_text",
    "repeats",
    "strip_placeholders",
]

# Each public name, and the module that defines it.
_HOME = {
    **dict.fromkeys(__all__, "shared.redact.engine"),
    **dict.fromkeys(
        ("PLACEHOLDER", "is_placeholder", "strip_placeholders"), "shared.redact.placeholders"
    ),
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for; any other name
    (a submodule an import statement looks for) is not here."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
