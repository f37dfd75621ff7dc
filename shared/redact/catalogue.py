"""The credential catalogue as data: ``shared/redact/credentials.toml``, shipped as package
data, read once (lazily, on the first redaction) and validated here; ``shared.redact`` compiles
it into its matcher.

One ``[[format]]`` table per credential format:

    id          unique name of the format (``github_ghp``)
    label       what a redaction says: ``[REDACTED:<label>]`` (several formats may share one)
    kind        what makes the format self-identifying:
                  prefix     a documented literal prefix (``ghp_``, ``xoxb-``, ``AKIA``)
                  structure  a fixed shape around literals (``<36 hex>NRAL``, ``.atlasv1.``)
                  checksum   a shape whose tail or body carries a checksum (GitHub's CRC32,
                             Bitcoin's base58check); see CHECKS for which ones gate a match
                  keyword    no shape of its own: the vendor's name must be close by ("the
                             Datadog API key is <32 hex>")
    pattern     the regex, for every kind but keyword-with-vendor. A token pattern is wrapped
                so that nothing token-like touches either end; when it has a ``secret`` group,
                only that group is replaced (the context stays readable)
    vendor, value
                instead of ``pattern``: vendor names (a regex alternation, matched
                case-insensitively as whole words) and the value's shape. The loader composes
                VENDOR_PATTERN from them: the vendor, up to 24 word characters, a credential
                noun (key/token/secret/password/pat), then ``=``, ``:`` or "is", then the value
    check       optional: the name of a predicate in CHECKS the matched secret must satisfy
    sample      a synthetic positive: redacted, with this label, inside any sentence
    lookalike   text that must survive unchanged
    source      where the format's facts come from
    cite        optional: the public secret scanner's rule the entry was widened from, as
                ``<owner>/<repo> <path>`` (a trufflehog detector) or ``npm <package> (rule
                <id>)`` (a secretlint rule package); the pattern is written from the format,
                not copied

The samples are fakes generated for the catalogue (seeded random characters in the documented
alphabet, with a valid checksum where the format has one); none is a real credential.
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
import tomllib
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources

from shared.contract.errors import UnknownError

__all__ = ["CHECKS", "KINDS", "Format", "catalogue", "github_checksum_ok", "parse_catalogue"]

KINDS = frozenset({"prefix", "structure", "checksum", "keyword"})
_LABEL = re.compile(r"[a-z0-9_]+")

# "<vendor> ... key|token|secret|password|pat ... (=|:|is) <value>": the value is the secret.
VENDOR_PATTERN = (
    r"(?<![A-Za-z0-9])(?i:{vendor})(?![A-Za-z0-9])[A-Za-z0-9_ .-]{{0,24}}?"
    r"(?i:key|token|secret|password|passwd|pat|pw|authtoken)[A-Za-z0-9_.-]{{0,8}}?[\"']?"
    r"(?:[ \t]*(?:=>|:=|[:=])|[ \t]+(?i:is|was)[ \t]*:?)[ \t]*[\"'`]?"
    r"(?P<secret>{value})(?![A-Za-z0-9_-])"
)


# --- checks: predicates on the matched secret ----------------------------------------------------

_DIGIT = re.compile(r"\d")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")
_LETTER = re.compile(r"[A-Za-z]")
_SYMBOL_OR_DIGIT = re.compile(r"[^A-Za-z]")
_HEX32 = re.compile(r"[0-9a-f]{32,}")


def is_random(value: str) -> bool:
    """At least two of digit / lower / inner upper: a key, not a word or a Capitalized Word."""
    classes = (_DIGIT.search(value), _LOWER.search(value), _UPPER.search(value[1:]))
    return sum(found is not None for found in classes) >= 2


def is_strong(value: str) -> bool:
    """Digit, lower and upper (base62 keys) or 32+ lowercase hex."""
    mixed = _DIGIT.search(value) and _LOWER.search(value) and _UPPER.search(value)
    return bool(mixed) or _HEX32.fullmatch(value) is not None


def looks_like_password(value: str) -> bool:
    """Six or more, a letter and a digit or symbol: a password, not a word."""
    return len(value) >= 6 and bool(_LETTER.search(value) and _SYMBOL_OR_DIGIT.search(value))


def entropy_bits(value: str) -> float:
    """Shannon entropy per character of ``value``, in bits."""
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def base58check_ok(value: str) -> bool:
    """A Bitcoin WIF private key: base58 of 0x80 + 32 bytes (+ 0x01) + 4-byte double-SHA256."""
    number = 0
    for char in value:
        at = _B58.find(char)
        if at < 0:
            return False
        number = number * 58 + at
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    body, tail = raw[:-4], raw[-4:]
    digest = hashlib.sha256(hashlib.sha256(body).digest()).digest()
    return len(body) in (33, 34) and body[0] == 0x80 and digest[:4] == tail


def discord_id_ok(value: str) -> bool:
    """A Discord bot token's first segment is base64 of the bot's numeric id (a snowflake)."""
    head = value.split(".", 1)[0]
    try:
        raw = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except ValueError:
        return False
    return raw.isdigit() and 17 <= len(raw) <= 20


_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def github_checksum(entropy: str) -> str:
    """The 6-character base62 CRC32 tail GitHub appends to the 30 random characters of a
    ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` token ("Behind GitHub's new authentication
    token formats", 2021): the CRC32 of those 30 characters in base62 (digits, upper, lower),
    zero-padded, as public validators compute it. Not checked against a live token here (no
    network), which is one more reason it never decides a redaction."""
    number = zlib.crc32(entropy.encode())
    digits = ""
    while number:
        number, rest = divmod(number, 62)
        digits = _B62[rest] + digits
    return digits.rjust(6, "0")


def github_checksum_ok(token: str) -> bool:
    """Whether a ``gh?_`` token of 40 characters carries a valid CRC32 tail. Reported, never
    required: see "Decisions" in shared/redact/__init__.py."""
    body = token[4:]
    return len(body) == 36 and github_checksum(body[:30]) == body[30:]


def luhn_ok(value: str) -> bool:
    """Whether the digits of ``value`` (spaces and hyphens ignored) pass the Luhn check that
    every payment card number carries (ISO/IEC 7812-1)."""
    total = 0
    for i, char in enumerate(reversed([c for c in value if c.isdigit()])):
        digit = int(char) * (2 if i % 2 else 1)
        total += digit - 9 if digit > 9 else digit
    return total % 10 == 0


_CARD = re.compile(
    r"(?:4\d{3}|5[1-5]\d{2}|2[2-7]\d{2}|6011|65\d{2})(?:[ -]?\d{4}){3}"
    r"|3[47]\d{2}[ -]?\d{6}[ -]?\d{5}"
)


def card_ok(value: str) -> bool:
    """A payment card number: a brand's prefix and length (Visa, Mastercard, Amex,
    Discover), grouped as printed or not, and a valid Luhn check digit. The pattern only
    finds 15-16 digit runs cheaply; this says which are cards."""
    return _CARD.fullmatch(value) is not None and luhn_ok(value)


def bip32_prefix(value: str) -> bool:
    """An extended private key's version prefix: xprv/tprv (BIP-32), yprv/zprv/uprv/vprv and
    the multisig Yprv/Zprv/Uprv/Vprv (SLIP-132)."""
    return value[:1] in "xtyzuvYZUV"


CHECKS: dict[str, Callable[[str], bool]] = {
    "luhn": luhn_ok,
    "payment_card": card_ok,
    "random": is_random,
    "strong": is_strong,
    "password": looks_like_password,
    "base58check": base58check_ok,
    "bip32_prefix": bip32_prefix,
    "discord_id": discord_id_ok,
}


# --- the data file ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Format:
    """One credential format of the catalogue (fields as in the module docstring)."""

    id: str
    label: str
    kind: str
    pattern: str
    check: str | None
    sample: str
    lookalike: str
    source: str
    has_context: bool  # the pattern holds a ``secret`` group: only that part is replaced
    # For a vendor+value entry: the first word of each vendor name, lowercased ("azure" for
    # "azure openai"); the matcher only tries the entry where one of them occurs.
    vendor_words: tuple[str, ...] = ()
    vendor_reach: int = 0  # the longest vendor name, in characters
    cite: str = ""  # the public scanner rule the entry was widened from, if any


_REQUIRED = ("id", "label", "kind", "sample", "lookalike", "source")


def _pattern(entry: dict[str, object]) -> str:
    if "pattern" in entry:
        return str(entry["pattern"])
    if "vendor" in entry and "value" in entry:
        return VENDOR_PATTERN.format(vendor=entry["vendor"], value=entry["value"])
    raise UnknownError(f"credentials.toml: {entry.get('id')!r} needs a pattern or vendor+value")


def _format(entry: dict[str, object]) -> Format:
    missing = [name for name in _REQUIRED if not isinstance(entry.get(name), str)]
    if missing:
        raise UnknownError(f"credentials.toml: {entry.get('id')!r} lacks {', '.join(missing)}")
    check = entry.get("check")
    if check is not None and check not in CHECKS:
        raise UnknownError(f"credentials.toml: {entry['id']!r} names an unknown check {check!r}")
    if entry["kind"] not in KINDS or not _LABEL.fullmatch(str(entry["label"])):
        raise UnknownError(f"credentials.toml: {entry['id']!r} has a bad kind or label")
    cite = entry.get("cite", "")
    if not isinstance(cite, str) or ("cite" in entry and not cite.strip()):
        raise UnknownError(f"credentials.toml: {entry['id']!r} has an empty or bad cite")
    pattern = _pattern(entry)
    try:
        compiled = re.compile(pattern)
    except re.error as e:
        raise UnknownError(f"credentials.toml: {entry['id']!r}: {e}") from e
    return Format(
        id=str(entry["id"]),
        label=str(entry["label"]),
        kind=str(entry["kind"]),
        pattern=pattern,
        check=None if check is None else str(check),
        sample=str(entry["sample"]),
        lookalike=str(entry["lookalike"]),
        source=str(entry["source"]),
        has_context="secret" in compiled.groupindex,
        vendor_words=_vendor_words(entry),
        vendor_reach=max(map(len, str(entry.get("vendor", "")).split("|"))),
        cite=cite,
    )


def _vendor_words(entry: dict[str, object]) -> tuple[str, ...]:
    if "pattern" in entry or not isinstance(entry.get("vendor"), str):
        return ()
    names = str(entry["vendor"]).lower().split("|")
    if any(not _VENDOR_NAME.fullmatch(name) for name in names):
        raise UnknownError(f"credentials.toml: {entry['id']!r}: vendor names are plain words")
    return tuple(dict.fromkeys(_WORD.findall(name)[0] for name in names))


_VENDOR_NAME = re.compile(r"[a-z0-9]+(?:[ ._][a-z0-9]+)*")
_WORD = re.compile(r"[a-z0-9]+")


def parse_catalogue(text: str) -> tuple[Format, ...]:
    """Every format of a catalogue file, validated; a bad file raises ``UnknownError`` (it is
    shipped with the package, so a bad one is a bug, not a caller's mistake)."""
    try:
        entries = tomllib.loads(text).get("format", [])
    except tomllib.TOMLDecodeError as e:
        raise UnknownError(f"credentials.toml: {e}") from e
    formats = tuple(_format(entry) for entry in entries)
    duplicates = [i for i, n in Counter(f.id for f in formats).items() if n > 1]
    if duplicates:
        raise UnknownError(f"credentials.toml: duplicate ids {duplicates}")
    return formats


@cache
def catalogue() -> tuple[Format, ...]:
    """The shipped catalogue, read once."""
    text = resources.files("shared.redact").joinpath("credentials.toml").read_text(encoding="utf-8")
    return parse_catalogue(text)
