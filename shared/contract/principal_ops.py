"""The principals' store operations: scoped tokens and who owns a session
(``shared.contract.principal``); ``shared.contract.ops`` re-exports them with the others.
"""

from __future__ import annotations

from dataclasses import KW_ONLY
from typing import TYPE_CHECKING, ClassVar

from shared.contract.op import Labels, Read, Route, Write

if TYPE_CHECKING:  # the answers' types, named in strings
    from typing import Any  # noqa: F401


class TokenCreate(Write["dict[str, Any]"]):
    """A new scoped token: ``{"token", "principal"}``; the token is answered this once and
    kept only as its hash. ``banks`` / ``projects``: ``None`` for every one."""

    route: ClassVar[Route] = "first"
    name: str
    _: KW_ONLY
    banks: Labels = None
    projects: Labels = None
    read_only: bool = False


class TokenList(Read["list[dict[str, Any]]"]):
    """The scoped tokens' principals (never a token or its hash)."""

    route: ClassVar[Route] = "first"


class TokenRevoke(Write["dict[str, Any]"]):
    """Revoke the token ``name``: it is refused from then on, and its name is never reused."""

    route: ClassVar[Route] = "first"
    name: str


class TokenResolve(Read["dict[str, Any] | None"]):
    """The principal of the live token whose hash is ``digest``, else ``None``."""

    route: ClassVar[Route] = "first"
    digest: str


class SessionOwner(Write["str | None"]):
    """The principal that owns ``session_id``; with ``claim``, that principal becomes its
    owner when it has none (the first use), and the owner is answered either way."""

    route: ClassVar[Route] = "first"
    session_id: str
    claim: str | None = None
