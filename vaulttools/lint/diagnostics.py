"""What a lint run produces: diagnostics (one finding at one place) and the fixes they carry.

A `Fix` is data, not code: a list of `Edit`s on frontmatter fields ("wrap the value of `tags` in a list",
"replace item 2 of `aliases` by ...", "insert `slug: foo`"). `vaulttools.lint.fixes` turns edits into text
changes on the file as it is on disk when the fix is applied, and checks that each edit still applies
(the value is still what the rule saw), so a stale diagnostic never rewrites the wrong thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from operator import itemgetter
from typing import Any, NamedTuple

from vaulttools.lint.urls import rule_url

__all__ = ["Severity", "Edit", "Fix", "Diagnostic", "new_diagnostic", "SORT_KEY"]


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"

    def __str__(self) -> str:  # so f"{severity}" prints "error", not "Severity.ERROR"
        return self.value


@dataclass(frozen=True, slots=True)
class Edit:
    """One change to one frontmatter field.

    `kind` is one of:
      - ``to-list``: the field holds a scalar where a list is expected; wrap it (``tags: a`` -> ``tags: [a]``).
      - ``replace-item``: item `index` of the list (or the scalar, index 0, for a scalar where a list is
        expected) equals `old`; write `new` instead, in the same quoting style.
      - ``drop-item``: item `index` equals `old` and is a duplicate; remove it.
      - ``replace-value``: the scalar value of the field equals `old`; write `new` (e.g. ``priority: "5"`` -> ``5``).
        A list written on one line (``pages: ["27", "28"]``) may be replaced by another list (the PDF import).
      - ``insert-key``: the field is absent; add ``field: new`` after the key `after` (or first).
    """

    kind: str
    field: str
    index: int | None = None
    old: Any = None
    new: Any = None
    after: str | None = None


@dataclass(frozen=True, slots=True)
class Fix:
    """A safe, automatic correction: what it does (`message`) and the edits that do it."""

    message: str
    edits: tuple[Edit, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"message": self.message, "applicability": "safe"}


class Diagnostic(NamedTuple):
    """One finding. Positions are 1-based lines and columns (characters), end exclusive, as editors show them.

    A named tuple rather than a frozen dataclass: as immutable and as readable, and built at C speed (a frozen
    dataclass's `__init__` sets each of its nine fields through `object.__setattr__`, for each of the 35k
    findings of the 10k benchmark vault (benchmarks/README.md, "Figures behind the code")). Rules that build
    many findings use `new_diagnostic`."""

    path: str  # vault-relative, POSIX separators
    line: int
    column: int
    end_line: int
    end_column: int
    rule: str
    severity: Severity
    message: str
    fix: Fix | None = None

    @property
    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.path, self.line, self.column, self.rule, self.message)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of docs/architecture.md, "Stable output shapes" (other tools read it)."""
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "rule": self.rule,
            "url": rule_url(self.rule),
            "severity": self.severity.value,
            "message": self.message,
            "fix": self.fix.to_dict() if self.fix else None,
        }


def new_diagnostic(fields: tuple[Any, ...]) -> Diagnostic:
    """A `Diagnostic` from its nine fields in order, without the keyword-handling constructor."""
    return _tuple_new(Diagnostic, fields)


_tuple_new = tuple.__new__

#: `Diagnostic.sort_key` as a C-level key function: report order (path, line, column, rule, message).
SORT_KEY = itemgetter(0, 1, 2, 5, 7)
