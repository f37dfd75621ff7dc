"""Question-frame words dropped from the lexical query (store_worker/query.py, issue 11)."""

from __future__ import annotations

import pytest

from shared.text import query_tokens
from store_worker.query import strip_question_frame


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
