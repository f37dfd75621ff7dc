"""How mem0's ids map onto this store, in one place: the mem0-compatible ``Memory`` class
(``integrations.mem0_compat``) writes with it and ``memory import --from mem0`` reads with it,
so an imported memory reads back through ``Memory.get_all`` under mem0's own ids."""

from __future__ import annotations

import hashlib

from shared.contract.config import NAME_RE
from shared.redact import find_credential, redact
from shared.text import slugify


def bank_of(user_id: str) -> str:
    """The bank of a mem0 ``user_id``: itself when a valid bank name, else its slug and 8 hex
    characters of its SHA-256 (``mem0-user-`` and those when it holds a credential)."""
    digest = hashlib.sha256(user_id.encode()).hexdigest()[:8]
    if find_credential(user_id) is not None or redact(user_id).labels:
        return f"mem0-user-{digest}"  # a bank's name is shown and kept: never the credential
    if NAME_RE.fullmatch(user_id):
        return user_id
    return f"{slugify(user_id, max_words=8, max_len=40)}-{digest}"


def tag(kind: str, value: str) -> str:
    """The tag a mem0 ``agent_id`` or ``run_id`` (``kind``: agent, run) is filtered by."""
    return f"mem0-{kind}-{hashlib.sha256(value.encode()).hexdigest()[:16]}"
