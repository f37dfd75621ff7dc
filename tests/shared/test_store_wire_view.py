"""``store_wire.View``: the gateway's answers as a CLI reads them, without pydantic (a
one-shot command should not pay its import)."""

from __future__ import annotations

import inspect

import pytest

from shared.client import wire as store_wire
from shared.contract import models
from shared.contract.errors import UnknownError


def test_a_view_reads_fields_as_attributes_and_stays_a_dict() -> None:
    r = store_wire.decode_view("recall", '{"bank": "main", "memories": [{"memory": {"id": "a"}}]}')
    assert r.bank == "main" and r.memories[0].memory.id == "a"
    assert r == {"bank": "main", "memories": [{"memory": {"id": "a"}}]}
    assert getattr(r, "missing", "default") == "default"
    with pytest.raises(AttributeError):
        _ = r.missing
    assert store_wire.decode_view("drafts", "[]") == []
    assert store_wire.decode_view("state_set", "") is None


def test_an_answer_that_is_not_json_is_an_unknown_error() -> None:
    with pytest.raises(UnknownError, match="recall answer is not JSON"):
        store_wire.decode_view("recall", "{not json")


def test_no_model_field_is_shadowed_by_a_dict_method() -> None:
    """A view is a dict: a field named like one of its methods (``items``, ``keys``, ``get``
    ...) would read as the method. No response model may have one."""
    clashes = {
        f"{name}.{field}"
        for name, model in inspect.getmembers(models, inspect.isclass)
        if issubclass(model, models.BaseModel)
        for field in model.model_fields
        if hasattr(dict, field)
    }
    assert not clashes


@pytest.mark.parametrize("args", ["[" * 100_000, '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}"])
def test_arguments_nested_past_the_parser_are_an_invalid_argument(args: str) -> None:
    from shared.contract.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match=r"nested too deeply|arguments"):
        store_wire.decode_op("save", args)
