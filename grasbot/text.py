"""How every part compares text: folding, name keys, edit distance, and the sharing of equal short strings.

One module, so that two parts never disagree on whether two words are "the same" (docs/architecture.md,
"One text module"). It imports nothing else of the project: every layer may use it.

* `fold`: the form in which words, aliases, tags and filters are compared (case- and accent-free, blanks
  collapsed): retrieval's tokens, lint's duplicate and vocabulary rules, the live vault's identity keys, the
  TUI's filter, the note types of `vaulttools new`.
* `fold_each`: the same character by character, one character out for one in (offsets keep their meaning).
* `name_key`: how Obsidian compares file names and link targets (NFC, lower case): the link resolver's key.
  `loose_name_key` matches all that `name_key` matches and more (full case folding): privacy looks hidden
  names up with it, so that it errs on the side of hiding.
* `edit_distance`: Levenshtein, or with `transpositions` the optimal string alignment distance (a swap of
  two neighbours is one edit), both from RapidFuzz, with a limit past which the exact value is not needed.
* `share`: one object for equal short strings (names, slugs, tags) while a vault is read.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Any

__all__ = [
    "SHARED_STRINGS",
    "edit_distance",
    "fold",
    "fold_each",
    "loose_name_key",
    "name_key",
    "name_key_fast",
    "name_key_uncached",
    "share",
    "share_any",
]

# -- sharing equal strings -------------------------------------------------------------------------------

#: The short strings seen while reading files, each kept once: a vault repeats the same names, tags and
#: link targets thousands of times. Bounded by `share` and emptied once a vault is read
#: (`grasbot.markdown.frontmatter.clear_caches`). Emptied with `.clear()`, never replaced, so that bound
#: methods such as `share_any` stay valid.
SHARED_STRINGS: dict[str, str] = {}
_SHARED_LIMIT = 400_000
_SHORT = 48

#: `share_any(text, text)`: `text` or an equal string seen before, whatever its length and without the size
#: check (for the hot loops of the readers; `share` keeps the table bounded).
share_any: Callable[[str, str], str] = SHARED_STRINGS.setdefault


def share(text: str) -> str:
    """`text`, or an equal string seen before when it is short (names, slugs, tags, link targets)."""
    if len(text) > _SHORT:
        return text
    found = SHARED_STRINGS.get(text)
    if found is None:
        if len(SHARED_STRINGS) >= _SHARED_LIMIT:
            SHARED_STRINGS.clear()
        SHARED_STRINGS[text] = text
        return text
    return found


# -- folding -------------------------------------------------------------------------------------------

# Letters that no Unicode decomposition splits but that French spells out when accents are dropped.
_LIGATURES = {"œ": "oe", "Œ": "oe", "æ": "ae", "Æ": "ae"}


class _FoldChars(dict):  # type: ignore[type-arg]
    """code point -> that character decomposed (NFKD), without its combining marks, case-folded: a
    `str.translate` table filled on first use of each character.

    Folding character by character gives what folding the whole text gives: decomposition, dropping the
    marks and case folding each map one character at a time, and the only thing NFKD does across
    characters, reordering a run of combining marks, touches only marks that are dropped. One C-level
    `translate` then replaces a normalisation and a Python-level filter per character."""

    __slots__ = ()

    def __missing__(self, code: int) -> str:
        char = chr(code)
        if char in _LIGATURES:
            value = self[code] = _LIGATURES[char]
            return value
        decomposed = unicodedata.normalize("NFKD", char)
        value = self[code] = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()
        return value


class _FoldOne(dict):  # type: ignore[type-arg]
    """Like `_FoldChars`, but always one character: a character whose folded form is longer (`ß`, `œ`,
    `ﬁ`) or empty (a lone combining mark) is only lower-cased (its first character), or kept."""

    __slots__ = ()

    def __missing__(self, code: int) -> str:
        char = chr(code)
        folded = _FOLD_CHARS[code]
        if len(folded) != 1:
            folded = char.lower()[:1] or char
        self[code] = folded
        return folded


_FOLD_CHARS = _FoldChars()
_FOLD_ONE = _FoldOne()


def fold(text: str) -> str:
    """Lower-case (full case folding), accents removed, `œ`/`æ` spelt out, blanks collapsed and trimmed:
    ``"  Sécurité   Œuvre "`` -> ``"securite oeuvre"``. How words are compared everywhere."""
    if text.isascii():
        return " ".join(text.lower().split())
    return " ".join(text.translate(_FOLD_CHARS).split())


def fold_each(text: str) -> str:
    """`fold` character by character, without collapsing blanks: the result has the length of `text`, so
    an offset in one is an offset in the other (a character whose fold is not one character is only
    lower-cased: ``ß`` stays ``ß``)."""
    if text.isascii():
        return text.lower()
    return text.translate(_FOLD_ONE)


# -- name keys ------------------------------------------------------------------------------------------

_nfc = unicodedata.normalize
_is_nfc = unicodedata.is_normalized
_KEY_CACHE: dict[str, str] = {}
_KEY_CACHE_LIMIT = 200_000


def name_key(text: str) -> str:
    """The comparison form of a file name, path or link target, as Obsidian compares them: NFC, lower case
    (`é` written as `e` + combining accent and `É` are the same letter; `e` and `é` are not)."""
    found = _KEY_CACHE.get(text)
    if found is not None:
        return found
    if len(_KEY_CACHE) >= _KEY_CACHE_LIMIT:
        _KEY_CACHE.clear()
    found = _KEY_CACHE[text] = share(name_key_uncached(text))
    return found


def name_key_uncached(text: str) -> str:
    """`name_key(text)` without filling its cache (an answer already there is taken): for a caller that
    looks at many names once, whose answers would only stay in memory."""
    found = _KEY_CACHE.get(text)
    if found is not None:
        return found
    key = text
    if not key.isascii() and not _is_nfc("NFC", key):
        key = _nfc("NFC", key)
    lower = key.lower()
    return key if lower == key else lower  # (most names are already lower-case: the caller's string, not a copy)


def name_key_fast(text: str) -> str:
    """`name_key(text)`, an ASCII name (most) answered by its lower case alone, without `name_key`'s cache
    (for callers that keep their own answer per name, or look at every file once)."""
    if not text.isascii():
        return name_key(text)
    lower = text.lower()
    return text if lower == text else lower  # (an already lower-case name: the caller's string, not a copy)


def clear_name_keys() -> None:
    """Empty `name_key`'s cache (after a vault is loaded: it is refilled a few entries per update)."""
    _KEY_CACHE.clear()


def loose_name_key(text: str) -> str:
    """NFC and full case folding (``Straße`` = ``STRASSE``): equal for any two names `name_key` finds equal,
    and for some more. What a hidden note's names are compared with, so that a doubt hides."""
    return _nfc("NFC", text).casefold()


# -- edit distance -------------------------------------------------------------------------------------

_DISTANCES: dict[bool, Any] = {}


def _distance_function(transpositions: bool) -> Any:
    # RapidFuzz is imported on first use: most commands never compare two words this way.
    from rapidfuzz.distance import OSA, Levenshtein

    _DISTANCES[False] = Levenshtein.distance
    _DISTANCES[True] = OSA.distance
    return _DISTANCES[transpositions]


def edit_distance(a: str, b: str, limit: int | None = None, *, transpositions: bool = False) -> int:
    """The number of single-character insertions, deletions and substitutions that turn `a` into `b`
    (Levenshtein); with `transpositions`, a swap of two neighbouring characters counts as one edit
    (optimal string alignment). Past `limit`, `limit + 1`: exact up to the limit, which is all a ranking
    against a threshold needs, and cheaper."""
    distance = _DISTANCES.get(transpositions) or _distance_function(transpositions)
    if limit is None:
        return distance(a, b)
    return distance(a, b, score_cutoff=limit)
