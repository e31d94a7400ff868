"""What a piece of text claims, in comparable form: the verifier's view of a sentence or a passage.

Two kinds of content, checked differently by `grasbot.answer.verify`:

- **anchors** must be found exactly (after normalisation) in the evidence: numbers with their unit
  (`9 millions` = `9 000 000`, `1,2 Go` = `1.2 go`, `trois` = `3`, `une quarantaine` = `40`, `99e` = `99`),
  versions (`3.11`, `v1.2.3`), months, proper names and acronyms (`Rust` mid-sentence, `MQTT`, `TimescaleDB`,
  `k3s`), inline code, and «quoted» spans;
- **content words** are the engine's index tokens (`grasbot.search.tokenize`: folded, stop words out,
  Snowball-stemmed), compared on their first `KEY_LENGTH` characters so that derivations the stemmer keeps
  apart (`développeur`/`développement`) still meet; the vault lexicon's synonyms count as a match too.

A sentence's first word is capitalised by grammar, not because it is a name: it is a name only when it is
an acronym or mixes case or digits (`PostgreSQL`, `MQTT`), or is written with a capital in the passages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from grasbot.answer.verify_sentences import strip_citations
from grasbot.search.tokenize import STOP_WORDS, fold, tokenize

__all__ = ["KEY_LENGTH", "Claims", "MONTHS", "Number", "claims_of", "facts_of", "fold_text", "key", "negated", "negated_keys", "normalise_phrase", "passage_text", "plain_text", "quotes_of", "words_of"]

#: Content words are compared on this many leading characters of their stem (see the module docstring).
KEY_LENGTH = 7

MONTHS = {
    "janvier": 1, "fevrier": 2, "mars": 3, "avril": 4, "mai": 5, "juin": 6, "juillet": 7, "aout": 8,
    "septembre": 9, "octobre": 10, "novembre": 11, "decembre": 12,
    "january": 1, "february": 2, "march": 3, "april": 4, "june": 6, "july": 7, "august": 8,
    "september": 9, "october": 10, "november": 11, "december": 12,
}  # fmt: skip

#: Days of the week: dates, checked exactly like months ("le samedi matin" is not "le dimanche matin").
DAYS = ("lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche",
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")  # fmt: skip

_UNITS = {
    "h": "h", "heure": "h", "heures": "h", "hour": "h", "hours": "h",
    "min": "min", "minute": "min", "minutes": "min",
    "s": "s", "seconde": "s", "secondes": "s", "second": "s", "seconds": "s", "sec": "s",
    "ms": "ms", "milliseconde": "ms", "millisecondes": "ms",
    "j": "d", "jour": "d", "jours": "d", "day": "d", "days": "d",
    "semaine": "w", "semaines": "w", "week": "w", "weeks": "w",
    "mois": "mo", "month": "mo", "months": "mo",
    "an": "y", "ans": "y", "annee": "y", "annees": "y", "year": "y", "years": "y",
    "%": "%", "pourcent": "%", "percent": "%",
    "ko": "kb", "kb": "kb", "mo": "mb", "mb": "mb", "go": "gb", "gb": "gb", "to": "tb", "tb": "tb",
    "km": "km", "m": "m", "cm": "cm", "mm": "mm", "kg": "kg", "g": "g", "t": "t", "tonnes": "t",
    "w": "w_", "kw": "kw", "mw": "mw", "kwc": "kwc", "mwc": "mwc", "kwh": "kwh", "mwh": "mwh", "gwh": "gwh",
    "€": "eur", "euro": "eur", "euros": "eur", "eur": "eur", "$": "usd", "dollars": "usd",
}  # fmt: skip
_MULTIPLIERS = {"mille": 1000, "millier": 1000, "milliers": 1000, "k": 1000, "million": 10**6, "millions": 10**6,
                "milliard": 10**9, "milliards": 10**9, "thousand": 1000, "billion": 10**9}  # fmt: skip
_WORD_NUMBERS = {
    "zero": 0, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "six": 6, "sept": 7, "huit": 8, "neuf": 9,
    "dix": 10, "onze": 11, "douze": 12, "treize": 13, "quatorze": 14, "quinze": 15, "seize": 16,
    "vingt": 20, "trente": 30, "quarante": 40, "cinquante": 50, "soixante": 60, "cent": 100, "mille": 1000,
    "dizaine": 10, "douzaine": 12, "quinzaine": 15, "vingtaine": 20, "trentaine": 30, "quarantaine": 40,
    "cinquantaine": 50, "soixantaine": 60, "centaine": 100, "two": 2, "three": 3, "four": 4, "five": 5,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "twelve": 12, "twenty": 20, "hundred": 100,
    "premier": 1, "premiere": 1, "deuxieme": 2, "troisieme": 3, "quatrieme": 4, "cinquieme": 5, "dizaines": 10, "centaines": 100,
}  # fmt: skip
# `un`/`une`/`one` are articles far more often than numbers: only before a multiplier ("un million").
_ARTICLE_ONE = {"un", "une", "one"}

# A number as written: `9`, `2024`, `9 000 000`, `1,2`, `3.11`, `v1.2.3`, `99e`, `1er`, `+40`, `40 %`.
_NUMBER = re.compile(
    r"(?<![\w.,])(v)?(\d{1,3}(?:[ \u00a0\u202f]\d{3})+(?![\d,.]\d)|\d+)((?:[.,]\d+)*)(er|re|e|ème|eme|è|ᵉ|x)?(?![\w])",
    re.IGNORECASE,
)
_AFTER_NUMBER = re.compile(r"[ \u00a0\u202f]*(%|€|\$|[^\W\d_]+)")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_WORDS = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*")
_TOKEN_WORDS = re.compile(r"[^\W_]+")
_QUOTE = re.compile(r"«\s*([^«»]{2,300}?)\s*»|“([^“”]{2,300}?)”|\"([^\"\n]{2,300}?)\"")
_CODE = re.compile(r"`([^`\n]{1,80})`")
_PATH = re.compile(r"(?<![\w/])/[a-z][\w-]*(?:/[\w-]+)*")
_URL = re.compile(r"https?://\S+|\b[\w-]+\.(?:dev|com|fr|org|net|io)\b\S*")
# "ne ... plus que" restricts ("ne prend plus que six minutes"), it does not deny.
_NEGATION = re.compile(
    r"\b(?:ne|n'|n’)\s*(?:\w+\s+){0,3}?(?:pas|jamais|aucun|aucune|rien|plus(?!\s+(?:que|qu['’]))|guere|nullement)\b"
    r"|\b(?:jamais|aucun|aucune|sans|nul|nulle)\b|\bnot\b|\bnever\b|\bno\b"
)
_CLAUSE = re.compile(r"[^,;:.!?()\[\]«»]+")  # (a line break inside a clause is a wrapped line)


@lru_cache(maxsize=1 << 16)
def _fold_word(word: str) -> str:
    return fold(word)


# The accented letters of French text, folded as `grasbot.search.tokenize.fold` folds them, in one C-level
# `str.translate` (fold's per-character walk is most of the cost of reading passages).
_LATIN = "àáâãäåçèéêëìíîïñòóôõöùúûüýÿ"
_FOLD_TABLE = str.maketrans({**{c: fold(c) for c in _LATIN}, "œ": "oe", "æ": "ae", "ß": "ss"})


def fold_text(text: str) -> str:
    """`fold(text)` (lowercase, no accents), fast on French text; any other letter takes `fold` itself."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    quick = lowered.translate(_FOLD_TABLE)
    return quick if quick.isascii() else fold(text)


def key(token: str) -> str:
    """The comparable form of an index token: its first KEY_LENGTH characters."""
    return token[:KEY_LENGTH]


@dataclass(frozen=True, slots=True)
class Number:
    """A number found in text: its value (a normalised decimal string) and its unit class ("" for none)."""

    value: str
    unit: str = ""
    written: str = ""  # as in the text, for reasons

    def label(self) -> str:
        return self.written or self.value


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except InvalidOperation:
        return None


def _norm(value: Decimal) -> str:
    out = format(value.normalize(), "f")
    return out.rstrip("0").rstrip(".") if "." in out else out


def _unit_after(text: str, end: int) -> tuple[str, int]:
    match = _AFTER_NUMBER.match(text, end)
    if match is None:
        return "", end
    word = fold(match.group(1))
    if word == "pour" and fold(text[match.end(): match.end() + 5]).strip().startswith("cent"):
        return "%", match.end() + 5
    return word, match.end()


_TIME_OF_DAY = re.compile(r"(?<![\w.,])(\d{1,2})[ \u00a0\u202f]?h[ \u00a0\u202f]?(\d{2})(?!\d)")


def _numbers(text: str) -> list[Number]:
    found: list[Number] = []
    # "08 h 30", "6h30": a time of day, not a duration of 8 hours and a number 30
    for match in _TIME_OF_DAY.finditer(text):
        found.append(Number(f"{int(match.group(1))}:{match.group(2)}", "time", match.group(0)))
    if found:
        text = _TIME_OF_DAY.sub(lambda m: " " * len(m.group(0)), text)
    for match in _NUMBER.finditer(text):
        v, digits, rest, suffix = match.group(1), match.group(2), match.group(3), match.group(4)
        digits = re.sub(r"[ \u00a0\u202f]", "", digits)
        written = match.group(0)
        if v or rest.count(".") + rest.count(",") >= 2 or (rest.startswith(".") and len(rest) > 1 and digits and re.search(r"(?i)(version|python|v)\s*$", text[: match.start()])):
            # a version: compared as written, dots and all
            found.append(Number(digits + rest.replace(",", "."), "version", written))
            continue
        value = _decimal(digits + rest.replace(",", "."))
        if value is None:
            continue
        unit = ""
        if not suffix or suffix.lower() == "x":
            word, after = _unit_after(text, match.end())
            if word in _MULTIPLIERS:
                value *= _MULTIPLIERS[word]
                word, after = _unit_after(text, after)
                if word in ("de", "d"):
                    word, after = _unit_after(text, after)
            unit = _UNITS.get(word, "")
            if not unit and word.rstrip("s") in _UNITS and len(word) > 2:
                unit = _UNITS[word.rstrip("s")]
        found.append(Number(_norm(value), unit, written.strip()))
    # numbers written as words: "trois instances", "vingt-deux", "une quarantaine de Mo", "un million"
    words = [(_fold_word(m.group(0)), m.start(), m.end()) for m in _TOKEN_WORDS.finditer(text)]
    i = 0
    while i < len(words):
        folded = words[i][0]
        nxt = words[i + 1][0] if i + 1 < len(words) else ""
        prev = words[i - 1][0] if i else ""
        value = _WORD_NUMBERS.get(folded)
        if value is None and folded in _ARTICLE_ONE and nxt in _MULTIPLIERS:
            value = 1
        if value is None or (folded == "cent" and prev == "pour"):
            i += 1
            continue
        total = Decimal(value)
        j = i + 1
        while j < len(words) and words[j][0] in _WORD_NUMBERS and _WORD_NUMBERS[words[j][0]] < 10 <= total:
            total += _WORD_NUMBERS[words[j][0]]  # "vingt-deux", "dix-huit"
            j += 1
        unit, after = _unit_after(text, words[j - 1][2])
        if unit in _MULTIPLIERS:
            total *= _MULTIPLIERS[unit]
            unit, after = _unit_after(text, after)
            j += 1
        if unit in ("de", "d"):
            unit, _ = _unit_after(text, after)
        found.append(Number(_norm(total), _UNITS.get(unit, ""), text[words[i][1]:words[j - 1][2]]))
        i = j
    return found


def facts_of(text: str) -> tuple[tuple[Number, ...], frozenset[str], frozenset[str]]:
    """The numbers, months and folded words (`words_of`) of a passage's sentence, already `plain_text`."""
    words = words_of(text)
    return tuple(dict.fromkeys(_numbers(text))), frozenset(w for w in words if w in MONTHS or w in DAYS), words


def words_of(text: str) -> frozenset[str]:
    """The folded words of `text`, without the units that follow a number (the `Go` of `1,2 Go` is not
    the language): where an answer's names are looked up."""
    out: set[str] = set()
    after_number = False
    for part in _TOKEN_WORDS.findall(text):
        folded = _fold_word(part)
        if not (after_number and (folded in _UNITS or folded in _MULTIPLIERS)):
            out.add(folded)
        after_number = part.isdigit() or folded in _WORD_NUMBERS or folded in _MULTIPLIERS
    return frozenset(out)


def quotes_of(text: str) -> list[str]:
    """The «quoted» spans of `text`, normalised (folded, punctuation to blanks, blanks collapsed)."""
    out = []
    for match in _QUOTE.finditer(text):
        inner = next(g for g in match.groups() if g is not None)
        norm = normalise_phrase(inner)
        if len(norm.split()) >= 2 or len(norm) >= 4:
            out.append(norm)
    return out


def normalise_phrase(text: str) -> str:
    """Folded words of `text` joined by one blank: a quote and its source compare on this."""
    return " ".join(_TOKEN_WORDS.findall(fold_text(text)))


def negated(text: str) -> bool:
    """Whether `text` holds a negation (`ne ... pas`, `jamais`, `aucun`, `sans`, `not`)."""
    return _NEGATION.search(fold_text(text)) is not None


# The negations that deny a statement; `sans` ("sans connexion") qualifies one instead.
_DENIAL = re.compile(
    r"\b(?:ne|n'|n’)\s*(?:\w+\s+){0,3}?(?:pas|jamais|aucun|aucune|rien|plus(?!\s+(?:que|qu['’]))|guere|nullement)\b"
    r"|\b(?:jamais|aucun|aucune|nul|nulle)\b|\bnot\b|\bnever\b"
)


def negated_keys(text: str) -> frozenset[str]:
    """The content keys of the clauses of `text` that deny something (`ne ... pas`, `aucun`, `jamais`;
    not `sans`): what the text says is not so."""
    out: set[str] = set()
    for clause in _CLAUSE.findall(fold_text(text)):
        if _DENIAL.search(clause) is not None:
            out.update(key(t) for t in tokenize(clause))
    return frozenset(out)


@dataclass(frozen=True, slots=True)
class Claims:
    """What a sentence says: its anchors (exact) and its content keys (by stem)."""

    numbers: tuple[Number, ...]
    months: tuple[str, ...]  # and days of the week
    names: tuple[str, ...]  # folded names, acronyms, identifiers and inline code
    quotes: tuple[str, ...]
    keys: tuple[str, ...]  # content keys, in order, deduplicated
    denied: frozenset[str]  # content keys of its negated clauses (empty: no negation)


def _is_name(word: str, first: bool, capitalised: frozenset[str]) -> bool:
    if len(word) < 2 or not word[0].isalpha() or _VERSION_WORD.match(word):
        return False  # "99e", "1er" are ordinals, "v1" the head of a version
    folded = fold(word)
    if folded in STOP_WORDS and not word.isupper():
        return False
    inner_caps = any(ch.isupper() for ch in word[1:])
    mixed = any(ch.isdigit() for ch in word)
    if (word.isupper() and sum(ch.isalpha() for ch in word) >= 2) or inner_caps or mixed:
        return True
    if not word[0].isupper():
        return False
    return not first or folded in capitalised


_MONTH_NAMES = ("", "janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre",
                "octobre", "novembre", "décembre")  # fmt: skip
_VERSION_WORD = re.compile(r"[vV]\d")


def _spell_date(match: re.Match[str]) -> str:
    return _spell_date_parts(match.group(1), match.group(2), match.group(3)) or match.group(0)


def _spell_date_parts(year: str, month: str, day: str) -> str | None:
    if not 1 <= int(month) <= 12 or not 1 <= int(day) <= 31:
        return None
    return f"{int(day)} {_MONTH_NAMES[int(month)]} {year}"


_DMY_DATE = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")  # 14/03/2023, the French order


_WIKILINK = re.compile(r"!?\[\[([^\[\]|#]*)(?:#[^\[\]|]*)?(?:\|([^\[\]]*))?\]\]")
_MDLINK = re.compile(r"!?\[([^\[\]]*)\]\([^()]*\)")


def passage_text(text: str) -> str:
    """A note's text as a reader sees it: `[[target|shown]]` is `shown`, `[[optimiseur-tournees]]` is
    `optimiseur tournees`, `[text](url)` is `text` (in an answer, `[[id]]` is a citation instead)."""
    if "[" not in text:
        return text
    text = _WIKILINK.sub(lambda m: m.group(2) if m.group(2) else m.group(1).replace("-", " ").replace("_", " "), text)
    return _MDLINK.sub(lambda m: m.group(1), text)


def plain_text(text: str) -> str:
    """`text` without citations, markdown emphasis, site paths and URLs, ISO dates spelt out as
    `18 mai 2026` (a passage's `2026-05-18` and an answer's "mai 2026" then compare); offsets not kept."""
    text = _ISO_DATE.sub(_spell_date, strip_citations(text))
    if "/" in text:
        text = _DMY_DATE.sub(lambda m: _spell_date_parts(m.group(3), m.group(2), m.group(1)) or m.group(0), text)
    text = _URL.sub(" ", text)
    text = _PATH.sub(" ", text)
    return text.replace("**", " ").replace("__", " ")


def claims_of(text: str, capitalised: frozenset[str] = frozenset()) -> Claims:
    """The claims of one answer sentence. `capitalised`: folded words the passages write with a capital
    in the middle of a sentence (so a sentence-initial `Rust` is a name, a sentence-initial `Ensuite` not)."""
    text = plain_text(text)
    quotes = tuple(quotes_of(text))
    codes = [fold(m.group(1)).strip() for m in _CODE.finditer(text)]
    text_nocode = _CODE.sub(lambda m: " " + m.group(1) + " ", text)
    numbers = tuple(dict.fromkeys(_numbers(text_nocode)))
    names: list[str] = [c for c in codes if c]
    months: list[str] = []
    first = True
    after_number = False
    for match in _WORDS.finditer(text_nocode):
        word = match.group(0)
        for part in re.split(r"[-'’]", word):
            if not part:
                continue
            folded = fold(part)
            if after_number and (folded in _UNITS or folded in _MULTIPLIERS):
                pass  # "1,2 Go", "40 Mo": a unit, not the Go language
            elif (folded in MONTHS and (folded != "mai" or not part.isupper())) or folded in DAYS:
                months.append(folded)
            elif _is_name(part, first, capitalised):
                names.append(folded)
            first = False
            after_number = part.isdigit() or folded in _WORD_NUMBERS or folded in _MULTIPLIERS
    keys = []
    seen: set[str] = set()
    for token in tokenize(text_nocode):
        if token.isdigit() or token in _ANCHOR_TOKENS or token[0].isdigit():
            continue  # numbers, units and months are anchors, checked exactly
        k = key(token)
        if k not in seen:
            seen.add(k)
            keys.append(k)
    denied = negated_keys(text) if negated(text) else frozenset()
    if negated(text) and not denied:
        denied = frozenset({"\0"})  # a negation with no content word of its own ("pas du tout") still counts
    return Claims(numbers, tuple(dict.fromkeys(months)), tuple(dict.fromkeys(names)), quotes, tuple(keys), denied)


#: Tokens of months, number words and units: anchors, so not content words too.
_ANCHOR_TOKENS = frozenset(
    t for word in (*MONTHS, *DAYS, *_WORD_NUMBERS, *_MULTIPLIERS, *_UNITS) for t in tokenize(word)
)
