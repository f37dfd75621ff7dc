"""Property tests of the storage format (hypothesis): every record survives write → replay.

Odd Unicode (line and paragraph separators, NEL, NUL, BOM, RTL overrides, combining marks,
astral emoji, CJK), embedded newlines and huge texts: store → reopen → equal.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.contract.clock import FakeClock
from shared.contract.config import StoreSettings
from shared.contract.models import Memory, Provenance
from store_worker.core import MemoryStore

ODD = "\n\r\t\x00\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\ufeff\u200b\u200d\u202e\u0301\u0308"
ODD += '\U0001f600\U0001f9d1\u200d\U0001f4bb東京대한민국עבריתالعربية"\\{}[]:,'

# Every code point but lone surrogates (which have no UTF-8 form and are refused on input).
chars = st.one_of(
    st.characters(blacklist_categories=("Cs",)),
    st.sampled_from(ODD),
)
texts = st.text(alphabet=chars, min_size=1, max_size=300).filter(lambda s: bool(s.strip()))
labels = st.lists(st.text(alphabet=chars, min_size=1, max_size=30), max_size=8)

SLOW = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _log_lines(root: Path, bank: str = "main") -> list[bytes]:
    # The store frames records by b"\n" only; str.splitlines() would also split on U+2028.
    raw = (root / bank / "memories.jsonl").read_bytes()
    assert raw.endswith(b"\n")
    return [line for line in raw.split(b"\n") if line]


memories = st.builds(
    Memory,
    id=st.from_regex(r"[a-z0-9][a-z0-9-]{0,79}", fullmatch=True),
    fingerprint=st.from_regex(r"fp[0-9a-f]{16}", fullmatch=True),
    type=st.sampled_from(["user", "feedback", "project", "reference"]),
    scope=st.sampled_from(["session", "project", "global"]),
    project=st.none() | texts,
    session_id=st.none() | texts,
    title=st.text(alphabet=chars, max_size=50),
    text=texts,
    tags=st.lists(texts, max_size=8).map(tuple),
    entities=st.lists(texts, max_size=8).map(tuple),
    links=st.lists(st.from_regex(r"[a-z0-9]{1,10}", fullmatch=True), max_size=3).map(tuple),
    pinned=st.booleans(),
    status=st.sampled_from(["canonical", "pending"]),
    confidence=st.sampled_from(["stated", "extracted", "inferred"]),
    corroboration=st.integers(0, 10**6),
    provenance=st.builds(
        Provenance,
        source_session_id=st.none() | texts,
        source_turn_id=st.none() | st.from_regex(r"[0-9A-HJKMNP-TV-Z]{26}", fullmatch=True),
        recorded_by=st.none() | texts,
    ),
    created_at=st.integers(0, 2**53),
    updated_at=st.integers(0, 2**53),
    stated_at=st.integers(0, 2**53),
    occurred_at=st.none() | st.integers(0, 2**53),
    revision=st.integers(0, 2**31),
    invalid_at=st.none() | st.integers(0, 2**53),
    superseded_by=st.none() | st.from_regex(r"[a-z0-9]{1,20}", fullmatch=True),
    tokens=st.integers(0, 10**6),
)


@given(memories)
@settings(max_examples=200, deadline=None)
def test_a_record_is_one_line_and_round_trips(mem: Memory) -> None:
    line = mem.to_line()
    assert "\n" not in line and "\r" not in line
    json.loads(line)  # plain JSON, readable by any tool
    assert Memory.from_line(line) == mem
    assert Memory.from_line(line.encode("utf-8")) == mem


@given(
    items=st.lists(
        st.tuples(texts, st.text(alphabet=chars, max_size=60), labels, labels, st.booleans()),
        min_size=1,
        max_size=6,
    )
)
@SLOW
def test_saved_records_survive_reopen(
    items: list[tuple[str, str, list[str], list[str], bool]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        store = MemoryStore(root, clock=FakeClock())
        saved: dict[str, Memory] = {}
        for text, title, tags, entities, pinned in items:
            res = store.save(text, title=title, tags=tags, entities=entities, pinned=pinned)
            saved[res.memory.id] = res.memory
            assert store.get(res.memory.id).memory == res.memory
        store.close()
        # one line per acknowledged write, whatever the text held
        assert len(_log_lines(root)) == len(items)
        again = MemoryStore(root, clock=FakeClock())
        for mem_id, mem in saved.items():
            assert again.get(mem_id).memory == mem
        assert again.banks["main"].stats.corrupt == 0
        assert again.banks["main"].stats.torn == 0
        again.close()


@given(first=texts, second=texts, tags=labels)
@SLOW
def test_revisions_survive_reopen(first: str, second: str, tags: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        store = MemoryStore(root, clock=FakeClock())
        m = store.save(first).memory
        store.update(m.id, text=second, tags=tags)
        store.pin(m.id)
        other = store.save(first + " (other)").memory
        store.supersede(other.id, m.id, reinforce=True)
        final = store.get(m.id).memory
        retired = store.get(other.id).memory
        store.close()
        again = MemoryStore(root, clock=FakeClock())
        assert again.get(m.id).memory == final
        assert again.get(other.id).memory == retired
        again.close()


def test_huge_text_with_newlines_round_trips(tmp_path: Path) -> None:
    settings_ = StoreSettings(data_dir=str(tmp_path / "data"), max_text_chars=1_000_000)
    store = MemoryStore(settings=settings_, clock=FakeClock())
    body = ("line of text ünïcødé 東京 \U0001f600\n" * 8_000) + "end"
    assert len(body) > 200_000  # 12x the default limit; 1 MB costs ~10 s in save (entities, redact)
    m = store.save(body, title="huge").memory
    store.close()
    assert len(_log_lines(tmp_path / "data")) == 1
    again = MemoryStore(settings=settings_, clock=FakeClock())
    got = again.get(m.id).memory
    assert got == m and got.text == body
    assert again.recall("ünïcødé").memories[0].memory.id == m.id
    again.close()


@given(text=texts)
@settings(max_examples=40, deadline=None)
def test_bank_meta_and_rules_round_trip_odd_unicode(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = MemoryStore(Path(tmp) / "data", clock=FakeClock())
        store.bank_create("odd", text)
        store.rule_set("odd-rule", text, bank="odd")
        desc = store.bank_list().banks[1].description
        rule = store.rule_list(bank="odd").rules[0].content
        store.close()
        again = MemoryStore(Path(tmp) / "data", clock=FakeClock())
        assert [b.description for b in again.bank_list().banks if b.name == "odd"] == [desc]
        assert again.rule_list(bank="odd").rules[0].content == rule
        again.close()
