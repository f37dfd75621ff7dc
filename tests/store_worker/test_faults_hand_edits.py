"""Fault suite: a hand edit of any file the store reads never stops it from opening.

For each kind of file (bank.yaml, memories.jsonl lines, rules, drafts, sibling state, outbox
jobs, the index snapshot, bank folders) and many bad values: the store opens, every other
record and bank works, the bad one is skipped or gets a safe default, and doctor's
``files_readable`` names the file (and the line) until it is fixed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from shared.contract.clock import FakeClock
from shared.contract.errors import ConflictError, SourceUnavailableError
from shared.contract.models import Memory
from store_worker.core import MemoryStore
from store_worker.recall.embed import FakeEmbedder

BAD_META = {
    "created_at_word": b"description: d\ncreated_at: abc\n",
    "created_at_inf": b"description: d\ncreated_at: .inf\n",
    "created_at_list": b"description: d\ncreated_at: [1, 2]\n",
    "created_at_1e400": b"description: d\ncreated_at: 1.0e+400\n",
    "created_at_bare_1e400": b"description: d\ncreated_at: 1e400\n",
    "created_at_huge_int": b"description: d\ncreated_at: " + b"9" * 400 + b"\n",
    "created_at_negative": b"description: d\ncreated_at: -5\n",
    "created_at_bool": b"description: d\ncreated_at: true\n",
    "description_list": b"description: [1, 2]\ncreated_at: 5\n",
    "garbage_yaml": b"description: [unclosed\ncreated_at: : :\n",
    "python_tag": b"!!python/object/apply:os.system ['true']\n",
    "bad_utf8": b"description: \xff\xfe caf\xe9\ncreated_at: 5\n",
    "a_list": b"- 1\n- 2\n",
    "deep": b"description: " + b"[" * 5000 + b"\n",
}


def problems(store: MemoryStore, *, unread_rule: bool = False) -> str:
    """files_readable's detail; doctor is ok, but for ``rules_readable`` when a rule file
    cannot be read (a rule missing from the prompt fails doctor)."""
    report = store.doctor()
    check = next(c for c in report.checks if c.name == "files_readable")
    by_name = {c.name: c for c in report.checks}
    failing = {c.name for c in report.checks if c.required and not c.ok}
    assert failing == ({"rules_readable"} if unread_rule else set()), report.checks
    assert report.ok is not unread_rule
    assert by_name["index_consistent"].ok, by_name["index_consistent"].detail
    return "" if check.ok else check.detail


@pytest.fixture
def made(data_dir: Path, clock: FakeClock) -> Path:
    """A data dir with two banks, a memory in each, and a rule."""
    store = MemoryStore(data_dir, clock=clock)
    store.save("the main bank keeps this", id="kept")
    store.save("the work bank keeps this", bank="work", id="work-kept")
    store.rule_set("style", "spaces", bank="work")
    store.close()
    return data_dir


def reopen(data_dir: Path, clock: FakeClock) -> MemoryStore:
    return MemoryStore(data_dir, clock=clock)


@pytest.mark.parametrize("case", list(BAD_META))
def test_a_bad_bank_yaml_gets_defaults_and_is_reported(
    made: Path, clock: FakeClock, case: str
) -> None:
    # Given a hand-edited bank.yaml
    meta = made / "work" / "bank.yaml"
    meta.write_bytes(BAD_META[case])
    # When the store opens, Then every bank works and the bad value got its default
    store = reopen(made, clock)
    try:
        info = {b.name: b for b in store.bank_list().banks}
        assert info["work"].memories == 1 and store.get("work-kept", bank="work")
        assert store.rule_get("style", bank="work").content == "spaces"
        assert isinstance(info["work"].created_at, int) and 0 <= info["work"].created_at
        assert isinstance(info["work"].description, str)
        assert store.get("kept").memory.text == "the main bank keeps this"
        store.save("a new write still lands", bank="work")
        # and doctor names the file until it is fixed
        assert str(meta) in problems(store)
        store.bank_create("work", "fixed by a describe")  # rewrites bank.yaml whole
        assert problems(store) == ""
    finally:
        store.close()


def _line(**changes: object) -> bytes:
    base = {
        "id": "hand-made",
        "fingerprint": "f",
        "text": "a hand made record",
        "created_at": 1,
        "updated_at": 1,
        "stated_at": 1,
    }
    return json.dumps({**base, **changes}).encode()


BAD_LINES = {
    "huge_created_at": _line(created_at=10**400),
    "huge_revision": _line(revision=10**300),
    "huge_tokens": _line(tokens=-(10**30)),
    "float_inf": _line().replace(b'"created_at": 1', b'"created_at": 1e400'),
    "nan": _line().replace(b'"stated_at": 1', b'"stated_at": NaN'),
    "id_with_newline": _line(id="main\n"),
    "id_traversal": _line(id="../../x"),
    "id_upper": _line(id="Hand-Made"),
    "a_list": b"[1, 2, 3]",
    "a_string": b'"just text"',
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "bad_utf8": b'{"id": "x\xff\xfe", "text": "t"}',
    "nul_run": b"\0" * 64,
    "missing_fields": b'{"id": "only-an-id"}',
    "wrong_type": _line(tags=5),
}


@pytest.mark.parametrize("case", list(BAD_LINES))
def test_a_bad_log_line_is_skipped_and_reported_with_its_number(
    made: Path, clock: FakeClock, case: str
) -> None:
    # Given a bad line between two good ones
    log = made / "main" / "memories.jsonl"
    good = log.read_bytes()
    log.write_bytes(good + BAD_LINES[case] + b"\n" + good)
    bad_no = good.count(b"\n") + 1
    # When the store opens, Then the good records are all there and the index agrees
    store = reopen(made, clock)
    try:
        assert store.get("kept").memory.text == "the main bank keeps this"
        assert "hand-made" not in store.banks["main"].records
        assert {m.id for m in store.list().memories} == {"kept"}
        saved = store.save("a write after the bad line")
        assert store.get(saved.memory.id)
        # and doctor names the file and the line
        assert f"{log}:{bad_no}:" in problems(store)
    finally:
        store.close()


def test_a_bad_line_is_reported_until_it_is_removed(made: Path, clock: FakeClock) -> None:
    # Given a reported bad line
    log = made / "main" / "memories.jsonl"
    good = log.read_bytes()
    log.write_bytes(good + BAD_LINES["huge_created_at"] + b"\n")
    store = reopen(made, clock)
    assert "memories.jsonl:2:" in problems(store)
    assert "created_at is out of range" in problems(store)
    # When it is removed by hand and the store reloads, Then doctor is clean
    log.write_bytes(good)
    store.reload()
    assert problems(store) == ""
    store.close()


@pytest.mark.parametrize(
    ("name", "content"),
    [("bad-utf8", b"caf\xe9 au lait"), ("Bad Name", b"fine text"), ("nul", b"\xff" * 10)],
)
def test_an_unreadable_rule_is_skipped_and_reported(
    made: Path, clock: FakeClock, name: str, content: bytes
) -> None:
    path = made / "work" / "rules" / f"{name}.md"
    path.write_bytes(content)
    store = reopen(made, clock)
    try:
        names = [r.name for r in store.rule_list(bank="work").rules]
        assert names == ["style"]
        assert str(path) in problems(store, unread_rule=name != "Bad Name")
        path.unlink()
        store.reload()
        assert problems(store) == ""
    finally:
        store.close()


def test_a_rule_that_could_not_be_read_is_never_replaced_unseen(
    made: Path, clock: FakeClock
) -> None:
    # Given a learned rule with garbage appended by hand: skipped at load, as it should be
    store = reopen(made, clock)
    store.rule_set("learned", "- always use tabs\n- deploy on fridays\n", bank="work")
    store.close()
    path = made / "work" / "rules" / "learned.md"
    path.write_bytes(path.read_bytes() + b"\xff garbage\n")
    store = reopen(made, clock)
    try:
        assert "learned" not in [r.name for r in store.rule_list(bank="work").rules]
        # When a writer extends it from what it read (the extractor: nothing), Then it is
        # refused and the file keeps every line (it was replaced by the new line alone)
        with pytest.raises(ConflictError, match="not UTF-8"):
            store.rule_set("learned", "- a new rule\n", bank="work")
        assert b"deploy on fridays" in path.read_bytes()
        # When the file is fixed by hand, Then the next write is refused once, retryably,
        # and RAM shows the rule, so the writer's next read sees every line
        path.write_bytes(b"- always use tabs\n- deploy on fridays\n")
        with pytest.raises(SourceUnavailableError) as caught:
            store.rule_set("learned", "- a new rule\n", bank="work")
        assert caught.value.retryable
        assert "deploy on fridays" in store.rule_get("learned", bank="work").content
        # And removing a rule, or setting one that was read, is never refused
        store.rule_set("learned", "- deploy on fridays\n- a new rule\n", bank="work")
        assert path.read_bytes() == b"- deploy on fridays\n- a new rule\n"
    finally:
        store.close()


@pytest.mark.parametrize(
    "content",
    [b"\xff\xfe", b"not json", b"[" * 100_000, b'{"a": ' + b"9" * 5000 + b"}"],
    ids=["bad_utf8", "not_json", "deep", "huge_number"],
)
def test_an_unreadable_state_file_reads_as_absent_and_is_reported(
    made: Path, clock: FakeClock, content: bytes
) -> None:
    store = reopen(made, clock)
    store.state_set("sibling", "cursor", {"n": 1})
    store.link_session("child", "parent")
    store.close()
    for path in (
        made / ".state" / "sibling" / "cursor.json",
        made / ".state" / "store" / "session-parents.json",
    ):
        path.write_bytes(content)
    store = reopen(made, clock)
    try:
        assert store.state_get("sibling", "cursor") is None
        assert store.sessions.parents == {}
        found = problems(store)
        assert "cursor.json" in found and "session-parents.json" in found
        store.state_set("sibling", "cursor", {"n": 2})  # the owner writes it afresh
        store.link_session("child", "parent")
        assert problems(store) == ""
    finally:
        store.close()


@pytest.mark.parametrize(
    "content",
    [b"garbage", b"\xff", _line(id="draft-x", status="pending", created_at=10**400)],
    ids=["garbage", "bad_utf8", "huge_number"],
)
def test_an_unreadable_draft_is_skipped_and_reported(
    made: Path, clock: FakeClock, content: bytes
) -> None:
    drafts = made / "work" / "drafts"
    drafts.mkdir()
    (drafts / "draft-x.json").write_bytes(content)
    store = reopen(made, clock)
    try:
        assert "draft-x" not in store.banks["work"].records
        assert "draft-x.json" in problems(store)
    finally:
        store.close()


def test_an_unreadable_outbox_job_is_set_aside_and_reported(made: Path, clock: FakeClock) -> None:
    queue = made / ".outbox" / "queue"
    queue.mkdir(parents=True, exist_ok=True)
    (queue / "01J000000000000000000000.json").write_bytes(b"\xff not a job")
    store = reopen(made, clock)
    try:
        assert store.outbox_list().queued == 0
        assert ".bad" in problems(store)
    finally:
        store.close()


def test_a_torn_sidecar_is_reported_after_any_number_of_reopens(
    made: Path, clock: FakeClock
) -> None:
    # Given a torn tail, cut aside at the first open
    log = made / "main" / "memories.jsonl"
    log.write_bytes(log.read_bytes() + b'{"id": "half-writ')
    for _ in range(3):  # When the store reopens again and again
        store = reopen(made, clock)
        # Then doctor still names the sidecar
        assert "memories.jsonl.torn" in problems(store)
        store.close()
    # until it is read and deleted
    (made / "main" / "memories.jsonl.torn").unlink()
    store = reopen(made, clock)
    assert problems(store) == ""
    store.close()


def test_a_garbage_snapshot_is_ignored(made: Path, clock: FakeClock) -> None:
    (made / "main" / "index.snap").write_bytes(b"MEMSNAP" + b"\xff" * 100)
    store = reopen(made, clock)
    assert store.get("kept").memory.id == "kept"
    store.close()


@pytest.mark.parametrize("folder", ["Bad Bank", "main\n", "x" * 70])
def test_a_folder_with_a_name_no_call_could_reach_is_ignored_and_reported(
    made: Path, clock: FakeClock, folder: str
) -> None:
    (made / folder).mkdir()
    store = reopen(made, clock)
    try:
        assert folder not in store.banks
        assert "not a valid bank name" in problems(store)
    finally:
        store.close()


def test_every_problem_at_once_still_opens(
    made: Path, clock: FakeClock, dir_bytes: Callable[[Path], dict[str, bytes | None]]
) -> None:
    # Given one bad file of every kind
    (made / "work" / "bank.yaml").write_bytes(BAD_META["bad_utf8"])
    log = made / "main" / "memories.jsonl"
    log.write_bytes(log.read_bytes() + BAD_LINES["huge_created_at"] + b"\n")
    (made / "work" / "rules" / "bad.md").write_bytes(b"\xff")
    (made / ".state" / "sibling").mkdir(parents=True)
    (made / ".state" / "sibling" / "k.json").write_bytes(b"[" * 100_000)
    # When the store opens, Then each is listed, and the memories are all intact
    store = reopen(made, clock)
    try:
        found = problems(store, unread_rule=True)
        for needle in ("bank.yaml", "memories.jsonl:2:", "bad.md", "k.json"):
            assert needle in found
        assert {m.id for m in store.list(bank="work").memories} == {"work-kept"}
        # and doctor itself wrote nothing it leaves behind but its trashed scratch bank
        before = {k for k in dir_bytes(made) if not k.startswith(".trash")}
        store.doctor()
        assert {k for k in dir_bytes(made) if not k.startswith(".trash")} == before
    finally:
        store.close()


def test_replay_accepts_what_it_wrote(made: Path, clock: FakeClock) -> None:
    """The range check refuses only what no store writes: every saved record replays."""
    store = reopen(made, clock)
    mem = store.save("numbers at the edge", id="edge").memory
    store.close()
    line = Memory.model_validate_json(mem.to_line())
    assert line == mem
    again = reopen(made, clock)
    assert again.get("edge").memory == mem
    again.close()


@pytest.mark.parametrize("bad", ["1e400", "NaN", '"x"', "[]", "[[1]]"])
def test_a_bad_vector_line_is_embedded_again(data_dir: Path, clock: FakeClock, bad: str) -> None:
    # Given a vector sidecar whose line for a record was hand-edited
    embedder = FakeEmbedder()
    store = MemoryStore(data_dir, clock=clock, embedder=embedder)
    mem = store.save("galaxies and telescopes at night", id="astro").memory
    store.close()
    sidecar = data_dir / "main" / "vectors.jsonl"
    row = json.loads(sidecar.read_bytes().splitlines()[-1])
    line = json.dumps({**row, "v": None}).replace("null", bad)
    sidecar.write_bytes(line.encode() + b"\n")
    # When the store opens, Then the record gets a fresh, finite vector and recall works
    store = MemoryStore(data_dir, clock=clock, embedder=embedder)
    try:
        _, vec = store.banks["main"].vectors["astro"]
        assert len(vec) == embedder.dim and all(math.isfinite(x) for x in vec)
        hits = store.recall("telescopes", mode="semantic").memories
        assert [h.memory.id for h in hits] == [mem.id]
        assert all(math.isfinite(h.score) for h in hits)
    finally:
        store.close()


def test_a_bank_that_cannot_be_read_leaves_the_others_serving(
    made: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An I/O error reading one bank (a bad sector under its log) at boot: the store opens,
    the other banks serve, every call naming that bank is refused typed and writes nothing,
    and once the files read again the bank is back whole."""
    import errno

    from shared.contract.errors import SourceUnavailableError
    from store_worker.storage.bank import Bank

    real_load = Bank.load
    failing = {"work"}

    def load(self: Bank) -> None:
        if self.name in failing:
            raise OSError(errno.EIO, "Input/output error")
        real_load(self)

    monkeypatch.setattr(Bank, "load", load)
    before = {p: p.read_bytes() for p in (made / "work").rglob("*") if p.is_file()}
    store = reopen(made, clock)
    try:
        assert store.get("kept").memory.text == "the main bank keeps this"
        store.save("main still takes writes")
        for call in (
            lambda: store.get("work-kept", bank="work"),
            lambda: store.save("lost if written over", bank="work"),
            lambda: store.rule_list(bank="work"),
            lambda: store.recall("keeps", bank="work"),
        ):
            with pytest.raises(SourceUnavailableError):
                call()
        assert {p: p.read_bytes() for p in (made / "work").rglob("*") if p.is_file()} == before
        failing.clear()  # the disk reads again
        assert store.get("work-kept", bank="work").memory.text == "the work bank keeps this"
        assert [r.name for r in store.rule_list(bank="work").rules] == ["style"]
    finally:
        store.close()
