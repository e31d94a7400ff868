"""Filters read from the question: « § 13 de la classe 10 » retrieves among the notes of § 13 of class 10.

What a question can say, and the note field each reads (fields of the PDF import, docs/pdf-import.md):

- ``§ 13``, ``paragraphe 13``, ``section 3.1`` -> `section` equal to the number, or a sub-section of it;
- ``chapitre 2`` -> `chapter_number` (or the first part of `section`);
- ``page 28``, ``p. 28`` -> `pages` (printed pages) holds it;
- a *field filter* for each field the configuration declares filterable (`FilterConfig`, from the
  taxonomy's ``filterable:`` or the service settings): one of its words then a value (``classe 10``,
  ``classe de 10``) or, for an ordinal field, ``10e``/``10ème``/``manuel de 9e``.

`filtered_search` restricts the ranked notes to those matching every filter; the notes that match but share
no word with the rest of the question still come, after the ranked ones (the pupil asked for that section).
When no note matches, filters are dropped in `RELAX_ORDER` — the page, then the section, then the chapter,
the fields (the book, the class) last — and each dropped one is said (``filter-relaxed:section``). A hit
carries ``filter:classe=10``-style reasons. Follow-ups keep the field filters of earlier questions
(`filters_from_history`): after « § 13 de la classe 10 », « et le § 14 ? » stays in class 10.

Engine layer: no web framework, LLM client or UI toolkit; only the index's own candidates (public notes)
are ever returned.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from grasbot.model import Note
from grasbot.search.index import Hit, SearchIndex, SearchResult, note_id

__all__ = [
    "FieldSpec",
    "Filter",
    "FilterConfig",
    "FilteredResult",
    "Filters",
    "RELAX_ORDER",
    "filtered_search",
    "filters_from_history",
    "known_values",
    "parse_filters",
    "search_with_filters",
]

#: Which filter goes first when nothing matches them all.
RELAX_ORDER: tuple[str, ...] = ("page", "section", "chapter", "field")

_NUM = r"(\d{1,3}(?:\.\d{1,3})*)"
_SECTION = re.compile(rf"(?:§§?|\bparagraphes?\b|\bparagraphs?\b|\bsous-sections?\b|\bsections?\b)\s*(?:n°\s*|no\s+)?{_NUM}(?!\d)", re.IGNORECASE)
_CHAPTER = re.compile(r"\b(?:chapitres?|chapters?|chap\.)\s*(?:n°\s*)?(\d{1,3})(?![\d.])", re.IGNORECASE)
_PAGE = re.compile(r"(?:\bpages?\b|(?<![\w.])p\.)\s*(\d{1,4}|[ivxlcdm]{1,6}\b)(?!\d)", re.IGNORECASE)
_ORDINAL = r"(\d{1,2})\s?(?:e|è|ème|eme|ième|ieme|de)?\b"
_ORDINAL_ALONE = re.compile(r"(?<![\w.§])(\d{1,2})\s?(?:e|è|ème|eme|ième|ieme)\b", re.IGNORECASE)


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", str(text))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold().strip()


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """A filterable note field and the words that name it in a question (`classe`, `class`, `niveau`).
    `ordinal`: a bare « 10e » / « 9ème » means this field."""

    name: str
    words: tuple[str, ...]
    ordinal: bool = False


@dataclass(frozen=True, slots=True)
class FilterConfig:
    fields: tuple[FieldSpec, ...] = ()

    @classmethod
    def parse(cls, spec: Mapping[str, Any] | str | None) -> FilterConfig:
        """From a mapping ``{classe: {words: [classe, class, niveau], ordinal: true}}`` (or ``{classe: [classe,
        class]}``, or ``{classe: null}``: the field's own name), or a string ``classe:classe|class|niveau+;book``
        (``+`` marks an ordinal field). Raises ValueError on a malformed spec."""
        if spec is None or spec == "":
            return cls()
        items: list[FieldSpec] = []
        if isinstance(spec, str):
            for part in (p.strip() for p in spec.split(";")):
                if not part:
                    continue
                name, _, words = part.partition(":")
                ordinal = words.endswith("+") or name.endswith("+")
                name, words = name.rstrip("+").strip(), words.rstrip("+")
                if not re.fullmatch(r"[A-Za-z_][\w-]*", name):
                    raise ValueError(f"filter field {name!r}: not a field name")
                listed = tuple(_fold(w) for w in words.split("|") if w.strip()) or (_fold(name),)
                items.append(FieldSpec(name, listed, ordinal))
            return cls(tuple(items))
        if not isinstance(spec, Mapping):
            raise ValueError("filterable fields: a mapping field -> words")
        for name, value in spec.items():
            ordinal = False
            if isinstance(value, Mapping):
                ordinal = bool(value.get("ordinal", False))
                value = value.get("words")
            if value is None:
                words: tuple[str, ...] = (_fold(str(name)),)
            elif isinstance(value, str):
                words = (_fold(value),)
            elif isinstance(value, (list, tuple)) and all(isinstance(w, str) for w in value):
                words = tuple(_fold(w) for w in value) or (_fold(str(name)),)
            else:
                raise ValueError(f"filterable `{name}`: a list of words, or {{words: [...], ordinal: true}}")
            items.append(FieldSpec(str(name), words, ordinal))
        return cls(tuple(items))


def _values(note: Note, name: str) -> list[str]:
    value = note.meta.get(name) if isinstance(note.meta, dict) else None
    if value is None or isinstance(value, (dict, bool)):
        return []
    items = value if isinstance(value, list) else [value]
    return [_fold(v) for v in items if isinstance(v, (str, int, float)) and not isinstance(v, bool)]


@dataclass(frozen=True, slots=True)
class Filter:
    kind: str  # page | section | chapter | field
    name: str  # the key shown: page, section, chapter, or the field's name
    value: str
    text: str = ""  # as written in the question
    inherited: bool = False  # kept from an earlier question of the conversation

    @property
    def reason(self) -> str:
        return f"filter:{self.name}={self.value}"

    def matches(self, note: Note) -> bool:
        value = _fold(self.value)
        if self.kind == "section":
            return any(v == value or v.startswith(value + ".") for v in _values(note, "section"))
        if self.kind == "chapter":
            if value in _values(note, "chapter_number"):
                return True
            return any(v.split(".")[0] == value and "." in v for v in _values(note, "section"))
        if self.kind == "page":
            return value in _values(note, "pages")
        return value in _values(note, self.name)


@dataclass(frozen=True, slots=True)
class Filters:
    items: tuple[Filter, ...] = ()
    rest: str = ""  # the question without the words of its filters

    def __bool__(self) -> bool:
        return bool(self.items)

    def as_dict(self) -> dict[str, str]:
        return {f.name: f.value for f in self.items}

    def inherit(self, earlier: Filters | None) -> Filters:
        """These filters, plus the field filters of `earlier` that these do not restate (the class stays
        when the follow-up names only a section)."""
        if earlier is None:
            return self
        named = {f.name for f in self.items}
        kept = tuple(replace(f, inherited=True) for f in earlier.items if f.kind == "field" and f.name not in named)
        return Filters(self.items + kept, self.rest) if kept else self


#: The note field each structural filter reads: a vault none of whose notes has it reads no such filter
#: (« section 2 » in a question to a vault without books is just words).
_STRUCTURAL_FIELDS = {"section": "section", "chapter": "chapter_number", "page": "pages"}
_TRIGGER = re.compile(r"§|\bparagraph|\bsection|\bchap|\bpages?\b|(?<![\w.])p\.|\d\s?(?:e|è|ème|eme|ième|ieme)\b", re.IGNORECASE)


def known_values(notes: Iterable[Note], config: FilterConfig) -> dict[str, frozenset[str]]:
    """Folded values each filterable field takes in `notes`: a word after « classe » is a filter only if
    some note has it (« les classes de document » is not a filter; « classe 10 » is when notes say 10).
    Also, under the structural filters' names (`section`, `chapter`, `page`), whether any note has their
    field (a one-element set) or none (empty)."""
    out: dict[str, set[str]] = {spec.name: set() for spec in config.fields}
    present = {kind: False for kind in _STRUCTURAL_FIELDS}
    for note in notes:
        for name, values in out.items():
            values.update(_values(note, name))
        meta = note.meta if isinstance(note.meta, dict) else {}
        for kind, name in _STRUCTURAL_FIELDS.items():
            if not present[kind] and meta.get(name) not in (None, "", []):
                present[kind] = True
    known = {name: frozenset(values) for name, values in out.items()}
    for kind, there in present.items():
        known.setdefault(f"{_STRUCTURAL}{kind}", frozenset({"yes"}) if there else frozenset())
    return known


_STRUCTURAL = "\x00"  # prefix of the structural entries of `known_values` (no field name starts so)


def _mentions_filter(question: str, config: FilterConfig) -> bool:
    """Cheap: could the question state a filter at all? (Most do not; then no note is looked at.)"""
    if _TRIGGER.search(question):
        return True
    folded = _fold(question)
    return any(word in folded for spec in config.fields for word in spec.words)


def parse_filters(
    question: str, config: FilterConfig | None = None, known: Mapping[str, frozenset[str]] | None = None
) -> Filters:
    """The filters `question` states (see the module doc), and the question without them. A field value
    must be one of `known[field]` when given, else hold a digit."""
    config = config or FilterConfig()
    found: list[Filter] = []
    spans: list[tuple[int, int]] = []

    def take(kind: str, name: str, match: re.Match[str], value: str) -> None:
        if any(s < match.end() and match.start() < e for s, e in spans):
            return
        if any(f.name == name for f in found):
            return  # the first mention of a kind counts ("§ 13 et § 14": § 13; ask twice for both)
        spans.append((match.start(), match.end()))
        found.append(Filter(kind, name, value.lower() if kind == "page" else value, match.group(0).strip()))

    for spec in config.fields:
        words = "|".join(re.escape(w) for w in sorted(spec.words, key=len, reverse=True))
        pattern = re.compile(rf"\b(?:{words})s?\s*(?:de\s+|d'|du\s+|:\s*|n°\s*)?(?:la\s+)?([\w-]{{1,30}})", re.IGNORECASE)
        folded_q = _fold(question)
        for match in pattern.finditer(folded_q if len(folded_q) == len(question) else question):
            value = match.group(1)
            ordinal = re.fullmatch(_ORDINAL, value, re.IGNORECASE)
            if ordinal and ordinal.group(1):
                value = ordinal.group(1)
            allowed = known.get(spec.name) if known is not None else None
            if (allowed is not None and _fold(value) not in allowed) or (allowed is None and not re.search(r"\d", value)):
                continue
            take("field", spec.name, match, value)
            break
    def readable(kind: str) -> bool:
        return known is None or bool(known.get(f"{_STRUCTURAL}{kind}", frozenset({"yes"})))

    for kind, pattern in (("section", _SECTION), ("chapter", _CHAPTER), ("page", _PAGE)):
        if readable(kind):
            for match in pattern.finditer(question):
                take(kind, kind, match, match.group(1))
    ordinal_field = next((s for s in config.fields if s.ordinal), None)
    if ordinal_field is not None and not any(f.name == ordinal_field.name for f in found):
        for match in _ORDINAL_ALONE.finditer(question):
            allowed = known.get(ordinal_field.name) if known is not None else None
            if allowed is not None and match.group(1) not in allowed:
                continue
            take("field", ordinal_field.name, match, match.group(1))
            break
    rest = question
    for start, end in sorted(spans, reverse=True):
        rest = rest[:start] + " " + rest[end:]
    order = {kind: i for i, kind in enumerate(("section", "chapter", "page", "field"))}
    found.sort(key=lambda f: (order[f.kind], f.name))
    return Filters(tuple(found), " ".join(rest.split()))


def filters_from_history(
    questions: Iterable[str], config: FilterConfig | None = None, known: Mapping[str, frozenset[str]] | None = None
) -> Filters | None:
    """The field filters a conversation has set so far (each question's, over the earlier ones')."""
    current: Filters | None = None
    for question in questions:
        parsed = parse_filters(question, config, known)
        current = parsed.inherit(current) if current is not None else parsed
    if current is None:
        return None
    fields = tuple(f for f in current.items if f.kind == "field")
    return Filters(fields, "") if fields else None


@dataclass(frozen=True, slots=True)
class FilteredResult:
    result: SearchResult  # hits restricted to the notes matching `applied`
    filters: Filters  # what the question (and the conversation) asked
    applied: tuple[Filter, ...]
    relaxed: tuple[Filter, ...]

    def as_dict(self) -> dict[str, Any]:
        """For `vaulttools ask --json` and the API: asked, applied, relaxed filters and their reasons."""
        return {
            "asked": self.filters.as_dict(),
            "applied": {f.name: f.value for f in self.applied},
            "relaxed": [f.name for f in self.relaxed],
            "inherited": [f.name for f in self.filters.items if f.inherited],
            "reasons": [f.reason for f in self.applied] + [f"filter-relaxed:{f.name}" for f in self.relaxed],
        }


def _relax_key(item: Filter, position: int) -> tuple[int, int]:
    return (RELAX_ORDER.index(item.kind), -position)


def filtered_search(
    index: SearchIndex,
    filters: Filters,
    top_k: int,
    query: str | None = None,
) -> FilteredResult:
    """Search `query` (default: the question without its filters) among the notes matching `filters`.

    The ranking is the engine's (every candidate is scored once, then restricted); the matching notes the
    words do not reach come after, in id order. `grounded` is the engine's verdict on the restricted set,
    or true when a section, chapter or page filter held (the visitor named the passage)."""
    text = query if query is not None else (filters.rest or "")
    notes = index.notes()
    active = list(filters.items)
    relaxed: list[Filter] = []
    positions = {id(f): i for i, f in enumerate(active)}
    while True:
        matching = [n for n in notes if all(f.matches(n) for f in active)]
        if matching or not active:
            break
        drop = min(active, key=lambda f: _relax_key(f, positions[id(f)]))
        active.remove(drop)
        relaxed.append(drop)
    reasons = tuple(f.reason for f in active) + tuple(f"filter-relaxed:{f.name}" for f in relaxed)
    wanted = {n.path for n in matching}
    result = index.search(text, top_k=max(index.size, 1)) if text.strip() else None
    hits: list[Hit] = []
    seen: set[str] = set()
    if result is not None:
        for hit in result.hits:
            if hit.note.path in wanted:
                hits.append(replace(hit, reasons=hit.reasons + reasons))
                seen.add(hit.note.path)
    for note in matching:
        if note.path not in seen and active:
            hits.append(Hit(note, note_id(note), 0.0, ("filter-match", *reasons), direct=True))
    hits = hits[:top_k]
    named = any(f.kind in ("section", "chapter", "page") for f in active)
    grounded = bool(hits) and (named or bool(result is not None and result.grounded and any(h.score > 0 for h in hits)))
    stats: dict[str, Any] = dict(result.stats) if result is not None else {"candidates": 0}
    stats["filters"] = {f.name: f.value for f in active}
    base = SearchResult(text, result.tokens if result is not None else (), hits, grounded, stats)
    return FilteredResult(base, filters, tuple(active), tuple(relaxed))


def search_with_filters(
    index: SearchIndex,
    question: str,
    top_k: int,
    config: FilterConfig | None = None,
    history: Sequence[str] = (),
) -> FilteredResult | None:
    """The one entry point for callers: None when the question (with its conversation) states no filter,
    so the caller searches as usual; else the filtered result."""
    config = config or FilterConfig()
    if not _mentions_filter(question, config) and not any(_mentions_filter(q, config) for q in history):
        return None
    known = known_values(index.notes(), config)
    filters = parse_filters(question, config, known).inherit(filters_from_history(history, config, known))
    if not filters:
        return None
    return filtered_search(index, filters, top_k)
