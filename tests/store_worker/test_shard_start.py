"""Starting N store shards (and K extractor replicas): flags, names, placement."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_the_sharded_manifest_gives_each_shard_its_resource_and_volume() -> None:
    import yaml

    from shared.client.shards import shard_dir

    path = Path(__file__).resolve().parents[2] / "deploy" / "raycluster-sharded.yaml"
    docs = list(yaml.safe_load_all(path.read_text("utf-8")))
    claims = {d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"}
    (ray_cluster,) = [d for d in docs if d["kind"] == "RayCluster"]
    groups = {g["groupName"]: g for g in ray_cluster["spec"]["workerGroupSpecs"]}
    stores = sorted(name for name in groups if name.startswith("store-"))
    assert stores == ["store-0", "store-1"]
    for i, name in enumerate(stores):
        group = groups[name]
        assert group["maxReplicas"] == 1
        wanted = shard_resource("memory_store", i, len(stores))
        assert json.loads(json.loads(group["rayStartParams"]["resources"])) == {wanted: 1}
        pod = group["template"]["spec"]
        (mount,) = pod["containers"][0]["volumeMounts"]
        assert Path(mount["mountPath"]) == shard_dir(Path("/data/memory"), i)
        (volume,) = pod["volumes"]
        assert volume["persistentVolumeClaim"]["claimName"] in claims
    assert "memory_store" not in json.dumps(groups["siblings"])  # siblings hold no shard


@pytest.mark.parametrize("where", ["before", "after"])  # memory --data-dir D shards status
def test_shards_status_and_rebalance_read_the_data_dir_given(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from shared.cli import run
    from shared.client import connect
    from shared.client.sharded import ShardedStoreClient

    # Given two embedded shards on a data dir, a bank on shard 1 (no cluster is asked)
    monkeypatch.setenv("MEMORY_STORE_SHARDS", "2")
    data = tmp_path / "data"
    store = connect(f"file:{data!s}")
    assert isinstance(store, ShardedStoreClient)
    bank = next(f"b{i}" for i in range(100) if store.owner(f"b{i}") == 1)
    store.bank_create(bank)
    store.close()
    flag = ["--data-dir", str(data)]
    argv = (
        [*flag, "shards", "status", "--json"]
        if where == "before"
        else ["shards", "status", *flag, "--json"]
    )
    # When `shards status` runs on it, then it shows that data dir's shards
    assert run(argv) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["banks"] == {"0": [], "1": [bank]} and shown["version"] >= 1
    # and rebalance moves that data dir's banks (all onto shard 0), letting go of it after
    assert run([*flag, "shards", "rebalance", "--shards", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["banks_moved"] == [bank]
    assert run([*flag, "shards", "status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["banks"] == {"0": [bank], "1": []}
