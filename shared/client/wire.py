"""The memory.store.v1 wire: how an op crosses gRPC.

``store.proto`` declares one RPC, ``Call``: a ``StoreCall`` carries the op's method name and its
arguments by name as a JSON object (only those that differ from their defaults), and a
``StoreResult`` the op's declared response as JSON. This module is the one place both ends
agree on that: the argument check the gateway runs before the store does (``decode_op``, the
one validation of a call at this boundary), the response codec the client validates with, and
the error trailers. The ops (``shared.contract.ops``) are the schema, so an op that changes changes
the wire with it.

Errors keep the store's own tree (``invalid_argument`` included, unlike memory.v1's seven wire
categories): the status is the category's (``errors.GRPC_CODES``), and the trailing metadata
carries ``memory-store-error-bin`` (a serialized ``StoreError``) and ``memory-error-category``.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from typing import TYPE_CHECKING, Any

from shared.contract import errors
from shared.contract.op import Op, fields_of, op_named

if TYPE_CHECKING:
    from pydantic import TypeAdapter

# pydantic is imported by the functions that validate (the gateway's side, and a validating
# client's): a client with ``validate=False`` (the CLI) decodes answers to ``View``s and never
# loads it (~35 ms of a command's ~140)

SERVICE = "memory.store.v1.StoreService"
ERROR_KEY = "memory-store-error-bin"
CATEGORY_KEY = "memory-error-category"  # the same key memory.v1 uses

# How an argument of each declared type travels as JSON, when its type is not one pydantic
# can check as it stands: a label list (a bare string stays one label, as in-process; JSON has
# no generators) and a batch's items (each checked by the store as its own op).
_WIRE_TYPES: dict[str, object] = {
    "Labels": str | tuple[str, ...] | None,
    "Sequence[object]": list[dict[str, Any]],
    "list[Message] | None": list[dict[str, Any]] | None,
    "object": Any,
    "Any": Any,
}


def served(method: str) -> type[Op[Any]]:
    """The op called ``method``, if the wire carries it; else ``InvalidArgumentError``."""
    cls = op_named(method)
    if not cls.wire:
        raise errors.InvalidArgumentError(
            f"{method!r} is not served over gRPC: its arguments only make sense in the "
            "caller's process (poll events_since and outbox_list instead of callbacks)"
        )
    return cls


_ARGS: dict[type, dict[str, TypeAdapter[Any]]] = {}
_RESULTS: dict[type, TypeAdapter[Any]] = {}


def _arg_adapters(cls: type[Op[Any]]) -> dict[str, TypeAdapter[Any]]:
    if cls in _ARGS:
        return _ARGS[cls]
    from pydantic import TypeAdapter

    hints = typing.get_type_hints(cls)
    out: dict[str, TypeAdapter[Any]] = {}
    for f in fields_of(cls):
        declared = f.type if isinstance(f.type, str) else str(f.type)
        wire: Any = _WIRE_TYPES.get(declared, hints.get(f.name, Any))
        out[f.name] = TypeAdapter(wire)
    _ARGS[cls] = out
    return out


def encode_args(op: Op[Any]) -> str:
    """The client's side: the op's arguments that differ from their defaults, by name as JSON
    (a pydantic model or an op as its fields); a value JSON cannot hold (a set, an object) is
    ``InvalidArgumentError``, as the store says it."""
    try:
        return json.dumps(op.changed(), ensure_ascii=False, default=_model)
    except (TypeError, ValueError) as e:
        raise errors.InvalidArgumentError(f"an argument cannot be sent over gRPC: {e}") from e


def _model(value: object) -> object:
    if isinstance(value, Op):
        return value.changed()
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return _with_hidden(value, value.model_dump(mode="json"))
    raise TypeError(f"{type(value).__name__} is not JSON")


def decode_op(method: str, args_json: str) -> Op[Any]:
    """The gateway's side: the op named ``method``, its JSON arguments checked against the op's
    fields and types; anything else is ``InvalidArgumentError`` and nothing runs."""
    cls = served(method)
    try:
        raw = json.loads(args_json or "{}")
    except ValueError as e:
        raise errors.InvalidArgumentError(f"{method}: arguments are not JSON: {e}") from e
    except RecursionError as e:  # "[[[[..." nested past the parser's depth
        raise errors.InvalidArgumentError(f"{method}: arguments are nested too deeply") from e
    if not isinstance(raw, dict):
        raise errors.InvalidArgumentError(f"{method}: arguments must be a JSON object")
    from pydantic import ValidationError

    adapters = _arg_adapters(cls)
    unknown = sorted(set(raw) - set(adapters))
    if unknown:
        raise errors.InvalidArgumentError(f"{method}: unknown argument {', '.join(unknown)}")
    missing = [
        f.name
        for f in fields_of(cls)
        if f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
        and f.name not in raw
    ]
    if missing:
        raise errors.InvalidArgumentError(f"{method}: missing argument {', '.join(missing)}")
    out: dict[str, Any] = {}
    for name, value in raw.items():
        try:
            out[name] = adapters[name].validate_python(value)
        except ValidationError as e:
            first = e.errors()[0]
            raise errors.InvalidArgumentError(f"{method}: {name}: {first['msg']}") from None
    return cls(**out)


def _result_adapter(cls: type[Op[Any]]) -> TypeAdapter[Any]:
    if cls not in _RESULTS:
        from pydantic import TypeAdapter

        _RESULTS[cls] = TypeAdapter(cls.response_type())
    return _RESULTS[cls]


def encode_result(cls: type[Op[Any]], value: object) -> str:
    """The gateway's side: the method's answer as JSON of its declared type, fields hidden
    from dumps included (an outbox job's ``lease``: its claimer needs it back)."""
    dumped = _result_adapter(cls).dump_python(value, mode="json")
    return json.dumps(_with_hidden(value, dumped), ensure_ascii=False)


def _with_hidden(value: object, dumped: Any) -> Any:
    """``dumped`` (``value`` in JSON mode) with each model's ``exclude=True`` fields put back.

    Such a field is kept out of what a user sees (``--json``, logs), not out of the API."""
    from pydantic import BaseModel
    from pydantic_core import to_jsonable_python

    if isinstance(value, BaseModel) and isinstance(dumped, dict):
        for name, field in type(value).model_fields.items():
            inner = getattr(value, name)
            if field.exclude:
                dumped[name] = to_jsonable_python(inner)
            elif name in dumped:
                dumped[name] = _with_hidden(inner, dumped[name])
    elif isinstance(value, list | tuple) and isinstance(dumped, list):
        return [_with_hidden(v, d) for v, d in zip(value, dumped, strict=False)]
    elif isinstance(value, dict) and isinstance(dumped, dict):
        return {k: _with_hidden(value.get(k), d) for k, d in dumped.items()}
    return dumped


def decode_result(cls: type[Op[Any]], result_json: str) -> Any:
    """The client's side: the answer validated as the op's declared type, or
    ``UnknownError`` (a gateway of another version answered something else)."""
    from pydantic import BaseModel, ValidationError

    expect = cls.response_type()
    try:
        if isinstance(expect, type) and issubclass(expect, BaseModel):
            return expect.model_validate_json(result_json)  # the model's own validator
        return _result_adapter(cls).validate_json(result_json or "null")
    except ValidationError as e:
        raise errors.UnknownError(
            f"the gateway's {cls.method} answer is not the declared response: "
            f"{e.errors()[0]['msg']}"
        ) from e


class View(dict[str, Any]):
    """An answer as it came over the wire: a JSON object whose fields read as attributes too
    (``r.memories[0].memory.id``), for a caller that only reads them.

    A ``GrpcStoreClient(validate=False)`` answers these instead of the declared models: the
    ``memory`` CLI, whose renderers read fields and whose ``--json`` prints them, so a command
    loads neither pydantic nor the models. Lists stay lists, scalars stay JSON
    scalars; a field's name never shadows a ``dict`` method (``tests/shared/
    test_store_wire_view.py`` checks every model's fields)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def decode_view(method: str, result_json: str) -> Any:
    """The answer as ``View``s (objects) and JSON values, unvalidated; a reply that is not
    JSON is ``UnknownError``."""
    try:
        return json.loads(result_json or "null", object_hook=View)
    except ValueError as e:
        raise errors.UnknownError(f"the gateway's {method} answer is not JSON: {e}") from e
