"""What a report says besides its findings (`Totals`): shared by the formats that build a report from parts.

Apart from the package, so that a format imports it without importing the package's dispatch, which
imports the formats (docs/architecture.md: no import cycle).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vaulttools.lint.engine import LintResult

__all__ = ["Totals"]


@dataclass(frozen=True, slots=True)
class Totals:
    """What a report says besides its findings."""

    root: Path
    notes: int
    taxonomy: Path | None
    notices: tuple[str, ...]
    errors: int
    warnings: int
    fixable: int
    noted: int = -1  # notes with at least one finding (-1: not known)

    @classmethod
    def of(cls, result: LintResult) -> Totals:
        from vaulttools.lint.diagnostics import Severity

        error = Severity.ERROR
        errors = fixable = 0
        for d in result.diagnostics:
            if d.severity == error:  # (an Enum's `.value` is a Python-level property: 35k calls)
                errors += 1
            if d.fix is not None:
                fixable += 1
        warnings = len(result.diagnostics) - errors
        noted = len({d.path for d in result.diagnostics})
        return cls(Path(result.root), result.notes, result.taxonomy, tuple(result.notices), errors, warnings, fixable,
                   noted)
