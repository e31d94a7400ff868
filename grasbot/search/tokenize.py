"""The French (and English) tokenizer that every retrieval field and every question goes through.

Pipeline, per text: `c++` -> `cpp` and `c#` -> `csharp` (before punctuation is lost), French elisions
(`l'`, `d'`, `qu'`, `j'`, `n'`, `s'`, `c'`, `m'`, `t'`) removed, lowercase, split on anything that is not a
letter or a digit (so `-`, `_`, `'`, `?`, `.` never stay in a token), accents folded, stop words dropped
(French, English, and the conversational fillers of a question: "parle-moi", "peux-tu", ...), Snowball
French stemming. The parts of an identifier joined by `_` (`expand_by_graph`, `so_long`) keep their stop
words: they are one name, and `expand_by_graph` is not any note with `expand` and `graph`. So does a
stop word written with a capital right after a capitalised word: the plan "Sync Plus" is not "Sync".

Folding happens *before* stemming on purpose: a visitor who types `securite` must meet the note that says
`sécurité`, so both spellings have to reach the stemmer as the same string. Stems are cached per word: a
vault has a few tens of thousands of distinct words, and the cache makes tokenizing a question a handful
of dict lookups.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from itertools import chain
from operator import itemgetter

import Stemmer

from grasbot.text import fold

__all__ = [
    "SEPARATOR", "STOP_WORDS", "count_tokens", "raw_word_counts", "raw_word_tokens", "raw_words_of", "raw_words_tokens",
    "stem", "stem_words",
    "token_counts",
    "tokenize", "tokenize_short", "words",
]

_CPP = re.compile(r"(?<![\w+])c\s?\+\+", re.IGNORECASE)
_CSHARP = re.compile(r"(?<![\w#])c\s?#", re.IGNORECASE)
# Elided articles and pronouns (`l'`, `d'`, `qu'`, `j'`, `n'`, `s'`, `m'`, `t'`) split off as one-letter
# words (or `qu`) that are stop words. `c'` is the exception: a lone `c` is the C language, so the `c'`
# of `c'est` is removed before splitting.
_ELISION = re.compile(r"\bc['’ʼ`](?=\w)")
_WORD = re.compile(r"[^\W_]+")
_CHUNK = re.compile(r"\w+")  # words with their underscores: identifiers

_FRENCH = """
a à ai aie aient aies ait alors as au aucun aucune aupres auquel aura aurai auraient aurais aurait auras
aurez auriez aurions aurons auront aussi autre autres aux avaient avais avait avant avec avez aviez avions
avoir avons ayant ayez ayons bon ca ce ceci cela celle celles celui cependant certain certaine certains
ces cet cette ceux chacun chaque chez ci comme comment d dans de des desquels desquelles deja donc dont du
duquel durant elle elles en encore entre es est et etaient etais etait etant etes ete etre eu eue eues
eumes eurent eus eusse eussent eusses eussiez eussions eut eutes eux fait faite faites fais faisait faire
faits faisons faisiez faisions faisaient faisant fasse fassent fera ferai ferais ferait ferions feriez
feraient feras ferez ferons feront font fut furent fus fusse fussent fusses fussiez fussions fut futes hors i ici il ils j je jusqu jusque l
la laquelle le lequel les lesquels lesquelles leur leurs lorsqu lorsque lui m ma mais me meme memes mes
moi mon n ne ni non nos notre nous o on ont or ou où par parce pas peu peut peux plus pour pourquoi
puisqu puisque qu quand que quel quelle quelles quels qui quoi quoiqu s sa sans se sera serai seraient
serais serait seras serez seriez serions serons seront ses si sien sienne siens soi soient sois soit sommes
son sont sous soyez soyons suis sur t ta te tes toi ton tous tout toute toutes tres tu un une unes uns
vers voici voila vos votre vous vu y
quelqu quelque quelques ya va vais vont etc aujourd hui
"""
# Words a visitor wraps around the real question ("peux-tu me dire...", "parle-moi de..."): they carry
# no subject, and an out-of-vocabulary filler would otherwise weigh as much as a rare content word when
# deciding whether the vault covers the question.
_FILLERS = """
bonjour salut merci stp svp combien parle parler parlez parles dis dire dites explique expliquer expliquez
expliques raconte raconter racontez montre montrer donne donner sais savoir savez connais connait
connaitre voudrais voulez veux veut vouloir aimerais pourrais pourriez pouvez pouvoir peut-etre
possible vraiment deja genre truc chose choses
"""
_ENGLISH = """
a about above after again against all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor
not now of off on once only or other our ours ourselves out over own same she should so some such than
that the their theirs them themselves then there these they this those through to too under until up
very was we were what when where which while who whom why will with would you your yours yourself
yourselves tell know please hi hello thanks
"""

STOP_WORDS: frozenset[str] = frozenset((_FRENCH + _FILLERS + _ENGLISH).split())

# No cache of PyStemmer's own (10,000 words by default, a few MB kept): `_token` caches the words a
# question meets, and a build or the spelling corrector stems many words once each (faster uncached).
_stemmer = Stemmer.Stemmer("french", 0)


@lru_cache(maxsize=1 << 18)
def _token(word: str) -> str:
    """The index token of one lowercase word, or "" for a stop word. Cached: see the module docstring."""
    folded = fold(word)
    if folded in STOP_WORDS or not folded:
        return ""
    if folded.isdigit():
        # A lone digit ("2 + 2", "les piles A et B", list numbering) names nothing; 42, 2024 do.
        return folded if len(folded) > 1 else ""
    stemmed = _stemmer.stemWord(folded)
    # Folding hides the `é` of `-ée`/`-é` endings from Snowball, which then leaves a bare `e`
    # (`developpee` -> `developpe`): drop it so the participle meets the verb and the noun.
    if len(stemmed) > 3 and stemmed.endswith("e"):
        stemmed = stemmed[:-1]
    return stemmed


def stem(word: str) -> str:
    """The token of one word (folded, stemmed), or "" when it is a stop word."""
    return _token(word.lower())


def stem_words(folded: list[str]) -> list[str]:
    """`stem` of many folded words in one C call, without filling the tokenizer's cache (the spelling
    corrector tries hundreds of non-words; tests/test_spelling.py checks it agrees with `stem`)."""
    out = [s[:-1] if len(s) > 3 and s[-1] == "e" else s for s in _stemmer.stemWords(folded)]  # as `_token`
    if not STOP_WORDS.isdisjoint(folded) or not "".join(folded).isalpha():  # rare: word by word
        for i, word in enumerate(folded):
            if word in STOP_WORDS or not word:
                out[i] = ""
            elif word.isdigit():
                out[i] = word if len(word) > 1 else ""
    return out


# Any of the rewrites below may apply (a superset of their own checks, either case): one C-level scan of a
# long text instead of seven substring searches.
_REWRITES = re.compile(r"[cC](?: ?[+#]|['’ʼ])")
_REWRITES_BYTES = re.compile(b"c(?: ?[+#]|'|" + "’".encode() + b"|" + "ʼ".encode() + b")")  # the same on UTF-8


# A stop word written with a capital right after a capitalised word is part of a name ("Sync Plus",
# "Premium Plus", "Obsidian Publish Standard"): joined to it by `_`, it is kept as an identifier's part
# (`_tokens_slow`). The capital must be the text's: a sentence's first word after a name ("Rust. Il")
# is not one (a full stop stands between), nor "Le Havre" (the first word is itself a stop word).
_CAP_PAIR = re.compile(r"([A-ZÀ-Ý][^\W_]*)(?=([ \u00a0]+)([A-Z][a-z]{1,9})(?![\w'’]))")
_CAP_STOPS = frozenset(w.capitalize() for w in STOP_WORDS if len(w) > 1 and w.isascii() and w.isalpha())


def _named_stops(text: str) -> list[int]:
    """Where to join: the offsets of the blanks between a capitalised word and a capitalised stop word
    after it (one C-level scan of the capitalised pairs; the stop words checked in a set)."""
    out = []
    for match in _CAP_PAIR.finditer(text):
        if match.group(3) in _CAP_STOPS and fold(match.group(1)) not in STOP_WORDS:
            out.append(match.end())
    return out


def _join_named_stops(text: str, at: list[int]) -> str:
    parts = []
    last = 0
    for start in at:
        end = start
        while text[end] in " \u00a0":
            end += 1
        parts.append(text[last:start])
        parts.append("_")
        last = end
    parts.append(text[last:])
    return "".join(parts)


def _case_simple(text: str) -> bool:
    """False when `text` holds one of the two characters whose lower case is not one letter for one letter,
    word by word: `İ` becomes `i` and a combining dot (which splits a word), `Σ` depends on the next letter."""
    return "\u0130" not in text and "\u03a3" not in text


def _prepare(text: str) -> str:
    named = _named_stops(text)
    if named:
        text = _join_named_stops(text, named)
    if len(text) > 200 and _REWRITES.search(text) is None and _case_simple(text):
        # Nothing to rewrite: no need to lowercase a long body here (a copy of it). `_TABLE` lowercases
        # ASCII letters and `fold` every other one, word by word, to the same tokens.
        return text
    text = text.lower()
    if "c+" in text or "c +" in text:
        text = _CPP.sub(" cpp ", text)
    if "c#" in text or "c #" in text:
        text = _CSHARP.sub(" csharp ", text)
    if "c'" in text or "c’" in text or "cʼ" in text:
        if len(text) < 200:
            text = _ELISION.sub(" ", text)
        else:  # long bodies: plain replaces run in C, far faster than the regex
            for quote in ("'", "’", "ʼ"):
                elided = "c" + quote
                if elided in text:
                    text = text.replace(" " + elided, "  ").replace("\n" + elided, "\n ").replace("(" + elided, "( ")
                    if text.startswith(elided):
                        text = " " + text[2:]
    return text


def words(text: str) -> list[str]:
    """The words of `text`, folded, without stop words and without stemming (for display and phrases)."""
    out = []
    for word in _WORD.findall(_prepare(text)):
        folded = fold(word)
        if folded and folded not in STOP_WORDS:
            out.append(folded)
    return out


def _tokens_slow(text: str) -> list[str]:
    token = _token
    if "_" not in text:
        return [t for t in map(token, _WORD.findall(text)) if t]
    out: list[str] = []
    for chunk in _CHUNK.findall(text):
        parts = [p for p in chunk.split("_") if p]
        if len(parts) < 2:
            out.extend(t for t in map(token, parts) if t)
            continue
        # An identifier (`expand_by_graph`, `so_long`, `is_public`): one name, so its stop words are
        # part of it and kept (folded, of two letters or more): `expand_by_graph` is not `expand graph`.
        for part in parts:
            found = token(part)
            if not found:
                folded = fold(part)
                found = folded if len(folded) > 1 and folded.isalpha() else ""
            if found:
                out.append(found)
    return out


# Fast path for long texts: bytes.translate + split run in C. ASCII punctuation becomes a blank, ASCII
# letters are lowercased, every non-ASCII byte stays inside its word; a raw word is then mapped to its
# tokens through a cache, and the rare word with non-ASCII punctuation glued to it (`l’objectif`,
# `«mot»`) takes the regex path above once, on its first appearance.
_TABLE = bytes(
    (c + 32 if 65 <= c <= 90 else c) if (c >= 0x80 or chr(c).isalnum() or c == 0x5F) else 32 for c in range(256)
)  # `_` stays inside a raw word: an identifier's parts are read together (`_tokens_slow`)
_RAW: dict[bytes, tuple[str, ...]] = {}


def raw_word_tokens(raw: bytes) -> tuple[str, ...]:
    """The tokens of one raw word of `raw_word_counts`: usually one, none for a stop word, several when
    non-ASCII punctuation is glued to it (`l’objectif`). Cached."""
    found = _RAW.get(raw)
    if found is None:
        found = tuple(_tokens_slow(raw.decode("utf-8", "replace")))
        if len(_RAW) < 1 << 20:
            _RAW[raw] = found
    return found


def raw_words_tokens(raws: Sequence[bytes]) -> list[tuple[str, ...]]:
    """`raw_word_tokens` of many raw words at once: stemmed in one C call (`stem_words`), and without
    filling the tokenizer's caches (an index build learns a vault's thousands of distinct body words
    once, in its own map)."""
    texts = [raw.decode("utf-8", "replace") for raw in raws]
    # An ASCII raw word is one word (`_TABLE` left only letters and digits in it); others are split as
    # `_tokens_slow` splits them.
    parts = [[text] if text.isascii() and "_" not in text else _WORD.findall(text) for text in texts]
    folded = list(map(fold, chain.from_iterable(parts)))
    stems = stem_words(folded) if folded else []
    out: list[tuple[str, ...]] = []
    at = 0
    for text, part in zip(texts, parts):
        end = at + len(part)
        # an identifier keeps its stop words (`_tokens_slow`): rare, word by word
        out.append(tuple(_tokens_slow(text)) if "_" in text else tuple(s for s in stems[at:end] if s))
        at = end
    return out


@lru_cache(maxsize=1 << 16)
def tokenize_short(text: str) -> tuple[str, ...]:
    """`tokenize` for short strings that repeat across notes (tags, aliases, sample questions), cached."""
    return tuple(tokenize(text))


def tokenize(text: str) -> list[str]:
    """The index tokens of `text`, in order, repeats kept (term frequencies need them)."""
    out: list[str] = []
    get = _RAW.get
    for raw in _prepare(text).encode("utf-8", "surrogatepass").translate(_TABLE).split():
        found = get(raw)
        if found is None:
            found = raw_word_tokens(raw)
        out.extend(found)
    return out


#: The raw word that ends each text's words in `raw_words_of`: a byte that no UTF-8 text holds.
SEPARATOR = b"\xff"
_TABLE_SEPARATOR = SEPARATOR + _TABLE[1:]  # `_TABLE`, with NUL (the separator before encoding) to SEPARATOR


def raw_words_of(texts: Sequence[str]) -> list[bytes] | None:
    """The raw words of each text in order (see `raw_word_counts`), each text's followed by `SEPARATOR`, in
    one pass; None when a text needs a rewrite first (`c++`, `c#`, `c'`, a letter whose lower case is not
    one letter) or holds a NUL: then `tokenize` them. Otherwise the tokens of a text's raw words, one after
    the other, are `tokenize(text)`: lowercasing it first changes no token (`raw_word_tokens` folds)."""
    joined = " \x00 ".join(texts) + " \x00"
    if joined.count("\x00") != len(texts) or _REWRITES.search(joined) is not None or not _case_simple(joined) or _named_stops(joined):
        return None
    return joined.encode("utf-8", "surrogatepass").translate(_TABLE_SEPARATOR).split()


def raw_word_counts(text: str) -> Counter[bytes]:
    """The raw words of `text` with their counts: byte strings, ASCII letters lowercased, split on ASCII
    punctuation and blanks (see `_TABLE`). `raw_word_tokens` gives a raw word's tokens; an index that maps
    raw words to term ids once (a vault has few distinct words) tokenizes a long text with C-level passes."""
    if len(text) > 200 and _case_simple(text):
        # `_prepare`'s test on the UTF-8 bytes, ASCII-lowercased: a faster scan of a long body.
        data = text.encode("utf-8", "surrogatepass")
        if _REWRITES_BYTES.search(data.lower()) is None and not _named_stops(text):
            return Counter(data.translate(_TABLE).split())
    return Counter(_prepare(text).encode("utf-8", "surrogatepass").translate(_TABLE).split())


# Raw word -> its single token ("" for a stop word, "\0" when it splits into several tokens): lets a long
# text be mapped with one C-level multi-get instead of a Python loop per word.
_SINGLE: dict[bytes, str] = {}
_MULTI = "\0"


def token_counts(text: str) -> tuple[list[str], list[int]]:
    """Tokens of `text` with their counts, one entry per distinct raw word: a token may appear more than
    once (`pile`, `piles`) and "" stands for stop words. Cheaper than `count_tokens` on long texts;
    the caller sums duplicates and drops ""."""
    raw_counts = raw_word_counts(text)
    if not raw_counts:
        return [], []
    # set.difference with a dict checks each of our words in the dict (`keys() - keys()` would walk the
    # whole cache instead).
    missing = set(raw_counts).difference(_SINGLE)
    for raw in missing:
        found = raw_word_tokens(raw)
        _SINGLE[raw] = found[0] if len(found) == 1 else ("" if not found else _MULTI)
    keys = list(raw_counts)
    tokens = list(itemgetter(*keys)(_SINGLE)) if len(keys) > 1 else [_SINGLE[keys[0]]]
    counts = list(raw_counts.values())
    if _MULTI in tokens:
        for raw, token in zip(keys, list(tokens)):
            if token == _MULTI:
                for extra in raw_word_tokens(raw):
                    tokens.append(extra)
                    counts.append(raw_counts[raw])
        tokens = [t if t != _MULTI else "" for t in tokens]
    if len(_SINGLE) > 1 << 21:  # bound the cache on pathological input (it is only a cache)
        _SINGLE.clear()
    return tokens, counts


def count_tokens(text: str) -> dict[str, int]:
    """Term frequencies of `text` (the same tokens as `tokenize`)."""
    out: dict[str, int] = {}
    for token, count in zip(*token_counts(text)):
        if token:
            out[token] = out.get(token, 0) + count
    return out
