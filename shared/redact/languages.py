"""A password named in another language ("Passwort: X", "mot de passe : X", "la contraseña
es X", "пароль: X", "密码是X", "비밀번호는 X"): the noun, a separator or the language's "is", then
the value, judged as in English (shared/redact/prose.py)."""

from __future__ import annotations

import re

from shared.redact.catalogue import is_random, looks_like_password
from shared.redact.keywords import _is_next_key, _is_placeholder
from shared.redact.prose import _DIGITS
from shared.redact.rule import Scan

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


# The verb that ends a sentence after the value (Hindi "मेरा पासवर्ड X है", Korean "비밀번호
# X 입니다", Japanese "パスワードは X です"): said as one, as "is" before it says.
_FINAL_VERB = re.compile(r"[ \t]*(?:है|था|थी|हैं|입니다|이에요|예요|です|だ)(?![^\W\d_])")
