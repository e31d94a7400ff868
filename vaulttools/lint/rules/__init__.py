"""The checks, one module per family, and what they share: the lint context and position helpers.

Two kinds of check:
- *note checks* (`check_note(note, ctx)`) look at one note and the taxonomy only; their results can be cached
  by the note's content digest;
- *vault checks* (`check_vault(ctx, paths)`) need the whole vault (links, duplicates, retrieval) and report
  only on `paths`.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from grasbot.notes import Note, Span
from vaulttools.lint.diagnostics import Diagnostic, Fix, Severity
from vaulttools.lint.registry import get_rule

if TYPE_CHECKING:
    from grasbot.search import SearchIndex
    from grasbot.vault import Vault
    from vaulttools.lint.config import LintConfig

__all__ = [
    "LintContext",
    "fold",
    "did_you_mean",
    "value_span",
    "item_span",
    "key_span",
    "make",
    "raw_items",
    "NOTE_CHECKS",
    "VAULT_CHECKS",
]


def fold(text: str) -> str:
    """Lower-case, accents removed, blanks collapsed: how retrieval compares words (``Sécurité`` -> ``securite``)."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(stripped.casefold().split())


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def did_you_mean(value: str, choices: Iterable[str], strictness: int = 3) -> str | None:
    """The closest choice to `value`, compared accent- and case-folded, or None when nothing is close.

    Close means at most ``len(value) // strictness`` edits (at least 1): `devop` -> `devops`, `algoritmique`
    -> `algorithmique`, but not `strapi` -> `tri` (a suggestion that misleads is worse than none).
    """
    folded: dict[str, str] = {}
    for choice in sorted(choices):
        folded.setdefault(fold(choice), choice)
    key = fold(value)
    if not key:
        return None
    limit = max(1, len(key) // strictness)
    shortlist = difflib.get_close_matches(key, list(folded), n=5, cutoff=0.5)
    scored = sorted((edit_distance(key, c), c) for c in shortlist)
    if scored and scored[0][0] <= limit:
        return folded[scored[0][1]]
    return None


@dataclass(slots=True)
class LintContext:
    """What every check may read. `index` is built lazily, once per run, by `search_index()`."""

    vault: Vault
    taxonomy: Any  # vaulttools.taxonomy.Taxonomy | None
    config: LintConfig
    today: _dt.date
    index: SearchIndex | None = None
    index_error: str | None = None
    notes_by_slug: dict[str, list[str]] | None = None
    _name_choices: dict[str, str] | None = field(default=None, repr=False)

    def severity(self, rule: str, default: Severity | None = None) -> Severity:
        """The configured severity of `rule`, else `default`, else the registry's."""
        configured = self.config.severity.get(rule)
        if configured is not None:
            return configured
        return default or get_rule(rule).severity

    def search_index(self) -> SearchIndex | None:
        if self.index is None and self.index_error is None:
            try:
                from grasbot.search import SearchIndex

                self.index = SearchIndex.build(self.vault)
            except Exception as exc:  # the rule reports why it could not run; lint goes on
                self.index_error = f"{type(exc).__name__}: {exc}"
        return self.index

    def note_names(self) -> dict[str, str]:
        """Folded file name (no `.md`) -> note path, for "did you mean" on broken links (built once)."""
        if self._name_choices is None:
            names: dict[str, str] = {}
            for path, note in self.vault.notes.items():
                names.setdefault(fold(note.stem), path)
            self._name_choices = names
        return self._name_choices


# -- positions ---------------------------------------------------------------------------------------


def _line_text(note: Note, line: int) -> str:
    """The text of 1-based `line` of the note (no newline)."""
    text = note.text
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    end = text.find("\n", start)
    out = text[start:] if end < 0 else text[start:end]
    return out[:-1] if out.endswith("\r") else out


def key_span(note: Note, key: str) -> Span:
    span = note.key_positions.get(key)
    if span is not None:
        return span
    return frontmatter_start(note)


def frontmatter_start(note: Note) -> Span:
    """Where to report a finding about the frontmatter as a whole: its first line (the opening `---`)."""
    return Span(1, 1, 1, 4 if note.has_frontmatter else 1)


def value_span(note: Note, key: str) -> Span:
    """The span of a scalar value written on the key's line (`priority: 15` -> `15`); the key's span otherwise."""
    span = note.key_positions.get(key)
    if span is None:
        return frontmatter_start(note)
    line = _line_text(note, span.end_line)
    i = span.end_column - 1
    # skip the closing quote of a quoted key, the colon and blanks
    while i < len(line) and line[i] in "\"' \t:":
        if line[i] == ":":
            i += 1
            break
        i += 1
    while i < len(line) and line[i] in " \t":
        i += 1
    if i >= len(line) or line[i] == "#":
        return span
    end = len(line)
    quote = line[i] if line[i] in "\"'" else None
    if quote:
        close = line.find(quote, i + 1)
        end = close + 1 if close > 0 else end
    else:
        hash_at = line.find(" #", i)
        end = hash_at if hash_at >= 0 else end
        while end > i and line[end - 1] in " \t":
            end -= 1
    return Span(span.end_line, i + 1, span.end_line, end + 1)


def item_span(note: Note, key: str, index: int) -> Span:
    spans = note.item_positions.get(key) or []
    if 0 <= index < len(spans):
        return spans[index]
    return key_span(note, key)


def raw_items(note: Note, key: str) -> list[Any]:
    """The items of a list field as written (a lone scalar counts as one item), non-strings included."""
    value = note.meta.get(key)
    if isinstance(value, list):
        return value
    if value is None or isinstance(value, dict):
        return []
    return [value]


def make(
    ctx: LintContext,
    note: Note,
    span: Span,
    rule: str,
    message: str,
    fix: Fix | None = None,
    severity: Severity | None = None,
) -> Diagnostic:
    return Diagnostic(
        path=note.path,
        line=span.line,
        column=span.column,
        end_line=span.end_line,
        end_column=span.end_column,
        rule=rule,
        severity=ctx.severity(rule, severity),
        message=message,
        fix=fix,
    )


NoteCheck = Callable[[Note, LintContext], Iterator[Diagnostic]]
VaultCheck = Callable[[LintContext, list[str]], Iterator[Diagnostic]]


def _checks() -> tuple[tuple[NoteCheck, ...], tuple[VaultCheck, ...]]:
    from vaulttools.lint.rules import frontmatter, links, retrieval, slugs, vocabulary

    return (
        (frontmatter.check_note, vocabulary.check_note, slugs.check_note),
        (slugs.check_vault, links.check_vault, retrieval.check_vault),
    )


NOTE_CHECKS, VAULT_CHECKS = (), ()  # filled on first use by `checks()` (the families import this module)


def checks() -> tuple[tuple[NoteCheck, ...], tuple[VaultCheck, ...]]:
    global NOTE_CHECKS, VAULT_CHECKS
    if not NOTE_CHECKS:
        NOTE_CHECKS, VAULT_CHECKS = _checks()
    return NOTE_CHECKS, VAULT_CHECKS
