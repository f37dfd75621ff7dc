"""Grouping: candidate pairs → safe transitive groups → a survivor per group.

The plan depends only on the set of memories and candidate pairs, never on their order: ids are
sorted, pairs are keyed ``(min id, max id)`` and every scorer and veto is symmetric.

Transitive but safe: pairs are merged strongest first (exact before near, then by score, then
by ids), and two clusters join only if *no* pair across them is vetoed, so "A ~ B ~ C" cannot
chain A into a group with a C it must never meet. After grouping, every member must still look
like the survivor (``is_duplicate`` at the looser ``grey_score``), which stops slow drift along
a chain of paraphrases.

Survivor (the record with the most standing wins): pinned > corroboration > newest
``stated_at`` > smallest id.

Paraphrases (judge tier only): a pair the store's semantic arm found close (cosine at or above
``judge_semantic_min``) that no group joined is listed for the judge whatever its lexical
scores and soft vetoes say. The vetoes and scorers read wording; two paraphrases ("has been
vegetarian since 2023" / "doesn't eat meat") share little wording, so a negation or a date on
one side only says nothing about them. Only the hard vetoes (type, scope, project, session)
still hold: those are places, not wording.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from consolidate_worker.dedup import Features, Scores, is_duplicate, score, veto
from consolidate_worker.report import Group, PairScore
from consolidate_worker.settings import ConsolidatorSettings

CONTRADICTION_VETOES = frozenset({"polarity", "numbers-or-dates"})
# Vetoes about where a memory lives, not how it is worded: nothing ever crosses them.
PLACE_VETOES = frozenset(
    {"different-type", "different-scope", "different-project", "different-session"}
)
EXACT = Scores(token_set=100.0, token_sort=100.0, ratio=100.0, length_ratio=1.0)
Pair = tuple[str, str]


def pair_key(a: str, b: str) -> Pair:
    """A pair of ids in one order, whichever way it was found."""
    return (a, b) if a < b else (b, a)


@dataclass(frozen=True)
class Edge:
    a: str
    b: str
    scores: Scores
    exact: bool
    cosine: float | None = None  # the semantic arm's similarity, when it proposed the pair


@dataclass
class BankPlan:
    """Groups of one bank plus what the judge tier may look at."""

    bank: str
    groups: list[Group] = field(default_factory=list)
    ambiguous: list[Edge] = field(default_factory=list)  # grey band, not grouped
    contradictions: list[Edge] = field(default_factory=list)  # similar but polarity/number veto
    paraphrases: list[Edge] = field(default_factory=list)  # semantically close, not grouped
    pairs_scored: int = 0
    vetoed: Counter[str] = field(default_factory=Counter)


def survivor_key(f: Features) -> tuple[int, int, int, str]:
    """Sort key whose minimum is the survivor."""
    m = f.memory
    return (0 if m.pinned else 1, -m.corroboration, -m.stated_at, m.id)


class _Pairs:
    """Scores and vetoes of pairs, each computed once and cached by the sorted pair."""

    def __init__(self, feats: Mapping[str, Features]) -> None:
        self.feats = feats
        self._veto: dict[Pair, str | None] = {}
        self._score: dict[Pair, Scores] = {}

    key = staticmethod(pair_key)

    def veto(self, a: str, b: str) -> str | None:
        k = self.key(a, b)
        if k not in self._veto:
            self._veto[k] = veto(self.feats[k[0]], self.feats[k[1]])
        return self._veto[k]

    def length_ratio(self, a: str, b: str) -> float:
        la, lb = len(self.feats[a].words), len(self.feats[b].words)
        return min(la, lb) / max(la, lb, 1)

    def score(self, a: str, b: str) -> Scores:
        k = self.key(a, b)
        if k not in self._score:
            fa, fb = self.feats[k[0]], self.feats[k[1]]
            self._score[k] = EXACT if fa.norm == fb.norm else score(fa, fb)
        return self._score[k]


class Planner:
    def __init__(self, settings: ConsolidatorSettings) -> None:
        self.settings = settings

    def plan(
        self,
        bank: str,
        memories: Iterable[Features],
        neighbours: Mapping[str, Iterable[str]],
        cosines: Mapping[Pair, float] | None = None,
    ) -> BankPlan:
        """Group ``memories`` using exact fingerprints plus the ``neighbours`` candidate lists;
        ``cosines`` (keyed by the sorted id pair) are the semantic arm's similarities."""
        feats = {f.id: f for f in sorted(memories, key=lambda f: f.id)}
        pairs = _Pairs(feats)
        out = BankPlan(bank=bank)
        edges = self._exact_edges(feats) + self._near_edges(feats, neighbours, pairs, out)
        edges.sort(key=lambda e: (not e.exact, -e.scores.combined, e.a, e.b))
        for members in self._cluster(edges, pairs):
            group = self._group(bank, [feats[i] for i in members], pairs)
            if group is not None:
                out.groups.append(group)
        out.groups.sort(key=lambda g: g.survivor)
        group_of = {m: g.survivor for g in out.groups for m in g.members}
        out.ambiguous = sorted(
            (e for e in out.ambiguous if group_of.get(e.a, e.a) != group_of.get(e.b, e.b)),
            key=lambda e: (e.a, e.b),
        )
        out.contradictions.sort(key=lambda e: (e.a, e.b))
        if self.settings.judge_enabled and cosines:
            out.paraphrases = self._paraphrases(feats, cosines, pairs, out, group_of)
        return out

    def _paraphrases(
        self,
        feats: Mapping[str, Features],
        cosines: Mapping[Pair, float],
        pairs: _Pairs,
        out: BankPlan,
        group_of: Mapping[str, str],
    ) -> list[Edge]:
        """Close pairs by meaning the deterministic tier left apart, closest first."""
        asked = {(e.a, e.b) for e in out.ambiguous + out.contradictions}
        found = []
        for (a, b), cos in cosines.items():
            k = pairs.key(a, b)
            if (
                cos < self.settings.judge_semantic_min
                or a == b
                or a not in feats
                or b not in feats
                or k in asked
                or group_of.get(a, a) == group_of.get(b, b)
                or pairs.veto(*k) in PLACE_VETOES
            ):
                continue
            found.append(Edge(k[0], k[1], pairs.score(*k), False, cosine=cos))
        return sorted(found, key=lambda e: (-(e.cosine or 0.0), e.a, e.b))

    @staticmethod
    def _exact_edges(feats: Mapping[str, Features]) -> list[Edge]:
        by_fp: dict[str, list[str]] = {}
        for f in feats.values():
            by_fp.setdefault(f.memory.fingerprint, []).append(f.id)
        edges = []
        for ids in by_fp.values():
            edges += [Edge(a, b, EXACT, True) for i, a in enumerate(ids) for b in ids[i + 1 :]]
        return edges

    def _near_edges(
        self,
        feats: Mapping[str, Features],
        neighbours: Mapping[str, Iterable[str]],
        pairs: _Pairs,
        out: BankPlan,
    ) -> list[Edge]:
        seen: set[Pair] = set()
        edges: list[Edge] = []
        for src in feats:
            for dst in neighbours.get(src, ()):
                k = pairs.key(src, dst)
                if dst == src or dst not in feats or k in seen:
                    continue
                seen.add(k)
                edge = self._edge(k, pairs, out)
                if edge is not None:
                    edges.append(edge)
        return sorted(edges, key=lambda e: (e.a, e.b))

    def _edge(self, k: Pair, pairs: _Pairs, out: BankPlan) -> Edge | None:
        """Vetoes first (cheap), then the scorers, only for pairs that can still matter."""
        s = self.settings
        out.pairs_scored += 1
        reason = pairs.veto(*k)
        if reason is not None:
            out.vetoed[reason] += 1
            # Similar pairs vetoed for polarity or numbers may be corrections: the judge's.
            if s.judge_enabled and reason in CONTRADICTION_VETOES:
                sc = pairs.score(*k)
                if sc.combined >= s.grey_score:
                    out.contradictions.append(Edge(k[0], k[1], sc, False))
            return None
        if pairs.length_ratio(*k) < s.min_length_ratio:
            return None  # a subset or a much longer text: never a duplicate, never ambiguous
        sc = pairs.score(*k)
        if is_duplicate(sc, threshold=s.duplicate_score, min_length_ratio=s.min_length_ratio):
            return Edge(k[0], k[1], sc, sc is EXACT)
        if sc.combined >= s.grey_score:
            out.ambiguous.append(Edge(k[0], k[1], sc, False))
        return None

    def _cluster(self, edges: Sequence[Edge], pairs: _Pairs) -> list[list[str]]:
        """Complete-linkage on vetoes, single-linkage on similarity, strongest edge first."""
        cluster_of: dict[str, list[str]] = {}
        for e in edges:
            ca = cluster_of.get(e.a, [e.a])
            cb = cluster_of.get(e.b, [e.b])
            if ca is cb or len(ca) + len(cb) > self.settings.max_group_size:
                continue
            if any(pairs.veto(x, y) is not None for x in ca for y in cb):
                continue
            merged = sorted(ca + cb)
            for member in merged:
                cluster_of[member] = merged
        unique = {id(c): c for c in cluster_of.values()}
        return sorted(unique.values(), key=lambda c: c[0])

    def _group(self, bank: str, members: list[Features], pairs: _Pairs) -> Group | None:
        s = self.settings
        members.sort(key=survivor_key)
        head = members[0]
        kept = [head]
        for f in members[1:]:
            sc = pairs.score(head.id, f.id)
            if is_duplicate(sc, threshold=s.grey_score, min_length_ratio=s.min_length_ratio):
                kept.append(f)
        if len(kept) < 2:
            return None
        exact = all(f.memory.fingerprint == head.memory.fingerprint for f in kept)
        losers = sorted(f.id for f in kept[1:] if not f.memory.pinned)
        pinned = sorted(f.id for f in kept[1:] if f.memory.pinned)
        return Group(
            bank=bank,
            survivor=head.id,
            members=tuple(sorted(f.id for f in kept)),
            retire=tuple(losers),
            pinned_kept=tuple(pinned),
            reason="exact" if exact else "near-duplicate",
            scores=tuple(_pair_score(f.id, pairs.score(head.id, f.id)) for f in kept[1:]),
        )


def _pair_score(mem_id: str, sc: Scores) -> PairScore:
    return PairScore(
        id=mem_id,
        combined=round(sc.combined, 2),
        token_set=round(sc.token_set, 2),
        token_sort=round(sc.token_sort, 2),
        ratio=round(sc.ratio, 2),
        length_ratio=round(sc.length_ratio, 3),
    )
