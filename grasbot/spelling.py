"""Spelling correction of question words against one vault's vocabulary.

A visitor types `pyhton`, `competance`, `profesionel`, `quintar`; the index holds the stems `python`,
`competent` (compétence), `professionnel`, `quintard`. `Speller` maps an unknown question token to the
index term it most likely stands for, and says whether the correction is *confident* enough to count as
evidence that the vault covers the question (the search engine uses an unconfident one for ranking only).

Candidates, at most `max_distance(len)` edits away (1 from `MIN_LENGTH` letters, 2 from `LONG_LENGTH`):

- **stem level**: index terms within that Damerau–Levenshtein distance (optimal string alignment:
  insertion, deletion, substitution, transposition of two neighbours: `pyhton` -> `python` is one edit);
- **word level**: the visitor's folded word one edit away from a word whose *stem* is an index term,
  for the edits from the end of the token on and the swaps. This catches what stemming hides:
  `competance` stems to `compet` but `competence` to `competent` (three edits as stems, one as words), and
  `inceptoin` keeps its garbled ending while `inception` stems to `incept`. A stem much shorter than the
  token the stemmer already cut is another word (`tempaltes` -> `tempates` -> `temp`), and a stem under
  four letters is too vague: neither is a candidate. Words are stemmed as the tokenizer does
  (`stem_words`), in one C call, without filling the tokenizer's cache with non-words.

Both keep the first letter (or swap the first two): the first letter of a word is rarely the typo, and
words that differ there are mostly other words (`demain`/`semaine`), so they are not candidates at all.

Choice, Norvig-style: fewest edits, a whole-word match before a stem-only one, then a term that names a
note (title, alias or slug: visitors ask about named things), then the most notes holding it (a frequency
prior), then alphabetical order. The correction is *confident* when it is unlikely to be a coincidence:

- enough agrees: the shorter of what was typed and the term has `SURE_LENGTH` letters for one edit,
  `SURE_LONG_LENGTH` for two, `SURE_SWAP_LENGTH` for a swap of neighbours (a typing slip that rarely
  turns a word into another). Shorter words are too often another word of the language one edit from a
  vault word (`demain`/`domaine`, `calories`/`colors`), and the vault cannot tell;
- the term is held by more than one note or names one (a word of one note, one edit from the question's,
  is as likely a coincidence);
- it is clearly likelier than any other candidate at the same distance and level (a name against plain
  words, or at least twice the notes of the runner-up).

Cost. No table of deletions: the vocabulary is sorted once by (first letter, length) into numpy arrays
(a few ms for 10k terms, ~40 ms for 45k). A query scans only the terms with the same first letter and a
length within the distance; their letter counts bound the edit distance from below (bag distance), and
the exact distance runs in Python on the few survivors; the word level stems a few hundred edits in one
call (under a millisecond per new word). Results are cached by the caller; a changed vocabulary means a
new `Speller` (cheap), never an incremental structure.

Deterministic: candidates are ordered by a total key ending with the term itself; the order of the
vocabulary mapping does not matter.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import Stemmer

from grasbot.tokenize import STOP_WORDS

__all__ = [
    "LONG_LENGTH",
    "MIN_LENGTH",
    "SURE_LENGTH",
    "SURE_LONG_LENGTH",
    "SURE_SWAP_LENGTH",
    "Correction",
    "Speller",
    "edit_distance",
    "is_swap",
    "max_distance",
    "stem_words",
]

#: Shortest token looked at: shorter ones have too many neighbours one edit away to pick one.
MIN_LENGTH = 5
#: From this length two edits are allowed (`profesionel` -> `professionnel`).
LONG_LENGTH = 8
#: A correction is confident from this many letters typed for one edit, `SURE_LONG_LENGTH` for two, and
#: `SURE_SWAP_LENGTH` when the edit swaps two neighbouring letters (a typing slip, rarely another word).
SURE_LENGTH = 7
SURE_LONG_LENGTH = 10
SURE_SWAP_LENGTH = 5
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_WIDTH = 37  # letter-count columns: a-z, 0-9, everything else
_LOOKUP = np.full(128, _WIDTH - 1, dtype=np.int64)
for _i, _c in enumerate(_LETTERS + "0123456789"):
    _LOOKUP[ord(_c)] = _i
_LEN_CAP = 63  # lengths above this share one bucket in the sort key


def _bucket_codes(text: str) -> np.ndarray:
    """The letter-count column of every character of `text` (a-z, 0-9, then one column for the rest)."""
    if text.isascii():
        return _LOOKUP[np.frombuffer(text.encode("ascii"), dtype=np.uint8)]
    codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
    return np.where(codes < 128, _LOOKUP[np.minimum(codes, 127)], _WIDTH - 1)


def max_distance(length: int) -> int:
    """Edits allowed for a token of `length` characters: 0 below `MIN_LENGTH`, 2 from `LONG_LENGTH`."""
    if length < MIN_LENGTH:
        return 0
    return 2 if length >= LONG_LENGTH else 1


def edit_distance(a: str, b: str, limit: int) -> int:
    """Optimal string alignment distance (insertions, deletions, substitutions, adjacent transpositions)
    between `a` and `b`, or `limit + 1` as soon as it is known to exceed `limit`."""
    la, lb = len(a), len(b)
    if abs(la - lb) > limit:
        return limit + 1
    if a == b:
        return 0
    prev2: list[int] = []
    prev = list(range(lb + 1))
    for i in range(1, la + 1):
        cur = [i] + [0] * lb
        ai = a[i - 1]
        best = cur[0]
        for j in range(1, lb + 1):
            cost = 0 if ai == b[j - 1] else 1
            value = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ai == b[j - 2] and a[i - 2] == b[j - 1]:
                value = min(value, prev2[j - 2] + 1)
            cur[j] = value
            if value < best:
                best = value
        if best > limit:
            return limit + 1
        prev2, prev = prev, cur
    return min(prev[lb], limit + 1)


def _word_edits(word: str, start: int) -> tuple[set[str], set[str]]:
    """Strings one edit from `word`: the swaps of two neighbours (anywhere, the first two included), and
    the insertions, deletions and substitutions from position `start` (≥ 1: the first letter stays)."""
    edits: set[str] = set()
    n = len(word)
    for i in range(max(start, 1), n + 1):
        head, tail = word[:i], word[i:]
        for c in _LETTERS:
            edits.add(head + c + tail)  # insertion after position i - 1
        if tail:
            edits.add(head + tail[1:])  # deletion
            for c in _LETTERS:
                edits.add(head + c + tail[1:])  # substitution
    swaps = {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(n - 1)}
    swaps.discard(word)
    edits.discard(word)
    return swaps, edits - swaps


_stemmer = Stemmer.Stemmer("french")


def stem_words(folded: list[str]) -> list[str]:
    """`grasbot.tokenize.stem` of many folded words in one C call, without filling the tokenizer's cache
    with the hundreds of non-words a correction tries (tests/test_spelling.py checks it agrees)."""
    out = [s[:-1] if len(s) > 3 and s[-1] == "e" else s for s in _stemmer.stemWords(folded)]  # `-ée`/`-é`
    if not STOP_WORDS.isdisjoint(folded) or not "".join(folded).isalpha():  # rare: word by word
        for i, word in enumerate(folded):
            if word in STOP_WORDS or not word:
                out[i] = ""
            elif word.isdigit():
                out[i] = word if len(word) > 1 else ""
    return out


def is_swap(a: str, b: str) -> bool:
    """True when `b` is `a` with two neighbouring letters swapped."""
    if len(a) != len(b) or a == b:
        return False
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]


def _sure_length(distance: int, swap: bool) -> int:
    """Shortest typed string (word or stem) on which a correction of `distance` edits is confident."""
    if swap:
        return SURE_SWAP_LENGTH
    return SURE_LENGTH if distance <= 1 else SURE_LONG_LENGTH


@dataclass(frozen=True, slots=True)
class _Candidate:
    distance: int
    level: int  # 0: the typed word is `distance` edits from a word whose stem is `term`; 1: stems only
    term: str
    length: int  # the shorter of what was typed (word or stem) and the term: how much agrees
    swap: bool  # the one edit is a swap of two neighbouring letters

    @property
    def rank(self) -> tuple[int, int]:
        # A match on the whole word is preferred at the same distance: more of what was typed agrees.
        return (self.distance, self.level)


@dataclass(frozen=True, slots=True)
class Correction:
    """What a question token is taken for."""

    term: str  # the index term
    distance: int  # edits between what the visitor typed and it (as stems, or as words)
    confident: bool  # likely enough to count as evidence that the vault covers the question


class Speller:
    """Corrects tokens against a fixed vocabulary: `{term: number of notes holding it}`.

    `names`: terms of some note's title, aliases or slug (preferred on a tie of distance). `stem_words`:
    folded words -> their index tokens, as the tokenizer makes them (`stem_words` below), for word-level
    candidates (None: stems only).
    """

    def __init__(
        self,
        df: Mapping[str, int],
        names: Container[str] = frozenset(),
        stem_words: Callable[[list[str]], list[str]] | None = None,
    ) -> None:
        self._df = df
        self._names = names
        self._stem_words = stem_words
        # Only (first letter, length) order matters: candidates are ranked by a total key afterwards, so
        # the order inside a bucket cannot change a result (no Python-level sort of the vocabulary).
        terms = [t for t in df if t]
        n = len(terms)
        lengths = np.fromiter(map(len, terms), dtype=np.int64, count=n)
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=starts[1:])
        chars = _bucket_codes("".join(terms))
        first_codes = np.fromiter(map(ord, (t[0] for t in terms)), dtype=np.int64, count=n)
        key = first_codes * (_LEN_CAP + 1) + np.minimum(lengths, _LEN_CAP)
        order = np.argsort(key, kind="stable")
        self._key = key[order]
        self._terms = np.array(terms, dtype=object)[order] if n else np.zeros(0, dtype=object)
        # The terms' characters as letter-count buckets, laid out in the sorted order: a slice of terms
        # is one slice of characters, counted at query time (bag distance ≤ edit distance: a cheap filter).
        sorted_lengths = lengths[order]
        self._starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(sorted_lengths, out=self._starts[1:])
        gather = np.repeat(starts[:-1][order] - self._starts[:-1], sorted_lengths) + np.arange(int(self._starts[-1]))
        self._chars = chars[gather].astype(np.uint8)
        self._lengths = sorted_lengths

    def __len__(self) -> int:
        return len(self._terms)

    def _slice(self, first: str, lo_len: int, hi_len: int) -> tuple[int, int]:
        base = ord(first) * (_LEN_CAP + 1)
        lo = int(np.searchsorted(self._key, base + max(lo_len, 1), side="left"))
        hi = int(np.searchsorted(self._key, base + min(hi_len, _LEN_CAP), side="right"))
        return lo, hi

    def _near(self, token: str, limit: int) -> Iterable[tuple[int, str]]:
        """(distance, term) of the terms within `limit` edits that keep the first letter or swap the first two."""
        counts = np.zeros(_WIDTH, dtype=np.int16)
        for ch in token:
            counts[_LOOKUP[ord(ch)] if ord(ch) < 128 else _WIDTH - 1] += 1
        n = len(token)
        firsts = [token[0]] + ([token[1]] if n > 1 and token[1] != token[0] else [])
        for first in firsts:
            lo, hi = self._slice(first, n - limit, n + limit)
            if hi <= lo:
                continue
            c_lo, c_hi = int(self._starts[lo]), int(self._starts[hi])
            rows = np.repeat(np.arange(hi - lo, dtype=np.int64), self._lengths[lo:hi])
            held = np.bincount(rows * _WIDTH + self._chars[c_lo:c_hi], minlength=(hi - lo) * _WIDTH)
            diff = held.reshape(hi - lo, _WIDTH) - counts
            bag = np.maximum(np.clip(diff, 0, None).sum(axis=1), np.clip(-diff, 0, None).sum(axis=1))
            for i in np.flatnonzero(bag <= limit).tolist():
                term = self._terms[lo + i]
                if first != token[0] and term[:2] != token[1::-1]:
                    continue  # another first letter is only a swap of the first two
                d = edit_distance(token, term, limit)
                if d <= limit:
                    yield d, term

    def candidates(self, token: str, word: str | None = None) -> list[_Candidate]:
        """The candidates for `token` and the visitor's folded `word` it comes from, best first."""
        limit = max_distance(len(token))
        found: dict[str, _Candidate] = {}

        def offer(candidate: _Candidate) -> None:
            held = found.get(candidate.term)
            if held is None or candidate.rank < held.rank:
                found[candidate.term] = candidate

        if not limit or token.isdigit():
            return []
        for d, term in self._near(token, limit):
            if d and not term.isdigit():
                offer(_Candidate(d, 1, term, min(len(token), len(term)), d == 1 and is_swap(token, term)))
        if self._stem_words is not None and word and word.isalpha() and word.isascii():
            # Edits inside the stem are the stem-level candidates already; the word level adds the edits
            # that change where the stemmer cuts (`competance` -> `competence` -> `competent`).
            swaps, others = _word_edits(word, len(token) - 1)
            # When the stemmer cut a suffix off the typed word, a stem much shorter than that token means
            # the edit made another word that the stemmer cuts further (`tempaltes` -> `tempates` ->
            # `temp`). When it cut nothing (`inceptoin`), the edit may be what reveals the suffix
            # (`inception` -> `incept`): only very short stems are refused (`demain` -> ... `dem`).
            shortest = len(token) - 1 if token != word else MIN_LENGTH - 1
            for swap, edits in ((True, swaps), (False, others)):
                ordered = sorted(edits)
                for term in self._stem_words(ordered):
                    if term and term != token and len(term) >= shortest and term in self._df and not term.isdigit():
                        offer(_Candidate(1, 0, term, min(len(word), len(term)), swap))
        return sorted(found.values(), key=lambda c: self._order(c))

    def _order(self, c: _Candidate) -> tuple[int, int, int, int, str]:
        return (*c.rank, 0 if c.term in self._names else 1, -int(self._df.get(c.term, 0)), c.term)

    def correct(self, token: str, word: str | None = None) -> Correction | None:
        """The term `token` most likely stands for (None: no candidate), and whether it is confident."""
        found = self.candidates(token, word)
        if not found:
            return None
        best = found[0]
        named = best.term in self._names
        df = int(self._df.get(best.term, 0))
        # Long enough that a real word of the language is unlikely to lie that close to a vault term by
        # chance (`demain` is one edit from `domaine`), and not a coincidence of one note.
        confident = best.length >= _sure_length(best.distance, best.swap) and (named or df >= 2)
        for other in found[1:]:
            if other.rank != best.rank:
                break
            other_named = other.term in self._names
            if named and not other_named:
                continue  # a name beats a plain word at the same distance
            if other_named and not named or 2 * int(self._df.get(other.term, 0)) > df:
                confident = False  # not clearly likelier than the runner-up
                break
        return Correction(best.term, best.distance, confident)
