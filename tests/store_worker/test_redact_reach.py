"""Redaction's order and reach in the store: before the disk, and before every derivation.

Redaction comes before anything derives an id, a slug, a tag, an entity or a link, and
nothing is derived from what it leaves (no ``openai-key-redacted-openai-key``, no entity
``redacted``, no tag ``[redacted:aws_access_key]``); identifier fields holding a credential are
refused with ``invalid_argument`` and nothing written; every response that redacted says what
kinds; and the shapes once found leaking reach no file, event or error text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ulid import ULID

from shared.contract.errors import InvalidArgumentError, MemoryServiceError
from shared.contract.models import Event, Memory
from shared.redact import is_placeholder, redact
from store_worker.core import MemoryStore
from store_worker.storage.writes import derived_entities, derived_links, derived_slug

Factory = Callable[..., MemoryStore]


def full_width(text: str) -> str:
    """``text`` in full-width forms (NFKC folds them back to ASCII)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


# Each: (how it is said, the secret value that must never be stored, the kind reported).
LEAKS = {
    "curl -u": (
        "curl -u deploy:Zx9kLm2pQ7vR https://ci.example.com/api",
        "Zx9kLm2pQ7vR",
        "password",
    ),
    "mysql -p": ("mysql -u root -pS3cr3tPassw0rd app", "S3cr3tPassw0rd", "password"),
    "sshpass": ("sshpass -p 'hunter2Xy9qW' ssh deploy@host", "hunter2Xy9qW", "password"),
    "discord": (
        "the bot uses MTA1NjQ1NjQ1NjQ1NjQ1NjQ1Ng.GhJk12.abcdefghijklmnopqrstuvwxyz0123456789AB",
        "MTA1NjQ1NjQ1NjQ1NjQ1NjQ1Ng.GhJk12.abcdefghijklmnopqrstuvwxyz0123456789AB",
        "discord_bot_token",
    ),
    "full-width aws": (
        "the key is " + full_width("AKIAIOSFODNN7EXAMPLE"),
        "AKIAIOSFODNN7EXAMPLE",
        "aws_access_key",
    ),
    "full-width github": (
        full_width("ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
        "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "github_token",
    ),
    "openai": (
        "export OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
        "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd",
        "openai_key",
    ),
}
SAID = " and ".join(said for said, _, _ in LEAKS.values())
KINDS = {kind for _, _, kind in LEAKS.values()}


def forms(value: str) -> tuple[str, ...]:
    """Every form a value could be stored in: as given, folded, lowercased, full-width."""
    return (value, value.lower(), full_width(value), full_width(value).lower())


def everything_under(root: Path) -> str:
    return "\n".join(p.read_text("utf-8", "replace") for p in root.rglob("*") if p.is_file())


def assert_nowhere(*places: str) -> None:
    for place in places:
        for name, (_, value, _) in LEAKS.items():
            for form in forms(value):
                assert form not in place, f"{name} ({form[:12]}...) leaked"


@pytest.fixture
def store(fresh_store: Factory) -> MemoryStore:
    return fresh_store()


def dumped(events: list[Event]) -> str:
    return "\n".join(e.model_dump_json() for e in events)


# -- nothing is derived from a placeholder ---------------------------------------------------


def labels_of(mem: Memory) -> list[str]:
    return [mem.id, *mem.tags, *mem.entities, *mem.links]


def test_a_redacted_save_leaves_no_trace_of_a_placeholder(store: MemoryStore) -> None:
    # Given texts that are nothing but a secret, or a secret beside a name
    for said, _, _ in LEAKS.values():
        mem = store.save(said, tags=[said, "ops"], entities=[said]).memory
        # Then no id, tag, entity or link is or contains a placeholder's piece
        assert not any(is_placeholder(x) for x in labels_of(mem)), labels_of(mem)
        assert "ops" in mem.tags
    only = store.save("sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd").memory
    assert only.id.startswith("memory") and only.entities == ()  # the fallback slug


def test_a_hand_typed_placeholder_is_no_label(store: MemoryStore) -> None:
    mem = store.save(
        "plain [[REDACTED:jwt]] text",
        tags=["[redacted:aws_access_key]", full_width("[REDACTED:jwt]"), "kept"],
        entities=["openai_key]", "Redacted", "Ana"],
    ).memory
    assert mem.tags == ("kept",) and mem.entities == ("ana",) and mem.links == ()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    words=st.lists(
        st.sampled_from(["Ana", "deploy", "Kestrel", "the", "box", "Braga"]), max_size=5
    ),
    secrets=st.lists(st.sampled_from(sorted(LEAKS)), min_size=1, max_size=3),
    label=st.sampled_from(["", "[REDACTED:jwt]", "redacted", "x [redacted:password] y"]),
)
def test_no_placeholder_ever_becomes_an_id_tag_or_entity(
    fresh_store: Factory, words: list[str], secrets: list[str], label: str
) -> None:
    store = fresh_store()
    parts = [*words, *(LEAKS[s][0] for s in secrets), label]
    text = " ".join(p for p in parts if p)
    res = store.save(text, title=label or None, tags=[label, *secrets], entities=[text])
    assert not any(is_placeholder(x) for x in labels_of(res.memory))
    assert set(res.redacted) >= {LEAKS[s][2] for s in secrets}
    upd = store.update(res.memory.id, text=text + " again", tags=[LEAKS[secrets[0]][0]])
    assert not any(is_placeholder(x) for x in labels_of(upd.memory))
    store.close()


FRAGMENTS = [
    "[REDACTED:openai_key]",
    "[redacted:aws_access_key]",
    "openai_key]",
    "REDACTED",
    "Redacted",
    "[[REDACTED:jwt]]",
    full_width("[REDACTED:jwt]"),
    "Ana",
    "Kestrel",
    "pg_trgm",
    "[[deploy-notes]]",
    *(said for said, _, _ in LEAKS.values()),
]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(min_size=1, max_size=12)), max_size=8)
)
def test_derived_slugs_entities_and_links_are_never_placeholders(parts: list[str]) -> None:
    # Given any text, redacted as a save redacts it
    text = redact(" ".join(parts)).text
    # Then nothing derived from it is, or holds a piece of, a placeholder
    assert not is_placeholder(derived_slug(text))
    assert not any(is_placeholder(e) for e in derived_entities(text))
    assert not any(is_placeholder(x) for x in derived_links(text))


# -- identifiers holding a credential are refused, nothing written ---------------------------

KEY = "AKIAIOSFODNN7EXAMPLE"
SLACK = "xoxb-1234567890123-1234567890123-abcdefghijklmnopqrstuvwx"  # fits a slug and a name
REFUSALS: dict[str, Callable[[MemoryStore], object]] = {
    "id": lambda s: s.save("plain", id=SLACK),
    "id (glued)": lambda s: s.save("plain", id=f"note-{SLACK}"),
    "session_id": lambda s: s.save("plain", scope="session", session_id=KEY),
    "recorded_by": lambda s: s.save("plain", recorded_by=f"bot {KEY}"),
    "project": lambda s: s.save("plain", scope="project", project=f"/srv/{KEY}"),
    "bank name": lambda s: s.bank_create(SLACK),
    "bank via save": lambda s: s.save("plain", bank=SLACK),
    "rule name": lambda s: s.rule_set(SLACK, "Be brief."),
    "state owner": lambda s: s.state_set(SLACK, "k", 1),
    "turn session": lambda s: s.turn_completed(KEY, None, [{"role": "user", "content": "hi"}]),
    "turn parent": lambda s: s.turn_completed(
        "s1", None, [{"role": "user", "content": "hi"}], "completed", KEY
    ),
    "pre_generate session": lambda s: s.pre_generate(f"s-{KEY}"),
    "link_session": lambda s: s.link_session("s1", KEY),
}


@pytest.mark.parametrize("call", list(REFUSALS), ids=list(REFUSALS))
def test_an_identifier_holding_a_credential_is_refused(
    store: MemoryStore, data_dir_bytes: Callable[[MemoryStore], dict[str, bytes | None]], call: str
) -> None:
    store.save("something before")  # the data dir exists and holds one record
    before = data_dir_bytes(store)
    with pytest.raises(InvalidArgumentError, match="credential"):
        REFUSALS[call](store)
    assert data_dir_bytes(store) == before


@pytest.fixture
def data_dir_bytes(
    dir_bytes: Callable[[Path], dict[str, bytes | None]],
) -> Callable[[MemoryStore], dict[str, bytes | None]]:
    def read(store: MemoryStore) -> dict[str, bytes | None]:
        got = dir_bytes(store.root)
        return {k: v for k, v in got.items() if not k.startswith(".lock")}

    return read


GITHUB = "ghp_" + "aB3" * 12  # not a slug nor a name: refused by its shape first
ECHOES: dict[str, Callable[[MemoryStore], object]] = {
    "get, not a slug": lambda s: s.get(GITHUB),
    "get, a slug": lambda s: s.get(SLACK),
    "save id, not a slug": lambda s: s.save("plain", id=GITHUB),
    "delete": lambda s: s.delete(SLACK),
    "supersede survivor": lambda s: s.supersede("something-before", GITHUB),
    "purge": lambda s: s.purge(SLACK),
    "recall bank, not a name": lambda s: s.recall("x", bank=GITHUB),
    "recall bank, a name": lambda s: s.recall("x", bank=SLACK),
    "rule_get": lambda s: s.rule_get(SLACK),
    "rule_set, not a name": lambda s: s.rule_set(GITHUB, "Be brief."),
}


@pytest.mark.parametrize("call", list(ECHOES), ids=list(ECHOES))
def test_an_error_never_quotes_a_credential_given_as_an_identifier(
    store: MemoryStore, call: str
) -> None:
    # Given an agent that passes a token where an id or a name goes
    store.save("something before")
    # When the store refuses it, then the error names the kind, never the value (an error
    # reaches the terminal, the agent's transcript and gRPC metadata unredacted)
    with pytest.raises(MemoryServiceError) as refused:
        ECHOES[call](store)
    message = refused.value.message
    assert GITHUB not in message and SLACK not in message and "xoxb-" not in message
    assert "looks like a credential" in message


def test_ordinary_identifiers_pass(store: MemoryStore) -> None:
    res = store.save(
        "plain",
        id="deploy-notes-2024",
        scope="session",
        session_id="claude-code-5f0c2a",
        recorded_by="extractor/gpt-4o-mini",
        turn_id=str(ULID()),
    )
    assert res.memory.id == "deploy-notes-2024"


# -- every redacting response says what kinds ------------------------------------------------


def test_every_redacting_response_names_the_kinds(store: MemoryStore) -> None:
    saved = store.save(SAID)
    assert set(saved.redacted) == KINDS
    updated = store.update(saved.memory.id, text=LEAKS["sshpass"][0], title=LEAKS["discord"][0])
    assert set(updated.redacted) == {"password", "discord_bot_token"}
    other = store.save("another plain fact").memory
    sup = store.supersede(saved.memory.id, other.id, reason=LEAKS["mysql -p"][0])
    assert sup.redacted == ("password",) and "S3cr3t" not in json.dumps(sup.model_dump())
    gone = store.delete(other.id, reason=LEAKS["openai"][0])
    assert gone.redacted == ("openai_key",)
    bank = store.bank_create("ops", LEAKS["discord"][0])
    assert bank.redacted == ("discord_bot_token",)
    rule = store.rule_set("deploy", LEAKS["curl -u"][0])
    assert rule.redacted == ("password",)
    turn = store.turn_completed("s1", None, [{"role": "user", "content": SAID}])
    assert set(turn.redacted) == KINDS
    assert store.save("plain words").redacted == ()


# -- the leaks the issue found, place by place -----------------------------------------------


def test_no_leak_reaches_the_log_rules_bank_yaml_or_events(
    store: MemoryStore, seen: list[Event]
) -> None:
    # Given every shape said through every write that takes free text
    mem = store.save(SAID, title=LEAKS["discord"][0], tags=[SAID], entities=[SAID]).memory
    store.update(mem.id, text=SAID + " (updated)")
    other = store.save("plain").memory
    store.supersede(mem.id, other.id, reason=SAID)
    store.delete(other.id, reason=SAID)
    store.rule_set("deploy", SAID)
    store.bank_create("ops", SAID)
    # Then no form of any value is in memories.jsonl, a rule file, bank.yaml or an event
    bank = store.root / "main"
    assert_nowhere(
        (bank / "memories.jsonl").read_text("utf-8"),
        (bank / "rules" / "deploy.md").read_text("utf-8"),
        (store.root / "ops" / "bank.yaml").read_text("utf-8"),
        dumped(seen),
        dumped(list(store.events_since(0, limit=10_000).events)),
    )
    assert "[REDACTED:password]" in (bank / "rules" / "deploy.md").read_text("utf-8")


def test_no_leak_reaches_the_outbox_or_a_dead_letter(store: MemoryStore) -> None:
    # Given a turn that says every shape
    res = store.turn_completed("s1", None, [{"role": "user", "content": SAID}])
    assert res.queued and res.job_id is not None
    # When the extractor fails it with an error quoting the turn, then dead-letters it
    job = store.outbox_claim(1)[0]
    store.outbox_fail(job.job_id, f"model choked on: {SAID}", dead_letter=True)
    # Then neither the job file, its dead letter, nor the listing holds any value
    dead = store.outbox_job(job.job_id)
    assert dead.errors and all("[REDACTED:" in e for e in dead.errors)
    assert_nowhere(
        everything_under(store.root / ".outbox"),
        dead.model_dump_json(),
        store.outbox_list().model_dump_json(),
    )


def test_no_leak_reaches_a_save_many_or_a_siblings_state(store: MemoryStore) -> None:
    # Given secrets of the kinds found later (SQL, a .pgpass line, a config directive), said
    # through a batch save and through a sibling's state
    pw = "Vn4#qRt8zLx2"
    said = f"CREATE USER app IDENTIFIED BY '{pw}';\ndb.internal:5432:app:app:{pw}\nrequirepass {pw}"
    # When
    res = store.save_many([{"text": said, "title": "db setup"}, {"text": "plain " + said}])
    store.state_set("extractor", "note", {"last": said, "items": [said, 3]})
    # Then nothing on disk holds the password, and the state reads back redacted
    assert [r.redacted for r in res.results] == [("password",), ("password",)]
    assert pw not in everything_under(store.root)
    state = store.state_get("extractor", "note")
    assert isinstance(state, dict) and state["items"][1] == 3
    assert pw not in json.dumps(state) and "[REDACTED:password]" in state["last"]


def test_a_secret_named_once_is_redacted_where_the_request_repeats_it(store: MemoryStore) -> None:
    """The user names a password once ("my password is X"); the assistant's reply, the same
    text further on, an entity and a tag repeat it bare. Each part alone has no context for
    the bare repeat: read together, none of them keeps it."""
    pw = "hunter2x!Q"
    res = store.turn_completed(
        "s1",
        None,
        [
            {"role": "user", "content": f"my password is {pw}"},
            {"role": "assistant", "content": f"Noted. I will not repeat {pw} anywhere."},
        ],
    )
    assert res.queued and res.redacted == ("password",)
    saved = store.save(
        f"my password is {pw}; later I typed {pw} again",
        title=f"about {pw}",
        entities=[pw, "wifi"],
        tags=[pw.lower(), "secrets"],
    )
    assert "wifi" in saved.memory.entities and pw.lower() not in saved.memory.entities
    assert pw.lower() not in saved.memory.tags and "secrets" in saved.memory.tags
    store.state_set("extractor", "note", {"said": f"password: {pw}", "echo": pw})
    on_disk = everything_under(store.root)
    assert pw not in on_disk and pw.lower() not in on_disk
    assert pw not in saved.model_dump_json()
    job = store.outbox_claim(1)[0]
    assert all(pw not in m.content for m in job.messages)
    assert "repeat [REDACTED:password] anywhere" in job.messages[1].content


def test_a_repeat_is_redacted_whole_words_only() -> None:
    from shared.redact import redact_many

    said, other = redact_many(["the door code is 4821", "flat 48210, and 4821 at the gate"])
    assert "4821" not in said.text
    assert "48210" in other.text and " 4821 " not in other.text and "[REDACTED:" in other.text
    assert "4821" not in repr(said)  # the secrets a Redaction holds are never printed
