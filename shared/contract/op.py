"""What an operation is: ``Op`` and its two kinds, ``Read`` and ``Write`` (``shared.contract.ops``
declares the store's operations on them).

The store's operations as data: one frozen request per operation.

Each operation is declared here once, as a dataclass whose fields are the operation's
arguments (positional where the store takes them so, keyword-only after ``_: KW_ONLY``). The
class says everything a transport needs to carry it:

- its **response type** (``Op[Response]``; ``response_type()`` resolves it lazily, so a
  process that builds ops never imports pydantic or the models);
- whether it is a **read** (``Read``: changes nothing, safe to re-send after a lost answer) or a
  **write** (``Write``: sent at most once; a re-run could count an observation twice);
- its **route** for a sharded store: ``bank`` (the op's ``bank``, else the default bank),
  ``name`` (the op's ``name`` is a bank), ``items`` (every item on one bank), ``session`` (the
  session's bank), ``job`` (the outbox job's shard), ``all`` (fans out and merges), ``first``
  (shard 0, the holder of shared state) or ``local`` (never crosses a process boundary).

``StoreAPI`` (``shared.contract.api``) writes the typed methods once over ``call(op)``; every way of
reaching a store is a transport implementing only ``call`` (``docs/ARCHITECTURE.md``).

Ops are plain frozen dataclasses, not pydantic models, on purpose: building one costs a CLI
process nothing to import, pickles small over Ray, and the side that receives an op from the
wire validates it once (``decode``). Label options (tags, filters) accept any iterable and are
frozen into a tuple, so an op can be re-sent (a spent generator cannot).
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
from collections.abc import Iterable, Mapping
from typing import (
    Any,
    ClassVar,
    Generic,
    Literal,
    TypeGuard,
    TypeVar,
    dataclass_transform,
)

R = TypeVar("R", covariant=True)
Route = Literal["bank", "name", "items", "session", "job", "all", "first", "local"]
Labels = Iterable[str] | None
Message = dict[str, Any]
"""One chat message as a harness sends it: ``role``, ``content``, optional ``timestamp``."""

REGISTRY: dict[str, type[Op[Any]]] = {}
"""Every operation by its method name (``save``, ``bank_create``...)."""


@dataclass_transform(frozen_default=True)
class Op(Generic[R]):
    """An operation whose answer is an ``R``. Subclass ``Read`` or ``Write``, never this: each
    subclass is made a frozen dataclass of its annotated fields as it is defined."""

    method: ClassVar[str]  # the StoreAPI method: the class name in snake case
    retry: ClassVar[bool]  # True: safe to re-send after a lost answer
    route: ClassVar[Route] = "bank"
    wire: ClassVar[bool] = True  # False: its arguments only make sense in the caller's process

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__name__ in ("Read", "Write"):
            return
        if "method" not in cls.__dict__:
            cls.method = _snake(cls.__name__)
        # what inspect.signature answers before the dataclass is built
        cls.__signature__ = _declared(cls)  # type: ignore[attr-defined]
        REGISTRY[cls.method] = cls

    def __new__(cls, *args: Any, **kwargs: Any) -> Op[R]:
        # Made a frozen dataclass on first use, not at import: generating a dataclass's methods
        # costs ~0.4 ms a class, 20 ms for every op, paid by each CLI process that uses one.
        # type.__call__ looks __init__ up after __new__ returns, so the new one runs.
        fields_of(cls)
        return super().__new__(cls)

    def __post_init__(self) -> None:
        for f in fields_of(type(self)):  # cached per class: this runs for every op built
            value = getattr(self, f.name)
            if f.type == "Labels" and _freezable(value):
                object.__setattr__(self, f.name, tuple(itertools.islice(value, LABELS_READ)))

    def args(self) -> dict[str, Any]:
        """Every argument by name."""
        return {f.name: getattr(self, f.name) for f in fields_of(type(self))}

    def changed(self) -> dict[str, Any]:
        """The arguments that differ from their defaults (what a wire needs to carry)."""
        out: dict[str, Any] = {}
        for f in fields_of(type(self)):
            value = getattr(self, f.name)
            if f.default is dataclasses.MISSING or value != f.default:
                out[f.name] = value
        return out

    @classmethod
    def response_type(cls) -> Any:
        """The declared answer type (``SaveResponse``, ``tuple[Memory, ...]``, ``None``...)."""
        return _response_type(cls)


class Read(Op[R]):
    """Changes nothing: a transport may re-send it after a lost answer."""

    retry = True


class Write(Op[R]):
    """Changes the store: sent at most once."""

    retry = False


LABELS_READ = 1_001
"""How many values of a label option an op reads from an iterable: past the store's limit of
given values (1,000), so an endless generator is refused, typed, instead of hanging."""


def _freezable(value: object) -> TypeGuard[Iterable[object]]:
    """An iterable to freeze into a tuple; a string is one label, and what the store refuses
    (a number, bytes, a mapping) is left for it to refuse."""
    return isinstance(value, Iterable) and not isinstance(
        value, str | tuple | bytes | bytearray | Mapping
    )


def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


_FIELDS: dict[type, tuple[dataclasses.Field[Any], ...]] = {}
_RESPONSES: dict[type, Any] = {}


def fields_of(cls: type[Op[Any]]) -> tuple[dataclasses.Field[Any], ...]:
    """An op's fields (``dataclasses.fields``), making it the frozen dataclass it declares on
    its first use (``Op.__new__``)."""
    found = _FIELDS.get(cls)
    if found is None:
        if "__dataclass_fields__" not in cls.__dict__:
            dataclasses.dataclass(frozen=True)(cls)  # in place: the class keeps its identity
        found = _FIELDS[cls] = tuple(dataclasses.fields(cls))  # type: ignore[arg-type]
    return found


def _declared(cls: type) -> inspect.Signature:
    """The constructor's signature as the class body declares it (the dataclass rules: fields
    in order, ``_: KW_ONLY`` makes the rest keyword-only, ``ClassVar`` is no field)."""
    params: list[inspect.Parameter] = []
    kind: inspect._ParameterKind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    for name, annotation in vars(cls).get("__annotations__", {}).items():
        text = str(annotation)
        if text.startswith("ClassVar"):
            continue
        if text == "KW_ONLY":
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        default = vars(cls).get(name, inspect.Parameter.empty)
        params.append(inspect.Parameter(name, kind, default=default, annotation=text))
    return inspect.Signature(params, return_annotation=None)


def response_name(cls: type[Op[Any]]) -> Any:
    """The declared answer as written in ``Op[...]``: a string, or a type (``str``, ``None``)."""
    for base in getattr(cls, "__orig_bases__", ()):
        args = getattr(base, "__args__", ())
        if args:
            return getattr(args[0], "__forward_arg__", args[0])
    raise TypeError(f"{cls.__name__} declares no response type")


def _response_type(cls: type[Op[Any]]) -> Any:
    if cls in _RESPONSES:
        return _RESPONSES[cls]
    import builtins

    from shared.contract import models

    text = response_name(cls)
    if not isinstance(text, str):
        found = type(None) if text is None else text
    else:
        namespace = {**vars(builtins), **vars(models), "models": models, "Any": Any}
        found = eval(text, namespace)  # a type expression of our own, never input
    _RESPONSES[cls] = found
    return found


def op_named(method: str) -> type[Op[Any]]:
    """The operation called ``method``; ``InvalidArgumentError`` when there is none."""
    import shared.contract.ops  # noqa: F401 - the registry fills as the operations are defined

    cls = REGISTRY.get(method)
    if cls is None:
        from shared.contract.errors import InvalidArgumentError

        raise InvalidArgumentError(f"{method!r} is not a store operation")
    return cls
