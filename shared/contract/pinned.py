"""A pinned memory is a person's: the tools an agent calls refuse to change it.

A person pins a memory (``memory pin ID``, the console's pin button) when it must always hold
("the user is allergic to peanuts"); consolidation never merges, decays or retires it. The
agent-facing surfaces refuse every change to one as well: retiring it, superseding it,
unpinning it, rewriting its text. Otherwise a page that says "forget the allergy note" was one
tool call away from undoing what a person decided. Those surfaces are the MCP tools and the
memory-tool backend (``integrations``) and memory.v1's MemoryTools, the reference tools a model
calls through the gateway (``grpc_gateway.tools``); each checks first that the caller may see
the memory (one it may not see stays ``not_found``), then refuses here, and writes nothing.
Pinning stays open to an agent: it only adds protection. The store records no who-pinned, so
a memory an agent pinned is held as a person's from then on: the tools say so.

The person's own surfaces (the CLI, the console, the library APIs, memory.store.v1) do not
pass through here and stay as they are; nor does memory.v1's MemoryService, the kernel's
record API (its review inbox approves, edits and deletes records).

This lives in the contract so both the integrations and the gateway, which may not import
each other, raise the same refusal.
"""

from __future__ import annotations

from collections.abc import Iterable

from shared.contract import errors
from shared.contract.models import Memory


class PinnedMemoryError(errors.PermissionDeniedError):
    """Raised when an agent's tool would retire, supersede, unpin or rewrite a pinned memory;
    nothing is written. ``permission_denied``: the call is well-formed, and no retry or other
    argument makes it allowed; only a person may make the change (``refusal`` words it)."""


def refusal(ids: Iterable[str], doing: str) -> PinnedMemoryError:
    """The refusal of ``doing`` (``"forget"``, ``"supersede"``, ``"unpin"``, ``"rewrite"``,
    ``"delete"``...) to the pinned memories ``ids``: it says they are a person's, and how a
    person changes one."""
    shown = list(ids)
    one = len(shown) == 1
    it, they, are = ("it", "it", "is") if one else ("them", "they", "are")
    unpin = " / ".join(f"`memory unpin {i}`" for i in shown)
    return PinnedMemoryError(
        f"{', '.join(shown)} {are} pinned by a person, so no agent tool may {doing} {it}; "
        f"leave {it} as {they} {are}. If the user wants a change, a "
        f"person makes it: {unpin} (then edit or forget {it}), or the console's memory page"
    )


def refuse_if_pinned(memory: Memory, doing: str) -> None:
    """``refusal`` of ``doing`` when ``memory`` is pinned (a live or a retired one)."""
    if memory.pinned:
        raise refusal([memory.id], doing)
