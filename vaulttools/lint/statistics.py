"""`vaulttools lint --statistics`: how many findings each rule has, and how many of them `--fix` can fix (as
`ruff check --statistics`), to see where a vault stands before adopting the linter or writing a baseline."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vaulttools.words import count

if TYPE_CHECKING:
    from vaulttools.lint.engine import LintResult

__all__ = ["RuleCount", "statistics", "render_statistics"]


@dataclass(frozen=True, slots=True)
class RuleCount:
    rule: str
    severity: str  # of its findings ("error", "warning"; "mixed" when configured or folded both ways)
    count: int
    fixable: int
    notes: int  # notes with at least one finding of the rule


def statistics(result: LintResult) -> list[RuleCount]:
    """One row per rule with findings, the most frequent first (then by name: a stable order)."""
    rows: dict[str, list] = {}
    for d in result.diagnostics:
        row = rows.setdefault(d.rule, [set(), 0, 0, set()])
        row[0].add(d.severity.value)
        row[1] += 1
        row[2] += d.fix is not None
        row[3].add(d.path)
    out = [RuleCount(rule, next(iter(sev)) if len(sev) == 1 else "mixed", n, fixable, len(paths))
           for rule, (sev, n, fixable, paths) in rows.items()]
    return sorted(out, key=lambda r: (-r.count, r.rule))


def render_statistics(result: LintResult, fmt: str, quiet: bool = False) -> str:
    """Text (aligned columns, then a total line unless `quiet`) or JSON (a list of rows)."""
    rows = statistics(result)
    if fmt == "json":
        data = [{"rule": r.rule, "severity": r.severity, "count": r.count, "fixable": r.fixable, "notes": r.notes}
                for r in rows]
        return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    width = max((len(str(r.count)) for r in rows), default=1)
    name_width = max((len(r.rule) for r in rows), default=0)
    lines = []
    for r in rows:
        fixable = f"  [*] {r.fixable} fixable" if r.fixable else ""
        lines.append(f"{r.count:>{width}}  {r.rule:<{name_width}}  {r.severity:<7}  in {count(r.notes, 'note')}{fixable}")
    if not quiet:
        total = sum(r.count for r in rows)
        fixable = sum(r.fixable for r in rows)
        tail = f" ({fixable} fixable with --fix)" if fixable else ""
        noted = len({d.path for d in result.diagnostics})  # "in 43 of 49 notes checked", as the report says it
        lines.append(f"{count(total, 'finding')} in {noted} of {count(result.notes, 'note')} checked{tail}.")
    return "".join(line.rstrip() + "\n" for line in lines)
