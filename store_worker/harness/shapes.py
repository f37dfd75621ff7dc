"""The shapes of a proposed rule that wait for a person before they reach a prompt.

A learned rule goes into every later session's system prompt as a standing instruction, so a
rule that could do harm there is held in the review queue (``review.py``) instead of being
learned. Four shapes, each a few patterns; a rule matching any of them is flagged:

- ``sends-data``: it sends something somewhere: a URL, an email address, an IP address, or a
  send/post/upload/forward verb with a destination ("to ...", a webhook, a server);
- ``credential``: it mentions credentials: keys, tokens, passwords, secrets, cookies;
- ``override``: it overrides earlier instructions or the system ("ignore previous", "you are
  now", "SYSTEM:", "disregard", "new instructions", hiding things from the user);
- ``tools``: it changes what tools the assistant runs (run, execute, install, call a tool,
  skip a confirmation, shell commands).

A style rule ("never start replies with the word Certainly", "use British spelling", "answer
in French") matches none of them. The table errs towards flagging: a false alarm costs a
person one ``memory rule approve``; a miss puts an instruction the user never gave into every
prompt.
"""

from __future__ import annotations

import re
from typing import Final

_I = re.I

_SEND_VERBS = (
    r"send|sends|sending|sent|post|posts|posting|upload|uploads|uploading|forward|forwards|"
    r"forwarding|e-?mail|e-?mails|transmit|transmits|exfiltrate|leak|leaks|share|shares|"
    r"sharing|submit|submits|sync|syncs|push|pushes|publish|publishes|report|reports|"
    r"beacon|dm|notify"
)
_DESTINATION = (
    r"\b(?:to|into|onto|at|via|through)\b\s+(?:the\s+|a\s+|an\s+|my\s+|our\s+|this\s+)?"
    r"\S+"
)

SHAPES: Final[tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]] = (
    (
        "sends-data",
        (
            re.compile(r"\b(?:https?|ftp|wss?|file)://", _I),
            re.compile(r"\bwww\.[a-z0-9-]+\.", _I),
            re.compile(r"[\w.+-]+@[\w-]+\.[\w.-]+", _I),  # an email address
            re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b"),  # an IPv4 address
            # a bare domain with a path: example.com/collect
            re.compile(r"\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/\S*", _I),
            re.compile(rf"\b(?:{_SEND_VERBS})\b[^.;\n]*?{_DESTINATION}", _I),
            re.compile(
                r"\b(?:webhook|endpoint|pastebin|paste\s*bin|gist|discord|telegram|slack|"
                r"ngrok|requestbin|s3\s+bucket|ftp|smtp)\b",
                _I,
            ),
            re.compile(r"\b(?:exfiltrat\w*|phone\s+home|call\s+home)\b", _I),
        ),
    ),
    (
        "credential",
        (
            re.compile(
                r"\b(?:passwords?|passwd|passphrases?|pass\s*codes?|pin\s+(?:codes?|numbers?)|"
                r"credentials?|secrets?|keychains?|keystores?|cookies?|wallets?|seed\s+phrases?|"
                r"mnemonic|2fa|otp|mfa|one[\s-]time\s+codes?|auth|authenticat\w*|"
                r"log-?in\s+(?:details|info\w*|credentials)|bearer|oauth)\b",
                _I,
            ),
            re.compile(
                r"\b(?:api|access|auth|bearer|refresh|session|secret|github|gitlab|slack|npm|"
                r"pypi|oauth|id|jwt|personal\s+access)[\s_-]?tokens?\b",
                _I,
            ),
            re.compile(
                r"\b(?:api|private|ssh|secret|access|encryption|signing|licen[cs]e|gpg|pgp|aws|"
                r"cloud|product|master|root|deploy|(?:the\s+)?user'?s|my|your|their|all)"
                r"[\s_-]?keys?\b",
                _I,
            ),
            re.compile(r"\btokens?\b[^.;\n]*\b(?:send|share|give|reveal|print|show|include)\b", _I),
            re.compile(r"(?:^|\s|/)\.(?:env|netrc|npmrc|pypirc|aws|ssh)\b", _I),
            re.compile(r"\b(?:id_rsa|id_ed25519|\.pem)\b", _I),
        ),
    ),
    (
        "override",
        (
            re.compile(
                r"\b(?:ignore|disregard|forget|override|overrule|bypass|drop|abandon)\b"
                r"[^.;\n]{0,40}\b(?:instructions?|rules?|prompts?|guidelines?|guardrails?|"
                r"polic(?:y|ies)|directives?|messages?|system|restrictions?|constraints?|"
                r"previous|prior|above|earlier|everything)\b",
                _I,
            ),
            re.compile(r"\bdisregard\b", _I),
            re.compile(r"\byou\s+are\s+(?:now|no\s+longer)\b", _I),
            re.compile(r"\b(?:act|behave)\s+as\s+(?:if|though|an?\b|the\b)", _I),
            re.compile(r"\bpretend\s+(?:to\s+be|you)\b", _I),
            re.compile(r"\b(?:new|updated|real|true|hidden)\s+instructions?\b", _I),
            re.compile(r"\bsystem\s*(?:prompt|message|instructions?|override)\b", _I),
            re.compile(r"(?:^|[\s\[<(])(?:system|developer|assistant|admin)\s*:", _I),
            re.compile(r"<\s*/?\s*(?:system|instructions?|im_start|im_end)\b", _I),
            re.compile(r"\b(?:developer|god|dan|jailbreak|unrestricted)\s+mode\b", _I),
            re.compile(r"\bjailbr\w*", _I),
            re.compile(
                r"\b(?:without|never|don'?t|do\s+not)\s+(?:telling|tell|informing|inform|"
                r"letting|mention\w*|reveal\w*)\b[^.;\n]{0,20}\b(?:user|anyone|them|him|her)\b",
                _I,
            ),
            re.compile(r"\b(?:secretly|covertly)\b", _I),
        ),
    ),
    (
        "tools",
        (
            re.compile(
                r"\b(?:execute|executes|executing|exec|eval|invoke|invokes|install|installs|"
                r"uninstall|download|downloads|curl|wget|sudo|chmod|chown|rm\s+-\w+|"
                r"shell|bash|zsh|powershell|cmd\.exe|terminal|subprocess|crontab|"
                r"pip\s+install|npm\s+install|git\s+push)\b",
                _I,
            ),
            re.compile(r"(?:^|\s)--(?:no-verify|force|yes|dangerously\S*)\b", _I),
            re.compile(r"\bruns?\b(?!-)", _I),
            re.compile(r"\bauto-?approv\w*|\b(?:always|just)\s+approve\b", _I),
            re.compile(
                r"\b(?:call|calls|calling|use|using|enable|disable|allow|block|deny|stop\s+using)"
                r"\b[^.;\n]{0,30}\b(?:tools?|commands?|scripts?|plugins?|mcp|servers?)\b",
                _I,
            ),
            re.compile(
                r"\b(?:skip\w*|bypass\w*|disabl\w*|turn\s+off|without\s+asking)\b"
                r"[^.;\n]{0,30}\b(?:confirm\w*|approv\w*|permission\w*|sandbox\w*|review\w*|"
                r"checks?|hooks?|safety|guard\w*)\b",
                _I,
            ),
        ),
    ),
)
"""Each shape's name and its patterns; a rule matching any pattern has the shape."""

SHAPE_NAMES: Final[tuple[str, ...]] = tuple(name for name, _ in SHAPES)


def flagged(text: str) -> tuple[str, ...]:
    """The shapes ``text`` has, in table order (empty: a plain rule)."""
    return tuple(name for name, patterns in SHAPES if any(p.search(text) for p in patterns))
