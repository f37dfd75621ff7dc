"""Starting N store shards (and K extractor replicas): flags, names, placement (issue 16)."""

from __future__ import annotations

import pytest

from shared.cli import build_parser
from store_worker.actor import shard_resource


def test_up_takes_store_shards_and_extractor_replicas_as_settings() -> None:
    args = build_parser().parse_args(["up", "--store-shards", "3", "--extractor-replicas", "2"])
    assert args.worker_env == {"MEMORY_STORE_SHARDS": "3", "MEMORY_EXTRACTOR_REPLICAS": "2"}


@pytest.mark.parametrize("flag", [["--store-shards", "0"], ["--extractor-replicas", "x"]])
def test_a_bad_count_stops_up_before_anything_starts(
    flag: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["up", *flag])
    assert "must be 1.." in capsys.readouterr().err


def test_shards_verbs_are_registered() -> None:
    parser = build_parser()
    assert parser.parse_args(["shards", "rebalance", "--shards", "3"]).shards == 3
    assert parser.parse_args(["shards", "status"]).shards_verb == "status"


@pytest.mark.parametrize(
    ("value", "shard", "n", "expected"),
    [
        (None, 0, 3, None),
        ("memory_store", 0, 1, "memory_store"),  # one store: the resource as deployed today
        ("memory_store", 2, 3, "memory_store_2"),
        ("vol_{i}_node", 1, 2, "vol_1_node"),
    ],
)
def test_each_shard_asks_for_its_own_resource(
    value: str | None, shard: int, n: int, expected: str | None
) -> None:
    assert shard_resource(value, shard, n) == expected
