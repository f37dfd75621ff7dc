"""Who owns a record whose write does not say: the session a ``session`` record belongs to
and the directory a ``project`` record belongs to.

memory.v1's ``RecordRequest`` is ``{type, scope, id, title, content}``: no session, no directory
(``session_id`` and ``working_directory`` are this provider's extension fields), so a plain client
records a ``MEMORY_SCOPE_PROJECT`` record with neither. The scope is one GetCapabilities lists, so
refusing it as ``invalid_scope`` (which means "not a supported scope") would be false; the store
needs an owner, so the gateway names one. The owner is the context of the latest Recall (a session
recalls at context-assemble, then writes later in the same session and directory;
docs/PROTOCOLS.md#types-and-scopes) made by the same caller (its connection, ``context.peer()``):
one gateway serves many agents, and another agent's latest Recall would file this one's record in
that agent's project or session, where that agent then recalls it. For a directory, the latest
Recall of the same session when the write names one. Before any Recall of its own, the gateway's
own: its working directory and a session of its own lifetime (a session record from nobody known is
recalled by no later session: session scope is recalled only in its own session). An owner the
request gives always wins; reads never guess (a Recall without a directory sees no project records).
"""

from __future__ import annotations

import os
import threading

from ulid import ULID

MAX_SESSIONS = 1024  # directories remembered per session; the oldest is forgotten first
MAX_CALLERS = 1024  # callers whose latest context is remembered; the oldest is forgotten first


class Owners:
    """The context Recalls carried, and the owner a write without one gets."""

    def __init__(self, *, project: str | None = None, session: str | None = None) -> None:
        self.home_project = project or os.getcwd()
        self.home_session = session or f"memory-grpc-{str(ULID()).lower()}"
        self._lock = threading.Lock()
        # caller (a connection's peer; None: not known) → its latest (session, directory)
        self._latest: dict[str | None, tuple[str | None, str | None]] = {}
        self._projects: dict[str, str] = {}

    def saw(
        self, session_id: str | None, project: str | None, *, caller: str | None = None
    ) -> None:
        """A Recall answered for this session and directory (either may be unknown), made by
        ``caller``."""
        with self._lock:
            if session_id or project:
                session, directory = self._latest.pop(caller, (None, None))
                self._latest[caller] = (session_id or session, project or directory)
                while len(self._latest) > MAX_CALLERS:
                    self._latest.pop(next(iter(self._latest)))
            if project:
                if session_id:
                    self._projects.pop(session_id, None)
                    self._projects[session_id] = project
                    while len(self._projects) > MAX_SESSIONS:
                        self._projects.pop(next(iter(self._projects)))

    def fill(
        self,
        scope: str | None,
        *,
        session_id: str | None,
        project: str | None,
        caller: str | None = None,
    ) -> tuple[str | None, str | None]:
        """``(session_id, project)`` for a write of ``scope``: the given ones, else the owner
        the scope needs from ``caller``'s latest context, else the gateway's own."""
        with self._lock:
            latest_session, latest_project = self._latest.get(caller, (None, None))
            if scope == "session" and not session_id:
                session_id = latest_session or self.home_session
            if scope == "project" and not project:
                known = self._projects.get(session_id) if session_id else None
                project = known or latest_project or self.home_project
        return session_id, project
