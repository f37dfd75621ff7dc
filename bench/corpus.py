"""Deterministic synthetic memories of realistic length for the benchmarks.

Records are 10-40 words drawn from an English-ish vocabulary with a Zipfian (s = 1.07)
distribution — a few hundred real high-frequency English words at the top ranks (so the
stopword and first-person paths run), then pronounceable pseudo-words generated from
syllables, ~30k types in all. About half the records carry 1-3 entities and 1-3 tags from
fixed pools, a few are pinned, corroborated, project-typed or session-scoped, and ~2 % of the
lines are later revisions (tombstones) of earlier ids, so replay's last-wins path runs too.

``write_jsonl`` writes ``memories.jsonl`` lines directly, in the exact shape of
``Memory.to_line`` (compact JSON, defaults omitted), which is ~100× faster than a million
``save`` calls. Fingerprints there are a stand-in hash (unique per record), not FNV-1a over the
normalised text: replay never recomputes them, and a bench needs no reinforcement matches.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from shared.text import STOPWORDS

SEED = 20_261_130
VOCAB_SIZE = 30_000
ZIPF_S = 1.07
DAY_MS = 86_400_000
NOW_MS = 1_767_225_600_000  # 2026-01-01, the FakeClock default

_COMMON = """the user prefers to use a and of in for is on that with it as by be this at from
project code test file data run build deploy server client api service team review write read
likes always never should uses python rust go typescript docker kubernetes ray model memory
agent session config key value error log bug fix release version branch merge commit repo
database query index cache store save recall search rank score token budget prompt turn tool
call function class method module package library framework style format lint type check
meeting friday monday weekly daily morning evening deadline plan goal task issue ticket note
blog post article draft publish edit email slack channel message reply thread doc page wiki
prefer tabs spaces editor vim emacs vscode terminal shell bash zsh script cron job queue
worker actor cluster node gpu cpu disk network latency throughput benchmark profile trace
customer product feature design ui ux dashboard chart report metric alert incident oncall
coffee tea lunch travel flight hotel city berlin paris london tokyo home office remote""".split()

_ONSETS = (
    "b c d f g h j k l m n p r s t v w z br cr dr fr gr pr tr st sp sk pl cl bl sl ch sh th".split()
)
_VOWELS = "a e i o u ai ea ou io ee oo".split()
_CODAS = ["", "", "", "n", "r", "s", "t", "l", "m", "nd", "st", "rk", "ng", "x"]

_FIRST_PERSON = ("i", "my", "me")
TYPES = ("user", "feedback", "project", "reference")
_LEADS = ("what does", "my", "how do i", "the")


def _pseudo_words(rng: np.random.Generator, n: int, taken: set[str]) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        draws = 2 * (n - len(out)) + 64  # syllable parts drawn in bulk; duplicates dropped
        sizes = rng.integers(1, 4, draws)
        parts = zip(
            rng.integers(len(_ONSETS), size=(draws, 3)).tolist(),
            rng.integers(len(_VOWELS), size=(draws, 3)).tolist(),
            rng.integers(len(_CODAS), size=(draws, 3)).tolist(),
            strict=True,
        )
        for size, (ons, vows, cods) in zip(sizes.tolist(), parts, strict=True):
            word = "".join(
                _ONSETS[ons[k]] + _VOWELS[vows[k]] + _CODAS[cods[k]] for k in range(size)
            )
            if word not in taken and len(out) < n:
                taken.add(word)
                out.append(word)
    return out


@dataclass(frozen=True)
class Vocabulary:
    words: tuple[str, ...]
    cdf: np.ndarray  # cumulative Zipf probabilities by rank
    entities: tuple[str, ...]
    tags: tuple[str, ...]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        ranks = np.searchsorted(self.cdf, rng.random(n), side="right")
        return np.minimum(ranks, len(self.words) - 1)


@lru_cache(maxsize=4)
def vocabulary(seed: int = SEED) -> Vocabulary:
    rng = np.random.default_rng(seed)
    common = list(dict.fromkeys(_COMMON))
    words = common + _pseudo_words(rng, VOCAB_SIZE - len(common), set(common))
    weights = 1.0 / np.arange(1, len(words) + 1, dtype=np.float64) ** ZIPF_S
    cdf = np.cumsum(weights / weights.sum())
    handles = _pseudo_words(rng, 2_000, set(words))
    entities = tuple(
        h if i % 3 else f"{h}-{words[int(rng.integers(200, 2_000))]}" for i, h in enumerate(handles)
    )
    tags = tuple(common[i] for i in range(40, 100))
    return Vocabulary(tuple(words), cdf, entities, tags)


CHUNK = 8_192


def _chunk(
    rng: np.random.Generator, vocab: Vocabulary, first: int, n: int
) -> list[dict[str, object]]:
    """``n`` records starting at id ``first``; every random draw is made in bulk (numpy)."""
    lengths = rng.integers(10, 41, n)
    ranks = vocab.sample(rng, int(lengths.sum()))
    ends = np.cumsum(lengths)
    kinds = np.searchsorted(np.cumsum([0.55, 0.15, 0.2, 0.1]), rng.random(n), side="right")
    scope_roll = rng.random(n)
    owner = rng.integers(0, 50, n)
    first_person = rng.random(n) < 0.1
    fp_word = rng.integers(0, 3, n)
    labelled = rng.random(n) < 0.5
    n_labels = rng.integers(1, 4, n)
    tag_draw = rng.integers(0, len(vocab.tags), (n, 3))
    ent_draw = (rng.zipf(1.3, (n, 3)) - 1) % len(vocab.entities)
    pinned = rng.random(n) < 0.02
    corroborated = np.where(rng.random(n) < 0.1, rng.integers(1, 5, n), 0)
    created = NOW_MS - rng.integers(0, 365 * DAY_MS, n)
    words = vocab.words
    out: list[dict[str, object]] = []
    for j in range(n):
        i = first + j
        text_words = [words[r] for r in ranks[ends[j] - lengths[j] : ends[j]]]
        if first_person[j]:
            text_words.insert(0, _FIRST_PERSON[fp_word[j]])
        text = " ".join(text_words).capitalize() + "."
        rec: dict[str, object] = {
            "id": f"m{i:07d}",
            "fingerprint": "fp" + hashlib.blake2b(str(i).encode(), digest_size=8).hexdigest(),
        }
        if kinds[j]:
            rec["type"] = TYPES[kinds[j]]
        if scope_roll[j] < 0.05:
            rec["scope"] = "project"
            rec["project"] = f"/home/dev/proj{owner[j] % 5}"
        elif scope_roll[j] < 0.07:
            rec["scope"] = "session"
            rec["session_id"] = f"s{owner[j]}"
        rec["text"] = text
        if labelled[j]:
            k = n_labels[j]
            rec["tags"] = sorted({vocab.tags[t] for t in tag_draw[j, :k]})
            rec["entities"] = sorted({vocab.entities[e] for e in ent_draw[j, :k]})
        if pinned[j]:
            rec["pinned"] = True
        if corroborated[j]:
            rec["corroboration"] = int(corroborated[j])
        at = int(created[j])
        rec["provenance"] = {"recorded_by": "bench"}
        rec["created_at"] = at
        rec["updated_at"] = at
        rec["stated_at"] = at
        rec["tokens"] = (len(text) + 3) // 4
        out.append(rec)
    return out


def records(
    n: int, *, seed: int = SEED, vocab: Vocabulary | None = None
) -> Iterator[dict[str, object]]:
    """``n`` record dicts (ids m0000000 …), deterministic for a seed."""
    vocab = vocab or vocabulary(seed)
    rng = np.random.default_rng(seed + 1)
    for first in range(0, n, CHUNK):
        yield from _chunk(rng, vocab, first, min(CHUNK, n - first))


def _line(rec: dict[str, object]) -> str:
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":"))


def write_jsonl(path: Path, n: int, *, seed: int = SEED, retire_every: int = 50) -> int:
    """Write ``n`` records as a ``memories.jsonl``, plus, after every ``retire_every``-th
    record, a tombstone revision of a record written 25 records earlier (so replay's last-wins
    path runs); returns the number of lines written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = 0
    recent: list[dict[str, object]] = []
    with open(path, "w", encoding="utf-8") as fh:
        buf: list[str] = []
        for i, rec in enumerate(records(n, seed=seed)):
            buf.append(_line(rec))
            recent.append(rec)
            if len(recent) > 25:
                old = recent.pop(0)
                if retire_every and i % retire_every == 0 and not old.get("pinned"):
                    buf.append(_line(_tombstone(old, i)))
            if len(buf) >= 10_000:
                lines += len(buf)
                fh.write("\n".join(buf) + "\n")
                buf.clear()
        lines += len(buf)
        if buf:
            fh.write("\n".join(buf) + "\n")
    return lines


def _tombstone(rec: dict[str, object], i: int) -> dict[str, object]:
    out = dict(rec)
    out["revision"] = 1
    out["invalid_at"] = NOW_MS - i
    out["updated_at"] = NOW_MS - i
    return out


@dataclass(frozen=True)
class Query:
    text: str
    source: int  # the record the query was drawn from


def queries(recs: Sequence[dict[str, object]], count: int, *, seed: int = SEED) -> list[Query]:
    """Realistic recall queries drawn from ``recs``: 2-4 words of one record (content words
    preferred, as a person would type them), sometimes an entity of it, sometimes a leading
    question phrase ("what does", "my", ...) that the stopword and first-person paths see."""
    rng = np.random.default_rng(seed + 2)
    out: list[Query] = []
    for src in rng.integers(0, len(recs), count):
        rec = recs[int(src)]
        ws = str(rec["text"]).rstrip(".").lower().split()
        content = [w for w in ws if w not in STOPWORDS] or ws
        k = min(len(content), int(rng.integers(2, 5)))
        picked = [content[int(j)] for j in sorted(rng.choice(len(content), size=k, replace=False))]
        entities = rec.get("entities")
        if isinstance(entities, list) and entities and rng.random() < 0.3:
            picked.append(str(entities[0]))
        if rng.random() < 0.2:
            picked.insert(0, _LEADS[int(rng.integers(len(_LEADS)))])
        out.append(Query(" ".join(picked), int(src)))
    return out
