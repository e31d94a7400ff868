"""Reading a vault's TAXONOMIE.md: the controlled vocabulary and the counting rules the linter enforces.

TAXONOMIE.md stays a document people read and edit (prose, tables, rules written as sentences). This module
derives machine rules from it without asking the author to change how it is written:

Sections
    An ATX heading (``#`` .. ``######``) that names a field in backticks with a colon, such as
    ``## Domaines (`domains:`)``, opens the section of that field (a bare name in parentheses,
    ``(`domains`)``, works too). The section runs until the next heading of the same or a higher level, or
    the next heading that names a field. Headings inside code fences and HTML comments do not count.

Allowed values
    The first column of the section's tables lists the allowed values (backticks and emphasis stripped; a
    cell holding several backticked words gives several values); the other columns, joined with `` — ``,
    become the value's description. Only tables directly under the field's heading count; tables under its
    subheadings count only when there is none (values grouped by subheading), so a "### Retired values"
    table does not make its values allowed. A section without a table may instead list its values as
    bullets that start with a backticked word: ``- `public` (défaut) : ...``. A section that states an
    integer range (below) has a table of *usages*, not of values, and gets no vocabulary.

Open or closed
    "Liste fermée" (also "liste close", "closed list", "vocabulaire fermé"; accents and case ignored) in the
    section's prose makes the vocabulary closed: an unknown value is an error. "Liste ouverte", "open list"
    or a negation ("pas une liste fermée") keeps it open: an unknown value is a warning. A sentence that
    says it of another field only ("contrairement aux domaines (liste fermée), les tags sont libres") does
    not count. Without either, a list is open, except `visibility`, which is always closed (the engine
    treats any value but ``public`` as private, so an unknown one must be reported as an error).

Counts and ranges
    A sentence of the prose (bullets included, tables and code excluded) that bounds a number of items sets
    the list-length bounds of a field: "entre 1 et 4 domaines", "Entre 3 et 12 aliases par note",
    "2 à 6 answers", "de 1 à 4 domaines", "3–12 aliases", "au moins 1 domaine", "au plus 4 domaines",
    "pas plus de 4 domaines", "jusqu'à 12 aliases", "1 domaine minimum", "exactement 1 type", and the same
    in English ("between 1 and 4 domains", "at least", "at most", "up to", "from 2 to 6"). Numbers may be
    digits or words up to twelve ("un à trois"). The field is the one the noun after the numbers names
    (``domaines`` -> ``domains``, ``réponses``/``questions`` -> ``answers``; ``valeurs``/``éléments`` or a
    bare "par note" mean the section's own field); a phrase about something else ("un à trois mots") sets
    nothing. A sentence that says the value is an integer ("Entier de 1 à 10", "integer from 1 to 10") sets
    the *range* of the section's field instead. Bounds stated twice must agree; "entre 5 et 2" is an error.
    A sentence naming "champs obligatoires" (or "required fields") makes the backticked names in it required.

The ``yaml vaulttools`` fence
    Fenced ``yaml`` blocks are examples for the reader and are ignored. A fence whose info string is
    ``yaml vaulttools`` is configuration, for what the prose cannot say; it is applied after the prose, in
    file order, and has the last word. Every key is optional; an unknown key is an error::

        ```yaml vaulttools
        required: [title, slug, type]      # fields every note must have
        values:                            # add allowed values: a list, or value -> description
          type: [projet, competence, parcours, moc, technique]
        closed: [type]                     # unknown value = error
        open: [tags]                       # unknown value = warning
        counts: {tags: [0, 6], domains: {min: 1, max: 4}}   # list lengths; null = no bound
        ranges: {priority: [1, 10]}        # integer ranges
        filterable:                        # fields a question can filter on (grasbot/search/filters.py)
          classe: {words: [classe, class, niveau], ordinal: true}   # « classe 10 », « 10e »
        ```

Errors
    A file that cannot be read or decoded, a field section from which nothing can be read, a closed list
    without values, contradictory bounds or a malformed ``yaml vaulttools`` fence raise `TaxonomyError`,
    whose message names the file, the line and the section.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from grasbot import LIST_FIELDS, STR_FIELDS
from grasbot.text import fold_each

__all__ = [
    "TAXONOMY_FILENAME",
    "Bounds",
    "Taxonomy",
    "TaxonomyError",
    "Vocabulary",
    "find_taxonomy",
    "load_taxonomy",
    "parse_taxonomy",
]

#: The file name looked up in the vault and the folder above it.
TAXONOMY_FILENAME = "TAXONOMIE.md"

#: Fields whose vocabulary is closed even when the prose does not say so.
ALWAYS_CLOSED: tuple[str, ...] = ("visibility",)

#: Fields that hold one value: a count ("exactement un type") says nothing a list-length rule could check.
SCALAR_FIELDS: tuple[str, ...] = (*STR_FIELDS, "priority", "updated")

#: Keys a ``yaml vaulttools`` fence may hold.
FENCE_KEYS: tuple[str, ...] = ("required", "values", "closed", "open", "counts", "ranges", "filterable")


class TaxonomyError(Exception):
    """TAXONOMIE.md could not be read; the message names the file, the line and the section."""

    def __init__(self, path: str | Path, message: str, section: str | None = None, line: int | None = None):
        self.path = Path(path)
        self.section = section
        self.line = line
        self.reason = message
        where = f"{self.path}:{line}" if line is not None else f"{self.path}"
        in_section = f" (section « {section} »)" if section else ""
        super().__init__(f"{where}: {message}{in_section}")


@dataclass(frozen=True)
class Vocabulary:
    """The allowed values of one field, in file order, with their descriptions."""

    field: str
    values: dict[str, str]
    closed: bool
    line: int

    def allows(self, value: str) -> bool:
        """Exact membership (the vocabulary is case-sensitive, as the engine's matching is not)."""
        return value in self.values


@dataclass(frozen=True)
class Bounds:
    """Inclusive bounds; None means unbounded on that side. `line` is where the rule was read (not compared)."""

    min: int | None
    max: int | None
    line: int | None = field(default=None, compare=False)

    def allows(self, number: int) -> bool:
        return (self.min is None or number >= self.min) and (self.max is None or number <= self.max)

    def describe(self) -> str:
        """``1–4``, ``≥ 3``, ``≤ 12``: for messages."""
        if self.min is not None and self.max is not None:
            return str(self.min) if self.min == self.max else f"{self.min}–{self.max}"
        if self.min is not None:
            return f"≥ {self.min}"
        if self.max is not None:
            return f"≤ {self.max}"
        return "any"


@dataclass(frozen=True)
class Taxonomy:
    """Everything the linter takes from TAXONOMIE.md."""

    path: Path
    vocabularies: dict[str, Vocabulary]
    counts: dict[str, Bounds]
    ranges: dict[str, Bounds]
    required: tuple[str, ...] = ()
    #: field -> the fence's spec ({words: [...], ordinal: bool} or a list of words), for FilterConfig.parse
    filterable: dict[str, Any] = field(default_factory=dict)

    def vocabulary(self, field: str) -> Vocabulary | None:
        return self.vocabularies.get(field)


# ---------------------------------------------------------------------------------------------------------
# Finding and loading


def find_taxonomy(vault: Path, explicit: Path | None = None) -> Path | None:
    """--taxonomy FILE, else VAULT/TAXONOMIE.md, else TAXONOMIE.md in the folder above the vault.

    An explicit path is returned as given even when it does not exist, so that loading it reports the
    problem (the user asked for that file). The name is matched case-insensitively; an exact match wins.
    """
    if explicit is not None:
        return Path(explicit)
    vault = Path(vault)
    # The folder above as the user wrote it ("vault" -> "."), so messages show a path they recognise.
    above = vault.parent if vault.name not in ("", ".", "..") else vault.resolve().parent
    for folder in (vault, above):
        found = _file_named(folder, TAXONOMY_FILENAME)
        if found is not None:
            return found
    return None


def _file_named(folder: Path, name: str) -> Path | None:
    exact = folder / name
    if exact.is_file():
        return exact
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return None
    for entry in entries:
        if entry.name.lower() == name.lower() and entry.is_file():
            return entry
    return None


def load_taxonomy(path: str | Path) -> Taxonomy:
    """Read and parse a TAXONOMIE.md. Raises TaxonomyError (never anything else) when it cannot."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TaxonomyError(path, "no such file") from None
    except IsADirectoryError:
        raise TaxonomyError(path, "is a folder, not a file") from None
    except OSError as exc:
        raise TaxonomyError(path, f"cannot read the file: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TaxonomyError(path, f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8", line=line) from None
    return parse_taxonomy(text, path)


# ---------------------------------------------------------------------------------------------------------
# Splitting the Markdown into headings, tables, fences and prose


_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_FIELD_IN_HEADING = re.compile(r"`\s*([A-Za-z_][\w-]*)\s*:\s*`|\(\s*`\s*([A-Za-z_][\w-]*)\s*`\s*\)")


@dataclass
class _Table:
    line: int
    rows: list[tuple[int, list[str]]]  # (line, cells) of the body rows


@dataclass
class _Fence:
    line: int  # line of the opening fence
    info: str
    body: str


@dataclass
class _Section:
    heading: str
    level: int
    line: int
    field: str | None
    prose: list[tuple[int, str]] = field(default_factory=list)  # (line, text) outside tables and fences
    tables: list[_Table] = field(default_factory=list)
    fences: list[_Fence] = field(default_factory=list)
    sub_tables: list[_Table] = field(default_factory=list)  # tables under its untitled subheadings


def _split_cells(line: str) -> list[str]:
    """Cells of a table row; `\\|` is a pipe inside a cell (Obsidian tables escape wikilink pipes so)."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [cell.replace("\\|", "|").strip() for cell in re.split(r"(?<!\\)\|", body)]


def _sections(text: str) -> list[_Section]:
    """The file cut into sections; the part before the first heading is a section with no heading."""
    lines = text.splitlines()
    start = 0
    # Properties (frontmatter) at the top of the file, as Obsidian may add, are not part of the document.
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                start = i + 1
                break
    sections = [_Section(heading="", level=0, line=1, field=None)]
    i = start
    in_comment = False
    while i < len(lines):
        line = lines[i]
        number = i + 1
        current = sections[-1]
        if in_comment:
            if "-->" in line:
                in_comment = False
            i += 1
            continue
        if line.lstrip().startswith("<!--") and "-->" not in line:
            in_comment = True
            i += 1
            continue
        fence = _FENCE_OPEN.match(line)
        if fence:
            marker, info = fence.group(1), fence.group(2).strip()
            body: list[str] = []
            i += 1
            while i < len(lines):
                closing = lines[i].strip()
                if closing.startswith(marker[0] * len(marker)) and not closing.strip(marker[0]):
                    break
                body.append(lines[i])
                i += 1
            current.fences.append(_Fence(line=number, info=info, body="\n".join(body)))
            i += 1  # past the closing fence (or the end of the file: an unclosed fence runs to the end)
            continue
        heading = _HEADING.match(line)
        if heading:
            title = (heading.group(2) or "").strip()
            found = _FIELD_IN_HEADING.search(title)
            name = (found.group(1) or found.group(2)) if found else None
            sections.append(_Section(heading=title, level=len(heading.group(1)), line=number, field=name))
            i += 1
            continue
        if "|" in line and i + 1 < len(lines) and _TABLE_SEPARATOR.match(lines[i + 1]) and "-" in lines[i + 1]:
            table = _Table(line=number, rows=[])
            i += 2
            while i < len(lines) and lines[i].strip() and "|" in lines[i]:
                table.rows.append((i + 1, _split_cells(lines[i])))
                i += 1
            current.tables.append(table)
            continue
        current.prose.append((number, line))
        i += 1
    return sections


def _field_sections(sections: list[_Section]) -> list[_Section]:
    """Fold untitled-field subsections into the field section above them (until a same-or-higher heading)."""
    merged: list[_Section] = []
    owner: _Section | None = None
    for section in sections:
        if section.field is not None:
            owner = section
            merged.append(section)
            continue
        if owner is not None and section.level > owner.level:
            owner.prose.append((section.line, section.heading))  # a subheading reads as prose of the section
            owner.prose.extend(section.prose)
            owner.sub_tables.extend(section.tables)
            owner.fences.extend(section.fences)
            continue
        owner = None
        merged.append(section)
    return merged


# ---------------------------------------------------------------------------------------------------------
# Prose: sentences, folded for matching, with the line each character came from


# Typographic apostrophes become plain ones, and the emphasis and code marks blanks, before folding: one
# character for one, so that offsets keep their meaning.
_PROSE_MARKS = str.maketrans({"’": "'", "‘": "'", "`": " ", "*": " "})


def _fold(text: str) -> str:
    """Lowercase, accents removed, typographic apostrophes made plain; same length as `text`."""
    return fold_each(text.translate(_PROSE_MARKS))


@dataclass
class _Sentence:
    raw: str
    folded: str
    line_of: list[int]  # line number of each character

    def line_at(self, offset: int) -> int:
        return self.line_of[min(max(offset, 0), len(self.line_of) - 1)] if self.line_of else 0


def _sentences(prose: list[tuple[int, str]]) -> list[_Sentence]:
    """Paragraphs (a bullet starts a new one) joined across lines, then cut at . ! ? ;"""
    paragraphs: list[list[tuple[int, str]]] = []
    for number, line in prose:
        if not line.strip():
            paragraphs.append([])
            continue
        if _BULLET.match(line) or line.lstrip().startswith(">") or not paragraphs or not paragraphs[-1]:
            paragraphs.append([])
        paragraphs[-1].append((number, line.strip()))
    sentences: list[_Sentence] = []
    for paragraph in paragraphs:
        if not paragraph:
            continue
        raw = ""
        line_of: list[int] = []
        for number, text in paragraph:
            if raw:
                raw += " "
                line_of.append(number)
            raw += text
            line_of.extend([number] * len(text))
        folded = _fold(raw)
        start = 0
        for cut in re.finditer(r"[.!?;](?=\s|$)", folded):
            sentences.append(_Sentence(raw[start : cut.end()], folded[start : cut.end()], line_of[start : cut.end()]))
            start = cut.end()
        if start < len(raw):
            sentences.append(_Sentence(raw[start:], folded[start:], line_of[start:]))
    return sentences


# ---------------------------------------------------------------------------------------------------------
# Numbers and bounds in sentences

_NUMBER_WORDS = {
    "zero": 0, "un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "six": 6, "sept": 7,
    "huit": 8, "neuf": 9, "dix": 10, "onze": 11, "douze": 12,
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_N = r"(?:\d+|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")"
_DASH = r"\s*[-‐‑‒–—]\s*"

# Alternatives are tried left to right at each position; longer phrasings come first.
_BOUND_PATTERNS: list[tuple[str, str]] = [
    ("noun_min", rf"(?P<a>{_N})\s+(?P<noun>[a-z][a-z'-]*)\s+(?:(?:au\s+|at\s+(?:the\s+)?)?(?:minimum|min)|ou\s+plus|or\s+more)\b"),
    ("noun_max", rf"(?P<a>{_N})\s+(?P<noun>[a-z][a-z'-]*)\s+(?:(?:au\s+|at\s+(?:the\s+)?)?(?:maximum|max)|ou\s+moins|or\s+(?:fewer|less))\b"),
    ("between", rf"\b(?:entre|between)\s+(?P<a>{_N})\s+(?:et|and)\s+(?P<b>{_N})"),
    ("between", rf"\b(?:de|from)\s+(?P<a>{_N})\s+(?:a|to)\s+(?P<b>{_N})"),
    ("between", rf"(?<![\d-])(?P<a>\d+){_DASH}(?P<b>\d+)(?!\d|\s*[-‐‑‒–—]\s*\d)"),
    ("between", rf"(?P<a>{_N})\s+(?:a|to)\s+(?P<b>{_N})"),
    ("max", rf"\b(?:pas\s+plus\s+de|ne\s+\w+\s+pas\s+plus\s+de|au\s+plus|au\s+maximum|at\s+most|no\s+more\s+than|jusqu'a|up\s+to|maximum|max)\s+(?P<a>{_N})"),
    ("max", rf"(?:<=|≤)\s*(?P<a>{_N})"),
    ("min", rf"\b(?:au\s+moins|au\s+minimum|at\s+least|minimum|min)\s+(?P<a>{_N})"),
    ("min", rf"(?:>=|≥)\s*(?P<a>{_N})"),
    ("min", rf"(?P<a>{_N})\s+(?:ou\s+plus|or\s+more)\b"),
    ("max", rf"(?P<a>{_N})\s+(?:ou\s+moins|or\s+(?:fewer|less))\b"),
    ("exact", rf"\b(?:exactement|exactly)\s+(?P<a>{_N})"),
    ("below", rf"\b(?:moins\s+de|fewer\s+than|less\s+than)\s+(?P<a>{_N})"),
    ("above", rf"\b(?:plus\s+de|more\s+than)\s+(?P<a>{_N})"),
]


def _one_regex(patterns: list[tuple[str, str]]) -> re.Pattern[str]:
    """All the patterns as one alternation; group names get the pattern's index (a -> a3) to stay unique."""
    parts = []
    for i, (_kind, pattern) in enumerate(patterns):
        renamed = re.sub(r"\(\?P<(a|b|noun)>", lambda m: f"(?P<{m.group(1)}{i}>", pattern)
        parts.append(f"(?P<k{i}>{renamed})")
    return re.compile("|".join(parts))


@lru_cache(maxsize=None)
def _bound() -> re.Pattern[str]:
    """The bound patterns as one regex, compiled on first use (not paid by a command that imports this
    module without reading a taxonomy's prose: benchmarks/README.md, "Figures behind the code")."""
    return _one_regex(_BOUND_PATTERNS)


_WORD_BEFORE_NUMBER = re.compile(r"[\w']$")
_NOUN_AFTER = re.compile(r"\s*(?:d['e]\s*)?([a-z][a-z]*(?:'[a-z]+)?)")
_NUMBER_OF = re.compile(r"\b(?:nombre|number)\s+(?:de\s+|d'|of\s+)([a-z]+)")
_PER_NOTE = re.compile(r"\s*(?:par|per)\s+(?:note|fiche)\b")
_CONNECTOR = re.compile(r"^\s*(?:,|et|and|mais|but|ou|or)?\s*(?:,|et|and)?\s*$")
_INTEGER_WORDS = frozenset({"entier", "entiers", "integer", "integers", "int"})
_GENERIC_NOUNS = frozenset({"valeur", "valeurs", "element", "elements", "entree", "entrees", "item", "items",
                            "value", "values", "entry", "entries"})  # fmt: skip
#: Nouns a French or English sentence may use for a field's items.
_FIELD_NOUNS: dict[str, tuple[str, ...]] = {
    "domains": ("domaine", "domain"),
    "tags": ("tag", "etiquette", "label"),
    "aliases": ("alias", "aliase", "synonyme"),
    "answers": ("answer", "reponse", "question"),
    "linked": ("linked", "hub"),
    "related": ("related", "voisin"),
}


def _number(token: str) -> int:
    return int(token) if token.isdigit() else _NUMBER_WORDS[token]


def _variants(word: str) -> set[str]:
    """A word and its singular forms (domaines -> domaine, domain; aliases -> alias)."""
    forms = {word}
    if len(word) > 3 and word[-1] in "sx":
        forms.add(word[:-1])
    if len(word) > 4 and word.endswith("es"):
        forms.add(word[:-2])
    return forms


@dataclass
class _Bound:
    kind: str  # "count" or "range"
    field: str
    min: int | None
    max: int | None
    line: int


class _BoundReader:
    """Finds the count and range statements in the sentences of one section."""

    def __init__(self, path: Path, section: _Section, known_fields: set[str]):
        self.path = path
        self.section = section
        self.known = known_fields
        heading_words = re.findall(r"[a-z]+", _fold(re.sub(r"`[^`]*`|\([^)]*\)", " ", section.heading)))
        self.own_nouns: set[str] = set()
        if section.field:
            for word in (section.field, *heading_words, *_FIELD_NOUNS.get(section.field, ())):
                self.own_nouns |= _variants(word)

    def _field_for_noun(self, noun: str | None) -> str | None:
        if not noun:
            return None
        forms = _variants(noun.strip("'-"))
        if self.section.field and (forms & self.own_nouns or forms & _GENERIC_NOUNS):
            return self.section.field
        for name in sorted(self.known):
            candidates = set().union(*(_variants(w) for w in (name, *_FIELD_NOUNS.get(name, ()))))
            if forms & candidates:
                return name
        return None

    def says_closed(self, sentence: _Sentence) -> bool | None:
        """True/False when the sentence says this section's list is closed/open; None when it says neither,
        or says it of another field ("contrairement aux domaines (liste fermée), les tags sont libres")."""
        text = sentence.folded
        closed, opened = bool(_CLOSED.search(text)), bool(_open_re().search(text))
        if not closed and not opened:
            return None
        if opened:
            return False
        named = {self._field_for_noun(word) for word in re.findall(r"[a-z]+", text)} - {None}
        if named and self.section.field not in named:
            return None
        if self.section.field in named and len(named) > 1 and _FREE.search(text):
            return None
        return True

    def read(self, sentence: _Sentence) -> list[_Bound]:
        text = sentence.folded
        words = set(re.findall(r"[a-z]+", text))
        is_range = bool(words & _INTEGER_WORDS)
        found: list[tuple[int, int, int | None, int | None, str | None, bool]] = []  # start, end, lo, hi, noun, per_note
        for match in _bound().finditer(text):
            if match.start() > 0 and _WORD_BEFORE_NUMBER.search(text[: match.start()]) and text[match.start()].isdigit():
                continue  # a digit glued to a word ("42-commun" is not 42 to something)
            index = next(i for i in range(len(_BOUND_PATTERNS)) if match.group(f"k{i}") is not None)
            kind = _BOUND_PATTERNS[index][0]
            a = _number(match.group(f"a{index}"))
            b_text = match.groupdict().get(f"b{index}")
            b = _number(b_text) if b_text else None
            if kind in ("above", "below") and re.search(r"\b(?:pas|not|no|jamais|never)\b[^.]{0,25}$", text[: match.start()]):
                kind = "min" if kind == "below" else "max"  # "pas moins de 2" is at least 2, "pas plus de 4" at most 4
            lo, hi = {
                "between": (a, b), "min": (a, None), "noun_min": (a, None), "max": (None, a), "noun_max": (None, a),
                "exact": (a, a), "below": (None, a - 1), "above": (a + 1, None),
            }[kind]  # fmt: skip
            noun = match.groupdict().get(f"noun{index}")
            rest = text[match.end() :]
            if noun is None:
                after = _NOUN_AFTER.match(rest)
                noun = after.group(1) if after else None
            per_note = bool(_PER_NOTE.match(rest))
            if noun is not None and noun in _NUMBER_WORDS:
                noun = None
            found.append((match.start(), match.end(), lo, hi, noun, per_note))
        if not found:
            return []
        # "au moins 1 et au plus 4 domaines": a bound without its own noun takes the next one's.
        nouns = [f[4] for f in found]
        for i in range(len(found) - 2, -1, -1):
            if self._field_for_noun(nouns[i]) is None and _CONNECTOR.match(text[found[i][1] : found[i + 1][0]] + " "):
                nouns[i] = nouns[i + 1]
        before = _NUMBER_OF.search(text)
        bounds: list[_Bound] = []
        for (start, _end, lo, hi, _noun, per_note), noun in zip(found, nouns):
            line = sentence.line_at(start)
            target = self._field_for_noun(noun)
            if target is None and noun is None and before is not None and before.start() < start:
                target = self._field_for_noun(before.group(1))
            own_noun = bool(noun and _variants(noun) & self.own_nouns)
            if target in SCALAR_FIELDS and not is_range:
                continue
            if target is not None and not (is_range and target == self.section.field and not own_noun):
                bounds.append(_Bound("count", target, lo, hi, line))
            elif is_range and self.section.field:
                bounds.append(_Bound("range", self.section.field, lo, hi, line))
            elif per_note and self.section.field:
                bounds.append(_Bound("count", self.section.field, lo, hi, line))
        for bound in bounds:
            if bound.min is not None and bound.max is not None and bound.min > bound.max:
                raise TaxonomyError(
                    self.path,
                    f"contradictory bounds for `{bound.field}`: minimum {bound.min} is above maximum {bound.max}",
                    self.section.heading or None,
                    bound.line,
                )
        return bounds


def _merge(path: Path, section: str | None, into: dict[str, Bounds], bound: _Bound, what: str) -> None:
    old = into.get(bound.field)
    if old is None:
        into[bound.field] = Bounds(bound.min, bound.max, bound.line)
        return
    lo, hi = old.min, old.max
    for mine, theirs, side in ((bound.min, old.min, "minimum"), (bound.max, old.max, "maximum")):
        if mine is not None and theirs is not None and mine != theirs:
            raise TaxonomyError(
                path,
                f"the {what} of `{bound.field}` is stated twice and disagrees: {side} {mine} here, "
                f"{theirs} on line {old.line}",
                section,
                bound.line,
            )
    lo = bound.min if bound.min is not None else lo
    hi = bound.max if bound.max is not None else hi
    if lo is not None and hi is not None and lo > hi:
        raise TaxonomyError(path, f"contradictory bounds for `{bound.field}`: minimum {lo} is above maximum {hi}", section, bound.line)
    into[bound.field] = Bounds(lo, hi, old.line)


# ---------------------------------------------------------------------------------------------------------
# Values from tables and bullets

_EMPHASIS = re.compile(r"(\*\*|__|\*|~~)")
_BULLET_VALUE = re.compile(r"^\s*[-*+]\s+(?:\*\*|__)?`([^`]+)`(?:\*\*|__)?\s*(.*)$")
_CLOSED = re.compile(r"\b(?:liste\s+(?:fermee|close)|closed\s+(?:list|vocabulary)|vocabulaire\s+ferme)\b")
_OPEN_PATTERN = (
    r"\b(?:liste\s+ouverte|open\s+(?:list|vocabulary)|vocabulaire\s+ouvert"
    r"|(?:pas|non|not)\s+(?:une\s+|a\s+)?(?:liste\s+(?:fermee|close)|closed\s+(?:list|vocabulary)))\b"
)


@lru_cache(maxsize=None)
def _open_re() -> re.Pattern[str]:
    """"Open list" phrasings, compiled on first use (as `_bound`)."""
    return re.compile(_OPEN_PATTERN)


_FREE = re.compile(r"\b(?:libres?|free)\b")
_REQUIRED = re.compile(r"\b(?:champs?\s+obligatoires?|required\s+fields?|mandatory\s+fields?)\b")


def _cell_values(cell: str) -> list[str]:
    ticked = re.findall(r"`([^`]+)`", cell)
    if ticked:
        return [value.strip() for value in ticked if value.strip()]
    plain = _EMPHASIS.sub("", cell).strip()
    return [plain] if plain and plain not in ("-", "—", "–") else []


def _describe(cells: list[str]) -> str:
    parts = [_EMPHASIS.sub("", c).replace("`", "").strip() for c in cells]
    return " — ".join(p for p in parts if p)


def _bullet_values(prose: list[tuple[int, str]]) -> dict[str, str]:
    """``- `value` description`` bullets; a description may continue on the following (indented) lines."""
    values: dict[str, str] = {}
    current: str | None = None
    for _line, text in prose:
        bullet = _BULLET_VALUE.match(text)
        if bullet:
            current = bullet.group(1).strip()
            values.setdefault(current, bullet.group(2))
        elif current is not None and text.strip() and not _BULLET.match(text):
            values[current] = f"{values[current]} {text.strip()}"
        else:
            current = None
    return {value: _clean_description(description) for value, description in values.items()}


def _clean_description(text: str) -> str:
    return re.sub(r"^[\s:—–-]+", "", _EMPHASIS.sub("", text).replace("`", "")).strip()


# ---------------------------------------------------------------------------------------------------------
# The ``yaml vaulttools`` fence


def _is_config_fence(info: str) -> bool:
    words = info.lower().replace("{", " ").replace("}", " ").replace(".", " ").split()
    return bool(words) and words[0] in ("yaml", "yml") and "vaulttools" in words[1:]


class _FenceReader:
    def __init__(self, path: Path, section: str | None, fence: _Fence):
        self.path, self.section, self.fence = path, section, fence

    def error(self, message: str, offset: int = 0) -> TaxonomyError:
        return TaxonomyError(self.path, f"`yaml vaulttools` block: {message}", self.section, self.fence.line + 1 + offset)

    def load(self) -> dict[str, Any]:
        try:
            data = yaml.safe_load(self.fence.body) if self.fence.body.strip() else {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise self.error(f"invalid YAML: {problem}", mark.line if mark else 0) from None
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise self.error(f"expected a mapping of {', '.join(FENCE_KEYS)}, got {type(data).__name__}")
        unknown = sorted(str(k) for k in data if k not in FENCE_KEYS)
        if unknown:
            raise self.error(f"unknown key {', '.join(repr(k) for k in unknown)} (known: {', '.join(FENCE_KEYS)})")
        return data

    def names(self, key: str, value: Any) -> list[str]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.error(f"`{key}` must be a list of field names")
        return [v.strip() for v in value]

    def bounds(self, key: str, value: Any, allow_negative: bool) -> dict[str, Bounds]:
        if not isinstance(value, dict):
            raise self.error(f"`{key}` must map a field to [min, max]")
        out: dict[str, Bounds] = {}
        for name, spec in value.items():
            if isinstance(spec, dict) and set(spec) <= {"min", "max"}:
                lo, hi = spec.get("min"), spec.get("max")
            elif isinstance(spec, list) and len(spec) == 2:
                lo, hi = spec
            else:
                raise self.error(f"`{key}.{name}` must be [min, max] or {{min: .., max: ..}}")
            for side in (lo, hi):
                if side is not None and (isinstance(side, bool) or not isinstance(side, int)):
                    raise self.error(f"`{key}.{name}`: {side!r} is not a whole number (use null for no bound)")
                if side is not None and side < 0 and not allow_negative:
                    raise self.error(f"`{key}.{name}`: a count cannot be negative ({side})")
            if lo is not None and hi is not None and lo > hi:
                raise self.error(f"`{key}.{name}`: contradictory bounds, minimum {lo} is above maximum {hi}")
            out[str(name)] = Bounds(lo, hi, self.fence.line)
        return out

    def values(self, value: Any) -> dict[str, dict[str, str]]:
        if not isinstance(value, dict):
            raise self.error("`values` must map a field to its list of values")
        out: dict[str, dict[str, str]] = {}
        for name, spec in value.items():
            if isinstance(spec, list) and all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in spec):
                out[str(name)] = {str(v): "" for v in spec}
            elif isinstance(spec, dict):
                out[str(name)] = {str(k): "" if v is None else str(v) for k, v in spec.items()}
            else:
                raise self.error(f"`values.{name}` must be a list of values or a mapping value -> description")
        return out


# ---------------------------------------------------------------------------------------------------------
# Putting it together


def parse_taxonomy(text: str, path: str | Path = TAXONOMY_FILENAME) -> Taxonomy:
    """Parse the text of a TAXONOMIE.md (`path` is only used in messages and stored on the result)."""
    path = Path(path)
    sections = _field_sections(_sections(text))
    vocabularies: dict[str, Vocabulary] = {}
    counts: dict[str, Bounds] = {}
    ranges: dict[str, Bounds] = {}
    required: list[str] = []
    filterable: dict[str, Any] = {}
    seen: dict[str, int] = {}
    known = set(LIST_FIELDS) | set(STR_FIELDS) | {s.field for s in sections if s.field}
    for section in sections:
        name = section.field
        label = section.heading or None
        if name is not None and name in seen:
            raise TaxonomyError(path, f"`{name}:` is described twice (first on line {seen[name]})", label, section.line)
        if name is not None:
            seen[name] = section.line
        reader = _BoundReader(path, section, known)
        sentences = _sentences(section.prose)
        section_bounds: list[_Bound] = []
        for sentence in sentences:
            section_bounds.extend(reader.read(sentence))
            if _REQUIRED.search(sentence.folded):
                for token in re.findall(r"`\s*([A-Za-z_][\w-]*)\s*:?\s*`", sentence.raw):
                    if token not in required:
                        required.append(token)
        for bound in section_bounds:
            _merge(path, label, ranges if bound.kind == "range" else counts, bound, bound.kind)
        if name is None:
            continue
        prose = " ".join(s.folded for s in sentences)
        verdicts = [v for v in (reader.says_closed(s) for s in sentences) if v is not None]
        says_closed = bool(verdicts) and all(verdicts)
        says_open = False in verdicts
        has_range = any(b.kind == "range" and b.field == name for b in section_bounds)
        values: dict[str, str] = {}
        if not has_range:
            # The section's own table; a subsection's table ("Domaines retirés") only when it has none
            # (values grouped under subheadings).
            for table in section.tables or section.sub_tables:
                for _line, cells in table.rows:
                    for value in _cell_values(cells[0]) if cells else []:
                        values.setdefault(value, _describe(cells[1:]))
            if not section.tables and not section.sub_tables:
                values.update(_bullet_values(section.prose))
        if values:
            closed = says_closed or (name in ALWAYS_CLOSED and not says_open)
            vocabularies[name] = Vocabulary(field=name, values=values, closed=closed, line=section.line)
            continue
        if says_closed:
            problem = "its table has no rows" if section.tables or section.sub_tables else "no table (or bullet list) of values"
            raise TaxonomyError(path, f"`{name}:` is a closed list but {problem}", label, section.line)
        has_rule = bool(section_bounds) or any(_is_config_fence(f.info) for f in section.fences)
        if not has_rule and not _FREE.search(prose) and not has_range:
            raise TaxonomyError(
                path,
                f"nothing to read for `{name}:`: no table of values in the first column, no bullets such as "
                "- `value` : description, no rule such as « entre 1 et 4 » or « Entier de 1 à 10 », "
                "and the text does not say the field is free (« libre »)",
                label,
                section.line,
            )
    # The fences come last: they say what the prose cannot and have the last word.
    for section in sections:
        for fence in section.fences:
            if _is_config_fence(fence.info):
                reader = _FenceReader(path, section.heading or None, fence)
                _apply_fence(reader, vocabularies, counts, ranges, required)
                filterable.update(_filterable(reader))
    return Taxonomy(
        path=path,
        vocabularies=vocabularies,
        counts=counts,
        ranges=ranges,
        required=tuple(required),
        filterable=filterable,
    )


def _filterable(reader: _FenceReader) -> dict[str, Any]:
    """The fence's `filterable:` mapping, checked with the engine's own parser (one reading of it)."""
    from grasbot.search.filters import FilterConfig

    spec = reader.load().get("filterable")
    if spec is None:
        return {}
    try:
        FilterConfig.parse(spec)
    except ValueError as exc:
        raise reader.error(f"`filterable`: {exc}") from None
    return dict(spec)


def _apply_fence(
    reader: _FenceReader,
    vocabularies: dict[str, Vocabulary],
    counts: dict[str, Bounds],
    ranges: dict[str, Bounds],
    required: list[str],
) -> None:
    """Apply one ``yaml vaulttools`` block: values first (so `closed` may name a list it creates), then the rest."""
    data = reader.load()
    for name, extra in reader.values(data.get("values", {})).items():
        old = vocabularies.get(name)
        merged = dict(old.values) if old else {}
        for value, description in extra.items():
            merged.setdefault(value, description)
        closed = old.closed if old else name in ALWAYS_CLOSED
        vocabularies[name] = Vocabulary(name, merged, closed, old.line if old else reader.fence.line)
    for key, closed in (("closed", True), ("open", False)):
        for name in reader.names(key, data.get(key, [])):
            old = vocabularies.get(name)
            if old is None:
                raise reader.error(f"`{key}: {name}`: `{name}` has no list of values (add it under `values`)")
            vocabularies[name] = Vocabulary(old.field, old.values, closed, old.line)
    counts.update(reader.bounds("counts", data.get("counts", {}), allow_negative=False))
    ranges.update(reader.bounds("ranges", data.get("ranges", {}), allow_negative=True))
    for name in reader.names("required", data.get("required", [])):
        if name not in required:
            required.append(name)
