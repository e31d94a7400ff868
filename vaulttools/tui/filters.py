"""The tree's filter: a few words typed by the author, matched against each note's row.

Syntax (words are ANDed; case and accents do not matter)::

    cub3d                 the path or title contains "cub3d"
    type:projet           the note's type (prefix match: type:comp)
    rule:broken-link      the note has a problem of this rule (prefix match: rule:unknown)
    has:problems          the note has at least one problem (also: has:errors, has:warnings, has:fix)
    is:private            private notes (is:public for the others)
    -word / -type:moc     negation
"""

from __future__ import annotations

from dataclasses import dataclass

from grasbot import fold
from vaulttools.tui.backend import NoteRow

__all__ = ["NoteFilter"]

HELP = "name · type:projet · rule:broken-link · has:problems · has:fix · is:private · -word"


@dataclass(frozen=True, slots=True)
class _Term:
    key: str  # "" for a plain word
    value: str
    negated: bool


_HAS = {"problem", "problems", "error", "errors", "warning", "warnings", "fix", "fixes", "fixable"}


@dataclass(frozen=True, slots=True)
class NoteFilter:
    text: str
    terms: tuple[_Term, ...]
    errors: tuple[str, ...]  # words not understood (shown under the box)

    @classmethod
    def parse(cls, text: str) -> NoteFilter:
        terms = []
        errors = []
        for word in text.split():
            negated = word.startswith("-") and len(word) > 1
            if negated:
                word = word[1:]
            key, sep, value = word.partition(":")
            if not sep:
                terms.append(_Term("", fold(word), negated))
                continue
            key, value = fold(key), fold(value)
            if key in ("type", "t") and value:
                terms.append(_Term("type", value, negated))
            elif key in ("rule", "r") and value:
                terms.append(_Term("rule", value, negated))
            elif key == "has" and value in _HAS:
                terms.append(_Term("has", value.rstrip("s").replace("fixable", "fix").replace("fixe", "fix"), negated))
            elif key == "is" and value in ("private", "public"):
                terms.append(_Term("is", value, negated))
            else:
                errors.append(word)
        return cls(text, tuple(terms), tuple(errors))

    @property
    def active(self) -> bool:
        return bool(self.terms)

    def matches(self, row: NoteRow) -> bool:
        for term in self.terms:
            if self._match(term, row) == term.negated:
                return False
        return True

    @staticmethod
    def _match(term: _Term, row: NoteRow) -> bool:
        if term.key == "":
            return term.value in fold(row.path) or term.value in fold(row.title)
        if term.key == "type":
            return fold(row.type or "").startswith(term.value)
        if term.key == "rule":
            return any(rule.startswith(term.value) for rule in row.rules)
        if term.key == "has":
            if term.value == "problem":
                return row.problems > 0
            if term.value == "error":
                return row.errors > 0
            if term.value == "warning":
                return row.warnings > 0
            return row.fixable > 0
        if term.key == "is":
            return row.private == (term.value == "private")
        return True
