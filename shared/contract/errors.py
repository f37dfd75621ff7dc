"""The one error tree of the memory service (docs/ARCHITECTURE.md#errors; on the wire, the
memory.v1 error taxonomy, docs/PROTOCOLS.md#errors).

    MemoryServiceError(category, message, retryable)
    ├── NotFoundError                 category not_found
    ├── InvalidTypeError              category invalid_type
    ├── InvalidScopeError             category invalid_scope
    ├── RatificationUnsupportedError  category ratification_unsupported
    ├── BudgetExceededError           category budget_exceeded
    ├── SourceUnavailableError        category source_unavailable (retryable)
    │   ├── DataDirUnwritableError
    │   └── DataDirLockedError
    ├── UnknownError                  category unknown
    ├── PermissionDeniedError         category permission_denied (a token's principal may not)
    └── InvalidArgumentError          category invalid_argument
        └── ConflictError             (the call is well-formed but the record's state refuses it)
            └── DraftsWaitingError    (ratification turned off with drafts outstanding)

``invalid_argument`` is the store's own API's: on the memory.v1 wire every failure is one of
the protocol's seven categories, so the gateway classifies it there (``grpc_gateway.server.
on_the_wire``: a malformed id is ``not_found``, other malformed input ``unknown``).

Every constructor argument stays in ``args`` so the errors survive pickling: Ray moves them
between processes. Edges translate them (the CLI into exit codes, the gRPC gateway into status
codes via ``GRPC_CODES``); nothing inside the service does.
"""

from __future__ import annotations

import errno
from typing import Any, ClassVar

CATEGORIES = (
    "not_found",
    "invalid_type",
    "invalid_scope",
    "ratification_unsupported",
    "budget_exceeded",
    "source_unavailable",
    "unknown",
    "invalid_argument",
    "permission_denied",
)

# Each category's gRPC status code, as memory.v1 maps them; never UNKNOWN, which a client
# cannot tell from a crash (docs/PROTOCOLS.md#errors).
GRPC_CODES = {
    "not_found": "NOT_FOUND",
    "invalid_type": "INVALID_ARGUMENT",
    "invalid_scope": "INVALID_ARGUMENT",
    "ratification_unsupported": "FAILED_PRECONDITION",
    "budget_exceeded": "RESOURCE_EXHAUSTED",
    "source_unavailable": "UNAVAILABLE",
    "unknown": "INTERNAL",
    "invalid_argument": "INVALID_ARGUMENT",
    "permission_denied": "PERMISSION_DENIED",
}


class MemoryServiceError(Exception):
    """Root of the tree. Raised directly only for a category without a leaf."""

    category: ClassVar[str] = "unknown"
    default_retryable: ClassVar[bool] = False

    def __init__(self, message: str, retryable: bool | None = None) -> None:
        super().__init__(message, retryable)
        self.message = message
        self.retryable = self.default_retryable if retryable is None else retryable

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict[str, Any]:
        return {"category": self.category, "message": self.message, "retryable": self.retryable}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> MemoryServiceError:
        cls = _BY_CATEGORY.get(str(data.get("category")), UnknownError)
        return cls(str(data.get("message", "")), bool(data.get("retryable", False)))


class NotFoundError(MemoryServiceError):
    """Raised when an id, bank or rule named by the call does not exist."""

    category = "not_found"


class InvalidTypeError(MemoryServiceError):
    """Raised when a memory type is missing, unspecified or not one of the supported four."""

    category = "invalid_type"


class InvalidScopeError(MemoryServiceError):
    """Raised when a scope is missing, unspecified, unsupported, or lacks what it needs."""

    category = "invalid_scope"


class RatificationUnsupportedError(MemoryServiceError):
    """Raised when approve/reject is called while ratification is off."""

    category = "ratification_unsupported"


class BudgetExceededError(MemoryServiceError):
    """Raised when recall's token budget cannot hold even the single best candidate."""

    category = "budget_exceeded"


class SourceUnavailableError(MemoryServiceError):
    """Raised when storage or the store actor cannot be reached; worth retrying."""

    category = "source_unavailable"
    default_retryable = True


class DataDirUnwritableError(SourceUnavailableError):
    """Raised at start-up when the data dir cannot be written: the store never runs in RAM."""

    default_retryable = False


class DataDirLockedError(SourceUnavailableError):
    """Raised when a store opens a data dir another store holds (its ``.lock``): the message
    names the holder (pid, host, since). Retrying helps only once that store stops."""

    default_retryable = False


class UnknownError(MemoryServiceError):
    """Raised for a failure no other leaf describes; the message carries the detail."""

    category = "unknown"


class InvalidArgumentError(MemoryServiceError):
    """Raised when input is malformed: a bad name, id, turn id, oversized text, bad token."""

    category = "invalid_argument"


class PermissionDeniedError(MemoryServiceError):
    """Raised when a token's principal may not make the call (a write with a read-only token,
    another bank, an admin operation); the message names the missing permission. Nothing is
    written (shared.contract.principal)."""

    category = "permission_denied"


class ConflictError(InvalidArgumentError):
    """Raised when a well-formed call is refused by the record's state (pinned, retired, self)."""


class DraftsWaitingError(ConflictError):
    """Raised when ratification would be turned off while pending drafts wait for review."""


# errno values that mean the storage, not the call, is at fault, so the caller gets a typed
# source_unavailable (retryable when the cause may pass) instead of an unknown error: a full
# disk or quota, a read-only or failing device, no descriptors or inodes left, no permission.
STORAGE_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EROFS,
        errno.EIO,
        errno.EMFILE,
        errno.ENFILE,
        errno.EACCES,
        errno.EPERM,
    }
)
# Of those, the ones that may pass without anyone changing the setup.
TRANSIENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EMFILE, errno.ENFILE})


def storage_error(what: str, e: OSError) -> SourceUnavailableError:
    """An ``OSError`` from a file operation as the tree's ``SourceUnavailableError``: retryable
    when the cause may pass (a full disk, EIO, no descriptors), not for a read-only or
    forbidden place. ``what`` says what failed ("cannot write <path>")."""
    return SourceUnavailableError(
        f"{what}: {e.strerror or e}", retryable=e.errno in TRANSIENT_ERRNOS or e.errno is None
    )


_BY_CATEGORY: dict[str, type[MemoryServiceError]] = {
    "not_found": NotFoundError,
    "invalid_type": InvalidTypeError,
    "invalid_scope": InvalidScopeError,
    "ratification_unsupported": RatificationUnsupportedError,
    "budget_exceeded": BudgetExceededError,
    "source_unavailable": SourceUnavailableError,
    "unknown": UnknownError,
    "invalid_argument": InvalidArgumentError,
    "permission_denied": PermissionDeniedError,
}


def reason(e: BaseException) -> str:
    """What went wrong, in words a user reads (``doctor`` details, hand-edit problems): the
    message, never the exception's class name; the first line of a foreign exception's
    multi-line text (a parser's context lines), a typed error's message whole."""
    if isinstance(e, MemoryServiceError):
        return e.message.strip() or "failed without saying why"
    if isinstance(e, OSError) and e.strerror:
        text = f"{e.strerror}: {e.filename}" if e.filename else e.strerror
    else:
        text = str(e)
    first = text.strip().splitlines()[0].strip() if text.strip() else ""
    return first or "failed without saying why"


# What the store raises for a call's *input*: a refused ``save_many`` or ``supersede_many``
# wrote nothing, so its items may be sent again one by one (``shared/client/coalesce.py``, the
# extractor and the consolidator). Any other failure is an outcome the caller cannot know.
REFUSALS: tuple[type[MemoryServiceError], ...] = (
    InvalidArgumentError,
    InvalidTypeError,
    InvalidScopeError,
    NotFoundError,
    RatificationUnsupportedError,
    BudgetExceededError,
)
