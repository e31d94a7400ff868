"""`--format text`: one line per finding, `path:line:col: severity rule message`, grouped by file, then a
summary line. Coloured (rich) when printing to a terminal; the uncoloured text is the same characters."""

from __future__ import annotations

from collections.abc import Callable
from itertools import groupby

from vaulttools.lint.engine import LintResult


def summary_line(result: LintResult) -> str:
    counts = result.summary
    fixable = sum(1 for d in result.diagnostics if d.fix is not None)
    plural = lambda n, word: f"{n} {word}{'' if n == 1 else 's'}"  # noqa: E731
    if not result.diagnostics:
        text = f"All good: {plural(result.notes, 'note')} checked, no finding."
    else:
        text = (f"Found {plural(counts['error'], 'error')} and {plural(counts['warning'], 'warning')} "
                f"in {plural(result.notes, 'note')}")
        text += f" ({fixable} fixable with --fix)." if fixable else "."
    if result.taxonomy is None:
        text += " No TAXONOMIE.md: vocabulary rules skipped."
    return text


def render(result: LintResult, shown: Callable[[str], str], color: bool = False) -> str:
    if color:
        return _render_color(result, shown)
    out: list[str] = []
    for _, group in groupby(result.diagnostics, key=lambda d: d.path):
        for d in group:
            out.append(f"{shown(d.path)}:{d.line}:{d.column}: {d.severity.value} {d.rule} {d.message}")
        out.append("")
    for notice in result.notices:
        out.append(f"note: {notice}")
    out.append(summary_line(result))
    return "\n".join(out) + "\n"


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
