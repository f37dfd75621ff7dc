"""The memory.store.v1 wire: how a ``StoreAPI`` call crosses gRPC (issue 13).

``shared/proto/memory/store/v1/store.proto`` declares one RPC per ``StoreAPI`` method; each
carries the method's arguments by name as a JSON object and answers the method's declared
response type as JSON. This module is the one place both ends agree on that: the RPC ↔ method
table, the argument check the gateway runs before the store does, the response codec the
client validates with, and the error trailers. ``StoreAPI``'s annotations are the schema, so a
method or a model that changes changes the wire with it (``tests/grpc_gateway/
test_store_service.py`` checks the proto and the contract name the same methods).

The messages are three flat ones (``StoreCall``, ``StoreResult``, ``StoreError``), so the client
encodes and decodes them here in a few lines of protobuf wire format instead of importing the
protobuf runtime (a CLI process saves its import; ``tests/grpc_gateway/test_store_service.py``
checks these bytes against the generated classes both ways).

Errors keep the store's own tree (``invalid_argument`` included, unlike memory.v1's seven wire
categories): the status is the category's (``errors.GRPC_CODES``), and the trailing metadata
carries ``memory-store-error-bin`` (a serialized ``StoreError``) and ``memory-error-category``.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import json
import re
import types
import typing
from typing import TYPE_CHECKING, Any

from shared import errors

if TYPE_CHECKING:
    from pydantic import TypeAdapter

# pydantic is imported by the functions that validate (the gateway's side, and a validating
# client's): a client with ``validate=False`` (the CLI) decodes answers to ``View``s and never
# loads it (~35 ms of a command's ~140, issue 13)

SERVICE = "memory.store.v1.StoreService"
ERROR_KEY = "memory-store-error-bin"
CATEGORY_KEY = "memory-error-category"  # the same key memory.v1 uses

NOT_SERVED = frozenset(
    {"subscribe", "outbox_watch", "shard_routing", "bank_export", "bank_import", "bank_release"}
)
"""``StoreAPI`` methods the store service does not carry: those whose callback runs in the
caller's process (poll ``events_since`` and ``outbox_list`` instead), and the shard
administration a rebalance does over Ray, next to the shards (``memory shards``)."""

EXTRA = frozenset({"ping"})
"""RPCs that are not ``StoreAPI`` methods: ``ping`` answers ``"pong"`` once the store does."""


def method_name(rpc: str) -> str:
    """``BankCreate`` → ``bank_create``: an RPC's ``StoreAPI`` method."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", rpc).lower()


def rpc_name(method: str) -> str:
    """``bank_create`` → ``BankCreate``."""
    return "".join(part.capitalize() for part in method.split("_"))


def path(method: str) -> str:
    """The full gRPC method path of a ``StoreAPI`` method."""
    return f"/{SERVICE}/{rpc_name(method)}"


@functools.cache
def _signature(method: str) -> tuple[inspect.Signature, dict[str, Any]]:
    from shared.api import StoreAPI

    if method == "ping":
        return inspect.Signature(), {"return": str}
    fn = getattr(StoreAPI, method, None)
    if fn is None or method.startswith("_") or method in NOT_SERVED:
        raise errors.InvalidArgumentError(f"{method!r} is not a store method served over gRPC")
    return inspect.signature(fn), typing.get_type_hints(fn)


def _is_iterable_of_str(hint: Any) -> bool:
    parts = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    return any(typing.get_origin(p) is collections.abc.Iterable for p in parts)


@functools.cache
def _arg_adapters(method: str) -> dict[str, TypeAdapter[Any]]:
    from pydantic import TypeAdapter

    sig, hints = _signature(method)
    out: dict[str, TypeAdapter[Any]] = {}
    for name in sig.parameters:
        if name == "self":
            continue
        hint = hints.get(name, Any)
        if _is_iterable_of_str(hint):
            # a label list: JSON has no generators; a bare string stays one label, as in-process
            hint = str | tuple[str, ...] | None
        out[name] = TypeAdapter(hint)
    return out


def encode_args(kwargs: dict[str, object]) -> str:
    """The client's side: arguments by name as JSON (a pydantic model as its fields); a value
    JSON cannot hold (a set, an object) is ``InvalidArgumentError``, as the store says it."""
    try:
        return json.dumps(kwargs, ensure_ascii=False, default=_model)
    except (TypeError, ValueError) as e:
        raise errors.InvalidArgumentError(f"an argument cannot be sent over gRPC: {e}") from e


def _model(value: object) -> object:
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return _with_hidden(value, value.model_dump(mode="json"))
    raise TypeError(f"{type(value).__name__} is not JSON")


def labels(values: collections.abc.Iterable[str] | None) -> object:
    """A label option (tags, filters) for the wire: any iterable as a list; a bare string
    stays one label, as in-process."""
    if values is None or isinstance(values, str):
        return values
    return list(values)


def decode_args(method: str, args_json: str) -> dict[str, Any]:
    """The gateway's side: the JSON object checked against the method's signature and types,
    as keyword arguments; anything else is ``InvalidArgumentError`` and nothing runs."""
    try:
        raw = json.loads(args_json or "{}")
    except ValueError as e:
        raise errors.InvalidArgumentError(f"{method}: arguments are not JSON: {e}") from e
    except RecursionError as e:  # "[[[[..." nested past the parser's depth
        raise errors.InvalidArgumentError(f"{method}: arguments are nested too deeply") from e
    if not isinstance(raw, dict):
        raise errors.InvalidArgumentError(f"{method}: arguments must be a JSON object")
    from pydantic import ValidationError

    sig, _ = _signature(method)
    adapters = _arg_adapters(method)
    unknown = sorted(set(raw) - set(adapters))
    if unknown:
        raise errors.InvalidArgumentError(f"{method}: unknown argument {', '.join(unknown)}")
    missing = [
        n
        for n, p in sig.parameters.items()
        if n != "self" and p.default is inspect.Parameter.empty and n not in raw
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
    return out


@functools.cache
def _result_adapter(method: str) -> TypeAdapter[Any]:
    from pydantic import TypeAdapter

    _, hints = _signature(method)
    return TypeAdapter(hints.get("return", Any))


def encode_result(method: str, value: object) -> str:
    """The gateway's side: the method's answer as JSON of its declared type, fields hidden
    from dumps included (an outbox job's ``lease``: its claimer needs it back)."""
    dumped = _result_adapter(method).dump_python(value, mode="json")
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


def decode_result(method: str, result_json: str) -> Any:
    """The client's side: the answer validated as the method's declared type, or
    ``UnknownError`` (a gateway of another version answered something else)."""
    from pydantic import BaseModel, ValidationError

    expect = _signature(method)[1].get("return")
    try:
        if isinstance(expect, type) and issubclass(expect, BaseModel):
            return expect.model_validate_json(result_json)  # the model's own validator
        return _result_adapter(method).validate_json(result_json or "null")
    except ValidationError as e:
        raise errors.UnknownError(
            f"the gateway's {method} answer is not the declared response: {e.errors()[0]['msg']}"
        ) from e


class View(dict[str, Any]):
    """An answer as it came over the wire: a JSON object whose fields read as attributes too
    (``r.memories[0].memory.id``), for a caller that only reads them.

    A ``GrpcStoreClient(validate=False)`` answers these instead of the declared models: the
    ``memory`` CLI, whose renderers read fields and whose ``--json`` prints them, so a command
    loads neither pydantic nor the models (issue 13). Lists stay lists, scalars stay JSON
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


# -- the protobuf wire format of the three messages (client side, no protobuf runtime) -------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def encode_call(args_json: str) -> bytes:
    """``StoreCall(args_json=...)`` serialized: field 1, length-delimited (empty: no bytes)."""
    raw = args_json.encode("utf-8")
    return b"\x0a" + _varint(len(raw)) + raw if raw else b""


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise ValueError("truncated varint")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def decode_fields(data: bytes) -> dict[int, bytes | int]:
    """A flat message's fields by number: length-delimited as bytes, varints as ints (the last
    occurrence wins, as protobuf merges scalars); fixed-width fields are skipped."""
    fields: dict[int, bytes | int] = {}
    at = 0
    while at < len(data):
        key, at = _read_varint(data, at)
        number, kind = key >> 3, key & 7
        if kind == 0:
            fields[number], at = _read_varint(data, at)
        elif kind == 2:
            size, at = _read_varint(data, at)
            if at + size > len(data):
                raise ValueError("truncated field")
            fields[number], at = data[at : at + size], at + size
        elif kind in (1, 5):
            at += 8 if kind == 1 else 4
            if at > len(data):
                raise ValueError("truncated field")
        else:
            raise ValueError(f"unsupported wire type {kind}")
    return fields


def _text(fields: dict[int, bytes | int], number: int) -> str:
    value = fields.get(number, b"")
    return value.decode("utf-8") if isinstance(value, bytes) else ""


def decode_result_message(data: bytes) -> str:
    """``StoreResult.result_json`` of a serialized ``StoreResult``."""
    return _text(decode_fields(data), 1)


def decode_error_message(data: bytes) -> dict[str, Any]:
    """A serialized ``StoreError`` as ``category``, ``message``, ``retryable``, ``kind``."""
    fields = decode_fields(data)
    return {
        "category": _text(fields, 1),
        "message": _text(fields, 2),
        "retryable": bool(fields.get(3, 0)),
        "kind": _text(fields, 4),
    }
