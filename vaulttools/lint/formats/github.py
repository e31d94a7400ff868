"""`--format github`: GitHub Actions workflow commands, shown as annotations on the pull request's files.

`::error file=F,line=L,col=C,endLine=EL,endColumn=EC,title=RULE::MESSAGE`. Escaping follows the runner's
rules: in the message `%`, `\\r`, `\\n`; in property values also `:` and `,`.
"""

from __future__ import annotations

from collections.abc import Callable

from vaulttools.lint.engine import LintResult


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(result: LintResult, shown: Callable[[str], str]) -> str:
    lines = []
    for d in result.diagnostics:
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
        lines.append(f"::{d.severity.value} {props}::{escape_data(d.message)}")
    return "".join(line + "\n" for line in lines)
