"""Entity derivation for saves that name none (``recall/entities.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from shared.contract.clock import FakeClock
from store_worker.core import MemoryStore
from store_worker.recall import entities
from store_worker.recall.entities import MAX_DERIVED, derive_entities


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The user's partner is Sofia Almeida, an architect.", ("sofia-almeida",)),
        (
            "The user moved to Campo de Ourique, Lisbon, in July 2026.",
            ("campo-de-ourique", "lisbon"),
        ),
        ("On 18 March 2025 Kestrel was down for 47 minutes.", ("kestrel",)),
        ("Kestrel moved from Fly.io to AWS; Auth0 was replaced.", ("aws", "auth0", "fly.io")),
        ("Patient search uses pg_trgm, not Elasticsearch.", ("elasticsearch", "pg_trgm")),
        ("The user is on call for Tidewater's pipelines.", ("tidewater",)),
        ("Bolacha's vet is Dr. Inês Faria.", ("bolacha", "inês-faria")),
    ],
)
def test_derives_names_and_tools(text: str, expected: tuple[str, ...]) -> None:
    assert sorted(derive_entities(text)) == sorted(expected)


@pytest.mark.parametrize(
    "text",
    [
        "Metrics and dashboards live in the cloud.",  # a sentence's first word is no name
        "Keep replies brief and to the point.",
        "The API and the UI use JSON over HTTP in CI.",  # generic acronyms
        "Standup is on Monday at 10:00; the Q3 retro is in March.",  # days, months, quarters
        "I think the user prefers tea.",
        "",
    ],
)
def test_derives_nothing_from_plain_prose(text: str) -> None:
    assert derive_entities(text) == ()


def test_derivation_is_capped_and_deterministic() -> None:
    text = " ".join(f"Met Alpha{i}Beta today." for i in range(20))
    first = derive_entities(text)
    assert len(first) == MAX_DERIVED
    assert derive_entities(text) == first


def test_save_derives_only_when_no_entities_are_given(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path, clock=FakeClock())
    derived = store.save("Ana's husband Rui is a nurse in Braga.").memory
    assert set(derived.entities) == {"ana", "rui", "braga"}
    explicit = store.save("Rui works night shifts at the hospital.", entities=["rui-costa"])
    assert explicit.memory.entities == ("rui-costa",)
    hits = store.recall("where does Rui work", mode="hybrid").memories
    assert {h.memory.id for h in hits} == {derived.id, explicit.memory.id}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Caroline: Hey Mel! Good to see you!", ("caroline", "mel")),
        ("Melanie: Thanks, Caroline! The kids loved it.", ("melanie", "caroline")),
        ("Nate: I've had them for 3 years now!", ("nate",)),
        ("Ana Lopes: hello there", ("ana-lopes",)),
        ("Hi Rui, welcome back.", ("rui",)),
    ],
)
def test_speaker_labels_and_greeted_names(text: str, expected: tuple[str, ...]) -> None:
    assert derive_entities(text) == expected


def test_speaker_of() -> None:
    from store_worker.recall.entities import speaker_of

    assert speaker_of("Caroline: Hey!") == "Caroline"
    assert speaker_of("Ana Lopes: hi") == "Ana Lopes"
    assert speaker_of("May: the month") is None  # a month is no speaker
    assert speaker_of("Caroline said: hi") is None  # a lowercase word breaks the label
    assert speaker_of("no label here") is None
    assert speaker_of("Note: buy milk") is None  # a note label, not a speaker
    assert speaker_of("Decision: use Postgres") is None
    assert speaker_of("Caroline:no space") is None


_WORDS = st.sampled_from(
    "The the user Ana Lopes de Campo Ourique Rui's FastAPI Auth0 pg_trgm Fly.io ADR-007 "
    "API Dr. Sr. Monday Kestrel is in moved to and of Hey Mel! Note: Caroline: ok 2024 "
    "São Paulo Éva ǅemal ϒ i18next x".split()
)
_SEPARATORS = st.sampled_from([" ", " ", " ", ". ", ", ", "! ", "; ", "\n", ": ", " - "])


@given(st.lists(st.tuples(_WORDS, _SEPARATORS), max_size=30))
@example([("Rui's", " "), ("husband", " "), ("is", " "), ("a", " "), ("nurse", ". ")])
@example([("Kestrel", " "), ("is", ". "), ("moved", " "), ("Kestrel", " ")])
def test_the_leading_tokens_shortcut_changes_no_entity(parts: list[tuple[str, str]]) -> None:
    # entities are stored: walking only a sentence's first two tokens when nothing after them
    # is upper-case must give exactly what walking every token gives
    text = "".join(w + sep for w, sep in parts)
    fast = entities.derive_entities(text)
    if text.startswith("Rui's husband"):
        assert fast == ("rui",)  # an opener in the possessive reads as a name
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(entities, "_leading_matches", lambda s: list(entities._TOKEN.finditer(s)))
        assert entities.derive_entities(text) == fast
