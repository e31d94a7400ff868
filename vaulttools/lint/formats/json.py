"""`--format json`: the stable shape of docs/architecture.md ("Stable output shapes"). `path` is relative to the
vault, `vault` is the vault folder; each finding's `url` is its rule's documentation (`vaulttools.lint.urls`);
`notices` (added after `summary`, so readers of the older shape are unaffected) are what the text report says
as `note: …` lines: vault-level problems (a folder symlink to outside the vault), a rule that could not run."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any

from vaulttools.lint.diagnostics import Diagnostic, Severity
from vaulttools.lint.urls import rule_url

if TYPE_CHECKING:
    from vaulttools.lint.engine import LintResult
    from vaulttools.lint.formats.totals import Totals

_SEP = ",\n    "


def to_data(result: LintResult) -> dict:
    return {
        "version": 1,
        "vault": str(result.root),
        "notes": result.notes,
        "diagnostics": [d.to_dict() for d in result.diagnostics],
        "summary": result.summary,
        "notices": list(result.notices),
    }


def note_part(diagnostics: Sequence[Diagnostic], prefix: str = "") -> str:
    """One note's rows (`path` stays vault-relative: `prefix` is not used), as `rows` writes them."""
    return _SEP.join(rows(diagnostics))


#: rule -> the encoded middle of a row, from `"rule"` to `"message": `, one table per severity.
_ERROR_TAILS: dict[str, str] = {}
_WARNING_TAILS: dict[str, str] = {}
#: message -> its JSON encoding (a bounded memo).
_MESSAGES: dict[str, str] = {}


def frame(totals: Totals, has_parts: bool) -> tuple[str, str, str]:
    """(head, separator, tail): the report is head + separator.join(non-empty parts) + tail."""
    head = json.dumps({"version": 1, "vault": str(totals.root), "notes": totals.notes}, ensure_ascii=False)[:-1]
    summary = json.dumps({"error": totals.errors, "warning": totals.warnings})
    notices = json.dumps(list(totals.notices), ensure_ascii=False)
    end = f'"summary": {summary},\n  "notices": {notices}}}\n'
    if not has_parts:
        return f'{head},\n  "diagnostics": [],\n  {end}', _SEP, ""
    return f'{head},\n  "diagnostics": [\n    ', _SEP, f'\n  ],\n  {end}'


def assemble(totals: Totals, parts: Iterable[str]) -> str:
    """One diagnostic per line: readable, diff-friendly and fast (`indent=` would fall back to the pure-Python
    encoder, several times slower on a 10k-note vault's findings (benchmarks/README.md, "Figures behind the
    code"))."""
    parts = [p for p in parts if p]
    head, sep, tail = frame(totals, bool(parts))
    return head + sep.join(parts) + tail


def rows(diagnostics: Sequence[Diagnostic]) -> list[str]:
    """One encoded row per finding: the same text as `json.dumps(d.to_dict(), ensure_ascii=False)` gives
    (tests/test_lint_formats.py compares them), several times faster on 35k findings.

    One comprehension over the findings' fields, each piece already encoded: a path once per note, a message
    once (the notes of one alias group share theirs), the rule-and-severity middle once per rule."""
    enc = encode_basestring
    paths: dict[str, str] = {}
    messages = _MESSAGES
    if len(messages) >= 100_000:
        messages.clear()
    tails = {Severity.ERROR: _ERROR_TAILS, Severity.WARNING: _WARNING_TAILS}

    def path_of(path: str) -> str:
        found = paths[path] = f'{{"path": {enc(path)}, "line": '
        return found

    def message_of(message: str) -> str:
        found = messages[message] = enc(message)
        return found

    def tail_of(rule: str, severity: Severity) -> str:
        found = tails[severity][rule] = (f', "rule": {enc(rule)}, "url": {enc(rule_url(rule))}, '
                                         f'"severity": "{severity.value}", "message": ')
        return found

    def fix_of(fix: Any) -> str:
        return "null" if fix is None else f'{{"message": {enc(fix.message)}, "applicability": "safe"}}'

    get_path, get_message = paths.get, messages.get
    error_tails, warning_tails = _ERROR_TAILS, _WARNING_TAILS
    error = Severity.ERROR
    return [
        f'{get_path(path) or path_of(path)}{line}, "column": {column}, "end_line": {end_line}, "end_column": '
        f'{end_column}{(error_tails if severity is error else warning_tails).get(rule) or tail_of(rule, severity)}'
        f'{get_message(message) or message_of(message)}, "fix": {"null" if fix is None else fix_of(fix)}}}'
        for path, line, column, end_line, end_column, rule, severity, message, fix in diagnostics
    ]


def render(result: LintResult, shown: Callable[[str], str] | None = None) -> str:
    """The whole report: `assemble` of the notes' parts, built as one list of rows (the parts of a report
    are joined with the separator that joins the rows of one part, so this is the same text)."""
    from vaulttools.lint.formats.totals import Totals

    found = rows(result.diagnostics)
    head, sep, tail = frame(Totals.of(result), bool(found))
    if not found:
        return head + tail
    found[0] = head + found[0]  # head and tail joined with the rows: one copy of the report, not three
    found[-1] += tail
    return sep.join(found)


def render_bytes(result: LintResult) -> bytes:
    """`render(result).encode("utf-8")`, without the report ever being one str: a few rows hold a character
    past U+00FF (`–`, `œ`), which would make the whole 17 MB report of the 10k benchmark vault a two-byte-per-
    character str, copied twice more before it is encoded. Each row is encoded on its own instead."""
    from vaulttools.lint.formats.totals import Totals

    found = rows(result.diagnostics)
    head, sep, tail = frame(Totals.of(result), bool(found))
    if not found:
        return (head + tail).encode("utf-8")
    found[0] = head + found[0]
    found[-1] += tail
    return sep.encode("utf-8").join([row.encode("utf-8") for row in found])
