"""``ShardedStoreClient`` and ``rebalance`` over in-process shards (docs/SCALING.md: routing
and rebalance).

The kill tests stop a rebalance at each step (an exception where the step starts), drop every
store's RAM (close, reopen from the files), run ``rebalance`` again, and require every
acknowledged write in exactly one live bank: the bank's owner holds it, no other shard serves it.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ulid import ULID

from extract_worker.core import Extractor
from extract_worker.settings import ExtractorSettings
from shared.client.rebalance import initial_routing, rebalance
from shared.client.sharded import ShardedStoreClient
from shared.client.shards import Routing, actor_name, plan_slots, shard_dir, slot_of
from shared.contract import errors
from shared.contract.config import StoreSettings
from shared.llm import FakeLLM
from store_worker.core import MemoryStore
from store_worker.storage import log as applog

Opener = Callable[[int], list[MemoryStore]]


@pytest.fixture
def open_shards(tmp_path: Path) -> Iterator[Opener]:
    """``open_shards(n)``: n stores on ``tmp_path/data`` as shards 0..n-1 (reopens close the
    previous set first, as a restart would)."""
    opened: list[MemoryStore] = []

    def open_(n: int) -> list[MemoryStore]:
        for store in opened:
            store.close()
        opened.clear()
        root = tmp_path / "data"
        for i in range(n):
            settings = StoreSettings(data_dir=str(shard_dir(root, i)), shard_index=i)
            opened.append(MemoryStore(settings=settings))
        return list(opened)

    yield open_
    for store in opened:
        store.close()


BANKS = [f"user-{i:02d}" for i in range(30)]


def _fill(client: ShardedStoreClient, banks: list[str]) -> dict[str, set[str]]:
    acked: dict[str, set[str]] = {}
    for bank in banks:
        for k in range(2):
            saved = client.save(f"fact {k} of {bank}", bank=bank)
            acked.setdefault(bank, set()).add(saved.memory.id)
    return acked


def _assert_exactly_once(stores: list[MemoryStore], acked: dict[str, set[str]]) -> None:
    client = ShardedStoreClient(stores)
    table = client.refresh()
    for bank, ids in acked.items():
        owner = table.owner(bank)
        served = [i for i, s in enumerate(stores) if bank in [b.name for b in s.bank_list().banks]]
        assert served == [owner], bank
        assert {m.id for m in client.list(bank=bank, page_size=100).memories} == ids, bank
        for i, store in enumerate(stores):
            if i != owner:
                with pytest.raises(errors.SourceUnavailableError, match=r"\[moved\]"):
                    store.get(next(iter(ids)), bank=bank)


def test_one_shard_is_todays_store(open_shards: Opener, tmp_path: Path) -> None:
    # Given one shard: no table, the data dir itself, every bank owned
    (store,) = open_shards(1)
    assert initial_routing([store]) is None
    store.save("a fact", bank="anything")
    assert (tmp_path / "data" / "anything" / "memories.jsonl").exists()
    assert actor_name(0) == "memory-store"


def test_fresh_shards_split_the_banks_and_fan_out(open_shards: Opener) -> None:
    # Given two fresh shards with an even table
    stores = open_shards(2)
    assert initial_routing(stores) is not None
    client = ShardedStoreClient(stores)
    # When thirty banks are written through the client
    acked = _fill(client, BANKS)
    # Then each bank lives on its owner only, and the fan-out calls see all of them
    owners = {client.owner(b) for b in BANKS}
    assert owners == {0, 1}
    _assert_exactly_once(stores, acked)
    listed = [b.name for b in client.bank_list().banks]
    assert set(BANKS) <= set(listed) and len(listed) == len(set(listed))
    events = client.events_since(0, limit=1000)
    assert {e.bank for e in events.events} >= set(BANKS)
    assert client.events_since(events.cursor).events == ()
    assert client.doctor().ok
    assert set(client.reload().banks) >= set(BANKS)


def test_many_calls_across_shards_are_refused_and_write_nothing(open_shards: Opener) -> None:
    stores = open_shards(2)
    initial_routing(stores)
    client = ShardedStoreClient(stores)
    a, b = (
        next(x for x in BANKS if client.owner(x) == 0),
        next(x for x in BANKS if client.owner(x) == 1),
    )
    with pytest.raises(errors.InvalidArgumentError, match="span"):
        client.save_many([{"text": "one", "bank": a}, {"text": "two", "bank": b}])
    assert a not in [x.name for x in client.bank_list().banks]
    one, two = (client.save(t, bank=a).memory.id for t in ("first", "second"))
    three = client.save("third", bank=b).memory.id
    with pytest.raises(errors.InvalidArgumentError, match="supersede_many items span"):
        client.supersede_many(
            [
                {"id": one, "superseded_by": two, "bank": a},
                {"id": three, "superseded_by": three, "bank": b},
            ]
        )
    assert client.get(one, bank=a).memory.invalid_at is None
    done = client.supersede_many([{"id": one, "superseded_by": two, "bank": a}])
    assert done.results[0].survivor.id == two


def test_a_shard_refuses_banks_it_does_not_own(open_shards: Opener) -> None:
    stores = open_shards(2)
    initial_routing(stores)
    foreign = next(
        x for x in BANKS if Routing.parse(stores[0].shard_routing()["routing"]).owner(x) == 1
    )
    with pytest.raises(errors.SourceUnavailableError, match=r"\[moved\]") as caught:
        stores[0].save("misrouted", bank=foreign)
    assert caught.value.retryable
    assert foreign not in stores[0].shard_routing()["banks"]  # nothing was created


def test_grow_two_to_three_moves_a_third_and_loses_nothing(open_shards: Opener) -> None:
    # Given thirty banks on two shards
    stores = open_shards(2)
    initial_routing(stores)
    acked = _fill(ShardedStoreClient(stores), BANKS)
    before = Routing.parse(stores[0].shard_routing()["routing"])
    # When a third shard joins and the slots are rebalanced
    stores = open_shards(3)
    report = rebalance(stores)
    # Then about a third of the banks moved, each exactly once, all to the new shard
    after = Routing.parse(stores[0].shard_routing()["routing"])
    assert after.slots == plan_slots(before.slots, 3) and after.moving == {}
    expected = sorted(b for b in BANKS if before.owner(b) != after.owner(b))
    assert sorted(report.banks_moved) == expected
    assert 5 <= len(expected) <= 16 and all(after.owner(b) == 2 for b in expected)
    _assert_exactly_once(stores, acked)
    trash = [p.name for s in stores for p in s.trash_dir().glob("*")] if expected else []
    assert len(trash) == len(expected)
    # And a second run has nothing left to do
    assert rebalance(stores).banks_moved == []


class Killed(Exception):
    pass


@pytest.mark.parametrize("step", ["freeze", "copy", "switch", "release"])
@pytest.mark.parametrize("nth", [1, 3])
def test_a_kill_at_any_step_of_a_move_loses_nothing(
    open_shards: Opener, step: str, nth: int
) -> None:
    # Given thirty banks on two shards, grown to three
    stores = open_shards(2)
    initial_routing(stores)
    acked = _fill(ShardedStoreClient(stores), BANKS)
    stores = open_shards(3)
    seen = {"n": 0}

    def kill(name: str, _slot: int) -> None:
        if name == step:
            seen["n"] += 1
            if seen["n"] == nth:
                raise Killed(name)

    # When the rebalance dies at that step and every store restarts from its files
    with pytest.raises(Killed):
        rebalance(stores, step=kill)
    stores = open_shards(3)
    # Then reads still find every acknowledged write, and a rerun finishes the job
    client = ShardedStoreClient(stores, freeze_wait_s=0)
    for bank, ids in acked.items():
        assert {m.id for m in client.list(bank=bank, page_size=100).memories} == ids
    rebalance(stores)
    _assert_exactly_once(stores, acked)
    assert Routing.parse(stores[0].shard_routing()["routing"]).moving == {}


def test_a_write_to_a_moving_bank_waits_for_the_move(open_shards: Opener) -> None:
    # Given a bank whose slot is frozen mid-move (the rebalance was killed after the freeze)
    stores = open_shards(2)
    initial_routing(stores)
    acked = _fill(ShardedStoreClient(stores), BANKS)
    stores = open_shards(3)

    def kill(name: str, _slot: int) -> None:
        if name == "copy":
            raise Killed(name)

    with pytest.raises(Killed):
        rebalance(stores, step=kill)
    table = Routing.parse(stores[0].shard_routing()["routing"])
    (slot,) = table.moving
    bank = next(b for b in BANKS if slot_of(b) == slot)
    with pytest.raises(errors.SourceUnavailableError, match=r"\[moving\]") as caught:
        stores[table.slots[slot]].save("direct write", bank=bank)
    assert caught.value.retryable
    # When a caller writes through the client and the move finishes while it backs off
    finished: list[object] = []

    def sleep(_s: float) -> None:
        if not finished:
            finished.append(rebalance(stores))

    client = ShardedStoreClient(stores, sleep=sleep)
    saved = client.save("written during the move", bank=bank)
    # Then the write landed once, on the new owner, beside everything acknowledged before
    assert finished and client.owner(bank) == 2
    acked[bank].add(saved.memory.id)
    _assert_exactly_once(stores, acked)


def test_bad_imports_are_refused_and_write_nothing(open_shards: Opener) -> None:
    stores = open_shards(2)
    initial_routing(stores)
    table = Routing.parse(stores[0].shard_routing()["routing"])
    own0 = next(b for b in BANKS if table.owner(b) == 0)
    own1 = next(b for b in BANKS if table.owner(b) == 1)
    with pytest.raises(errors.ConflictError):
        stores[0].bank_place(own0, {"bank.yaml": b"description: ''\n"})  # owned: never replaced
    for bad in ({"../x": b""}, {"/abs": b""}, {}, {"ok": "not bytes"}):
        with pytest.raises(errors.InvalidArgumentError):
            stores[0].bank_place(own1, bad)  # type: ignore[arg-type]
    assert own1 not in stores[0].shard_routing()["banks"]
    stores[0].save("live", bank=own0)
    with pytest.raises(errors.ConflictError):
        stores[0].bank_copy(own0)  # live, not frozen: a copy could miss a later write
    with pytest.raises(errors.ConflictError):
        stores[0].bank_release(own0)
    with pytest.raises(errors.ConflictError):
        stores[0].shard_routing(Routing(version=0).dump())  # older than v1


class _Down:
    """A shard whose process is gone: every call is a retryable source_unavailable."""

    def __getattr__(self, name: str) -> object:
        def call(*_a: object, **_k: object) -> object:
            raise errors.SourceUnavailableError("store shard 0 is unavailable")

        return call


def test_without_shard_zero_the_table_comes_from_the_others(open_shards: Opener) -> None:
    # Given two shards with a table, and a client that cannot reach shard 0
    stores = open_shards(2)
    table = initial_routing(stores)
    assert table is not None
    acked = _fill(ShardedStoreClient(stores), BANKS)
    client = ShardedStoreClient([_Down(), stores[1]])  # type: ignore[list-item]
    # Then shard 1's banks still serve (from its copy of the table), shard 0's are unavailable
    assert client.refresh() == table
    on1 = [b for b in BANKS if table.owner(b) == 1]
    on0 = [b for b in BANKS if table.owner(b) == 0]
    assert all({m.id for m in client.list(bank=b).memories} == acked[b] for b in on1)
    with pytest.raises(errors.SourceUnavailableError) as caught:
        client.get(next(iter(acked[on0[0]])), bank=on0[0])
    assert caught.value.retryable


@pytest.mark.parametrize(
    "damage", [b"\x00garbage", b"", b"\xff\xfe"], ids=["appended", "emptied", "not-utf8"]
)
def test_an_unreadable_routing_table_refuses_the_open_not_guesses_it(
    open_shards: Opener, tmp_path: Path, damage: bytes
) -> None:
    # Given two shards with a table, a bank on shard 1, and shard 0's table file damaged by hand
    stores = open_shards(2)
    table = initial_routing(stores)
    assert table is not None
    acked = _fill(ShardedStoreClient(stores), BANKS)
    foreign = next(b for b in BANKS if table.owner(b) == 1)
    for store in stores:
        store.close()
    path = shard_dir(tmp_path / "data", 0) / ".state" / "shards" / "routing.json"
    path.write_bytes(damage if damage == b"" else path.read_bytes() + damage)
    # When shard 0 opens again, Then it refuses, naming the file (read as "no table", it
    # took every bank as its own: a write for shard 1's bank was acknowledged where no
    # client looks, and clients were handed a table that hid shard 1's banks)
    with pytest.raises(errors.SourceUnavailableError, match=r"routing table .* cannot be read"):
        open_shards(2)
    assert not (shard_dir(tmp_path / "data", 0) / foreign).exists()
    # And once the file is restored from shard 1's copy, every acknowledged write is served
    copy = shard_dir(tmp_path / "data", 1) / ".state" / "shards" / "routing.json"
    path.write_bytes(copy.read_bytes())
    _assert_exactly_once(open_shards(2), acked)


def test_the_routing_table_is_never_a_sibling_state_write(open_shards: Opener) -> None:
    # Given two shards with a table
    stores = open_shards(2)
    table = initial_routing(stores)
    assert table is not None
    # When a sibling writes the table's state key on one store directly, Then it is refused
    # (the next open would serve by it) and nothing changed
    with pytest.raises(errors.InvalidArgumentError, match="shard_routing"):
        stores[0].state_set("shards", "routing", Routing().dump())
    assert Routing.parse(stores[0].state_get("shards", "routing")) == table
    # And a table file damaged while the shard runs still reads as the table it serves by
    path = stores[0].root / ".state" / "shards" / "routing.json"
    path.write_bytes(b"{")
    assert Routing.parse(stores[0].state_get("shards", "routing")) == table


def _fail(code: int) -> Callable[..., None]:
    def call(*args: object) -> None:
        raise OSError(code, os.strerror(code))

    return call


def test_a_move_never_carries_a_refused_write_the_disk_could_not_cut_back(
    open_shards: Opener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given one shard with an acknowledged write in a bank that will move to a second shard,
    # then a save refused by a failed sync whose cut-back the file system refused too: its
    # line stays in the file, hidden from every read (``AppendLog.good_size``)
    (first,) = open_shards(1)
    bank = next(b for b in BANKS if Routing(slots=plan_slots(Routing().slots, 2)).owner(b) == 1)
    kept = first.save("acknowledged before the disk failed", bank=bank).memory
    with monkeypatch.context() as patch:
        patch.setattr(applog, "_datasync", _fail(errno.EIO))
        patch.setattr(os, "ftruncate", _fail(errno.EROFS))
        with pytest.raises(errors.SourceUnavailableError):
            first.save("refused: its sync failed", bank=bank)
    assert [m.id for m in first.list(bank=bank).memories] == [kept.id]
    # When the bank moves to a second shard
    second = MemoryStore(
        settings=StoreSettings(data_dir=str(shard_dir(tmp_path / "data", 1)), shard_index=1)
    )
    try:
        report = rebalance([first, second], 2)
        # Then the new owner holds the acknowledged write only, as the old one showed it
        # (the copy read the file whole: the refused line came back as a memory)
        assert report.banks_moved == [bank]
        assert [m.id for m in second.list(bank=bank).memories] == [kept.id]
    finally:
        second.close()


_FILE_CALLS = ("write", "fsync", "fdatasync", "replace", "rename", "unlink", "ftruncate", "mkdir")


def test_a_fault_at_any_file_call_of_a_move_is_typed_and_a_rerun_finishes_it(
    open_shards: Opener, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bank = next(b for b in BANKS if Routing(slots=plan_slots(Routing().slots, 2)).owner(b) == 1)
    for k in range(1, 200):
        # Given a bank on one shard that moves when a second shard joins
        shutil.rmtree(tmp_path / "data", ignore_errors=True)
        (first,) = open_shards(1)
        acked = {first.save(f"fact {n} about lanterns", bank=bank).memory.id for n in range(3)}
        second = MemoryStore(
            settings=StoreSettings(data_dir=str(shard_dir(tmp_path / "data", 1)), shard_index=1)
        )
        try:
            # When the k-th file call of the move fails (EIO)
            calls = [0]
            with monkeypatch.context() as patch:
                for name in _FILE_CALLS:
                    patch.setattr(os, name, _kth(getattr(os, name), calls, k))
                try:
                    rebalance([first, second], 2)
                except errors.MemoryServiceError:
                    pass  # typed: a raw OSError fails the test
            if calls[0] < k:
                return  # the move made fewer calls: every one has failed once
            # Then running it again, with no restart, finishes the move, losing nothing
            rebalance([first, second], 2)
            assert {m.id for m in second.list(bank=bank).memories} == acked, k
            assert bank not in first.shard_routing()["banks"], k
        finally:
            second.close()
    raise AssertionError("more file calls than expected")


def _kth(real: Callable[..., object], calls: list[int], k: int) -> Callable[..., object]:
    def call(*args: object, **kwargs: object) -> object:
        calls[0] += 1
        if calls[0] == k:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(*args, **kwargs)

    return call


def test_turns_queued_for_a_bank_a_rebalance_moved_are_still_extracted(
    open_shards: Opener,
) -> None:
    # Given a turn queued for each bank on two shards, the extractor stopped
    stores = open_shards(2)
    initial_routing(stores)
    client = ShardedStoreClient(stores)
    talk = [{"role": "user", "content": "I publish on Tuesdays"}]
    for i, bank in enumerate(BANKS):
        client.bank_create(bank)
        turn = str(ULID())
        client.pre_generate(f"s{i}", turn, 0, talk, {"memory_bank": bank})
        client.turn_completed(f"s{i}", turn, talk)
    # When a third shard joins and the banks move (their old copies go to .trash)
    stores = open_shards(3)
    moved = rebalance(stores).banks_moved
    assert moved
    # Then the extractor, started again, extracts every turn, moved banks' too
    client = ShardedStoreClient(stores)
    reply = json.dumps({"memories": [{"text": "The user publishes on Tuesdays."}]})
    settings = ExtractorSettings(extraction_model="fake/x")
    stats = Extractor(client, FakeLLM.of(reply), settings).drain()
    assert (stats.done, stats.skipped) == (len(BANKS), 0)
    assert [b for b in BANKS if client.list(bank=b).total != 1] == []
