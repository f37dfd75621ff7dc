"""Neighbouring turns of one session as context at recall (``recall/context.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore
from store_worker.recall.context import (
    chains,
    context_coverage,
    named_speakers,
    session_focus,
    with_neighbours,
)
from store_worker.storage.bank import Bank

DIALOG = [
    "Joanna: So cute! How long have you had your turtles?",
    "Nate: Three years now, they bring me tons of joy!",
    "Joanna: I baked a dairy-free cake yesterday.",
    "Nate: Nice, what flavour was it?",
    "Joanna: Vanilla with strawberry filling.",
]


def save_dialog(store: MemoryStore, *, session: str | None, bank: str = "talk") -> list[str]:
    ids = []
    for i, text in enumerate(DIALOG):
        ids.append(store.save(text, bank=bank, id=f"t{i}", session_id=session).memory.id)
    return ids


def ranked(store: MemoryStore, query: str, bank: str = "talk") -> list[str]:
    return [h.memory.id for h in store.recall(query, bank=bank, limit=10).memories]


QUESTION = "How long has he had the turtles?"


def test_a_short_answer_is_found_through_the_turn_it_answers(store: MemoryStore) -> None:
    save_dialog(store, session="s1")
    # t1 shares no word with the question; t0 asked it. The answer ranks first: a question
    # turn is context for the turn after it, so its own score is damped.
    assert ranked(store, QUESTION) == ["t1", "t0"]  # t2 is two turns away


def test_without_a_source_session_there_is_no_context(store: MemoryStore) -> None:
    save_dialog(store, session=None)
    assert ranked(store, QUESTION) == ["t0"]


def test_sessions_do_not_leak_into_each_other(store: MemoryStore) -> None:
    store.save("Joanna: Did you see my turtles?", bank="talk", id="a0", session_id="s1")
    store.save("Nate: Three years now.", bank="talk", id="b0", session_id="s2")
    assert ranked(store, "turtles") == ["a0"]


def test_prose_memories_of_a_session_are_not_chained(store: MemoryStore) -> None:
    # Extracted facts carry a session too, but they are not dialog turns: no speaker label.
    store.save("The user keeps two turtles.", bank="talk", id="f0", session_id="s1")
    store.save("The user bakes dairy-free cakes.", bank="talk", id="f1", session_id="s1")
    assert ranked(store, "turtles") == ["f0"]


def test_chains_follow_saves_updates_and_reloads(data_dir: Path) -> None:
    clock = FakeClock()
    store = MemoryStore(data_dir, clock=clock)
    save_dialog(store, session="s1")
    bank = store.banks["talk"]
    ch = chains(bank)
    slot = bank.index.slot_of
    assert ch.prev[slot["t1"]] == slot["t0"] and ch.next[slot["t1"]] == slot["t2"]
    assert bool(ch.asks[slot["t0"]]) and not bool(ch.asks[slot["t1"]])
    # a later turn extends the chain in place
    store.save("Nate: Vanilla is my favourite too.", bank="talk", id="t5", session_id="s1")
    ch = chains(bank)
    assert ch.prev[slot["t5"]] == slot["t4"] and ch.next[slot["t4"]] == slot["t5"]
    # an edited turn moves to a new slot and keeps its place in the session's order
    store.update("t2", bank="talk", text="Joanna: I baked a vegan cake yesterday.")
    ch = chains(bank)
    assert ch.prev[slot["t2"]] == slot["t1"] and ch.next[slot["t2"]] == slot["t3"]
    assert ch.next[slot["t1"]] == slot["t2"]
    before = ranked(store, QUESTION)
    store.close()
    again = MemoryStore(data_dir, clock=clock)
    try:
        assert ranked(again, QUESTION) == before
    finally:
        again.close()


def test_a_deleted_turn_leaves_the_chain(store: MemoryStore) -> None:
    save_dialog(store, session="s1")
    store.delete("t1", bank="talk")
    bank = store.banks["talk"]
    ch = chains(bank)
    slot = bank.index.slot_of
    assert ch.next[slot["t0"]] == slot["t2"]
    assert ranked(store, QUESTION) == ["t2", "t0"]  # t2 now follows the question


def test_with_neighbours_is_the_identity_without_chains(store: MemoryStore) -> None:
    save_dialog(store, session=None)
    bank = store.banks["talk"]
    score = np.arange(len(bank.index.keys), dtype=np.float64)
    cand = score > 2
    out, new = with_neighbours(bank, score, cand, np.ones_like(cand))
    assert out is score and new is cand


def session_bank(store: MemoryStore, bank: str, texts: list[str]) -> tuple[Bank, dict[str, int]]:
    """``texts`` saved as turns ``x0``, ``x1``... of one session; the bank and its slots."""
    for i, text in enumerate(texts):
        store.save(text, bank=bank, id=f"x{i}", session_id="s")
    return store.banks[bank], store.banks[bank].index.slot_of


def test_neighbour_weights(store: MemoryStore) -> None:
    bank, slot = session_bank(store, "w", ["Ana: one.", "Rui: two?", "Ana: three.", "Rui: four."])
    n = len(bank.index.keys)
    score = np.zeros(n)
    cand = np.zeros(n, dtype=bool)
    score[slot["x1"]] = 10.0  # the question turn
    cand[slot["x1"]] = True
    out, new = with_neighbours(
        bank,
        score,
        cand,
        np.ones(n, dtype=bool),
        w_before=0.3,
        w_after=0.2,
        w_question=0.8,
        question_damp=0.5,
    )
    assert out[slot["x1"]] == 5.0  # damped: it asks
    assert out[slot["x2"]] == 8.0  # the answer after a question gains w_question
    assert out[slot["x0"]] == 2.0  # the turn before gains w_after
    assert out[slot["x3"]] == 0.0 and not new[slot["x3"]]  # two turns away: nothing
    assert new[slot["x0"]] and new[slot["x2"]]


def test_a_question_naming_a_speaker_prefers_their_turns(store: MemoryStore) -> None:
    store.save("Ana: I painted a sunset by the lake.", bank="p", id="a", session_id="s1")
    store.save("Rui: Nice. I painted a lake too, at dawn.", bank="p", id="b", session_id="s1")
    store.save("Rui Costa: Lovely.", bank="p", id="c", session_id="s1")
    lake = "Who painted the lake?"
    assert ranked(store, "What did Ana paint at the lake?", bank="p")[0] == "a"
    assert ranked(store, "What did Rui paint at the lake?", bank="p")[0] == "b"
    bank = store.banks["p"]
    score = np.ones(len(bank.index.keys))
    cand = np.ones(len(bank.index.keys), dtype=bool)
    slot = bank.index.slot_of
    out = named_speakers(bank, score, cand, "what did rui say?", boost=0.5)
    # "rui" names both "rui" and "rui-costa" (a first name names the whole handle)
    assert out[slot["b"]] == out[slot["c"]] == 1.5 and out[slot["a"]] == 1.0
    assert named_speakers(bank, score, cand, "what did rui say?", boost=0.0) is score
    assert named_speakers(bank, score, cand, lake, boost=0.5) is score  # nobody named


def test_context_coverage_weighs_the_query_terms_a_turn_and_its_neighbours_hold(
    store: MemoryStore,
) -> None:
    # Given a session of four turns and a query of two terms, one held by x0, one by x2
    turns = ["Ana: the turtles.", "Rui: so cute.", "Ana: a cake.", "Rui: yes."]
    bank, slot = session_bank(store, "c", turns)
    n = len(bank.index.keys)
    score = np.ones(n)
    cand = np.ones(n, dtype=bool)
    cand[slot["x3"]] = False
    idf = {t: bank.index.idf(t) for t in ("turtl", "cake")}
    share = {t: v / sum(idf.values()) for t, v in idf.items()}
    # When the coverage is applied at weight 2
    out = context_coverage(bank, score, cand, ["turtl", "cake", "turtl"], weight=2.0)
    # Then x1 sits between both terms: the whole query; x0 holds one, and so does x2 with its
    # neighbours (x1, x3 hold neither); x3 is not a candidate and keeps its score
    assert out[slot["x1"]] == 3.0
    assert out[slot["x0"]] == 1.0 + 2.0 * share["turtl"]
    assert out[slot["x2"]] == 1.0 + 2.0 * share["cake"]
    assert out[slot["x3"]] == 1.0
    assert context_coverage(bank, score, cand, ["turtl"], weight=0.0) is score
    assert context_coverage(bank, score, cand, [], weight=2.0) is score


def test_context_coverage_is_the_identity_without_chains(store: MemoryStore) -> None:
    save_dialog(store, session=None)
    bank = store.banks["talk"]
    score = np.ones(len(bank.index.keys))
    cand = np.ones(len(bank.index.keys), dtype=bool)
    assert context_coverage(bank, score, cand, ["turtl"]) is score


def test_session_focus_lifts_the_other_turns_of_the_best_results_sessions(
    store: MemoryStore,
) -> None:
    # Given two sessions of three turns, and scores where s1's x0 is best
    for i in range(3):
        store.save(f"Ana: one {i}.", bank="f", id=f"a{i}", session_id="s1")
        store.save(f"Rui: two {i}.", bank="f", id=f"b{i}", session_id="s2")
    bank = store.banks["f"]
    slot = bank.index.slot_of
    n = len(bank.index.keys)
    score = np.zeros(n)
    for key, value in {"a0": 10.0, "a1": 2.0, "a2": 9.5, "b0": 5.0, "b1": 4.0, "b2": 3.0}.items():
        score[slot[key]] = value
    cand = np.ones(n, dtype=bool)
    cand[slot["b2"]] = False
    # When the best result alone sets the focus
    out = session_focus(bank, score, cand, weight=0.2, top=1)
    # Then the other turns of s1 rise, capped just below the best; s2 stays
    assert out[slot["a1"]] == 2.4
    assert out[slot["a0"]] == 10.0 and 9.5 < out[slot["a2"]] < 10.0
    assert out[slot["b0"]] == 5.0 and out[slot["b2"]] == 3.0
    # With the top three (a0, a2, b0), s2's other candidate rises too, not the non-candidate
    out = session_focus(bank, score, cand, weight=0.2, top=3)
    assert out[slot["b1"]] == 4.8 and out[slot["b2"]] == 3.0 and out[slot["b0"]] == 5.0
    assert session_focus(bank, score, cand, weight=0.0) is score


def test_session_focus_is_the_identity_without_chains(store: MemoryStore) -> None:
    save_dialog(store, session=None)
    bank = store.banks["talk"]
    score = np.arange(len(bank.index.keys), dtype=np.float64)
    cand = np.ones(len(bank.index.keys), dtype=bool)
    assert session_focus(bank, score, cand) is score
