"""Inline suppression, in Obsidian's own comment syntax, and the report of suppressions that silence nothing.

In a note's body (documented in docs/rules.md, "Suppressing a finding")::

    See [[old-note]] for the story. %% vaulttools-ignore: broken-link %%
    %% vaulttools-ignore: broken-link, broken-anchor %%
    The next line's [[links#gone]] are not reported.

A ``%% vaulttools-ignore: RULE[, RULE…] %%`` comment after other text on a line silences those rules on that
line; alone on its line it silences the next line; without rule names (``%% vaulttools-ignore %%``) it
silences every rule there. Obsidian hides ``%% … %%`` comments when it renders or publishes a note, so the
directive is never seen by a reader (the frontmatter-wide key ``vaulttools-ignore: [...]`` shows in the
Properties panel). A comment inside code is text, not a directive.

A directive that silences nothing is reported by ``unused-suppression`` (as ruff's RUF100): a finding fixed
since, a rule renamed, a line moved. A name that is no rule is reported by ``unknown-rule``. Rules that did
not run (off in the configuration, or turned off by the note's frontmatter) are not reported as unused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grasbot.markdown.body import comment_spans
from vaulttools.lint.diagnostics import Diagnostic, Severity, new_diagnostic
from vaulttools.lint.rule import WARNING, Rule
from vaulttools.lint.rules import did_you_mean
from vaulttools.lint.rules.frontmatter import UNKNOWN_RULE

if TYPE_CHECKING:
    from grasbot.model import Note

__all__ = ["DIRECTIVE", "UNUSED_SUPPRESSION", "Directive", "has_directive", "directives", "apply_inline"]

#: The word that starts a directive, inside ``%% … %%`` (the same word as the frontmatter key).
DIRECTIVE = "vaulttools-ignore"

_INNER = re.compile(r"%%[ \t]*vaulttools-ignore[ \t]*(?::(?P<rules>[^%\n]*))?%%")
_NAME = re.compile(r"[^,\s]+")

UNUSED_SUPPRESSION = Rule(
    "unused-suppression", "suppression", WARNING,
    "A `%% vaulttools-ignore: rule %%` comment silences no finding on its line.",
    "The finding it was written for is fixed, or moved to another line: a stale suppression would hide the "
    "next real problem there (as ruff's RUF100).",
    "See [[rust]] for more. %% vaulttools-ignore: broken-link %%   # rust.md exists: nothing to silence", None, scope="run",
)

#: Rules a directive cannot silence: a suppression's own findings.
_UNSILENCEABLE = frozenset({UNUSED_SUPPRESSION.name})


@dataclass(slots=True)
class Directive:
    """One ``%% vaulttools-ignore … %%`` comment of a note."""

    line: int  # where the comment is (1-based file line)
    column: int  # its first character (1-based)
    end_column: int  # after its last character
    target: int  # the line it silences
    names: list[tuple[str, int, int]]  # (rule, column, end column) of each name; empty: every rule
    used: set[str] = field(default_factory=set)  # names that silenced a finding ("" for a bare directive)


def has_directive(note: Note) -> bool:
    """Whether the note may hold a directive (a fast test on its text, before any parsing)."""
    return DIRECTIVE in note.text


def directives(note: Note) -> list[Directive]:
    """The note's directives, in order. Only single-line ``%%`` comments outside code count."""
    body = note.body
    if DIRECTIVE not in body:
        return []
    out: list[Directive] = []
    for start, end in comment_spans(body):
        m = _INNER.fullmatch(body, start, end)
        if m is None:
            continue
        line_start = body.rfind("\n", 0, start) + 1
        line_end = body.find("\n", end)
        if line_end < 0:
            line_end = len(body)
        line = note.body_line + body.count("\n", 0, start)
        alone = not body[line_start:start].strip() and not body[end:line_end].strip()
        column = start - line_start + 1
        names: list[tuple[str, int, int]] = []
        if m.group("rules") is not None:
            offset = m.start("rules") - line_start + 1
            names = [(n.group(), offset + n.start(), offset + n.end()) for n in _NAME.finditer(m.group("rules"))]
        out.append(Directive(line, column, end - line_start + 1, line + 1 if alone else line, names))
    return out


def apply_inline(
    found: Iterable[Diagnostic],
    notes: Callable[[str], Note | None],
    paths: Collection[str],
    enabled: Callable[[str], bool],
    suppressed: Callable[[Note], frozenset[str]],
    rule_names: Collection[str],
    severity: Callable[[Rule], Severity],
    not_run: Collection[str] = (),
) -> list[Diagnostic]:
    """`found` without the findings the notes' directives silence, plus `unused-suppression` and `unknown-rule`
    findings for the directives of `paths` (when those rules are enabled and not turned off by the note).

    `notes(path)` gives a note; `suppressed(note)` the rules its frontmatter turns off; `not_run` rules that
    did not run at all this time (their directives are not reported as unused)."""
    by_note: dict[str, list[Directive]] = {}
    for path in paths:
        note = notes(path)
        if note is not None and has_directive(note):
            found_here = directives(note)
            if found_here:
                by_note[path] = found_here
    if not by_note:
        return list(found)
    kept: list[Diagnostic] = []
    for diag in found:
        marks = by_note.get(diag.path)
        if marks and diag.rule not in _UNSILENCEABLE:
            hit = False
            for d in marks:
                if d.target != diag.line:
                    continue
                if not d.names:
                    d.used.add("")
                    hit = True
                elif any(name == diag.rule for name, _, _ in d.names):
                    d.used.add(diag.rule)
                    hit = True
            if hit:
                continue
        kept.append(diag)
    for path, marks in sorted(by_note.items()):
        note = notes(path)
        off = suppressed(note) if note is not None else frozenset()
        for d in marks:
            kept.extend(_report(path, d, enabled, off, rule_names, severity, not_run))
    return kept


def _report(
    path: str,
    d: Directive,
    enabled: Callable[[str], bool],
    off: frozenset[str],
    rule_names: Collection[str],
    severity: Callable[[Rule], Severity],
    not_run: Collection[str],
) -> list[Diagnostic]:
    """The findings on one directive: its names that are no rule (unknown-rule, whose unit is the frontmatter
    family's: the same mistake in the other place), then what it silenced nothing of (unused-suppression)."""
    out: list[Diagnostic] = []
    if d.names and enabled(UNKNOWN_RULE.name) and UNKNOWN_RULE.name not in off:
        out.extend(_unknown_names(path, d, rule_names, severity))
    if enabled(UNUSED_SUPPRESSION.name) and UNUSED_SUPPRESSION.name not in off:
        def ran(name: str) -> bool:  # a rule that ran on this note: its silence can be unused
            return name in rule_names and name not in not_run and enabled(name) and name not in off

        out.extend(UNUSED_SUPPRESSION.run(path, d, ran, severity))  # type: ignore[misc]
    return out


def _unknown_names(path: str, d: Directive, rule_names: Collection[str], severity: Callable[[Rule], Severity]
                   ) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for name, start, end in d.names:
        if name not in rule_names:
            guess = did_you_mean(name, list(rule_names))
            hint = f"did you mean `{guess}`?" if guess else "see docs/rules.md for the rule names"
            out.append(_diag(path, d.line, start, end, UNKNOWN_RULE, severity,
                             f"`%% {DIRECTIVE} %%` names `{name}`, which is no rule: it suppresses nothing; {hint}"))
    return out


@UNUSED_SUPPRESSION.check
def _unused(path: str, d: Directive, ran: Callable[[str], bool], severity: Callable[[Rule], Severity]
            ) -> list[Diagnostic]:
    """What `d` silenced nothing of, among the rules that `ran` on the note."""
    where = "this line" if d.target == d.line else f"line {d.target}"
    if not d.names:
        if "" not in d.used:
            return [_diag(path, d.line, d.column, d.end_column, UNUSED_SUPPRESSION, severity,
                          f"`%% {DIRECTIVE} %%` silences no finding on {where}: remove it")]
        return []
    out: list[Diagnostic] = []
    for name, start, end in d.names:
        if name in d.used or not ran(name):
            continue
        out.append(_diag(path, d.line, start, end, UNUSED_SUPPRESSION, severity,
                         f"`%% {DIRECTIVE}: {name} %%` silences no `{name}` finding on {where}: remove it"))
    return out


def _diag(path: str, line: int, column: int, end_column: int, rule: Rule, severity: Callable[[Rule], Severity],
          message: str) -> Diagnostic:
    return new_diagnostic((path, line, column, line, end_column, rule.name, severity(rule), message, None))
