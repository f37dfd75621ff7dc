"""Recall: filters before the cut, deterministic ties, relevance, budget, modes,
history view, read-your-writes, scope visibility, boosts and recency decay."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from shared.contract.clock import FakeClock
from shared.contract.config import StoreSettings
from shared.contract.errors import BudgetExceededError, InvalidArgumentError, SourceUnavailableError
from shared.contract.models import RecallResponse
from store_worker.core import MemoryStore
from store_worker.recall.embed import FakeEmbedder
from store_worker.recall.scoring import Tuning

TUNING = Tuning()  # what production runs


def ids(res: RecallResponse) -> list[str]:
    return [h.memory.id for h in res.memories]


# -- filters apply before the cut -----------------------------------------------------------------


def test_tag_filter_still_returns_k(store: MemoryStore) -> None:
    # Given many strong untagged matches and a few weak tagged ones
    for i in range(30):
        store.save(f"zebra zebra zebra strong {i}")
    weak = [
        store.save(f"a long note that mentions a zebra once among many words {i}", tags=["rare"])
        for i in range(5)
    ]
    # When recall filters by the tag with a small limit
    res = store.recall("zebra", tag="rare", limit=3)
    # Then the cut happens after the filter: three tagged results
    assert len(res.memories) == 3
    assert set(ids(res)) <= {w.memory.id for w in weak}
    assert len(store.recall("zebra", tag="RARE", limit=10).memories) == 5


def test_type_and_scope_filters_before_the_cut(store: MemoryStore) -> None:
    for i in range(20):
        store.save(f"kiwi kiwi kiwi {i}")
    fb = [store.save(f"kiwi mentioned once in feedback {i}", type="feedback") for i in range(3)]
    pr = store.save("kiwi in a project", scope="project", project="/p", type="project")
    assert set(ids(store.recall("kiwi", type_filter=["feedback"], limit=2))) <= {
        f.memory.id for f in fb
    }
    assert len(store.recall("kiwi", type_filter=["feedback"], limit=2).memories) == 2
    assert ids(store.recall("kiwi", scope_filter=["project"], project="/p")) == [pr.memory.id]
    assert ids(store.recall("kiwi", scope_filter=["project"])) == []  # not visible without /p


# -- determinism ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_ties_break_by_id(tmp_path: Path, mode: str) -> None:
    # Given 60 records that score exactly alike (same length, one hit each, same instant)
    s = MemoryStore(tmp_path / "d", clock=FakeClock(tick=0))
    made = [s.save(f"alpha filler{i:03d}", id=f"m{(i * 37) % 60:03d}").memory.id for i in range(60)]
    # When recall asks for a few
    res = s.recall("alpha", limit=5, mode=mode)
    # Then the smallest ids win, in order, every time
    assert ids(res) == sorted(made)[:5]
    assert len({h.score for h in res.memories}) == 1
    assert ids(s.recall("alpha", limit=5, mode=mode)) == ids(res)
    s.close()


def test_ties_break_by_id_in_a_big_bank(tmp_path: Path) -> None:
    s = MemoryStore(tmp_path / "d", clock=FakeClock(tick=0))
    for i in range(30):
        s.save(f"beta beta beta strong{i:03d}", id=f"s{i:03d}")
    for i in range(80):
        s.save(f"beta weakfill{i:03d} other words here", id=f"w{(i * 53) % 80:03d}")
    res = s.recall("beta", limit=35, mode="lexical")
    assert ids(res) == [f"s{i:03d}" for i in range(30)] + [f"w{i:03d}" for i in range(5)]
    s.close()


def test_relevance_is_in_unit_range_and_calibrated(store: MemoryStore) -> None:
    """The calibrated relevance reads what of the query a memory holds, not how strong its
    score is: every memory holding the one query word reads the same, whatever its term
    frequency, length or pin, and the ranking by score is unchanged."""
    for i in range(15):
        store.save(" ".join(["quokka"] * (i % 5 + 1) + [f"word{j}" for j in range(i)]))
    store.save("quokka pinned", pinned=True)
    res = store.recall("quokka", limit=50)
    assert len(res.memories) == 16
    pairs = [(h.score, h.relevance_score) for h in res.memories]
    assert all(0.0 < r <= 1.0 for _, r in pairs)
    assert len({r for _, r in pairs}) == 1
    assert [p[0] for p in pairs] == sorted((p[0] for p in pairs), reverse=True)
    assert all(h.why is not None and h.why.terms == ("quokka",) for h in res.memories)


def test_no_match_is_empty_and_boosts_never_invent_one(store: MemoryStore) -> None:
    store.save("completely unrelated but pinned", pinned=True)
    r = store.save("corroborated thing").memory
    store.save("corroborated thing")
    assert ids(store.recall("xylophone")) == []
    assert r.id not in ids(store.recall("xylophone"))


def test_limit(store: MemoryStore) -> None:
    for i in range(12):
        store.save(f"llama fact {i}")
    assert len(store.recall("llama").memories) == 10  # the configured default
    assert len(store.recall("llama", limit=3).memories) == 3
    assert len(store.recall("llama", limit=500).memories) == 12


def test_default_limit_comes_from_settings(tmp_path: Path) -> None:
    s = MemoryStore(
        settings=StoreSettings(data_dir=str(tmp_path / "d"), recall_limit=4), clock=FakeClock()
    )
    for i in range(8):
        s.save(f"llama fact {i}")
    assert len(s.recall("llama").memories) == 4
    s.close()


# -- token budget ---------------------------------------------------------------------------------


def _budget_bank(store: MemoryStore) -> list[tuple[str, int]]:
    for i, n in enumerate([5, 60, 8, 40, 3]):
        store.save(("ibex " * 3) + " ".join(f"pad{i}x{j}" for j in range(n)), id=f"b{i}")
    full = store.recall("ibex", limit=10)
    return [(h.memory.id, h.memory.tokens) for h in full.memories]


def test_budget_trims_from_the_bottom(store: MemoryStore) -> None:
    ranked = _budget_bank(store)
    top_two = ranked[0][1] + ranked[1][1]
    res = store.recall("ibex", limit=10, token_budget=top_two)
    got = ids(res)
    assert got[:2] == [ranked[0][0], ranked[1][0]]
    assert sum(h.memory.tokens for h in res.memories) <= top_two
    order = [i for i, _ in ranked]
    assert got == [i for i in order if i in got]  # rank order kept
    everything = store.recall("ibex", limit=10, token_budget=10_000)
    assert ids(everything) == order


def test_budget_skips_a_record_too_big_for_what_is_left(store: MemoryStore) -> None:
    ranked = _budget_bank(store)
    smallest = min(t for _, t in ranked)
    biggest = max(ranked, key=lambda kv: kv[1])
    res = store.recall("ibex", limit=10, token_budget=biggest[1] - 1)
    assert biggest[0] not in ids(res)
    assert ids(res)
    assert sum(h.memory.tokens for h in res.memories) <= biggest[1] - 1
    assert smallest <= biggest[1] - 1


def test_budget_exceeded_only_when_nothing_fits(store: MemoryStore) -> None:
    ranked = _budget_bank(store)
    smallest = min(t for _, t in ranked)
    with pytest.raises(BudgetExceededError):
        store.recall("ibex", token_budget=smallest - 1)
    with pytest.raises(BudgetExceededError):
        store.recall("ibex", token_budget=0)
    assert len(store.recall("ibex", token_budget=smallest).memories) == 1
    assert store.recall("no-such-word", token_budget=0).memories == ()  # nothing to fit


def test_budget_still_honours_the_limit(store: MemoryStore) -> None:
    _budget_bank(store)
    assert len(store.recall("ibex", limit=2, token_budget=10_000).memories) == 2


def test_project_records_weigh_recency_under_budget_pressure(
    store: MemoryStore, clock: FakeClock
) -> None:
    # Given an older project note and a user note that score alike
    clock.tick = 0
    store.save("ocelot note one", id="a-project", type="project")
    store.save("ocelot note two", id="b-user")
    clock.advance(days=60)
    # Without pressure: a tie, broken by id
    assert ids(store.recall("ocelot", limit=2)) == ["a-project", "b-user"]
    assert ids(store.recall("ocelot", limit=2, token_budget=10_000)) == ["a-project", "b-user"]
    # Under pressure (room for one): the stale project note yields
    one = store.get("b-user").memory.tokens
    assert ids(store.recall("ocelot", limit=2, token_budget=one)) == ["b-user"]


# -- modes ----------------------------------------------------------------------------------------


def test_retrieval_names_what_ran_without_an_embedder(store: MemoryStore) -> None:
    store.save("panda facts")
    assert store.recall("panda", mode="lexical").retrieval == "lexical"
    assert store.recall("panda", mode="hybrid").retrieval == "lexical"  # no cosine arm
    with pytest.raises(SourceUnavailableError):
        store.recall("panda", mode="semantic")


def test_hybrid_with_a_failing_embedder_degrades_to_lexical(tmp_path: Path) -> None:
    embedder = FakeEmbedder()
    s = MemoryStore(tmp_path / "d", clock=FakeClock(), embedder=embedder)
    s.save("panda facts")
    assert s.recall("panda").retrieval == "hybrid"
    embedder.fail = True
    assert s.recall("panda").retrieval == "hybrid"  # that query's vector is cached
    res = s.recall("a panda")
    assert res.retrieval == "lexical" and ids(res) == ["panda-facts"]
    assert s.save("saved while the embedder is down").created is True  # a write never fails
    with pytest.raises(SourceUnavailableError):
        s.recall("the panda", mode="semantic")
    s.close()


def test_lexical_score_is_plain_bm25(store: MemoryStore, clock: FakeClock) -> None:
    store.save("walrus once", pinned=True)
    store.save("walrus twice")
    store.save("walrus twice")
    clock.advance(days=400)
    lex = store.recall("walrus", mode="lexical")
    assert len({round(h.score, 9) for h in lex.memories}) == 1  # no pin/corroboration/decay
    hyb = store.recall("walrus", mode="hybrid")
    assert len({round(h.score, 9) for h in hyb.memories}) == 2


# -- history view ---------------------------------------------------------------------------------


def test_include_superseded(store: MemoryStore) -> None:
    old = store.save("the office is in Berlin").memory
    new = store.save("the office is in Paris").memory
    store.supersede(old.id, new.id)
    gone = store.save("the office had a cat").memory
    store.delete(gone.id)
    assert ids(store.recall("office")) == [new.id]
    hist = store.recall("office", include_superseded=True)
    assert set(ids(hist)) == {old.id, new.id, gone.id}
    retired = {h.memory.id: h.memory for h in hist.memories}
    assert retired[old.id].superseded_by == new.id
    assert retired[gone.id].invalid_at is not None


# -- read-your-writes -----------------------------------------------------------------------------


def test_read_your_writes(store: MemoryStore) -> None:
    for i in range(50):
        store.save(f"background filler number {i}")
    m = store.save("the wifi password hint is the cat's name").memory
    assert ids(store.recall("wifi hint"))[0] == m.id
    store.update(m.id, text="the router is in the hallway cupboard")
    assert m.id not in ids(store.recall("wifi hint"))
    assert ids(store.recall("router hallway"))[0] == m.id
    store.delete(m.id)
    assert m.id not in ids(store.recall("router hallway"))


def test_read_your_writes_through_many_revisions(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Durability is not under test here, speed is: skip the 1,200 fsyncs.
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    monkeypatch.setattr(os, "fdatasync", lambda fd: None)
    store.save("unrelated counter neighbour")
    m = store.save("counter value 0").memory
    # enough dead slots (> 1024, and over half) to trigger the index's compaction on the way
    for i in range(1, 1200):
        if i % 400 == 0:
            store.update(m.id, text=f"counter value {i} revised")
        else:
            store.pin(m.id, i % 2 == 1)
    assert store.banks["main"].index.dead < 1024  # it did compact
    assert ids(store.recall("counter revised"))[0] == m.id
    assert ids(store.recall("neighbour")) == ["unrelated-counter-neighbour"]
    assert store.get(m.id).memory.revision == 1199
    assert store.doctor().ok


# -- scope visibility -----------------------------------------------------------------------------


def test_scope_visibility(store: MemoryStore) -> None:
    g = store.save("heron global", id="g").memory
    p = store.save("heron project", id="p", scope="project", project="/work/a").memory
    s = store.save("heron session", id="s", scope="session", session_id="s1").memory
    assert ids(store.recall("heron")) == [g.id]
    assert set(ids(store.recall("heron", project="/work/a"))) == {g.id, p.id}
    assert set(ids(store.recall("heron", project="/work/a/"))) == {g.id, p.id}
    assert ids(store.recall("heron", project="/work/b")) == [g.id]
    assert set(ids(store.recall("heron", session_id="s1"))) == {g.id, s.id}
    assert ids(store.recall("heron", session_id="s2")) == [g.id]
    both = store.recall("heron", session_id="s1", project="/work/a")
    assert set(ids(both)) == {g.id, p.id, s.id}


def test_session_descendants_see_ancestors(store: MemoryStore, tmp_path: Path) -> None:
    store.save("egret root", id="root", scope="session", session_id="parent")
    store.save("egret child", id="child", scope="session", session_id="kid")
    store.link_session("kid", "parent")
    store.link_session("grandkid", "kid")
    assert set(ids(store.recall("egret", session_id="grandkid"))) == {"root", "child"}
    assert set(ids(store.recall("egret", session_id="kid"))) == {"root", "child"}
    assert ids(store.recall("egret", session_id="parent")) == ["root"]  # not the other way
    store.link_session("loop", "loop")  # a self-link is ignored
    # the lineage survives a restart
    store.close()
    again = MemoryStore(tmp_path / "data", clock=FakeClock())
    assert set(ids(again.recall("egret", session_id="grandkid"))) == {"root", "child"}
    again.close()


def test_session_link_cycles_terminate(store: MemoryStore) -> None:
    store.save("egret a", id="a", scope="session", session_id="x")
    store.link_session("x", "y")
    store.link_session("y", "x")
    assert ids(store.recall("egret", session_id="y")) == ["a"]


# -- boosts and decay -----------------------------------------------------------------------------


def test_pinned_ranks_higher(store: MemoryStore, clock: FakeClock) -> None:
    clock.tick = 0
    store.save("lemur note one", id="a")
    store.save("lemur note two", id="b", pinned=True)
    res = store.recall("lemur")
    assert ids(res) == ["b", "a"]
    # boosts scale the match (equal here), so the pinned one is ahead by its factor
    ratio = res.memories[0].score / res.memories[1].score
    assert ratio == pytest.approx(1 + TUNING.w_pinned_scale)


def test_boosts_never_outrank_a_better_match_in_a_tiny_bank(
    store: MemoryStore, clock: FakeClock
) -> None:
    # Given a two-memory bank (IDF is small) where one is about publishing and the other pinned
    clock.tick = 0
    store.save("The user prefers tabs over spaces in Python", id="tabs", pinned=True)
    store.save("The user publishes blog posts on Wednesday mornings", id="publish")
    # When a first-person question about publishing is asked (every memory matches "user")
    res = store.recall("what day do I publish?")
    # Then the memory that answers it leads: a pin orders matches, it does not outweigh one
    assert ids(res)[0] == "publish"


def test_corroboration_ranks_higher(store: MemoryStore, clock: FakeClock) -> None:
    clock.tick = 0
    store.save("gecko note one", id="a")
    store.save("gecko note two", id="b")
    store.save("gecko note two")
    res = store.recall("gecko")
    assert ids(res) == ["b", "a"]
    ratio = res.memories[0].score / res.memories[1].score
    assert ratio == pytest.approx(1 + TUNING.w_corroboration_scale * math.log(2))


def test_entities_are_an_exact_match_signal(store: MemoryStore, clock: FakeClock) -> None:
    clock.tick = 0
    store.save("style guide rules", id="a")
    store.save("style guide notes", id="b", entities=["pep-8"])
    res = store.recall("pep 8 style")
    assert ids(res)[0] == "b"
    assert "b" in ids(store.recall("pep-8"))


def test_first_person_matches_the_user(store: MemoryStore) -> None:
    store.save("The user prefers dark mode in every editor", id="pref")
    store.save("Dark mode is popular among developers", id="fact")
    assert ids(store.recall("what do I prefer"))[0] == "pref"


@pytest.mark.parametrize("half_lives", [0.25, 0.5, 1, 2, 20])
def test_recency_decay(store: MemoryStore, clock: FakeClock, half_lives: float) -> None:
    # decay = max(0.5^(age / half_life), floor), with the eval's tuned knobs
    half_life = store.settings.decay_half_life_days * TUNING.half_life_scale
    days = half_lives * half_life
    factor = max(0.5**half_lives, TUNING.decay_floor)
    clock.tick = 0
    store.save("tapir note one", id="old")
    clock.advance(days=days)
    store.save("tapir note two", id="new")
    res = store.recall("tapir")
    assert ids(res) == ["new", "old"]
    score = {h.memory.id: h.score for h in res.memories}
    assert score["old"] / score["new"] == pytest.approx(factor, rel=1e-6)


def test_recency_uses_stated_at(store: MemoryStore, clock: FakeClock) -> None:
    clock.tick = 0
    store.save("bison note one", id="a")
    store.save("bison note two", id="b")
    clock.advance(days=90)
    store.pin("a")
    store.pin("a", False)  # pin edits never refresh a fact
    assert ids(store.recall("bison")) == ["a", "b"]  # still a tie
    store.save("bison note two")  # re-stating refreshes it (and corroborates)
    assert ids(store.recall("bison")) == ["b", "a"]
    store.update("a", text="bison note one, restated")
    assert store.get("a").memory.stated_at == store.get("b").memory.stated_at


def test_banks_are_isolated(store: MemoryStore) -> None:
    store.save("okapi in main")
    w = store.save("okapi in work", bank="work").memory
    res = store.recall("okapi", bank="work")
    assert ids(res) == [w.id] and res.bank == "work"


# -- an empty query, model_target, as_of ------------------------------------------------------


def test_an_empty_query_ranks_by_standing_strength_with_recalls_boosts(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "data", clock=FakeClock(tick=0))
    # Given a pinned record 10 days old, a fresh one, a corroborated one and a hidden one
    store.save("The user is a release operator", id="role", pinned=True)
    store.clock.advance(days=10)  # type: ignore[attr-defined]
    store.save("The user likes dark roast", id="coffee")
    store.save("Deploys happen on Fridays", id="fridays")
    store.save("Deploys happen on Fridays")
    store.save("Hidden in another project", scope="project", project="/elsewhere")
    # When recall is asked with no query
    found = store.recall("")
    # Then every visible record ranks by (1 + boosts) x decay: the one scorer's boosts
    decay = max(0.5 ** (10 / store.settings.decay_half_life_days), TUNING.decay_floor)
    assert ids(found) == ["role", "fridays", "coffee"]
    assert found.memories[0].score == pytest.approx((1 + TUNING.w_pinned_scale) * decay)
    assert found.memories[2].score == pytest.approx(1.0)
    # And a hint lifts the records matching its words, without filtering the rest
    hinted = store.recall("", hint="src/coffee/roast.py dark roast")
    assert ids(hinted)[0] == "coffee" and set(ids(hinted)) == {"role", "fridays", "coffee"}


def test_model_target_counts_tokens_for_that_model_in_the_response_only(
    store: MemoryStore,
) -> None:
    from shared.text.tokens import TokenCounter

    text = "ラーメンが好きです、とユーザーは言った。"
    saved = store.save(text).memory
    found = store.recall("ラーメン", model_target="gpt-4o")
    assert found.memories[0].memory.tokens == TokenCounter("gpt-4o").count(text)
    assert store.get(saved.id).memory.tokens == saved.tokens


def test_as_of_pins_the_ranking_to_one_instant(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "data", clock=FakeClock())  # ticks: every read moves "now"
    store.save("The user likes green tea", id="old")
    store.clock.advance(days=40)  # type: ignore[attr-defined]
    store.save("The user likes green tea lattes", id="new")
    at = store.now()
    first = store.recall("green tea", as_of=at)
    store.clock.advance(days=400)  # type: ignore[attr-defined]
    later = store.recall("green tea", as_of=at)
    assert [(h.memory.id, h.score) for h in first.memories] == [
        (h.memory.id, h.score) for h in later.memories
    ]
    with pytest.raises(InvalidArgumentError):
        store.recall("green tea", as_of=-1)
