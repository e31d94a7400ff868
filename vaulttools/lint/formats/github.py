"""`--format github`: GitHub Actions workflow commands, shown as annotations on the pull request's files.

`::error file=F,line=L,col=C,endLine=EL,endColumn=EC,title=RULE::MESSAGE`. Escaping follows the runner's
rules: in the message `%`, `\\r`, `\\n`; in property values also `:` and `,`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vaulttools.lint.diagnostics import Diagnostic
    from vaulttools.lint.engine import LintResult
    from vaulttools.lint.formats.totals import Totals


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _line(d: Diagnostic, shown: Callable[[str], str]) -> str:
    props = ",".join(
        f"{k}={escape_property(str(v))}"
        for k, v in (
            ("file", shown(d.path)),
            ("line", d.line),
            ("col", d.column),
            ("endLine", d.end_line),
            ("endColumn", d.end_column),
            ("title", d.rule),
        )
    )
    return f"::{d.severity.value} {props}::{escape_data(d.message)}\n"


def note_part(diagnostics: Sequence[Diagnostic], prefix: str = "") -> str:
    shown = lambda path: prefix + path  # noqa: E731
    return "".join([_line(d, shown) for d in diagnostics])


def frame(totals: Totals, has_parts: bool) -> tuple[str, str, str]:
    """(head, separator, tail): the report is head + separator.join(non-empty parts) + tail."""
    return "", "", ""


def assemble(totals: Totals, parts: Iterable[str]) -> str:
    return "".join(parts)


def render(result: LintResult, shown: Callable[[str], str]) -> str:
    return "".join([_line(d, shown) for d in result.diagnostics])
