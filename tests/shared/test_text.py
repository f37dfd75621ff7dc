"""shared/text/__init__.py: normalisation, fingerprints, slugs, links and recall tokens."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared.contract.config import NAME_RE
from shared.text import (
    SLUG_RE,
    entity_norm,
    fingerprint,
    fnv1a64,
    normalize,
    parse_links,
    query_tokens,
    slugify,
    tokenize,
    words,
)

# -- normalize / fingerprint -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Hello World", "hello world"),
        ("  Hello\n\t  WORLD!!. ", "hello world"),
        ("ﬁne", "fine"),  # NFKC folds the ligature
        ("Straße", "strasse"),  # casefold, not lower
        ("done…", "done"),
        ("完成。", "完成"),
        ("a, b, c", "a, b, c"),  # only trailing punctuation goes
    ],
)
def test_normalize(raw: str, expected: str) -> None:
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    ("data", "digest"),
    [
        # Published FNV-1a 64 test vectors (isthe.com/chongo/tech/comp/fnv).
        (b"", 0xCBF29CE484222325),
        (b"a", 0xAF63DC4C8601EC8C),
        (b"foobar", 0x85944171F73967E8),
    ],
)
def test_fnv1a64_known_vectors(data: bytes, digest: int) -> None:
    assert fnv1a64(data) == digest


def test_fingerprint_shape_and_equivalence() -> None:
    fp = fingerprint("The user prefers tabs.")
    assert re.fullmatch(r"fp[0-9a-f]{16}", fp)
    assert fp == fingerprint("the   USER prefers\ntabs")
    assert fp == f"fp{fnv1a64(b'the user prefers tabs'):016x}"
    assert fp != fingerprint("the user prefers spaces")


@given(st.text())
def test_fingerprint_hash_equals_the_python_reference(text: str) -> None:
    # fingerprints are stored: the C hash must give exactly the reference's values
    assert fingerprint(text) == f"fp{fnv1a64(normalize(text).encode('utf-8')):016x}"


@given(st.text())
def test_fingerprint_is_stable_under_normalisation(text: str) -> None:
    assert fingerprint(text) == fingerprint(normalize(text))
    assert re.fullmatch(r"fp[0-9a-f]{16}", fingerprint(text))


# -- slugify / links ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "slug"),
    [
        ("The user prefers Café au lait!", "user-prefers-cafe-au-lait"),
        ("!!!", "memory"),
        ("", "memory"),
        ("東京", "dong-jing"),  # other scripts are transliterated, ideographs one apiece
        ("Пользователь любит чай", "polzovatel-lyubit-chay"),  # apostrophes split no word
        ("Ελληνικά κείμενα", "ellinika-keimena"),
        ("사용자는 차를 좋아한다", "sayongjaneun-chaleul-johahanda"),  # hangul has spaces
        ("Die Straße", "die-strasse"),
        ("🎉 launch day", "tada-launch-day"),
        ("\u200b\u200d", "memory"),  # nothing that reads as a letter
        ("the of and", "the-of-and"),  # only stopwords: keep them rather than nothing
        ("one two three four five six seven eight", "one-two-three-four-five-six"),
    ],
)
def test_slugify(text: str, slug: str) -> None:
    assert slugify(text) == slug


@given(st.text())
def test_slugify_always_yields_a_valid_id(text: str) -> None:
    slug = slugify(text)
    assert SLUG_RE.match(slug)
    assert len(slug) <= 48


def test_parse_links_in_order_unique_and_slugged() -> None:
    text = "see [[foo-bar]], then [[Deploy Notes]] and [[foo-bar]] again; not [[]] or [x]"
    assert parse_links(text) == ["foo-bar", "deploy-notes"]
    assert parse_links("no links here") == []
    assert parse_links("[[dangling-target]]") == ["dangling-target"]


# -- tokens -----------------------------------------------------------------------------------


def test_words_are_casefolded_letter_digit_runs() -> None:
    assert words("ÅNGSTRÖM x_y 42abc, it's") == ["ångström", "x", "y", "42abc", "it", "s"]


def test_tokenize_stems_latin_and_splits_cjk() -> None:
    toks = tokenize("The user publishes 東京大学 posts")
    assert toks[:3] == ["the", "user", "publish"]
    assert ["東", "京", "大", "学"] == toks[3:7]
    assert {"東京", "京大", "大学"} <= set(toks)
    assert "post" in toks
    assert tokenize("Publishing") == tokenize("published") == ["publish"]


def test_query_tokens_drop_stopwords_and_map_first_person() -> None:
    assert query_tokens("what is the deploy command") == ["deploy", "command"]
    assert "user" in query_tokens("what editor do I use")
    assert "user" in query_tokens("my favourite colour")
    assert "user" not in query_tokens("favourite colour")
    # a query made only of stopwords still yields tokens
    assert query_tokens("the of and") == ["the", "of", "and"]
    assert query_tokens("") == []


def test_entity_norm() -> None:
    assert entity_norm("  Foo  Bar ") == "foo-bar"
    assert entity_norm("ＡＢＣ") == "abc"
    assert len(entity_norm("x" * 200)) == 64


def test_name_and_slug_patterns() -> None:
    assert NAME_RE.match("main") and NAME_RE.match("a_b-9") and NAME_RE.match("x" * 64)
    for bad in ("", "-x", "_x", "Bad", "../evil", "x" * 65, "a b"):
        assert not NAME_RE.match(bad)
    assert SLUG_RE.match("a" * 80) and not SLUG_RE.match("a" * 81)
    assert not SLUG_RE.match("a_b")
