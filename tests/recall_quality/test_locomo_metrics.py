"""The LoCoMo eval's parsing, metrics and rankers on a tiny conversation built here;
the real data set is never read by the tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from store_worker.recall.embed import FakeEmbedder
from tests.recall_quality import locomo as L


def tiny_doc() -> dict[str, Any]:
    return {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben! I adopted a beagle puppy."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Thanks!"},
            {"speaker": "Ana", "dia_id": "D1:3", "text": "We walk along the river at dawn."},
        ],
        "session_2_date_time": "10:00 am on 2 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "I started pottery classes."},
            {"speaker": "Ana", "dia_id": "D2:2", "text": "Thanks!"},
            {"speaker": "Ben", "dia_id": "D2:3", "text": "My kiln broke on Tuesday."},
        ],
        "qa": [
            {"question": "What puppy did Ana adopt?", "evidence": ["D1:1"], "category": 4},
            {
                "question": "What does Ben make in pottery and what broke?",
                "evidence": ["D2:1; D2:3"],
                "category": 1,
            },
            {"question": "Who said thanks?", "evidence": ["D2:2"], "category": 2},
            {"question": "Is Ana sad?", "answer": "unknown", "category": 5},
            {"question": "No evidence", "evidence": [], "category": 3},
        ],
    }


def test_parse_keeps_turn_order_session_dates_and_categories_1_to_4() -> None:
    conv = L.parse_conversation("t1", tiny_doc())
    assert conv.bank == "locomo-t1"
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]
    assert conv.turns[0].memory_text == "Ana: Hi Ben! I adopted a beagle puppy."
    assert conv.turns[0].at_ms == L.parse_session_date("1:56 pm on 8 May, 2023")
    assert conv.turns[3].at_ms - conv.turns[0].at_ms > 20 * L.DAY_MS
    # category 5 and evidence-less questions are not scored; "D2:1; D2:3" is two turns.
    assert [(q.category, q.evidence) for q in conv.questions] == [
        (4, ("D1:1",)),
        (1, ("D2:1", "D2:3")),
        (2, ("D2:2",)),
    ]


def test_parse_evidence_splits_and_dedupes() -> None:
    assert L.parse_evidence(["D8:6; D9:17", "D8:6", "D10:2"]) == ("D8:6", "D9:17", "D10:2")
    assert L.parse_evidence(["not an id"]) == ()


def test_parse_evidence_reads_typod_ids_as_the_turns_they_name() -> None:
    # both forms occur in the data set's evidence lists ("D:11:26" in conversation 43)
    assert L.parse_evidence(["D:11:26", "D30:05", "D", "D11:26"]) == ("D11:26", "D30:5")
    assert L.dia_id("D3:07") == "D3:7"
    assert L.dia_id(" D12:3 ") == "D12:3"


def test_score_counts_the_share_of_evidence_in_each_cutoff() -> None:
    ranking = [("D1:1",), ("D1:5",), ("D1:2", "D1:9"), *[(f"D3:{i}",) for i in range(10)]]
    got = L.score(ranking, ("D1:2", "D1:9", "D4:4"))
    assert got["recall@1"] == 0.0 and got["hit@1"] == 0.0
    assert got["recall@5"] == pytest.approx(2 / 3) and got["hit@5"] == 1.0
    assert got["recall@10"] == pytest.approx(2 / 3) and got["hit@10"] == 1.0
    # an evidence turn ranked 11th is outside every cutoff
    late = L.score([(f"D3:{i}",) for i in range(10)] + [("D4:4",)], ("D4:4",))
    assert late["recall@10"] == 0.0 and late["hit@10"] == 0.0
    top = L.score([("D4:4",)], ("D4:4",))
    assert all(top[m] == 1.0 for m in L.METRICS)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert L.percentile(values, 50) == 50.0
    assert L.percentile(values, 95) == 95.0
    assert L.percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert L.percentile([7.0], 95) == 7.0
    assert L.percentile([], 50) == 0.0


def test_summarize_means_per_category_and_latency() -> None:
    conv = L.parse_conversation("t1", tiny_doc())
    rows = [
        L.Outcome(conv.questions[0], {m: 1.0 for m in L.METRICS}, 1.0),
        L.Outcome(conv.questions[1], {m: 0.5 for m in L.METRICS}, 3.0),
        L.Outcome(conv.questions[2], {m: 0.0 for m in L.METRICS}, 2.0),
    ]
    s = L.summarize(rows)
    assert s["overall"]["recall@10"] == 0.5 and s["overall"]["n"] == 3.0
    assert s["category"]["single-hop"]["hit@1"] == 1.0
    assert s["category"]["multi-hop"]["recall@5"] == 0.5
    assert s["category"]["temporal"]["recall@1"] == 0.0
    assert "open-domain" not in s["category"]
    assert s["latency_ms"] == {"p50": 2.0, "p95": 3.0}


def test_every_ranker_finds_the_tiny_conversations_evidence(tmp_path: Path) -> None:
    conv = L.parse_conversation("t1", tiny_doc())
    report = L.evaluate([conv], L.MODES, embedder=lambda: FakeEmbedder(dim=64))
    assert list(report["modes"]) == list(L.MODES)
    for mode, s in report["modes"].items():
        single = s["category"]["single-hop"]
        assert single["hit@1"] == 1.0, mode  # "puppy" and "adopt" only in D1:1
        multi = s["category"]["multi-hop"]
        assert multi["recall@5"] == 1.0, mode  # "pottery" in D2:1, "broke" in D2:3
        assert s["overall"]["n"] == 3.0


def test_repeated_turn_text_is_one_memory_standing_for_both_turns(tmp_path: Path) -> None:
    conv = L.parse_conversation("t1", tiny_doc())
    owners = L.build_store(tmp_path / "store", [conv])
    thanks = [ids for ids in owners[conv.bank].values() if "D1:2" in ids]
    # "Ben: Thanks!" and "Ana: Thanks!" differ by speaker: two memories.
    assert thanks == [["D1:2"]]
    doc = tiny_doc()
    doc["session_2"][1]["speaker"] = "Ben"  # now D2:2 repeats D1:2 word for word
    again = L.parse_conversation("t2", doc)
    owners = L.build_store(tmp_path / "store2", [again])
    assert ["D1:2", "D2:2"] in owners[again.bank].values()


def test_missing_data_is_a_skip_not_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(L.DATA_ENV, str(tmp_path / "absent"))
    assert L.main(["--brief"]) == 0
    assert "skipped" in capsys.readouterr().out


def test_main_runs_on_a_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    (tmp_path / "t1.json").write_text(json.dumps(tiny_doc()), encoding="utf-8")
    monkeypatch.setenv(L.DATA_ENV, str(tmp_path))
    assert L.main(["--no-model", "--json"]) == 0
    head = json.loads(capsys.readouterr().out)
    assert set(head) == {"bm25", "bm25-store", "lexical"}
    assert head["lexical"]["hit@10"] == 1.0


def test_the_occurred_protocol_dates_each_turn_by_its_session(tmp_path: Path) -> None:
    from store_worker.core import MemoryStore

    conv = L.parse_conversation("t1", tiny_doc())
    L.build_store(tmp_path / "store", [conv], protocol="occurred")
    store = MemoryStore(tmp_path / "store")
    try:
        got = {m.id: m for m in store.list(bank=conv.bank, page_size=50).memories}
        assert got["d1-1"].occurred_at == L.parse_session_date("1:56 pm on 8 May, 2023")
        assert got["d2-3"].occurred_at == L.parse_session_date("10:00 am on 2 June, 2023")
        assert got["d1-1"].stated_at < got["d2-3"].stated_at < L.SAVED_AT + 100
        # the question naming a month finds that session's turns first
        hits = store.recall("what happened in June 2023?", bank=conv.bank, limit=3).memories
        assert {h.memory.id for h in hits} <= {"d2-1", "d2-2", "d2-3"} and hits
    finally:
        store.close()


def test_evidence_naming_no_turn_is_counted() -> None:
    turn = L.Turn("D1:1", "Ann", "hello", 1, 0)
    conv = L.Conversation(
        "x", ("Ann", "Bo"), (turn,), (L.Question("x", "hi?", 4, ("D1:1", "D9:9")),)
    )
    assert L.unknown_evidence([conv]) == 1


def test_a_typo_is_one_slip_in_one_long_word_the_same_every_run() -> None:
    q = "Which tournament did Nate win in the beginning of November 2022?"
    typed = L.typo(q)
    assert typed == L.typo(q)  # read off a hash: every run types the same slip
    before, after = q.split(), typed.split()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert len(changed) == 1
    word, slipped = changed[0]
    assert len(word) >= 5 and word.lower() not in {"which", "did", "in", "the", "of"}
    assert slipped[0] == word[0] and slipped[-1] == word[-1]  # the ends stay
    assert abs(len(slipped) - len(word)) <= 1
    assert L.typo("Is it so?") == "Is it so?"  # no word long enough: as asked


def test_typos_reach_every_kind_of_slip() -> None:
    # over many questions every slip kind occurs (which one is read off the question's hash)
    kinds = set()
    for n in range(200):
        q = f"What did Caroline remember about question {n}?"
        typed = L.typo(q)
        a, b = next((a, b) for a, b in zip(q.split(), typed.split(), strict=True) if a != b)
        if len(b) == len(a) + 1:
            kinds.add("double")
        elif len(b) == len(a) - 1:
            kinds.add("drop")
        elif sorted(a) == sorted(b):
            kinds.add("swap")
        else:
            kinds.add("key")
    assert kinds == set(L.SLIPS)
