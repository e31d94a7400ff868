"""Tables for people, lines for pipes: a rich table on a terminal, tab-separated lines otherwise.

A rich table sized for an 80-column pipe folds or cuts long cells (a slug split mid-word is a wrong slug for
whoever copies it); piped, each row is one line of tab-separated cells, whole, after a header line, so that
`cut -f2`, `awk -F'\\t'` and spreadsheets read it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["Column", "console", "print_table"]


def console() -> Any:
    """A rich console for a command's output: on a pipe, lines are never wrapped at 80 columns."""
    from rich.console import Console

    out = Console()
    if not out.is_terminal:
        out.soft_wrap = True
    return out


class Column:
    """A column: its header and rich's options for it on a terminal (`justify`, `style`, `overflow`)."""

    def __init__(self, header: str, **options: Any) -> None:
        self.header = header
        self.options = options


def print_table(console: Any, columns: Sequence[Column], rows: Sequence[Sequence[str]], title: str | None = None) -> None:
    """Print `rows` under `columns` on `console` (a `rich.console.Console`)."""
    if console.is_terminal:
        from rich.table import Table

        table = Table(title=title, title_justify="left") if title else Table()
        for column in columns:
            table.add_column(column.header, **column.options)
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    out = console.file
    if title:
        out.write(title + "\n")
    out.write("\t".join(c.header for c in columns) + "\n")
    for row in rows:
        out.write("\t".join(cell.replace("\t", " ").replace("\n", " ") for cell in row) + "\n")
    out.flush()
