"""Pairwise duplicate judgement: never-group vetoes first, then rapidfuzz similarity.

A pair of memories is a duplicate only when nothing vetoes it and several scorers agree.

Vetoes (pairs that are never grouped): a different type, scope, project or session; a
polarity flip (a negation or a polar word such as "always"/"never" on one side only); different
numbers or dates; different named entities; and a role swap, where the same names appear in a
different order ("Alice manages Bob" / "Bob manages Alice" share one token multiset, so no
bag-of-words scorer can tell them apart). A veto means "not the same fact"; a missed duplicate
costs little, a false merge retires a true memory, so every veto errs towards keeping both.

Similarity: ``token_set_ratio`` alone scores a subset as 100 ("user prefers tabs" vs "user
prefers tabs over spaces in python" are different facts), so the combined score is
``min(token_set_ratio, max(token_sort_ratio, ratio))`` and a word-count length ratio must also
clear ``min_length_ratio``.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property
from itertools import pairwise

from rapidfuzz import fuzz

from shared.contract.models import Memory
from shared.text import STOPWORDS, normalize

# Word runs that keep inner apostrophes, so "don't" stays one negation token.
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*", re.UNICODE)
_CAPITALIZED = re.compile(r"(?<![\w'])([A-Z][\w'-]*)")
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "`": "'"})

NEGATIONS = frozenset(
    """not no never nor none nobody nothing nowhere neither without cannot can't don't doesn't
    didn't isn't aren't wasn't weren't won't wouldn't shouldn't couldn't haven't hasn't hadn't
    mustn't needn't dont doesnt didnt isnt arent wasnt werent wont wouldnt shouldnt couldnt
    cant havent hasnt""".split()
)
# Frequency words: "always" vs "never" (or vs nothing) is a different rule, not a restatement.
FREQUENCY = frozenset(
    """always never sometimes rarely often usually seldom occasionally frequently only""".split()
)
# Antonym pairs: one side saying x where the other says y is a flip ("likes" / "dislikes").
ANTONYMS = (
    ("like", "dislike"),
    ("likes", "dislikes"),
    ("love", "hate"),
    ("loves", "hates"),
    ("enable", "disable"),
    ("enabled", "disabled"),
    ("allow", "forbid"),
    ("allowed", "forbidden"),
    ("true", "false"),
    ("yes", "no"),
    ("include", "exclude"),
    ("before", "after"),
    ("accept", "reject"),
    ("add", "remove"),
    ("increase", "decrease"),
    ("more", "less"),
    ("prefer", "avoid"),
    ("prefers", "avoids"),
    ("with", "without"),
)
# Words that say the opposite of each other when one text has one where the other has the
# other (a word the two texts do not share): "min" / "max", "is" / "was" (a fact that was true
# and may not be now), "earlier" / "later".
OPPOSED = frozenset(
    frozenset(pair)
    for pair in (
        ("min", "max"), ("minimum", "maximum"), ("earlier", "later"), ("early", "late"),
        ("higher", "lower"), ("high", "low"), ("above", "below"), ("up", "down"),
        ("on", "off"), ("open", "closed"), ("start", "stop"), ("first", "last"),
        ("old", "new"), ("older", "newer"), ("oldest", "newest"), ("larger", "smaller"),
        ("bigger", "smaller"), ("faster", "slower"), ("public", "private"),
        ("success", "failure"), ("pass", "fail"), ("passed", "failed"), ("win", "lose"),
        ("buy", "sell"), ("right", "wrong"), ("good", "bad"), ("better", "worse"),
        ("best", "worst"), ("hot", "cold"), ("light", "dark"), ("present", "absent"),
        ("is", "was"), ("are", "were"), ("am", "was"), ("has", "had"), ("have", "had"),
        ("does", "did"), ("do", "did"), ("will", "did"), ("still", "anymore"),
        ("now", "then"), ("current", "former"), ("currently", "formerly"),
    )
)  # fmt: skip
# "available" / "unavailable", "agrees" / "disagrees", "trusts" / "distrusts".
NEGATING_PREFIXES = ("un", "in", "im", "ir", "il", "dis", "non", "non-", "mis", "anti")
NUMBER_WORDS = frozenset(
    """zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
    fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty
    ninety hundred thousand million billion first second third fourth fifth half twice once
    double triple dozen""".split()
)
# "may" and "march" are left out on purpose: as verbs they are far commoner than as months.
DATE_WORDS = frozenset(
    """january february april june july august september october november december jan feb
    apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday
    sunday today tomorrow yesterday tonight weekend weekday morning afternoon evening night
    spring summer autumn fall winter daily weekly monthly yearly annually""".split()
)


@dataclass(frozen=True)
class Features:
    """What the vetoes and scorers read from one memory, computed once per pass."""

    memory: Memory

    @property
    def id(self) -> str:
        return self.memory.id

    @cached_property
    def norm(self) -> str:
        return normalize(self.memory.text).translate(_APOSTROPHES)

    @cached_property
    def words(self) -> tuple[str, ...]:
        return tuple(_WORD.findall(self.norm))

    @cached_property
    def word_set(self) -> frozenset[str]:
        return frozenset(self.words)

    @cached_property
    def negations(self) -> int:
        """How many negations: "never ... not" is not "never ..." ("doesn't" = "does not")."""
        return sum(1 for w in self.words if w in NEGATIONS)

    @cached_property
    def frequency(self) -> frozenset[str]:
        """Frequency words other than "never", which already counts as a negation: "never
        commit .env files" and "don't commit .env files" say the same thing."""
        return frozenset(w for w in self.words if w in FREQUENCY and w not in NEGATIONS)

    @cached_property
    def antonyms(self) -> dict[int, tuple[bool, bool]]:
        """For each antonym pair the text touches: which of its two sides it says."""
        return {
            i: (x in self.word_set, y in self.word_set)
            for i, (x, y) in enumerate(ANTONYMS)
            if x in self.word_set or y in self.word_set
        }

    @cached_property
    def quantities(self) -> tuple[str, ...]:
        found = [n.replace(",", "") for n in _NUMBER.findall(self.norm)]
        found += [q for q in map(_quantity_word, self.words) if q is not None]
        return tuple(sorted(found))

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Named entities in order of first mention: capitalised non-stopwords of the text,
        then the record's entity handles that occur in it as words."""
        text = unicodedata.normalize("NFKC", self.memory.text).translate(_APOSTROPHES)
        found: dict[str, None] = {}
        for raw in _CAPITALIZED.findall(text):
            word = raw.casefold().strip("'-")
            if _is_name(word):
                found.setdefault(word, None)
        for handle in self.memory.entities:
            if handle in self.word_set:
                found.setdefault(handle, None)
        return tuple(found)

    def position(self, word: str) -> int:
        try:
            return self.words.index(word)
        except ValueError:
            return len(self.words)


def _is_name(word: str) -> bool:
    """A capitalised word that names something: not a stopword, negation, frequency word, or
    a weekday/month (those are dates, compared by the numbers-or-dates veto)."""
    return bool(word) and not (
        word in STOPWORDS
        or word in NEGATIONS
        or word in FREQUENCY
        or _quantity_word(word) is not None
    )


def _quantity_word(word: str) -> str | None:
    """A number or date word, plurals folded ("mondays", "mornings") so they match."""
    if word in NUMBER_WORDS or word in DATE_WORDS:
        return word
    if word.endswith("s") and word[:-1] in DATE_WORDS:
        return word[:-1]
    return None


@dataclass(frozen=True)
class Scores:
    """rapidfuzz scores of one pair (0-100) and the word-count length ratio (0-1)."""

    token_set: float
    token_sort: float
    ratio: float
    length_ratio: float

    @property
    def combined(self) -> float:
        return min(self.token_set, max(self.token_sort, self.ratio))


def veto(a: Features, b: Features) -> str | None:
    """Why ``a`` and ``b`` must never be grouped, or None. Symmetric by construction."""
    ma, mb = a.memory, b.memory
    if ma.type != mb.type:
        return "different-type"
    if ma.scope != mb.scope:
        return "different-scope"
    if ma.project != mb.project:
        return "different-project"
    if ma.session_id != mb.session_id:
        return "different-session"
    if a.norm == b.norm:
        return None  # the same normalised text: nothing below can differ
    if _polarity_flip(a, b):
        return "polarity"
    if a.quantities != b.quantities:
        return "numbers-or-dates"
    return _entity_veto(a, b) or _order_veto(a, b)


def _polarity_flip(a: Features, b: Features) -> bool:
    if a.negations != b.negations or a.frequency != b.frequency:
        return True
    sa, sb = a.antonyms, b.antonyms
    # A flip: both texts use the same antonym pair, but not the same side(s) of it.
    if any(sb[i] != sig for i, sig in sa.items() if i in sb):
        return True
    only_a, only_b = a.word_set - b.word_set, b.word_set - a.word_set
    return any(_opposed(x, y) for x in only_a for y in only_b)


def _opposed(x: str, y: str) -> bool:
    """Whether word ``x`` in one text and ``y`` in the other turn the fact around: an
    opposed pair, a negating prefix ("unavailable"), or a tense change ("works" / "worked":
    what was true then may not be now, so neither retires the other)."""
    if frozenset((x, y)) in OPPOSED:
        return True
    short, long = sorted((x, y), key=len)
    if len(short) >= 3 and any(long == p + short for p in NEGATING_PREFIXES):
        return True
    return _past_of(x, y) or _past_of(y, x)


def _past_of(present: str, past: str) -> bool:
    """ "work"/"works" → "worked", "love"/"loves" → "loved", "try"/"tries" → "tried"."""
    if len(present) < 3 or not past.endswith("ed"):
        return False
    bases = {present, present[:-1] if present.endswith("s") else present}
    if present.endswith("ies"):
        bases.add(present[:-3] + "y")
    stems = {past[:-2], past[:-1]}  # "worked" → "work", "loved" → "love"
    if past.endswith("ied"):
        stems.add(past[:-3] + "y")
    return bool(bases & stems)


def _entity_veto(a: Features, b: Features) -> str | None:
    # A name is "missing" only if the other text lacks the word entirely, so "Python" vs
    # "python" is no difference.
    if any(n not in b.word_set for n in a.names) or any(n not in a.word_set for n in b.names):
        return "different-entities"
    shared = sorted(set(a.names) | set(b.names))
    if len(shared) >= 2:
        order_a = sorted(shared, key=lambda n: (a.position(n), n))
        order_b = sorted(shared, key=lambda n: (b.position(n), n))
        if order_a != order_b:
            return "role-swap"
    return None


def _order_veto(a: Features, b: Features) -> str | None:
    """Content words that trade places across another word are a role swap even without
    names: "prefers tabs over spaces" / "prefers spaces over tabs", "alice manages bob" /
    "bob manages alice". Only words that occur once in each text are compared; two words that
    stay next to each other in both (a typo-like "big blue" / "blue big") may swap. A moved
    phrase ("on Tuesdays, the user ..." / "the user ... on Tuesdays") is vetoed too: a missed
    duplicate costs little, a false merge retires a true memory."""
    pa, pb = _single_positions(a.words), _single_positions(b.words)
    shared = [w for w in pa if w in pb and w not in STOPWORDS and w not in NEGATIONS]
    order = sorted(shared, key=pa.__getitem__)
    in_b = [pb[w] for w in order]
    if all(x < y for x, y in pairwise(in_b)):
        return None  # the shared words keep their order: the common case, decided fast
    for i, x in enumerate(order):
        for y in order[i + 1 :]:
            if pb[x] > pb[y] and (pa[y] - pa[x] > 1 or pb[x] - pb[y] > 1):
                return "role-swap"
    return None


def _single_positions(words: tuple[str, ...]) -> dict[str, int]:
    seen: dict[str, int] = {}
    repeated: set[str] = set()
    for i, w in enumerate(words):
        if w in seen:
            repeated.add(w)
        seen[w] = i
    return {w: i for w, i in seen.items() if w not in repeated}


def score(a: Features, b: Features) -> Scores:
    na, nb = a.norm, b.norm
    la, lb = len(a.words), len(b.words)
    return Scores(
        token_set=fuzz.token_set_ratio(na, nb),
        token_sort=fuzz.token_sort_ratio(na, nb),
        ratio=fuzz.ratio(na, nb),
        length_ratio=min(la, lb) / max(la, lb, 1),
    )


def is_duplicate(s: Scores, *, threshold: float, min_length_ratio: float) -> bool:
    return s.combined >= threshold and s.length_ratio >= min_length_ratio
