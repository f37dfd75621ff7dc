"""SaveCoalescer (shared/client/coalesce.py): concurrent saves go out together, each caller gets its
own answer, a refused burst is re-sent item by item, any other failure is never re-sent."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

import pytest

from shared.client.coalesce import SaveCoalescer
from shared.contract.errors import InvalidArgumentError, SourceUnavailableError
from shared.contract.models import Memory, SaveManyResponse, SaveResponse


def answer(item: dict[str, Any]) -> SaveResponse:
    text = item["text"]
    if text.startswith("bad"):
        raise InvalidArgumentError(f"refused {text}")
    mem = Memory(
        id=text.replace(" ", "-"),
        fingerprint="fp0000000000000000",
        text=text,
        created_at=1,
        updated_at=1,
        stated_at=1,
    )
    return SaveResponse(created=True, memory=mem, bank="main")


class FakeStore:
    """``one``/``many`` over ``answer``; the first call waits for ``release`` when gated."""

    def __init__(self, *, gated: bool = True, many_error: BaseException | None = None) -> None:
        self.calls: list[tuple[str, list[str]]] = []
        self.release = threading.Event()
        self.entered = threading.Event()
        self.gated = gated
        self.many_error = many_error

    def _gate(self) -> None:
        if self.gated:
            self.gated = False
            self.entered.set()
            self.release.wait(timeout=30)

    def one(self, item: dict[str, Any]) -> SaveResponse:
        self.calls.append(("one", [item["text"]]))
        self._gate()
        return answer(item)

    def many(self, items: list[dict[str, Any]]) -> SaveManyResponse:
        self.calls.append(("many", [i["text"] for i in items]))
        self._gate()
        if self.many_error is not None:
            raise self.many_error
        results = tuple(answer(i) for i in items)  # all or nothing, as the store does
        return SaveManyResponse(results=results, created=len(results))


def run(
    co: SaveCoalescer, store: FakeStore, first: str, rest: list[str]
) -> dict[str, SaveResponse | BaseException]:
    """``first`` is sent and held in flight while ``rest`` queue behind it; then released."""
    out: dict[str, SaveResponse | BaseException] = {}

    def call(text: str) -> None:
        try:
            out[text] = co.save({"text": text})
        except BaseException as e:
            out[text] = e

    lead = threading.Thread(target=call, args=(first,))
    lead.start()
    assert store.entered.wait(timeout=30)
    others = [threading.Thread(target=call, args=(t,)) for t in rest]
    for t in others:
        t.start()
    for _ in range(1_000_000):  # every follower queued (no sleep: yield until they are)
        if len(co._queue) == len(rest):
            break
        os.sched_yield()
    assert len(co._queue) == len(rest)
    store.release.set()
    for t in [lead, *others]:
        t.join(timeout=30)
    return out


def coalescer(store: FakeStore, in_flight: int = 1, linger_s: float = 0.0005) -> SaveCoalescer:
    return SaveCoalescer(
        one=store.one, many=store.many, max_items=1000, max_in_flight=in_flight, linger_s=linger_s
    )


def test_a_lone_save_goes_out_at_once_as_a_plain_save() -> None:
    store = FakeStore(gated=False)
    res = coalescer(store).save({"text": "alone"})
    assert res.memory.text == "alone"
    assert store.calls == [("one", ["alone"])]


def test_saves_queued_behind_a_call_in_flight_go_out_as_one_save_many() -> None:
    # Given one save in flight and three more arriving meanwhile
    store = FakeStore()
    co = coalescer(store)
    out = run(co, store, "first", ["a", "b", "c"])
    # Then the three went out together, and each caller got its own memory
    assert store.calls[0] == ("one", ["first"])
    assert store.calls[1][0] == "many" and sorted(store.calls[1][1]) == ["a", "b", "c"]
    assert len(store.calls) == 2
    for text in ["first", "a", "b", "c"]:
        got = out[text]
        assert isinstance(got, SaveResponse) and got.memory.text == text
    assert (co.calls, co.saves) == (2, 4)


def test_a_refused_burst_is_resent_item_by_item_each_caller_gets_its_own_answer() -> None:
    # Given a burst with one refused item (save_many writes nothing then)
    store = FakeStore()
    out = run(coalescer(store), store, "first", ["good one", "bad one", "good two"])
    # Then every item was re-sent alone: the good ones saved, the bad one got its own error
    alone = sorted(texts[0] for kind, texts in store.calls[2:] if kind == "one")
    assert alone == ["bad one", "good one", "good two"]
    assert isinstance(out["good one"], SaveResponse)
    assert isinstance(out["good two"], SaveResponse)
    err = out["bad one"]
    assert isinstance(err, InvalidArgumentError) and "bad one" in str(err)


def test_a_failure_with_unknown_outcome_reaches_every_caller_and_is_never_resent() -> None:
    # Given a burst whose call fails in transport (the store may have written it)
    store = FakeStore(many_error=SourceUnavailableError("actor restarting"))
    out = run(coalescer(store), store, "first", ["x", "y"])
    # Then both callers get that error, and nothing was sent again
    assert [kind for kind, _ in store.calls] == ["one", "many"]
    assert all(isinstance(out[t], SourceUnavailableError) for t in ["x", "y"])
    assert isinstance(out["first"], SaveResponse)


@pytest.mark.parametrize(("in_flight", "linger_s"), [(1, 0.0), (1, 0.0005), (2, 0.0005)])
def test_many_threads_each_get_their_own_result(in_flight: int, linger_s: float) -> None:
    store = FakeStore(gated=False)
    co = coalescer(store, in_flight, linger_s)
    texts = [f"t{i}" for i in range(400)]
    got: dict[str, str] = {}
    lock = threading.Lock()

    def work(mine: list[str], save: Callable[[dict[str, Any]], SaveResponse]) -> None:
        for t in mine:
            res = save({"text": t})
            with lock:
                got[t] = res.memory.text

    threads = [threading.Thread(target=work, args=(texts[i::8], co.save)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert got == {t: t for t in texts}
    assert co.saves == 400 and sum(len(x) for _, x in store.calls) == 400
