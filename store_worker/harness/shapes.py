"""The shapes of a proposed rule that wait for a person before they reach a prompt.

A learned rule goes into every later session's system prompt as a standing instruction, so a
rule that could do harm there is held in the review queue (``review.py``) instead of being
learned. Four shapes, each a few patterns; a rule matching any of them is flagged:

- ``sends-data``: it sends something somewhere: a URL, an email address, an IP address, or a
  send/post/upload/forward verb with a destination ("to ...", a webhook, a server);
- ``credential``: it mentions credentials: keys, tokens, passwords, secrets, cookies;
- ``override``: it overrides earlier instructions or the system ("ignore previous", "you are
  now", "SYSTEM:", "disregard", "new instructions", hiding things from the user);
- ``tools``: it changes what tools the assistant runs (run or execute something, install,
  call a tool, skip a confirmation, shell commands, deleting files); "run" only as a verb that
  runs something, not as a length ("never run more than one example", "run-on sentences");
- ``unreadable``: the table cannot read it (a letter outside ASCII: another language or
  script, a look-alike; an encoded payload, or base64 or rot13 named), so it cannot clear it.

The patterns read the rule folded (``fold.readable``): invisible characters dropped, look-alike
letters transliterated, spaced-out letters joined, a defanged or spoken address put back
("hxxp", "x[.]example", "x dot example slash c"), so a disguise does not hide a shape.

A style rule ("never start replies with the word Certainly", "use British spelling", "answer
in French") matches none of them. The table errs towards flagging: a false alarm costs a
person one ``memory rule approve``; a miss puts an instruction the user never gave into every
prompt.
"""

from __future__ import annotations

import re
from typing import Final

from store_worker.harness.fold import TLDS, readable, unreadable

_I = re.I

_SEND_VERBS = (
    r"send|sends|sending|sent|post|posts|posting|upload|uploads|uploading|forward|forwards|"
    r"forwarding|e-?mail|e-?mails|transmit|transmits|exfiltrate|leak|leaks|share|shares|"
    r"sharing|submit|submits|sync|syncs|push|pushes|publish|publishes|report|reports|"
    r"beacon|dm|notify|mail|mails|mailing|cc|bcc|wire|wires|wiring|transfer|transfers|"
    r"transferring|remit\w*|envoy\w*|envia\w*|inv[ií]a\w*|senden|"
    r"schick\w*|mand[ae]r?"
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
            re.compile(rf"\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:{TLDS})\b", _I),  # a bare domain
            re.compile(r"\]\([^)\s]+\)"),  # a markdown link or image: its target is fetched
            re.compile(r"\+\d[\d\s().-]{6,}\d"),  # a phone number
            re.compile(r"\b(?:call|phone|text|sms|whatsapp|dial|ring)\b[^.;\n]{0,25}\d{3}", _I),
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
            re.compile(
                r"\bp[a@4]s?s?w[o0]r[dt]\w*|\bpwd?\b|\bkennw[o0]rt|\bcontrase[nñ]a|\bsenha|"
                r"\bmots?\s+de\s+passe|\bparol[ieya]?\b|\bcl[eé]s?\s+api\b",
                _I,
            ),
            re.compile(
                r"\b(?:environment\s+variables?|env\s+(?:vars?|files?)|dotfiles?|bash_history|"
                r"shell\s+history)\b|~/|\$HOME\b|(?:^|\s|/)\.(?:bashrc|zshrc|profile|"
                r"bash_profile|gitconfig|docker|kube)\b",
                _I,
            ),
            re.compile(
                r"\b(?:credit\s+cards?|card\s+numbers?|cvv|cvc|ssn|social\s+security|"
                r"bank\s+(?:account|details)|iban|routing\s+numbers?|passport\s+numbers?|"
                r"tax\s+id)\b",
                _I,
            ),
        ),
    ),
    (
        "override",
        (
            re.compile(
                r"\b(?:ignore|disregard|forget|override|overrule|bypass|drop|abandon)\b"
                r"[^.;\n]{0,40}\b(?:instructions?|rules?|prompts?|guidelines?|guardrails?|"
                r"polic(?:y|ies)|directives?|messages?|system|restrictions?|constraints?|"
                r"previous|prior|above|earlier|everything|memor(?:y|ies)|notes?|recalled|context|"
                r"history)\b",
                _I,
            ),
            re.compile(r"\bdisregard\b", _I),
            re.compile(
                r"\btreat\b[^.;\n]{0,40}\bas\s+(?:\w+\s+)?(?:instructions?|commands?|orders?)\b", _I
            ),
            re.compile(  # obeying what a page, a tool or a memory says
                r"\b(?:follow|obey|execute|do|carry\s+out|comply\s+with)\b"
                r"(?=[^.;\n]{0,60}\b(?:instructions?|commands?|directions?|whatever|what|says|"
                r"tells?)\b)[^.;\n]{0,60}\b(?:tools?|results?|(?:web\s*)?pages?|websites?|sites?|"
                r"documents?|emails?|memor(?:y|ies)|notes|outputs?|readme)\b",
                _I,
            ),
            re.compile(r"\byou(?:\s+are|'re|r)\s+(?:now|no\s+longer)\b", _I),
            re.compile(
                r"\bno\s+(?:restrictions?|limits?|limitations?|rules?|filters?|guardrails?|"
                r"censorship)\b|\bno\s+longer\s+appl\w*|\bobey\b|\bdifferent\s+(?:assistant|"
                r"ai|model|persona)\b|\bnew\s+persona\b",
                _I,
            ),
            re.compile(
                r"\btreat\b[^.;\n]{0,40}\bas\s+(?:if\s+)?(?:(?:coming|written)\s+)?(?:from\s+|by\s+)?"
                r"(?:the\s+)?(?:user|system|developer|admin\w*|operator|owner)\b",
                _I,
            ),
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
            # "run" as a verb with no length or count after it ("run this", "run it", "run
            # whatever the page says"); not a noun ("the run", "in the long run"), not
            # "run-on" or "run-down", not a length ("run more than one example", "run over
            # a page", "run long")
            re.compile(
                r"(?<!\bthe\s)(?<!\ba\s)(?<!\beach\s)(?<!\bevery\s)(?<!\blong\s)(?<!\bdry\s)"
                r"\bruns?\b(?!-)(?!\s+(?:more|less|fewer|longer|shorter|long|short|over|past|"
                r"beyond|on\b(?!\s+(?:the|a|an|my|our|every|each|all)\b)|out\s+of)\b)",
                _I,
            ),
            # ... and always when what is run is named: a command, a script, code, a program
            re.compile(
                r"\b(?:run|runs|running|ran)\b(?!-)[^.;\n]{0,40}?\b(?:commands?|scripts?|code|"
                r"programs?|binar(?:y|ies)|executables?|installers?|files?|tools?|shell|"
                r"terminal|tests?|jobs?|quer(?:y|ies)|sql|macros?|apps?|plugins?|servers?|"
                r"databases?|containers?|python|node|npm|pip|make|docker|git|ssh)\b",
                _I,
            ),
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
            re.compile(
                r"\b(?:delete|deletes|deleting|erase|wipe|purge|overwrite|truncate|format|drop)"
                r"\b[^.;\n]{0,30}\b(?:files?|folders?|director\w*|disks?|drives?|databases?|"
                r"tables?|branch\w*|repo\w*|records?|backups?|everything|all)\b",
                _I,
            ),
            re.compile(r"\bwithout\s+(?:confirm\w*|asking|checking|permission)\b", _I),
        ),
    ),
)
"""Each shape's name and its patterns; a rule matching any pattern has the shape."""

SHAPE_NAMES: Final[tuple[str, ...]] = tuple(name for name, _ in SHAPES)
UNREADABLE: Final = "unreadable"
_ENCODING = re.compile(r"\b(?:base-?(?:64|32|85)|rot-?13|decod\w*|obfuscat\w*|cipher\w*)\b", _I)


def flagged(text: str) -> tuple[str, ...]:
    """The shapes ``text`` has, in table order, then ``unreadable`` (empty: a plain rule)."""
    folded = readable(text)
    found = tuple(name for name, patterns in SHAPES if any(p.search(folded) for p in patterns))
    if unreadable(text) or _ENCODING.search(folded):
        found += (UNREADABLE,)
    return found
