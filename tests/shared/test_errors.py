"""shared/contract/errors.py: one tree, every error survives pickling, every category has a gRPC
code."""

from __future__ import annotations

import pickle

import pytest

from shared.contract import errors

ALL_ERRORS = [
    errors.MemoryServiceError,
    errors.NotFoundError,
    errors.InvalidTypeError,
    errors.InvalidScopeError,
    errors.RatificationUnsupportedError,
    errors.BudgetExceededError,
    errors.SourceUnavailableError,
    errors.DataDirUnwritableError,
    errors.DataDirLockedError,
    errors.UnknownError,
    errors.InvalidArgumentError,
    errors.ConflictError,
    errors.DraftsWaitingError,
    errors.PermissionDeniedError,
]


def _all_subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out.add(sub)
        out |= _all_subclasses(sub)
    return out


def test_the_list_above_covers_the_whole_tree() -> None:
    # Errors defined by other modules (say a CLI-only subclass) are not ours to list here.
    in_module = {
        c for c in _all_subclasses(errors.MemoryServiceError) if c.__module__ == errors.__name__
    }
    assert in_module | {errors.MemoryServiceError} == set(ALL_ERRORS)


@pytest.mark.parametrize("cls", ALL_ERRORS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("retryable", [None, True, False])
def test_pickle_round_trip(cls: type[errors.MemoryServiceError], retryable: bool | None) -> None:
    err = cls("something happened: ünïcode", retryable)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls
    assert back.message == err.message == "something happened: ünïcode"
    assert back.retryable == err.retryable
    assert back.category == err.category
    assert str(back) == str(err)
    assert back.to_dict() == err.to_dict()


@pytest.mark.parametrize("cls", ALL_ERRORS, ids=lambda c: c.__name__)
def test_pickle_round_trip_after_raise_with_cause(cls: type[errors.MemoryServiceError]) -> None:
    try:
        try:
            raise OSError(28, "No space left on device")
        except OSError as e:
            raise cls("wrapped") from e
    except errors.MemoryServiceError as caught:
        back = pickle.loads(pickle.dumps(caught))
    assert type(back) is cls and back.message == "wrapped"


def test_grpc_codes_cover_every_category() -> None:
    assert set(errors.GRPC_CODES) == set(errors.CATEGORIES)
    # memory.v1: never UNKNOWN, which a client cannot tell from a crash
    assert "UNKNOWN" not in errors.GRPC_CODES.values()
    for cls in ALL_ERRORS:
        assert cls.category in errors.CATEGORIES
        assert cls.category in errors.GRPC_CODES
    assert errors.GRPC_CODES["invalid_argument"] == "INVALID_ARGUMENT"
    assert errors.GRPC_CODES["not_found"] == "NOT_FOUND"
    assert errors.GRPC_CODES["source_unavailable"] == "UNAVAILABLE"
    assert errors.GRPC_CODES["budget_exceeded"] == "RESOURCE_EXHAUSTED"


def test_every_category_has_a_leaf_and_from_dict_finds_it() -> None:
    for category in errors.CATEGORIES:
        err = errors.MemoryServiceError.from_dict(
            {"category": category, "message": "m", "retryable": True}
        )
        assert err.category == category
        assert err.retryable is True
        assert err.message == "m"
    unknown = errors.MemoryServiceError.from_dict({"category": "no-such-thing"})
    assert isinstance(unknown, errors.UnknownError)


@pytest.mark.parametrize("cls", ALL_ERRORS, ids=lambda c: c.__name__)
def test_to_dict_from_dict_round_trip(cls: type[errors.MemoryServiceError]) -> None:
    err = cls("msg")
    back = errors.MemoryServiceError.from_dict(err.to_dict())
    assert back.category == err.category
    assert back.message == err.message
    assert back.retryable == err.retryable


def test_retryable_defaults_and_hierarchy() -> None:
    assert errors.SourceUnavailableError("x").retryable is True
    assert errors.DataDirUnwritableError("x").retryable is False  # a bad dir stays bad
    assert errors.InvalidArgumentError("x").retryable is False
    assert errors.SourceUnavailableError("x", retryable=False).retryable is False
    assert issubclass(errors.DataDirUnwritableError, errors.SourceUnavailableError)
    assert issubclass(errors.ConflictError, errors.InvalidArgumentError)
    assert errors.ConflictError("x").category == "invalid_argument"
    for cls in ALL_ERRORS:
        assert issubclass(cls, Exception)
        assert cls.__doc__, f"{cls.__name__} needs a 'Raised when…' docstring"


def test_reason_is_the_message_without_the_class_name() -> None:
    assert errors.reason(errors.NotFoundError("no memory 'x'")) == "no memory 'x'"
    kept = errors.UnknownError("1 problem(s): /data/main\n: not a valid bank name")
    assert errors.reason(kept) == kept.message  # a typed message is ours: kept whole
    assert errors.reason(RuntimeError("disk on fire\n  at line 3")) == "disk on fire"
    gone = FileNotFoundError(2, "No such file or directory", "/tmp/x")
    assert errors.reason(gone) == "No such file or directory: /tmp/x"
    assert errors.reason(KeyError()) == "failed without saying why"
