"""Codes that unlock an account and are said as such: one-time verification codes ("your
verification code is 482913", "the OTP is 739201"), lists of backup or recovery codes, TOTP
seeds (RFC 6238 shared secrets, base32 per RFC 4648, which authenticator apps show in groups
of four: "jbsw y3dp ehpk 3pxp"), and a wallet's seed words (BIP-39 mnemonics: 12 to 24
lowercase words) after a label that says so ("my 12 words are: ...", "seed words: ...").

Each needs its noun: "the code is 404", "error code 500", "my twelve words of advice" and a
number in prose stay. What is redacted is the value (the whole list, the whole phrase).
"""

from __future__ import annotations

import re

from shared.redact.rule import RuleSpec, Scan, Seek, _fixed

__all__ = ["CODES"]


def _starts_before(*nouns: str, reach: int, tail: re.Pattern[str] | None = None) -> Seek:
    """Every word start up to ``reach`` characters before one of ``nouns`` (the qualifier
    before the noun starts the match: "verification code", "backup codes", "12 words").
    With ``tail``, only before a noun that a blank, "_" or "-" follows a word to ("seed
    words", "24-word", not "password" or "keyword") and that ``tail`` matches at, on the
    folded text (the separator after the noun: most mentions of "key" have none)."""

    def seek(scan: Scan) -> list[int]:
        text, low, starts = scan.text, scan.folded, set()
        for at in scan.find(*nouns):
            if tail is not None and (text[at - 1 : at] not in _JOINS or not tail.match(low, at)):
                continue
            for start in range(max(at - reach, 0), at + 1):
                if text[start].isalnum() and (not start or not text[start - 1].isalnum()):
                    starts.add(start)
        return sorted(starts)

    return seek


_JOINS = frozenset(" \t_-")


# --- one-time codes -----------------------------------------------------------------------------

# The nouns apps and SMS messages use for a one-time code. ("security code" is also a card's
# CVV, which is as secret.)
_CODE_NOUN = (
    r"(?:(?:verification|confirmation|security|login|sign-?in|one-time|2fa|mfa|otp|sms"
    r"|auth(?:entication)?|access|backup|recovery|reset|2-step|two-factor|unlock)[ \t]+code"
    r"|t?otp|one-time[ \t]+(?:password|passcode|pin))"
)
_ONE_TIME_CODE = re.compile(
    r"(?<![^\W_])(?i:" + _CODE_NOUN + r")(?:[ \t]*[:=]|[ \t]+(?i:is|was))[ \t]*:?[ \t]*"
    # Google's "G-482913"; a code read in two halves "804 112"
    r"(?P<secret>(?:[A-Z]{1,3}-)?\d{4,8}|\d{3}[ -]\d{3})(?![\w#-])"
)


# --- lists of backup or recovery codes ---------------------------------------------------------

_LIST_CODE = r"(?:(?:[-*\u2022]|\d{1,2}[.)])[ \t]*)?[A-Za-z0-9]{4,12}(?:-[A-Za-z0-9]{4,12})?"
_CODE_LIST = re.compile(
    r"(?<![^\W_])(?i:(?:backup|recovery|scratch|emergency|2fa|mfa|one-time|verification)"
    r"[ \t_-]{1,3}codes)"
    r"(?:[ \t]*:|[ \t]+(?i:are|were)[ \t]*:?)\s*"
    r"(?P<secret>" + _LIST_CODE + r"(?:[ \t]*,?\s{1,4}" + _LIST_CODE + r"){1,31})"
)
_CODE_DIGIT = re.compile(r"\d")
_LIST_ITEM = re.compile(r"[A-Za-z0-9]{4,12}(?:-[A-Za-z0-9]{4,12})?")


def _judge_code_list(m: re.Match[str], secret: str) -> str | None:
    """Two or more codes, most of them with a digit: "backup codes: 1234-5678 2345-6789",
    not "backup codes are stored offline"."""
    codes = _LIST_ITEM.findall(secret)
    with_digit = sum(_CODE_DIGIT.search(code) is not None for code in codes)
    return "one_time_code" if len(codes) >= 2 and with_digit * 3 >= len(codes) * 2 else None


# --- TOTP seeds -------------------------------------------------------------------------------

# The noun ends in "secret", "seed" or "key" (words the gate already looks for, but "seed"):
# "TOTP seed", "2FA secret", "2FA secret key", "authenticator key", "setup key", and a bare
# "secret key" (what Google's and most sites' setup pages call the seed they show).
_TOTP_SEED = re.compile(
    r"(?<![^\W_])(?i:(?:(?:t?otp|2fa|mfa|authenticator|setup)[ \t_-]*"
    r"(?:secret(?:[ \t_-]*key)?|seed|key)|secret[ \t_-]*key))"
    r"(?:[ \t]*[:=]|[ \t]+(?i:is|was))[ \t]*:?[ \t]*[\"'`]?"
    r"(?P<secret>[A-Za-z2-7]{4}(?:[ -]?[A-Za-z2-7]{4}){3,15}[A-Za-z2-7]{0,3}=*)(?![A-Za-z0-9])"
)
_BASE32_DIGIT = re.compile(r"[2-7]")
_GROUPS = re.compile(r"[A-Za-z0-9]{4}(?:[ -][A-Za-z0-9]{4})+")

# Four-letter words of English prose: a run of four-letter groups with one of these in it is a
# sentence ("keep this safe from them"), not a code; a random group is one of them about once
# in 3,000.
_WORDS4 = frozenset(
    """able also area away back base been best body book both call came case code come cost
    dark data date days deal done door down each else even ever face fact fall fast feel file
    find fine five form four free from full gave give goes gone good half hand hard have head
    hear help here high hold home hope hour idea into just keep kept kind knew know last late
    left less life like line list live long look lose lost love made mail main make many mind
    miss more most move much must name near need next nice none note once only open over page
    part pass past plan play read real rest room safe said same save seen send sent ship show
    side sign site some soon step stop sure take talk team tell text than that them then they
    this time told took true turn type used user very view wait want week well went were what
    when will wish with word work year your zero""".split()
)


def _is_code_groups(secret: str) -> bool:
    """Groups of four that read as no sentence: none of them a word of _WORDS4."""
    groups = re.split(r"[ -]", secret.lower())
    return len(groups) >= 4 and not any(group in _WORDS4 for group in groups)


def _judge_totp_seed(m: re.Match[str], secret: str) -> str | None:
    """16+ base32 characters in one case with a digit ("jbsw y3dp ehpk 3pxp"), or, spaced in
    groups of four, letters only when no group is an English word ("abcd efgh ijkl mnop", not
    "this will come soon")."""
    joined = secret.replace(" ", "").replace("-", "").rstrip("=")
    one_case = joined.upper() == joined or joined.lower() == joined
    if not one_case:
        return None
    if _BASE32_DIGIT.search(joined) or (_GROUPS.fullmatch(secret) and _is_code_groups(secret)):
        return "totp_seed"
    return None


# --- app passwords ---------------------------------------------------------------------------
#
# Google's app passwords (16 lowercase letters shown in four groups: "abcd efgh ijkl mnop"),
# Apple's app-specific passwords ("abcd-efgh-ijkl-mnop") and Yahoo's (16 letters run together),
# after their noun: letters only, so no other rule reads them as a password.
_APP_PASSWORD = re.compile(
    r"(?<![^\W_])(?i:app(?:lication)?(?:[ \t_-]+specific)?[ \t_-]+pass(?:word|code))s?"
    r"(?:[ \t]+(?i:for)[ \t]+[^\n:=\"'`]{1,40}?)?"
    r"(?:[ \t]*[:=]|[ \t]+(?i:is|was))?[ \t]*:?(?:[ \t]*\r?\n)?[ \t]*[\"'`]?"
    r"(?P<secret>[A-Za-z]{4}(?:[ -][A-Za-z]{4}){3}|[a-z]{16})(?![\w-])"
)


def _judge_app_password(m: re.Match[str], secret: str) -> str | None:
    if " " in secret or "-" in secret:
        one_case = secret.lower() == secret or secret.upper() == secret
        return "password" if one_case and _is_code_groups(secret) else None
    return (
        "password"
        if _is_code_groups(" ".join(secret[i : i + 4] for i in range(0, 16, 4)))
        else None
    )


def _app_password_starts(scan: Scan) -> list[int]:
    """Where "app" or "application" starts, up to 24 characters before a "pass"."""
    low, starts = scan.folded, []
    for at in scan.find("pass"):
        head = low.rfind("app", max(at - 24, 0), at)
        if head >= 0:
            starts.append(head)
    return sorted(set(starts))


# --- a wallet's seed words ---------------------------------------------------------------------

# Words a sentence has and a BIP-39 mnemonic has not (none of these is in the BIP-39 English
# list): a run of seed words stops at one.
_STOP = (
    "the|and|for|with|are|was|were|this|that|from|into|you|your|our|their|his|her|its|not|but"
    "|have|has|had|them|they|then|just|here|there|what|which|when|would|should|could|than"
    "|very|some|been|being|she|him|who|how|why|too|out|will|can|did|does|let|got|get"
)
_SEED_WORD = r"(?:\d{1,2}[.)][ \t]*)?(?!(?:" + _STOP + r")\b)[a-z]{3,8}\b"
_SEED_WORDS = re.compile(
    r"(?<![^\W_])(?i:(?:seed|recovery|backup|wallet|secret|mnemonic)[ \t_-]{1,3}words?"
    r"|(?:12|15|18|21|24|twelve|twenty[ -]four)[ \t-]+"
    r"(?:(?:seed|recovery|secret|backup)[ \t]+)?words?(?:[ \t]+(?:seed|phrase))?)"
    r"(?:[ \t]*:|[ \t]+(?i:is|are|was|were)[ \t]*:?)\s*"
    r"(?P<secret>" + _SEED_WORD + r"(?:(?:[ \t]*,?\s{1,3}" + _SEED_WORD + r"){23}"
    r"|(?:[ \t]*,?\s{1,3}" + _SEED_WORD + r"){20}|(?:[ \t]*,?\s{1,3}" + _SEED_WORD + r"){17}"
    r"|(?:[ \t]*,?\s{1,3}" + _SEED_WORD + r"){14}|(?:[ \t]*,?\s{1,3}" + _SEED_WORD + r"){11}))"
)


# --- disk encryption recovery keys ------------------------------------------------------------

# BitLocker's 48-digit recovery password (eight blocks of six digits, each a multiple of 11:
# Microsoft's "BitLocker recovery guide"), and FileVault's or an Apple account's recovery key
# (six or seven blocks of four capitals and digits), after the key's name. The lookahead says
# which name; the name itself is read as letters, so that the gate finds the rule by "key", a
# word it looks for already, not by four new ones.
_RECOVERY_KEY = re.compile(
    r"(?<![^\W_])(?=(?i:bitlocker|filevault|recovery|personal))[A-Za-z]{6,9}"
    r"(?:[ \t_-]+[A-Za-z]{6,8})?[ \t_-]*(?i:key)"
    r"(?:[ \t]*[:=]|[ \t]+(?i:is|was))[ \t]*:?[ \t]*"
    r"(?P<secret>\d{6}(?:-\d{6}){7}|[A-Z0-9]{4}(?:-[A-Z0-9]{4}){5,6})(?![\w-])"
)


def _judge_recovery_key(m: re.Match[str], secret: str) -> str | None:
    blocks = secret.split("-")
    if len(blocks) == 8:  # BitLocker: every block a multiple of 11
        return "recovery_key" if all(int(block) % 11 == 0 for block in blocks) else None
    # "ABCD-EFGH-...": letters only in every block is a template, not a key
    return None if all(block.isalpha() for block in blocks) else "recovery_key"


# What follows a noun the rules above can match: a separator, or a verb ("words are").
_SAID = re.compile(r"[a-z]{1,8}(?:[ \t]+[a-z]{1,8})?[ \t]*(?:[:=]|[ \t](?:is|are|was|were)\b)")

CODES: tuple[RuleSpec, ...] = (
    (_ONE_TIME_CODE, _fixed("one_time_code"), _starts_before("code", "otp", reach=14)),
    (_CODE_LIST, _judge_code_list, _starts_before("codes", reach=14)),
    (_TOTP_SEED, _judge_totp_seed, _starts_before("secret", "seed", "key", reach=16, tail=_SAID)),
    (_APP_PASSWORD, _judge_app_password, _app_password_starts),
    (_SEED_WORDS, _fixed("seed_phrase"), _starts_before("word", reach=24, tail=_SAID)),
    (_RECOVERY_KEY, _judge_recovery_key, _starts_before("key", reach=22, tail=_SAID)),
)
