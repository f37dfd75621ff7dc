"""Question-frame words dropped from the lexical query, and "when" questions preferring
memories that say when (``recall/query.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from shared.contract.clock import FakeClock
from shared.text import entity_norm, query_dates, query_tokens, words
from store_worker.core import MemoryStore
from store_worker.recall.parsed import parse
from store_worker.recall.query import asks_when, names_a_time, strip_question_frame
from store_worker.recall.scoring import Tuning
from store_worker.recall.signals import content_tokens


@pytest.mark.parametrize(
    ("question", "dropped", "kept"),
    [
        ("What kind of frosting did Joanna use?", {"kind"}, {"frost", "joanna"}),
        ("What type of car does Ana drive?", {"type"}, {"car", "ana", "drive"}),
        ("How many times has Tim been to France?", {"mani", "time"}, {"tim", "franc"}),
        ("How long has Nate had his turtles?", {"long"}, {"nate", "turtl"}),
        ("How often does Rui swim?", {"often"}, {"rui", "swim"}),
        ("What did Melanie mention about the long hike?", {"mention"}, {"long", "hike"}),
    ],
)
def test_frame_words_go_and_the_subject_stays(
    question: str, dropped: set[str], kept: set[str]
) -> None:
    tokens = set(query_tokens(strip_question_frame(question)))
    assert not tokens & dropped
    assert kept <= tokens
    assert dropped <= set(query_tokens(question))  # they were there before


@pytest.mark.parametrize(
    "text",
    [
        "a long walk in the kind weather",  # not a question
        "How long?",  # nothing would be left
        "Which kind?",
        "Is the hike long?",  # "long" is the subject here, not the frame
    ],
)
def test_unchanged(text: str) -> None:
    assert strip_question_frame(text) == text


# -- "when" questions ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("When did Caroline go to the support group?", True),
        ("when is the dentist appointment", True),
        ("What year did Nate start gaming?", True),
        ("In which month did Jon open the studio?", True),
        ("How long ago did Maria adopt the dog?", True),
        ("Do you remember when did we meet Tim?", True),
        ("What did Caroline paint?", False),
        ("Where does Jon live?", False),
        ("How long is the hike?", False),  # a length, not a time
        ("Who was there when the power went out?", False),  # "when" not asking
    ],
)
def test_asks_when(question: str, asks: bool) -> None:
    assert asks_when(question) is asks


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("I went to a support group yesterday.", True),
        ("We moved to Berlin in 2019.", True),
        ("It happened last week, on a Tuesday.", True),
        ("I adopted her three years ago", True),
        ("The recital is on March 12th", True),
        ("Since the 4th of May I have been running", True),
        ("I have been painting for 5 years", True),
        ("See you next summer!", True),
        ("I may go to the gym", False),  # "may" the verb
        ("They march on the capital", False),
        ("Jan said the soup was great", False),  # a name, not January
        ("I love painting sunsets", False),
        ("The code is 404", False),
    ],
)
def test_names_a_time(text: str, names: bool) -> None:
    assert names_a_time(text) is names


def test_a_when_question_prefers_the_memory_that_says_when(tmp_path: Path) -> None:
    root = tmp_path / "data"
    store = MemoryStore(root, clock=FakeClock(start_ms=1_700_000_000_000))
    store.save("Caroline: the support group was lovely, I will go again")
    store.save("Caroline: I went to the support group yesterday, it was lovely and calm")
    store.close()
    question = "When did Caroline go to the support group?"

    def first(query: str, tuning: Tuning) -> str:
        clock = FakeClock(start_ms=1_700_000_000_000)
        store = MemoryStore(root, clock=clock, recall_tuning=tuning)
        try:
            return store.recall(query, limit=2, mode="hybrid").memories[0].memory.text
        finally:
            store.close()

    assert "yesterday" not in first(question, Tuning(w_when=0.0))  # the longer text scores less
    assert "yesterday" in first(question, Tuning())
    # a question that does not ask when keeps the word match's order
    assert "yesterday" not in first("Did Caroline go to the support group?", Tuning())


def test_a_query_is_parsed_once_per_instant_as_recall_reads_it() -> None:
    """Scoring and the calibration share one parse (``recall/parsed.py``): the frame-free text,
    the date window and the content terms, the same object for the same query and instant."""
    now = 1_767_225_600_000  # 2026-01-01
    query = "What kind of tea did Sofia drink last month?"
    q = parse(query, now)
    assert parse(query, now) is q
    text = strip_question_frame(query)
    window = query_dates(query, now)
    assert window is not None
    assert (q.text, q.window, q.terms) == (text, window, tuple(content_tokens(text, window)))
    assert q.said == {entity_norm(w) for w in words(text)}
    later = parse(query, now + 40 * 86_400_000)
    assert later.window is not None and later.window.start_ms > window.start_ms
