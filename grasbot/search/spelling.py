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
  (`grasbot.search.tokenize.stem_words`), in one C call, without filling the tokenizer's cache with non-words.

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
(benchmarks/README.md, "Figures behind the code"). A query scans only the terms with the same first letter and a
length within the distance; their letter counts bound the edit distance from below (bag distance), and
the exact distance runs in Python on the few survivors; the word level stems a few hundred edits in one
call (under a millisecond per new word). Results are cached by the caller; a changed vocabulary means a
new `Speller` (cheap), never an incremental structure.

**Other inflections first** (`Speller.inflect`). Snowball leaves some verb forms apart from the rest of
their verb: the third person plural (`pointent`, `mettent`, `trouvent`, `mangent` keep `-ent`, while the
notes' `pointer`, `manger` stem to `point`, `mang`), `-ons` outside R2 (`mangeons`), endings whose accent
folding removed (`mangèrent`), and tenses whose radical is not the infinitive's stem (`mettait` -> `met`,
`mettre` -> `mettr`, `prennent`, `ecrivent`); and `metre` (for `mettre`) is too short for the edit
distance. A blind `-ent` strip in the tokenizer would merge `agent`/`âge`, `client`/`CLI`, `moment`,
`souvent`. Instead, a question word whose token the vault has never seen tries the forms French conjugation
gives it (`inflections`: endings stripped, the radical given the infinitive's endings and its regular
alternations: a doubled consonant, `vienn-`/`ven-ir`, `prenn-`/`prend-re`, `ecriv-`/`ecri-re`, participles
`-mis`/`-mettre`, `-it`/`-ire`), stems them in one call, and keeps only a stem that IS an index term. Guards,
each from a measured false friend: a radical of four letters (three when it ends in a vowel: `jou-ent`,
`cre-ent`, but not `cli-ent`); `-ons` not after `-ti`/`-si`/`-lli`/`-gi`/`-ni` (`portions`, `millions`);
`-re` only after the radicals of `-re` verbs (`content` is not `contre`); participles only through their
verb's own pattern (`corpus`, `menu`, `rapidite` are left alone); a stem no shorter than its radical but by
one letter. Over the three vaults' vocabularies, what it matches is nearly always the same verb
(`mangent` -> `mang`, `traduit` -> `traduir`, `maintiennent` -> `mainten`); the rare false friends left are
homographs (`excellent` -> `excel` where a vault names Excel, `boutons` -> `bout`). It costs one `stemWords`
call over a few dozen forms per unknown word (the figure: benchmarks/README.md), cached by the caller as
corrections are.

Deterministic: candidates are ordered by a total key ending with the term itself; the order of the
vocabulary mapping does not matter.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from grasbot.search.tokenize import stem_words
from grasbot.text import edit_distance

__all__ = [
    "LONG_LENGTH",
    "MIN_LENGTH",
    "SURE_LENGTH",
    "SURE_LONG_LENGTH",
    "SURE_SWAP_LENGTH",
    "Correction",
    "Speller",
    "inflections",
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


# -- other inflections of a question word ---------------------------------------------------------------

#: Verb endings, folded, whose form the stemmer does not bring to the stem of the other forms of the verb:
#: the third person plural `-ent` (Snowball keeps it: `mangent`, `pointent`, `trouvent`), the first person
#: plural `-ons` outside R2 (`mangeons` -> `mangeon`), accented endings that folding hides from it
#: (`-èrent`), and the tenses whose radical is not the stem of the infinitive the notes use (`mettait`
#: -> `met`, `mettre` -> `mettr`; `prennent`, `ecrivent`). Longest first. Left out on purpose: `-ions`
#: (`portions`, `millions` are nouns), `-e`/`-es`/`-s` (the stemmer strips them already; trying more made
#: `course` -> `cours`, `value` -> `val`), the passé simple's `-âmes`/`-âtes` (`dates`, `templates`).
_ENDINGS: tuple[str, ...] = (
    "eraient", "iraient", "aient", "erent", "irent", "eront", "iront", "erons", "irons", "eriez", "ront", "rons",
    "erez", "irez", "iez", "rez", "ent", "ons", "ait", "ais", "ez", "ites", "ite", "its", "it", "ises", "ise",
    "is", "ues", "ue", "us", "u", "er", "ir", "re",
)
#: Participle endings: only the verb patterns below apply after them (a plain radical would turn `rapidite`
#: into `rapid`, `corpus` into `corp`, `directus` into `direct`, `lieu` into `lie`).
_PARTICIPLES = frozenset(("ites", "ite", "its", "it", "ises", "ise", "is", "ues", "ue", "us", "u"))
_INFINITIVE = ("er", "ir", "e", "")  # what a radical is tried with (`-re`: only after `_RE_RADICAL`)
_INFINITIVES = frozenset(("er", "ir", "re"))  # typed infinitives: their own radical, and the doubling below
#: Radicals of the `-re` verbs: `rend-re`, `mett-re`, `romp-re`, `conclu-re` (`cont-re`, `demont-re`,
#: `reti-re` are other words).
_RE_RADICAL = ("d", "tt", "mp", "u")
#: `-ions` after these is a noun's plural (`-tions`, `-sions`, `-llions`, `-gions`, `-nions`), not a verb's
#: first person (`publions`, `modifions`, `etudions`).
_NOUN_IONS = ("ti", "si", "lli", "gi", "ni")
_DOUBLED = frozenset("tlnmpsrfc")  # consonants French spelling doubles (`mettre`, `renommer`)
_VOWELS = frozenset("aeiouy")
#: Shortest radical tried (after its alternations), and the letters a three-letter radical may end with:
#: `jou-ent`, `cre-ent`, `lou-ent` are verbs; `cli-ent`, `mom-ent`, `par-ent`, `tal-ent`, `arg-ent` are
#: not, and their radicals are too short to tell apart from a vault's words.
INFLECTION_MIN_RADICAL = 4
_SHORT_RADICAL_ENDS = frozenset("eou")


def _radical_forms(radical: str, ending: str) -> list[tuple[str, str]]:
    """(core, form) pairs: the radical left by `ending` and its regular alternations, with the endings of
    the infinitive and of the present tense; `core` is the part a stem of `form` must keep (see
    `Speller.inflect`)."""
    out: list[tuple[str, str]] = []

    def add(core: str, suffixes: Iterable[str], specific: bool = False) -> None:
        # A three-letter core only from a verb's own pattern (`vienn-ent` -> `ven-ir`) or a vowel ending.
        if len(core) >= INFLECTION_MIN_RADICAL or (len(core) == 3 and (specific or core[-1] in _SHORT_RADICAL_ENDS)):
            out.extend((core, core + suffix) for suffix in suffixes)

    n = len(radical)
    if ending in _PARTICIPLES:
        if ending in ("is", "ise", "ises"):
            if radical.endswith("m"):
                add(radical + "ett", ("re",), True)  # `transmis`, `admise` -> `transmettre`, `admettre`
            elif radical.endswith("pr"):
                add(radical + "end", ("re",), True)  # `compris`, `appris` -> `comprendre`
        elif ending in ("it", "ite", "its", "ites"):
            add(radical + "i", ("re",), True)  # `ecrit`, `reecrite`, `construit`, `voit` -> `ecrire`, `voir`
        elif radical.endswith(("ten", "ven")):
            add(radical, ("ir",), True)  # `obtenu`, `maintenus`, `devenu` -> `obtenir` (not `menu`)
        elif radical.endswith("our"):
            add(radical, ("ir",), True)  # `parcouru` -> `parcourir`
        elif radical.endswith("d"):
            add(radical, ("re",), True)  # `rendu`, `vendue`, `etendue` -> `rendre`
        return out
    if ending == "ons" and radical.endswith(_NOUN_IONS):
        return out  # nouns: `portions`, `versions`, `millions`, `regions`, `opinions` (`publions` passes)
    if ending in _INFINITIVES:
        add(radical, ("", "e"))  # `attendre` -> `attend`: the other classes are other verbs (`relire`, `relier`)
    else:
        add(radical, _INFINITIVE + (("re",) if radical.endswith(_RE_RADICAL) else ()))
    if n >= 2 and radical[-1] in _DOUBLED and radical[-2] in _VOWELS:
        # One consonant for two: `metre`, `renomer` -> `mettre`, `renommer`.
        add(radical + radical[-1], ("er", "e", "re") if radical[-1] == "t" else ("er", "e"))
    if radical.endswith("ienn"):
        add(radical[:-4] + "en", ("ir",), True)  # `viennent`, `obtiennent` -> `venir`, `obtenir`
    elif radical.endswith("enn"):
        add(radical[:-3] + "end", ("re",), True)  # `prennent`, `comprennent` -> `prendre`
    elif ending == "ent" and radical.endswith("i"):
        add(radical[:-1] + "en", ("ir",), True)  # `vient`, `contient`, `retient` -> `venir`, `retenir`
    if radical.endswith(("aiss", "oiss")):
        add(radical[:-2] + "t", ("re",), True)  # `connaissent`, `paraissent` -> `paraitre`
    elif n >= 2 and radical[-1] in "sv" and radical[-2] == "i":
        add(radical[:-1], ("re",), True)  # `ecrivent`, `construisent`, `suivent` -> `ecrire`, `construire`
    if radical.endswith("oiv"):
        add(radical[:-3] + "ev", ("oir",), True)  # `recoivent`, `apercoivent` -> `recevoir`
    return out


def inflections(word: str) -> list[tuple[str, str]]:
    """(core, form) pairs: other inflections of the folded `word` as the rules above guess them (most are
    not words: a caller keeps the forms whose stem is a vault term). Sorted, without repeats."""
    if not (word.isalpha() and word.isascii()):
        return []
    out: set[tuple[str, str]] = set()
    for ending in _ENDINGS:
        if len(word) > len(ending) and word.endswith(ending):
            out.update(_radical_forms(word[: len(word) - len(ending)], ending))
    return sorted(pair for pair in out if pair[1] != word)


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
    inflection: bool = False  # another form of the word typed (`mangent` -> `mang`), not a typo: distance 0


class Speller:
    """Corrects tokens against a fixed vocabulary: `{term: number of notes holding it}`.

    `names`: terms of some note's title, aliases or slug (preferred on a tie of distance). `stem_words`:
    folded words -> their index tokens, as the tokenizer makes them (`grasbot.search.tokenize.stem_words`), for
    word-level candidates (None: stems only).
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
        counts = np.bincount(_bucket_codes(token), minlength=_WIDTH)
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
                d = edit_distance(token, term, limit, transpositions=True)
                if d <= limit:
                    yield d, term

    def candidates(self, token: str, word: str | None = None, by_word: bool = False) -> list[_Candidate]:
        """The candidates for `token` and the visitor's folded `word` it comes from, best first. `by_word`:
        the word's length decides whether it is long enough to correct (a short stem of a longer word)."""
        limit = max_distance(len(word) if by_word and word else len(token))
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
        return sorted(found.values(), key=self._order)

    def _order(self, c: _Candidate) -> tuple[int, int, int, int, str]:
        return (*c.rank, 0 if c.term in self._names else 1, -int(self._df.get(c.term, 0)), c.term)

    def inflect(self, token: str, word: str) -> Correction | None:
        """The index term of another inflection of the folded `word` (whose token `token` the index does not
        hold): `mangent` -> `mang` (manger), `metre` -> `mettr` (mettre). Only a form whose stem is an index
        term counts; a stem more than one letter shorter than the core it was made from is another word and
        is refused (`lettre` -> `letter` -> `let`), and so is a three-letter stem from a longer core. Choice:
        a term that names a note, then the most notes, then alphabetical order. Always confident: the vault
        holds the word, in another form (the search engine counts it as the word typed)."""
        if self._stem_words is None or not word or token in self._df:
            return None  # a term the vault holds is never replaced
        pairs = inflections(word)
        if not pairs:
            return None
        df = self._df
        best: tuple[int, int, str] | None = None
        for (core, _form), term in zip(pairs, self._stem_words([form for _core, form in pairs])):
            if not term or term == token or len(term) < max(len(core) - 1, min(len(core), 4)) or term.isdigit() or term not in df:
                continue
            key = (0 if term in self._names else 1, -int(df[term]), term)
            if best is None or key < best:
                best = key
        if best is None:
            return None
        return Correction(best[2], 0, True, inflection=True)

    def respell(self, token: str, word: str | None, at_least: int) -> Correction | None:
        """For a token the vault *holds*, but in few notes: the name term (title, alias or slug) one edit
        away that at least `at_least` notes hold, if any (`cliper` stems to `clip`, a word of one note,
        while the vault names `clipper` in a dozen). Never confident: the typed word is a real term too,
        so the search engine ranks with both and counts the respelling as no evidence."""
        for candidate in self.candidates(token, word, by_word=True):
            if candidate.distance > 1:
                break
            if candidate.term in self._names and int(self._df.get(candidate.term, 0)) >= at_least:
                return Correction(candidate.term, candidate.distance, False)
        return None

    def correct(self, token: str, word: str | None = None) -> Correction | None:
        """The term `token` most likely stands for (None: no candidate), and whether it is confident: another
        inflection of the typed word first (`inflect`), else the nearest spelling (`candidates`)."""
        if word:
            found_form = self.inflect(token, word)
            if found_form is not None:
                return found_form
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
