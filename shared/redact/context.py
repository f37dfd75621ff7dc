"""The context rules in the order they run around the catalogue: a value whose surroundings
say it is a credential (a header, a URL, a command line, a sentence, markup, a table, an
assignment), each judged by the value's shape so that prose survives. The rule families are
the modules this one imports; this one holds their order, and the PEM private key blocks that
run before the catalogue. The decisions the judges encode are listed in
shared/redact/__init__.py ("Decisions")."""

from __future__ import annotations

import re

from shared.redact.assignments import _ASSIGNMENT, _assignment_starts, _judge_assignment
from shared.redact.keywords import _judge_keyword_value
from shared.redact.languages import (
    _FOREIGN_PASSWORD,
    _FOREIGN_PASSWORD_PASS,
    _foreign_pass_starts,
    _judge_foreign_password,
)
from shared.redact.markup import (
    _ESCAPED_JSON,
    _XML_ATTRIBUTE,
    _XML_ATTRIBUTE_REVERSED,
    _XML_ELEMENT,
    _YAML_NEXT_LINE,
    _judge_next_line,
    _yaml_starts,
)
from shared.redact.prose import (
    _PASSPHRASE,
    _PIN,
    _SAID_KEY,
    _SAID_PASSWORD,
    _judge_passphrase,
    _judge_said_key,
    _judge_said_password,
    _passphrase_starts,
    _pin_starts,
    _said_key_starts,
    _said_password_starts,
)
from shared.redact.rule import RuleSpec, _fixed
from shared.redact.shell import (
    _CLI_FLAG,
    _COMMAND_PASSWORD,
    _CURL_USER,
    _command_starts,
    _curl_starts,
    _flag_starts,
    _judge_cli_flag,
    _judge_command_password,
    _judge_password_value,
)
from shared.redact.tables import (
    _HEADER_WORDS,
    _TABLE_CELL,
    _TABLE_ROW,
    _judge_table_cell,
    _judge_table_row,
    _row_starts,
)
from shared.redact.web import (
    _AUTH_HEADER,
    _AWS_SECRET,
    _AZURE_KEY,
    _BASIC,
    _BEARER,
    _CREDENTIAL_URL,
    _URL_KEY,
    _URL_SIGNATURE,
    _aws_secret_starts,
    _judge_auth_header,
    _judge_basic,
    _judge_bearer,
    _judge_url,
    _judge_url_key,
)

__all__ = ["AFTER_CATALOGUE", "BEFORE_CATALOGUE", "TEXT_ANCHORS"]

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
