"""What a lint run produces: diagnostics (one finding at one place) and the fixes they carry.

A `Fix` is data, not code: a list of `Edit`s on frontmatter fields ("wrap the value of `tags` in a list",
"replace item 2 of `aliases` by ...", "insert `slug: foo`"). `vaulttools.lint.fixes` turns edits into text
changes on the file as it is on disk when the fix is applied, and checks that each edit still applies
(the value is still what the rule saw), so a stale diagnostic never rewrites the wrong thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = ["Severity", "Edit", "Fix", "Diagnostic"]


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


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding. Positions are 1-based lines and columns (characters), end exclusive, as editors show them."""

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
        """The JSON shape of DESIGN §10 (stable: other tools read it)."""
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "rule": self.rule,
            "severity": self.severity.value,
            "message": self.message,
            "fix": self.fix.to_dict() if self.fix else None,
        }
