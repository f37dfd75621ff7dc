"""Fault suite: names, ids and every public argument checked whole at the boundary.

Property tests over names (hypothesis): a bank, rule or state name, a memory id or a turn id
is accepted exactly when the whole string matches its pattern (no trailing newline), and a
refused one is a typed ``InvalidArgumentError`` that writes nothing. Then the argument types
the issue found untyped (tags=5, NaN cursors, crafted page tokens, a 100k-deep state value)
and ``configure`` refusing what start-up refuses.
"""

from __future__ import annotations

import base64
import inspect
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared import cli
from shared.contract.config import StoreSettings
from shared.contract.errors import InvalidArgumentError, MemoryServiceError
from store_worker.core import MemoryStore
from store_worker.storage import validate as v

NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
SLUG = re.compile(r"[a-z0-9][a-z0-9-]{0,79}")
SNAPSHOT = Callable[[Path], dict[str, bytes | None]]

# Strings near the valid ones: valid names with a newline, NUL, slash, dot, space or
# uppercase letter added somewhere, and arbitrary text.
near_names = st.one_of(
    st.from_regex(NAME, fullmatch=True),
    st.tuples(
        st.from_regex(NAME, fullmatch=True),
        st.sampled_from(["\n", "\r\n", "\0", "/", "..", " ", "A", "\t", "é"]),
        st.booleans(),
    ).map(lambda t: t[0] + t[1] if t[2] else t[1] + t[0]),
    st.text(max_size=70),
)


@pytest.fixture(scope="module")
def shared_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryStore]:
    store = MemoryStore(tmp_path_factory.mktemp("names") / "data")
    store.save("a fact to look up", id="known")
    yield store
    store.close()


quick = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@quick
@given(name=near_names)
def test_bank_names_are_matched_whole(shared_store: MemoryStore, name: str) -> None:
    valid = NAME.fullmatch(name) is not None
    assert v.is_name(name) is valid
    before = sorted(p.name for p in shared_store.root.iterdir())
    try:
        shared_store.bank_create(name)
    except InvalidArgumentError:
        assert not valid
        assert sorted(p.name for p in shared_store.root.iterdir()) == before
    else:
        assert valid and (shared_store.root / name).is_dir()
        assert "\n" not in name and "/" not in name


@quick
@given(name=near_names)
def test_rule_and_state_names_are_matched_whole(shared_store: MemoryStore, name: str) -> None:
    valid = NAME.fullmatch(name) is not None
    for call in (
        lambda: shared_store.rule_set(name, "text"),
        lambda: shared_store.state_set(name, "key", 1),
        lambda: shared_store.state_set("owner", name, 1),
        lambda: shared_store.state_get(name, "key"),
    ):
        try:
            call()
        except InvalidArgumentError:
            assert not valid
        else:
            assert valid


@quick
@given(
    mem_id=st.one_of(
        st.from_regex(SLUG, fullmatch=True),
        st.from_regex(SLUG, fullmatch=True).map(lambda s: s + "\n"),
        st.text(max_size=90),
    )
)
def test_memory_ids_are_matched_whole(shared_store: MemoryStore, mem_id: str) -> None:
    valid = SLUG.fullmatch(mem_id) is not None
    try:
        shared_store.get(mem_id)
    except InvalidArgumentError:
        assert not valid
    except MemoryServiceError as e:
        assert valid and e.category == "not_found"
    else:
        assert valid


@pytest.mark.parametrize(
    "turn", ["01J0000000000000000000000\n", "01J00000000000000000000000\n", 5, ["x"], "x" * 26]
)
def test_a_turn_id_is_a_whole_ulid_string(shared_store: MemoryStore, turn: object) -> None:
    with pytest.raises(InvalidArgumentError):
        shared_store.save("some fact", turn_id=turn)  # type: ignore[arg-type]


@pytest.mark.parametrize("session", ["s\n", "s\0x", "a\rb"])
def test_a_session_id_is_one_line(shared_store: MemoryStore, session: str) -> None:
    with pytest.raises(InvalidArgumentError):
        shared_store.save("fact", scope="session", session_id=session)


BAD_CALLS: dict[str, Callable[[MemoryStore], Any]] = {
    "tags=5": lambda s: s.save("fact", tags=5),
    "tags=dict": lambda s: s.save("fact", tags={"a": 1}),
    "entities=5.5": lambda s: s.save("fact", entities=5.5),
    "update tags=5": lambda s: s.update("known", tags=5),
    "cursor NaN": lambda s: s.events_since(float("nan")),
    "cursor 1.5": lambda s: s.events_since(1.5),
    "cursor '3'": lambda s: s.events_since("3"),
    "cursor True": lambda s: s.events_since(True),
    "cursor -1": lambda s: s.events_since(-1),
    "limit NaN": lambda s: s.events_since(0, limit=float("nan")),
    "limit 2.5": lambda s: s.events_since(0, limit=2.5),
    "limit '10'": lambda s: s.events_since(0, limit="10"),
    "limit 0": lambda s: s.events_since(0, limit=0),
    "events bank": lambda s: s.events_since(0, bank="../x"),
    "deep state": lambda s: s.state_set("o", "k", _deep(100_000)),
    "nan state": lambda s: s.state_set("o", "k", {"x": float("nan")}),
    "huge int state": lambda s: s.state_set("o", "k", 10**5000),
    "object state": lambda s: s.state_set("o", "k", object()),
    "key state": lambda s: s.state_set("o", "k", {1: 2}),
    "bank newline": lambda s: s.bank_create("main\n"),
    "rule newline": lambda s: s.rule_set("style\n", "x"),
    "state owner newline": lambda s: s.state_set("inject\n", "k", 1),
    "id newline": lambda s: s.save("fact", id="known\n"),
    "supersede newline": lambda s: s.supersede("known\n", "known"),
}


def _deep(n: int) -> object:
    value: object = 1
    for _ in range(n):
        value = [value]
    return value


def _token(row: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(row).encode()).decode().rstrip("=")


CRAFTED_TOKENS = [
    base64.urlsafe_b64encode(b'[1e400,"x"]').decode(),
    base64.urlsafe_b64encode(b"[" + b"9" * 400 + b',"x"]').decode(),
    _token(["1", "x"]),
    _token([1, 2]),
    _token([1, "x\n"]),
    _token([1, "x", "y"]),
    _token({"a": 1}),
    _token([True, "x"]),
    base64.urlsafe_b64encode(b"[" * 50_000).decode(),
    "ümlaut",
    "!!!!",
    "x" * 5000,
]


@pytest.mark.parametrize("call", list(BAD_CALLS))
def test_bad_arguments_are_typed_and_write_nothing(
    shared_store: MemoryStore, dir_bytes: SNAPSHOT, call: str
) -> None:
    before = dir_bytes(shared_store.root)
    with pytest.raises(InvalidArgumentError):
        BAD_CALLS[call](shared_store)
    assert dir_bytes(shared_store.root) == before


@pytest.mark.parametrize("token", CRAFTED_TOKENS)
def test_a_crafted_page_token_is_invalid_argument(shared_store: MemoryStore, token: str) -> None:
    with pytest.raises(InvalidArgumentError, match="page_token"):
        shared_store.list(page_token=token)


def test_issued_page_tokens_still_page(shared_store: MemoryStore) -> None:
    for i in range(5):
        shared_store.save(f"paging fact number {i} about owls", bank="paging")
    seen: list[str] = []
    token = None
    while True:
        page = shared_store.list(bank="paging", page_size=2, page_token=token)
        seen += [m.id for m in page.memories]
        token = page.next_page_token
        if token is None:
            break
    assert len(seen) == len(set(seen)) == 5


@pytest.mark.parametrize(
    "change",
    [
        {"default_bank": "../../x"},
        {"default_bank": "main\n"},
        {"default_bank": ""},
        {"default_bank": "Main"},
        {"data_dir": ""},
        {"recall_limit": "many"},
    ],
)
def test_configure_refuses_what_start_up_refuses(
    shared_store: MemoryStore, change: dict[str, Any]
) -> None:
    # Start-up (the environment) refuses it
    env = {f"MEMORY_{k.upper()}": str(val) for k, val in change.items() if val != ""}
    if env:
        with pytest.raises(InvalidArgumentError):
            StoreSettings.from_env(env)
    with pytest.raises(InvalidArgumentError):
        StoreSettings.validated(change)
    # and so does configure, changing nothing
    before = shared_store.settings
    with pytest.raises(InvalidArgumentError):
        shared_store.configure(change)
    assert shared_store.settings == before
    assert shared_store.get("known").memory.id == "known"


def test_cli_bank_create_with_a_newline_exits_2_and_makes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    code = cli.run(["bank", "create", "main\n", "--data-dir", str(data)])
    assert code == 2
    assert capsys.readouterr().err.startswith("error: invalid_argument:")
    assert not [p for p in data.iterdir() if "\n" in p.name]


WRONG_TYPES: list[object] = [5, 1.5, float("nan"), [1], {"a": 1}, object(), b"x", True]
NOT_FUZZED = {
    "subscribe",  # takes a callback: test_events
    "close",
    "reload",
    "doctor",
    "now",
    "purge_trash",
    "trash_dir",
    "prune_session_state",
}
SENSIBLE = {
    "id": "known",
    "text": "a fact",
    "query": "fact",
    "name": "main",
    "owner": "owner",
    "key": "key",
    "session_id": "s1",
    "superseded_by": "other",
    "content": "rule text",
    "config": {},
}


def _public_param(name: str) -> bool:
    # Ray's tracing adds ``_ray_trace_ctx`` to the signatures once a session cluster is up
    return name != "self" and not name.startswith("_")


def _call_with(store: MemoryStore, method: str, wrong: str, value: object) -> None:
    params = [
        p
        for p in inspect.signature(getattr(MemoryStore, method)).parameters.values()
        if _public_param(p.name) and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]
    args: list[object] = []
    kw: dict[str, object] = {}
    for p in params:
        if p.name == wrong:
            val = value
        elif p.name in SENSIBLE:
            val = SENSIBLE[p.name]
        else:
            val = None if p.default is inspect.Parameter.empty else p.default
        if p.kind == p.KEYWORD_ONLY:
            kw[p.name] = val
        else:
            args.append(val)
    getattr(store, method)(*args, **kw)


PUBLIC = sorted(
    name
    for name, fn in inspect.getmembers(MemoryStore, inspect.isfunction)
    if not name.startswith("_") and name not in NOT_FUZZED
)


@pytest.mark.parametrize("method", PUBLIC)
def test_every_public_argument_of_the_wrong_type_is_a_typed_error(
    tmp_path: Path, method: str
) -> None:
    """Each parameter of each public method, given each wrong type in turn: the call works
    (a bool where any truthy value will do) or raises the tree's error, never another."""
    store = MemoryStore(tmp_path / "data")
    try:
        store.save("a fact", id="known")
        store.save("another fact", id="other")
        params = [
            p
            for p in inspect.signature(getattr(MemoryStore, method)).parameters
            if _public_param(p)
        ]
        calls = 0
        for wrong in params:
            for value in WRONG_TYPES:
                calls += 1
                try:
                    _call_with(store, method, wrong, value)
                except MemoryServiceError:
                    pass
        assert calls == len(params) * len(WRONG_TYPES)
    finally:
        store.close()
