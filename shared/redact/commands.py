"""Passwords given on a command line to tools beyond the database shells and curl of
shared/redact/shell.py: the archivers (``zip -P``, ``7z -p``), ``openssl -k``, the LDAP
clients (``-w``), the SMB clients (``-U user%<pw>``), ``htpasswd -b``, Oracle's connect
strings (``sqlplus user/<pw>@db``), Windows' ``net use``/``net user`` and ``setx NAME value``.
(A tool's name is a word the gate looks for in every text, ~0.1 µs each: the common tools
only; ``rpcclient``, ``expdp`` and the like are left out.)

Each tool's manual names the argument that is the password (zip(1) ``-P``, 7-Zip's ``-p``
switch, openssl-enc(1) ``-k``, ldapsearch(1) ``-w``, smbclient(1) ``-U user%password``,
htpasswd(1) ``-b``, SQL*Plus ``username/password@connect_identifier``, ``NET USE`` and ``NET
USER`` help, ``SETX`` help). The tool's name must come first, before any pipe or separator on
the same line, and the flag is the tool's own, so the flag elsewhere is left alone; a plain
word after a spaced flag is prose ("use zip -P to set a password"), as for ``sshpass -p``; a
template's ``password`` or ``<password>`` is no value.
"""

from __future__ import annotations

import re

from shared.redact.keywords import _KEYWORDS, _is_placeholder, _is_plain, _keyword_label, _line_lead
from shared.redact.rule import RuleSpec, Scan, Seek, _fixed, _match_line, find_all
from shared.redact.shell import _VALUE

__all__ = ["COMMANDS"]

# Words a command's template writes where the password goes ("sqlplus user/password@db").
_TEMPLATE_WORDS = frozenset(
    "password passwd pass pwd pw secret mypassword yourpassword newpassword".split()
)
# What may stand before a command's name: not part of a longer name or a path.
_HEAD = r"(?<![A-Za-z0-9_./-])"
# The rest of the line up to the flag: no pipe or separator between the tool and its flag.
_ARGS = r"(?:\.exe)?(?![A-Za-z0-9_-])[^\n|;&]{0,200}?(?<=[ \t])"


def _is_template(secret: str) -> bool:
    """A template's word, a placeholder, or a command substitution ("$(cat pw.txt)")."""
    if secret.startswith(("$(", "`")):
        return True
    return _is_placeholder(secret) or secret.lower() in _TEMPLATE_WORDS


def _spaced(m: re.Match[str]) -> bool:
    """Whether blanks stand between the flag and the value."""
    at = m.start("q") if m.group("q") is not None else m.start("bare")
    return m.string[at - 1] in " \t"


# zip/unzip -P <pw> (spaced or glued); 7z/rar -p<pw> and rar -hp<pw> (which also encrypts the
# names; glued only: a bare -p prompts); openssl -k
# <pw>; ldapsearch & co -w <pw>. The conditional groups tie each tool to its own flag, so
# ``ldapsearch -p 389 -w <pw>`` reads past the port.
_TOOL_FLAG = re.compile(
    _HEAD + r"(?:(?P<zip>(?:un)?zip)|(?P<glued>7z[arz]?|7zz|rar|unrar)|(?P<ossl>openssl)"
    r"|(?P<ldap>ldap(?:search|add|modify|delete|whoami|passwd|compare|modrdn|exop)))"
    + _ARGS
    + r"(?(zip)-P[ \t]*|(?(glued)-h?p|(?(ossl)-k[ \t]+|-w[ \t]*)))"
    + _VALUE
)


def _judge_tool_flag(m: re.Match[str], secret: str) -> str | None:
    if _is_template(secret):
        return None
    if _spaced(m) and m.group("bare") is not None and _is_plain(secret):
        return None  # "use zip -P to set a password"
    return "password"


# smbclient //host/share -U user%<pw> (also --user=user%<pw>).
_SMB_USER = re.compile(
    _HEAD
    + r"smbclient"
    + _ARGS
    + r"(?:-U|--user(?:name)?=?)[ \t]*(?P<q>[\"']?)[^\s%\"']+%(?P<secret>[^\s\"']+)(?P=q)"
)

# htpasswd -b[c] <file> <user> <pw>; htpasswd -nb <user> <pw>: the password is the argument
# after the file and the user (only the user with -n).
_HTPASSWD = re.compile(
    _HEAD + r"htpasswd(?:\.exe)?(?P<flags>(?:[ \t]+-[A-Za-z]+)+)"
    r"[ \t]+(?P<args>(?:(?![-\"'])[^\s\"']+[ \t]+){1,2})" + _VALUE
)


def _judge_htpasswd(m: re.Match[str], secret: str) -> str | None:
    flags = m.group("flags")
    if "b" not in flags or _is_template(secret):
        return None
    return "password" if len(m.group("args").split()) == (1 if "n" in flags else 2) else None


# sqlplus scott/<pw>@orcl (Oracle's "username/password@connect_identifier"; "sqlplus /nolog"
# and "/ as sysdba" have no user), and in a JDBC URL of the thin or OCI driver.
_ORACLE_LOGIN = re.compile(
    r"(?:"
    + _HEAD
    + r"sqlplus"
    + _ARGS
    + r"(?:userid=)?[\"']?|jdbc:oracle:(?:thin|oci8?|kprb):)[A-Za-z][A-Za-z0-9_$#.]{0,63}/"
    r"(?P<secret>[^\s@/\"']{1,256})(?=[@\"' \t\n]|$)"
)


def _judge_oracle_login(m: re.Match[str], secret: str) -> str | None:
    return None if _is_template(secret) else "password"


# NET USE [X:] \\host\share <pw> [/user:name], NET USE ... /user:name <pw>;
# NET USER <name> <pw> [/add]: "*" prompts, "/..." is a switch. One rule, so that the gate
# looks for "net" alone.
_NET = re.compile(
    _HEAD + r"(?i:net)[ \t]+(?i:use)"
    r"(?:(?P<user>(?i:r))[ \t]+(?:\"[^\"\n]+\"|[^\s/\"]+)"
    r"|[ \t]+(?:[A-Za-z]:[ \t]+|\*[ \t]+)?\\\\[^\s\\]+\\[^\s]*(?:[ \t]+/(?i:user|u):[^\s]+)?)"
    r"[ \t]+(?P<q>[\"']?)(?P<secret>(?![/*])[^\s\"']+)(?P=q)(?P<switch>[ \t]+/)?"
)


def _judge_net_password(m: re.Match[str], secret: str) -> str | None:
    if _is_template(secret):
        return None
    if m.group("user") is not None and m.group("switch") is None and _is_plain(secret):
        return None  # "the net user count grew": prose
    return "password"


# SETX [/M] DB_PASSWORD <value>: Windows' persistent environment variable, named as an
# assignment's key is.
_SETX = re.compile(
    _HEAD + r"setx(?:\.exe)?(?:[ \t]+/m)?[ \t]+"
    r"(?P<key>[\"']?[A-Za-z0-9_.-]{0,64}?" + _KEYWORDS + r"[\"']?)[ \t]+" + _VALUE,
    re.I,
)


def _judge_setx(m: re.Match[str], secret: str) -> str | None:
    return None if _is_template(secret) else _keyword_label(m, secret)


def _shell_set_starts(scan: Scan) -> list[int]:
    """Where "setenv" or "set" then a flag starts, and each line that starts with "ENV"."""
    starts = _starts_then(("setenv", "set"), "[-A-Za-z]")(scan)
    text = scan.text
    if "ENV" not in text:
        return starts
    return sorted({*starts, *(m.start() for m in _ENV_LINE.finditer(text))})


_ENV_LINE = re.compile(r"(?m:^)(?=[ \t]*ENV[ \t])")


def _judge_shell_set(m: re.Match[str], secret: str) -> str | None:
    # fish's command substitution is a bare "(...)"
    return None if secret.startswith("(") else _judge_setx(m, secret)


# csh's ``setenv DB_PASSWORD <value>``, a Dockerfile's ``ENV DB_PASSWORD <value>`` (the
# legacy form with no "=") and fish's ``set -x|-gx|-Ux|--export DB_PASSWORD
# <value>``: an environment variable given with no ``=`` (csh(1) setenv, fish's ``set``
# manual). fish's plain ``set`` (a shell variable, and an English word) is not read.
_SHELL_SET = re.compile(
    # (fish's "set" in a lookahead: as a gate's anchor it is in "sunset" and "settle")
    _HEAD + r"(?:setenv|(?m:^)[ \t]*ENV|(?=set[ \t])[a-z]{3}"
    r"(?:[ \t]+(?:-[gUuxl]*x[gUuxl]*|--export|--global|--universal))+)[ \t]+"
    r"(?P<key>[A-Za-z0-9_]{0,64}?" + _KEYWORDS + r")[ \t]+" + _VALUE,
    re.I,
)


# --- a password on a command's standard input ----------------------------------------------
#
# ``echo <pw> | sudo -S ...``, ``echo '<pw>' | docker login --password-stdin``, ``echo
# 'user:<pw>' | chpasswd``, ``echo -n <token> | gh secret set NAME``: what the command reads
# from its input is the password (sudo(8) -S, passwd(1) --stdin, chpasswd(8), docker-login(1),
# gh-secret-set(1), wg(8) pubkey, cryptsetup(8), openssl's ``-pass stdin``).
# (The command's name is said in a lookahead and read as letters: the gate then finds the
# rule by its "|", a rare character, rather than by two more words it would look for in every
# text. The same for "config" below, found by the credential's keyword.)
_STDIN = re.compile(
    _HEAD + r"(?:(?=echo)[a-z]{4}(?:[ \t]+-[neE]{1,3})*"
    r"|(?=printf)[a-z]{6}(?:[ \t]+(?P<fq>[\"'])%s(?:\\n)?(?P=fq))?)"
    r"[ \t]+" + _VALUE + r"[ \t]*\|[ \t]*(?P<reader>[^\n|;&]{1,200})"
)
_READS_A_PASSWORD = re.compile(
    r"\bsudo(?:[ \t]+-[A-Za-z]+)*[ \t]+-[A-Za-z]*S|--password-stdin|--stdin|\bchpasswd\b"
    r"|^passwd\b|\bsecret[ \t]+(?:set|create)\b|\bwg[ \t]+pubkey|\bcryptsetup\b"
    r"|-pass(?:in)?[ \t]+stdin|\bvault[ \t]+login\b"
)


def _judge_stdin(m: re.Match[str], secret: str) -> str | None:
    if _READS_A_PASSWORD.search(m.group("reader")) is None or _is_template(secret):
        return None
    return None if m.group("bare") is not None and _is_plain(secret) else "password"


# ``docker login --password-stdin <<EOF`` then the password on the next line, ``cat <<'EOF' |
# sudo -S ...``, ``sudo -S true <<< '<pw>'``: a here-document's first line, or a here-string,
# read by a command that takes a password on its input (bash(1) "Here Documents", "Here
# Strings"). The reader is read off the whole line of the "<<".
_HEREDOC = re.compile(
    r"<<-?[ \t]*(?P<dq>[\"']?)(?P<delim>[A-Za-z_][A-Za-z0-9_]*)(?P=dq)[^\n]*\r?\n[ \t]*"
    r"(?P<secret>[^\s](?:[^\n]*[^\s])?)[ \t]*(?=\r?\n|$)"
)
_HERESTRING = re.compile(r"<<<[ \t]*" + _VALUE)


def _judge_heredoc(m: re.Match[str], secret: str) -> str | None:
    line = _match_line(m)
    if _READS_A_PASSWORD.search(line) is None or _is_template(secret):
        return None
    if "delim" in m.re.groupindex and secret == m.group("delim"):
        return None  # an empty document
    return None if m.groupdict().get("bare") is not None and _is_plain(secret) else "password"


# ``vault login <token>``: the token is its one positional argument (vault(1) login; ``-``
# reads it from the input, ``-method=...`` takes ``key=value`` pairs, which the flag and
# assignment rules read).
_VAULT_LOGIN = re.compile(
    _HEAD + r"(?=vault)[a-z]{5}[ \t]+login(?:[ \t]+-[A-Za-z][\w-]*(?:=[^\s]+)?)*[ \t]+" + _VALUE
)


def _judge_vault_login(m: re.Match[str], secret: str) -> str | None:
    if _is_template(secret) or "=" in secret or secret == "-" or _is_plain(secret):
        return None
    return "token"


# Login brute-forcers and remote-login clients take one password with ``-p`` (hydra(1),
# medusa(1), ncrack, CrackMapExec/NetExec, evil-winrm, rdesktop; ``-P`` is a list's file) and
# FreeRDP with ``/p:``. (The names are said in lookaheads, as for _STDIN: the gate finds the
# rule by its flag, not by thirteen more words it would look for in every text.)
_LOGIN_TOOL = re.compile(
    _HEAD + r"(?:(?P<rdp>(?=x?freerdp3?|wlfreerdp)[a-z]{7,9}3?)"
    r"|(?=hydra|medusa|ncrack|crackmapexec|cme|nxc|netexec|evil-winrm|rdesktop|smbmap)"
    r"[a-z-]{3,12})" + _ARGS + r"(?(rdp)/p:|(?:-p|--pass(?:word)?)(?:[ \t]+|=))" + _VALUE
)
# Sysinternals' PsExec and PAExec, typed in any case: ``psexec \\host -u user -p <pw> cmd``.
_PSEXEC = re.compile(_HEAD + r"(?i:p[sa]exec)" + _ARGS + r"-p[ \t]+" + _VALUE)
_LIST_FILE = re.compile(r"\.(?:txt|lst|list|dic|csv)$", re.I)


def _judge_login_tool(m: re.Match[str], secret: str) -> str | None:
    if _is_template(secret) or _LIST_FILE.search(secret):
        return None
    return None if m.group("bare") is not None and _is_plain(secret) else "password"


# Other tools' password flags, each tool with its own (cqlsh(1) ``-p``, helm's ``registry
# login``/``repo add`` ``-p``, mosquitto_pub(1) ``-P``, ``nuget``/``dotnet nuget add source``
# ``-p``, useradd(8)/usermod(8) ``-p`` (a crypt hash, still the password's), ssh-keygen(1)
# ``-N``/``-P`` (the new and the old passphrase)). The names are said in a lookahead, as
# above: the gate finds the rule by its flag.
_TOOL_PASSWORD = re.compile(
    _HEAD + r"(?P<tool>(?=cqlsh|helm|mosquitto_|nuget|dotnet|useradd|usermod|ssh-keygen)"
    r"[a-z_-]{4,14})" + _ARGS + r"(?P<flag>-[pPN]|--password|--pw)(?:[ \t]+|=)" + _VALUE
)
_FLAGS_OF_TOOL = {
    "cqlsh": ("-p", "--password"),
    "helm": ("-p", "--password"),
    "mosquitto_pub": ("-P", "--pw"),
    "mosquitto_sub": ("-P", "--pw"),
    "mosquitto_rr": ("-P", "--pw"),
    "nuget": ("-p", "--password"),
    "dotnet": ("-p", "--password"),
    "useradd": ("-p", "--password"),
    "usermod": ("-p", "--password"),
    "ssh-keygen": ("-N", "-P"),
}


def _judge_tool_password(m: re.Match[str], secret: str) -> str | None:
    if m.group("flag") not in _FLAGS_OF_TOOL.get(m.group("tool"), ()) or _is_template(secret):
        return None
    return None if m.group("bare") is not None and _is_plain(secret) else "password"


def _pulumi_secret(m: re.Match[str]) -> bool:
    """``--secret`` anywhere on the command's line, or a key named for a credential."""
    line = _match_line(m, through_end=True)
    return "--secret" in line or _NAMED.search(m.group("pkey")) is not None


_NAMED = re.compile(
    r"(?i:pass(?:wor)?d|passphrase|secret|token|api_?key|apikey|private_?key|credential)"
)


# A password or a token as a command's positional argument: ``wpa_passphrase <ssid> <pw>``
# (wpa_passphrase(8)), ``rabbitmqctl add_user|change_password <user> <pw>``, MinIO's ``mc
# alias set <name> <url> <access key> <secret key>``, ``cargo login <token>``, ``rclone
# obscure <pw>`` (it prints the password obscured, not encrypted), ``pulumi config set
# [--secret] <key> <value>`` (the value when ``--secret`` is given or the key names a
# credential: Pulumi's own flag says which values are secrets), ``ngrok
# authtoken <token>`` / ``ngrok config add-authtoken <token>``. (``cloudflared service
# install <token>``: the token's own shape, in the catalogue.)
_ONE_ARG = r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\"']+)[ \t]+"
_POSITIONAL = re.compile(
    _HEAD
    + r"(?:wpa_passphrase[ \t]+"
    + _ONE_ARG
    + r"|(?=rabbitmqctl)[a-z]{11}(?:\.bat)?[^\n|;&]{0,80}?[ \t](?:add_user|change_password)[ \t]+"
    + _ONE_ARG
    # (mc's subcommand said in lookaheads: the gate finds the alternative by its URL's "://")
    + r"|(?=mc[ \t])[a-z]{2}[ \t]+(?=alias[ \t]+set|config[ \t]+host[ \t]+add)[a-z]{5,6}[ \t]+"
    r"[a-z]{3,4}(?:[ \t]+add)?[ \t]+"
    + _ONE_ARG
    + r"[a-z][a-z0-9+.-]{1,20}://[^\s]+[ \t]+"
    + _ONE_ARG
    + r"|(?=cargo[ \t])[a-z]{5}[ \t]+login(?:[ \t]+--registry(?:[ \t]+|=)[^\s]+)?[ \t]+"
    r"|(?=rclone[ \t])[a-z]{6}[ \t]+obscure[ \t]+"
    # ("pulumi" is the anchor: "config", a word of many texts, is said in a lookahead)
    r"|(?P<pulumi>pulumi[ \t]+(?=config[ \t]+set[ \t])[a-z]{6}[ \t]+[a-z]{3}"
    r"(?:[ \t]+(?:--secret|--plaintext|--path|(?:-s|--stack|-C|--cwd)[ \t]+[^\s-]\S*))*"
    r"[ \t]+(?P<pkey>[A-Za-z0-9_:.-]+)[ \t]+)"
    r"|(?=ngrok[ \t])[a-z]{5}(?:[ \t]+config[ \t]+add-)?[ \t]*authtoken[ \t]+)" + _VALUE
)


def _judge_positional(m: re.Match[str], secret: str) -> str | None:
    if _is_template(secret) or secret.startswith("-"):
        return None
    if m.group("pulumi") is not None and not _pulumi_secret(m):
        return None  # ``pulumi config set aws:region us-west-2``: plain configuration
    return None if m.group("bare") is not None and _is_plain(secret) else "password"


# An expect(1) or pexpect script: the literal sent after a password prompt (``expect
# "password:"`` then ``send "<pw>\r"``; ``child.expect('Password:')`` then
# ``child.sendline('<pw>')``; also on one line after a ``;``, as ``expect -c '...'`` has it).
# (expect and send are said in lookaheads: the gate finds the rule by the prompt's noun)
_EXPECT_SEND = re.compile(
    r"(?<![A-Za-z0-9_])(?=expect)[a-z]{6}(?:[ \t]*\(|[ \t]+)[^\n]{0,80}?"
    r"(?i:pass(?:word|phrase|code)?|pin|token|secret)[^\n]{0,80}?"
    r"(?:\r?\n(?:[^\n]*\n){0,2}?[ \t]*|;[ \t]*)(?:[A-Za-z_][\w.]{0,40}\.)?(?=send)[a-z]{4}"
    r"(?:line)?"
    r"[ \t]*(?:\([ \t]*|[ \t]+)"
    r"(?:--[ \t]+)?(?P<q>[\"'])(?P<secret>(?:(?!(?P=q))[^\n\\]|\\[^rn])+)(?:\\r|\\n)?(?P=q)"
)


def _judge_expect_send(m: re.Match[str], secret: str) -> str | None:
    return None if _is_template(secret) or len(secret) < 4 else "password"


# --- config commands that store a credential --------------------------------------------------
#
# ``npm config set //registry.npmjs.org/:_authToken <token>``, ``yarn config set npmAuthToken
# <token>``, ``poetry config pypi-token.<repo> <token>``, ``git config --global github.token
# <token>``, ``dotnet user-secrets set "Db:Password" <pw>``: a key naming a credential, then
# its value; ``poetry config http-basic.<repo> <user> <pw>`` and composer's ``http-basic.<host>
# <user> <pw>`` name a user, then the password.
_CONFIG_TOOLS = ("npm", "pnpm", "yarn", "poetry", "composer", "git", "pip", "bundle", "conda")
_CONFIG_SET = re.compile(
    _HEAD + r"(?=(?:npm|pnpm|yarn|poetry|composer|git|pip|bundle|conda)[ \t]+config"
    r"|dotnet[ \t]+user-secrets)[a-z]{3,8}[ \t]+[a-z-]{6,12}"
    r"(?:[ \t]+(?:set|--global|-g|--local|--user|--add|--auth|--json))*[ \t]+"
    r"(?:(?P<basic>http-basic\.[^\s]{1,200}[ \t]+[^\s]{1,128}[ \t]+)"
    r"|(?P<key>[\"']?[^\s=\"']{0,120}?"
    + _KEYWORDS
    + r"[^\s=\"']{0,60}[\"']?)(?:[ \t]+|=))"
    + _VALUE,
    re.I,
)


def _config_starts(scan: Scan) -> list[int]:
    """Where the tool's name starts before each "config" or "user-secrets"."""
    text, starts = scan.text, []
    for at in scan.find("config", "user-secrets"):
        head = at
        while head > 0 and text[head - 1] in " \t":
            head -= 1
        name = head
        while name > 0 and text[name - 1].isalpha():
            name -= 1
        if name < head and text[name:head] in _CONFIG_NAMES:
            starts.append(name)
    return starts


_CONFIG_NAMES = frozenset((*_CONFIG_TOOLS, "dotnet"))


def _judge_config_set(m: re.Match[str], secret: str) -> str | None:
    if _is_template(secret) or (m.group("bare") is not None and _is_plain(secret)):
        return None
    return "password" if m.group("basic") is not None else _keyword_label(m, secret)


# ``gh secret set NAME --body <v>``, ``az keyvault secret set ... --value <v>``, ``aws ssm
# put-parameter ... --value <v>``, ``aws secretsmanager put-secret-value ... --secret-string
# <v>``: whatever the name, the value is a secret (``file://...`` names a file).
_SECRET_STORE = re.compile(
    _HEAD + r"(?:gh[ \t]+secret[ \t]+set|az[ \t]+keyvault[ \t]+secret[ \t]+set"
    r"|aws[ \t]+ssm[ \t]+put-parameter"
    r"|aws[ \t]+secretsmanager[ \t]+(?:create-secret|put-secret-value|update-secret))"
    r"[^\n|;&]{0,200}?(?<=[ \t])(?:--body|-b|--value|--secret-string)(?:[ \t]+|=)?" + _VALUE
)


def _judge_secret_store(m: re.Match[str], secret: str) -> str | None:
    if _is_template(secret) or secret.startswith(("file://", "fileb://")):
        return None
    return "secret"


# ``kubectl create secret generic NAME --from-literal=<key>=<value>``: every literal's value,
# whatever its key's name and a plain word too (a Secret holds nothing else), also with the
# whole literal quoted (``--from-literal='conn=...'``). A docs' ``key=value`` stays.
_FROM_LITERAL = re.compile(r"--from-literal=[^=\s\"']{1,253}=" + _VALUE)
_FROM_LITERAL_QUOTED = re.compile(
    r"--from-literal=(?P<kq>[\"'])[^=\s\"']{1,253}=(?P<secret>[^\"'\n]{1,4096})(?P=kq)"
)
_CREATES_A_SECRET = re.compile(r"\b(?:kubectl|oc)\b[^\n|;&]*?\bcreate[ \t]+secret\b")
_EXAMPLE_VALUES = frozenset("value val values foo bar baz example changeme".split())


def _judge_from_literal(m: re.Match[str], secret: str) -> str | None:
    line = _line_lead(m)
    if _CREATES_A_SECRET.search(line) is None or _is_template(secret):
        return None
    if len(secret.strip()) < 3 or secret.lower() in _EXAMPLE_VALUES:
        return None  # "url=x", "key=value": an example's
    return "secret"


def _starts(*names: str, folded: bool = False) -> Seek:
    """Where one of the commands' names starts (in the folded text for a case-blind one)."""

    def seek(scan: Scan) -> list[int]:
        return find_all(scan.folded if folded else scan.text, names)

    return seek


def _starts_then(names: tuple[str, ...], then: str) -> Seek:
    """Where one of ``names`` starts a word that blanks and ``then`` follow: a short name
    ("gh", "git", "pip") is inside many words, its command is not."""
    after = re.compile(r"[ \t]+" + then)

    def seek(scan: Scan) -> list[int]:
        text = scan.text
        return [
            at
            for at in find_all(text, names)
            if (not at or not text[at - 1].isalnum())
            and any(
                text.startswith(name, at) and after.match(text, at + len(name)) for name in names
            )
        ]

    return seek


COMMANDS: tuple[RuleSpec, ...] = (
    (
        _TOOL_FLAG,
        _judge_tool_flag,
        _starts("zip", "unzip", "7z", "rar", "unrar", "openssl", "ldap"),
    ),
    (_SMB_USER, _fixed("password"), _starts("smbclient")),
    (_HTPASSWD, _judge_htpasswd, _starts("htpasswd")),
    (
        _ORACLE_LOGIN,
        _judge_oracle_login,
        _starts("sqlplus", "jdbc:oracle:"),
    ),
    (_STDIN, _judge_stdin, _starts("echo", "printf")),
    (_HEREDOC, _judge_heredoc, _starts("<<")),
    (_HERESTRING, _judge_heredoc, _starts("<<<")),
    (_VAULT_LOGIN, _judge_vault_login, _starts("vault")),
    (
        _LOGIN_TOOL,
        _judge_login_tool,
        _starts(
            "xfreerdp",
            "wlfreerdp",
            "freerdp",
            "hydra",
            "medusa",
            "ncrack",
            "crackmapexec",
            "cme",
            "nxc",
            "netexec",
            "evil-winrm",
            "rdesktop",
            "smbmap",
        ),
    ),
    (_PSEXEC, _judge_login_tool, _starts("psexec", "paexec", folded=True)),
    (_CONFIG_SET, _judge_config_set, _config_starts),
    (
        _TOOL_PASSWORD,
        _judge_tool_password,
        _starts(
            "cqlsh", "helm", "mosquitto_", "nuget", "dotnet", "useradd", "usermod", "ssh-keygen"
        ),
    ),
    (
        _POSITIONAL,
        _judge_positional,
        _starts("wpa_passphrase", "rabbitmqctl", "mc", "cargo", "ngrok", "rclone", "pulumi"),
    ),
    (_EXPECT_SEND, _judge_expect_send, _starts("expect")),
    (_SECRET_STORE, _judge_secret_store, _starts_then(("gh", "az", "aws"), "(?:secret|keyv|ssm)")),
    (_FROM_LITERAL_QUOTED, _judge_from_literal, _starts("--from-literal=")),
    (_FROM_LITERAL, _judge_from_literal, _starts("--from-literal=")),
    (_NET, _judge_net_password, _starts("net", folded=True)),
    (_SETX, _judge_setx, _starts("setx", folded=True)),
    (_SHELL_SET, _judge_shell_set, _shell_set_starts),
)
