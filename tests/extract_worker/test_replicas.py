"""K extractor replicas (docs/SCALING.md#how-it-works): their names and how many may run."""

from __future__ import annotations

import pytest

from extract_worker.spec import replica_count, replica_name
from shared.contract import errors


def test_replica_names_and_counts() -> None:
    assert [replica_name("memory-extractor", i) for i in range(3)] == [
        "memory-extractor",
        "memory-extractor-1",
        "memory-extractor-2",
    ]
    assert replica_count("4") == 4
    with pytest.raises(errors.InvalidArgumentError):
        replica_count("65")
