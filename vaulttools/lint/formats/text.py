"""`--format text`: one line per finding, `path:line:col: severity rule message`, grouped by file, then a
summary line. Coloured (rich) when printing to a terminal; the uncoloured text is the same characters."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import groupby
from typing import TYPE_CHECKING

from vaulttools.words import count

if TYPE_CHECKING:
    from vaulttools.lint.diagnostics import Diagnostic
    from vaulttools.lint.engine import LintResult
    from vaulttools.lint.formats.totals import Totals


def summary_line(result: LintResult | Totals) -> str:
    """The last line of the report (from a result or its `Totals`)."""
    if not hasattr(result, "fixable"):
        from vaulttools.lint.formats.totals import Totals

        result = Totals.of(result)  # type: ignore[arg-type]
    totals: Totals = result  # type: ignore[assignment]
    if not (totals.errors or totals.warnings):
        text = f"All good: {count(totals.notes, 'note')} checked, no finding."
    else:
        # "in 43 of 49 notes": the notes with findings, of those checked (the TUI and watch say it the same way)
        within = f"{totals.noted} of " if totals.noted >= 0 else ""
        text = (f"Found {count(totals.errors, 'error')} and {count(totals.warnings, 'warning')} "
                f"in {within}{count(totals.notes, 'note')} checked")
        text += f" ({totals.fixable} fixable with --fix)." if totals.fixable else "."
    if totals.taxonomy is None:
        text += " No TAXONOMIE.md: vocabulary rules skipped."
    return text


def note_part(diagnostics: Sequence[Diagnostic], prefix: str = "") -> str:
    """One file's group of lines, and the blank line after it."""
    lines = [f"{prefix}{d.path}:{d.line}:{d.column}: {d.severity.value} {d.rule} {d.message}\n" for d in diagnostics]
    return "".join(lines) + "\n" if lines else ""


def frame(totals: Totals, has_parts: bool) -> tuple[str, str, str]:
    """(head, separator, tail): the report is head + separator.join(non-empty parts) + tail."""
    return "", "", "".join(f"note: {notice}\n" for notice in totals.notices) + summary_line(totals) + "\n"


def assemble(totals: Totals, parts: Iterable[str]) -> str:
    head, sep, tail = frame(totals, True)
    return head + sep.join(parts) + tail


def render(result: LintResult, shown: Callable[[str], str], color: bool = False) -> str:
    if color:
        return _render_color(result, shown)
    from vaulttools.lint.formats.totals import Totals

    out: list[str] = []
    for _, group in groupby(result.diagnostics, key=lambda d: d.path):
        for d in group:
            out.append(f"{shown(d.path)}:{d.line}:{d.column}: {d.severity.value} {d.rule} {d.message}\n")
        out.append("\n")
    return assemble(Totals.of(result), out)


def _render_color(result: LintResult, shown: Callable[[str], str]) -> str:
    from rich.console import Console
    from rich.text import Text

    console = Console(force_terminal=True, color_system="standard", width=100000, highlight=False)
    with console.capture() as capture:
        for _, group in groupby(result.diagnostics, key=lambda d: d.path):
            for d in group:
                line = Text()
                line.append(f"{shown(d.path)}", style="bold")
                line.append(f":{d.line}:{d.column}: ", style="dim")
                line.append(d.severity.value, style="bold red" if d.severity.value == "error" else "yellow")
                line.append(" ")
                line.append(d.rule, style="cyan")
                line.append(" " + d.message + (" [*]" if d.fix else ""))
                console.print(line, soft_wrap=True)
            console.print()
        for notice in result.notices:
            console.print(Text("note: " + notice, style="dim"), soft_wrap=True)
        console.print(Text(summary_line(result), style="bold"), soft_wrap=True)
    return capture.get()


def findings_only(result: LintResult, prefix: str) -> str:
    """`-q`: the finding lines alone (no blank line between notes, no notes, no summary): nothing when clean."""
    return "".join(
        f"{prefix}{d.path}:{d.line}:{d.column}: {d.severity.value} {d.rule} {d.message}\n" for d in result.diagnostics
    )
