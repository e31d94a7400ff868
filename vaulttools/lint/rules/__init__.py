"""The rules, one module per family, and what they share: the lint context and position helpers.

Each family module declares its rules as units (`vaulttools.lint.rule.Rule`: name, severity, docs, check,
quick predicate, fix) and, when its rules read the whole vault, the one pass that feeds them
(`vault_pass(ctx, paths, rules)`). Two kinds of check:
- *note rules* look at one note and the taxonomy only; their results can be cached by the note's digest;
- *vault rules* need the whole vault (links, duplicates, retrieval) and report only on `paths`.

This package imports no family (`families.py` lists them, `vaulttools.lint.registry` collects their rules),
so that no family's import comes back to it (docs/architecture.md: no import cycle).
"""

from __future__ import annotations

import datetime as _dt
import difflib
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from grasbot import Note, Span
from grasbot import edit_distance, fold
from vaulttools.lint import positions
from vaulttools.lint.diagnostics import Diagnostic, Fix, Severity, new_diagnostic
from vaulttools.lint.rule import Rule

if TYPE_CHECKING:
    from grasbot import SearchIndex
    from vaulttools.lint.config import LintConfig
    from vaulttools.lint.view import LintVault

__all__ = [
    "LintContext",
    "did_you_mean",
    "value_span",
    "line_text",
    "is_block_scalar",
    "item_span",
    "key_span",
    "make",
    "raw_items",
]


class Suggester:
    """"Did you mean": the closest of a fixed set of choices, compared accent- and case-folded.

    Close means at most ``len(value) // strictness`` edits (at least 1): `devop` -> `devops`, `algoritmique`
    -> `algorithmique`, but not `strapi` -> `tri` (a suggestion that misleads is worse than none). Past
    `LARGE` choices (a vault's file names) only one-edit typos are looked up: difflib against thousands of
    names is slow for every broken link (benchmarks/README.md, "Figures behind the code"). Their candidates
    come from an index of each choice's two halves: a single edit leaves one half of the choice intact, as a
    prefix or as a suffix of the value, so every choice within one edit shares a half with it (two index
    entries per choice, where an index of all single deletions would take one per character and many times
    longer to build).
    """

    LARGE = 200

    def __init__(self, choices: Iterable[str], strictness: int = 3) -> None:
        self.folded: dict[str, str] = {}
        for choice in sorted(choices):
            self.folded.setdefault(fold(choice), choice)
        self.strictness = strictness
        self.halves: dict[tuple[int, bool, str], list[str]] | None = None
        if len(self.folded) > self.LARGE:
            halves: dict[tuple[int, bool, str], list[str]] = {}
            for key in self.folded:
                n = len(key)
                half = n // 2
                halves.setdefault((n, True, key[:half]), []).append(key)
                halves.setdefault((n, False, key[half:]), []).append(key)
            self.halves = halves
        self._memo: dict[str, str | None] = {}

    def suggest(self, value: str) -> str | None:
        key = fold(value)
        if key in self._memo:
            return self._memo[key]
        found = self._suggest(key) if key else None
        self._memo[key] = found
        return found

    def _candidates(self, key: str) -> set[str]:
        """Every choice within one edit of `key` (and a few more)."""
        assert self.halves is not None
        m = len(key)
        found: set[str] = set()
        for n in (m - 1, m, m + 1):
            if n < 0:
                continue
            half = n // 2
            # edit in the choice's second half: its first half is a prefix of the value
            found.update(self.halves.get((n, True, key[:half]), ()))
            # edit in its first half: its second half (n - half characters) ends the value
            tail = n - half
            if tail <= m:
                found.update(self.halves.get((n, False, key[m - tail :]), ()))
        return found

    def _suggest(self, key: str) -> str | None:
        if key in self.folded:
            return self.folded[key]
        if self.halves is not None:
            scored = sorted((edit_distance(key, c, 1), c) for c in self._candidates(key))
            return self.folded[scored[0][1]] if scored and scored[0][0] <= 1 else None
        limit = max(1, len(key) // self.strictness)
        # the answer is a choice within `limit` edits: when there is none (the usual broken anchor, a heading
        # that was removed), difflib's ranking is not needed to say so (it is the slow part)
        if not any(edit_distance(key, c, limit) <= limit for c in self.folded):
            return None
        shortlist = difflib.get_close_matches(key, list(self.folded), n=5, cutoff=0.5)
        scored = sorted((edit_distance(key, c, limit), c) for c in shortlist)
        if scored and scored[0][0] <= limit:
            return self.folded[scored[0][1]]
        return None


def did_you_mean(value: str, choices: Iterable[str], strictness: int = 3) -> str | None:
    """The closest choice to `value` (see `Suggester`), or None when nothing is close."""
    return Suggester(choices, strictness).suggest(value)


@dataclass(slots=True)
class LintContext:
    """What every check may read. `index` is built lazily, once per run, by `search_index()`."""

    vault: LintVault  # the real vault or a stand-in (vaulttools/lint/view.py)
    taxonomy: Any  # vaulttools.taxonomy.Taxonomy | None
    config: LintConfig
    today: _dt.date
    index: SearchIndex | None = None
    index_error: str | None = None
    notices: list[str] = field(default_factory=list)  # said once per run (a rule that could not run)
    answers_checked: bool = False  # answer-not-retrieved searched at least once (results depend on the index)
    build_index: bool = True  # False in lint_notes: without a caller's index, answer-not-retrieved is skipped
    notes_by_slug: dict[str, list[str]] | None = None
    _name_choices: dict[str, str] | None = field(default=None, repr=False)
    _suggesters: dict[str, Suggester] = field(default_factory=dict, repr=False)
    _vocab_keys: dict[str, dict[str, list[str]]] = field(default_factory=dict, repr=False)
    rule_names: Collection[str] = ()  # every rule's name (the registry's), for unknown-rule
    quick: Any = field(default=None, repr=False)  # this run's quick-clean test (rules/quick.py), built on first use

    def severity(self, rule: Rule, default: Severity | None = None) -> Severity:
        """The configured severity of `rule`, else `default`, else the rule's own."""
        configured = self.config.severity.get(rule.name)
        if configured is not None:
            return configured
        return default or rule.severity

    def search_index(self) -> SearchIndex | None:
        if self.index is None and not self.build_index:
            return None
        if self.index is None and self.index_error is None:
            try:
                from grasbot import SearchIndex

                self.index = SearchIndex.build(self.vault)
            except Exception as exc:  # the rule reports why it could not run; lint goes on
                self.index_error = f"{type(exc).__name__}: {exc}"
        return self.index

    def note_names(self) -> dict[str, str]:
        """Folded file name (no `.md`) -> note path, for "did you mean" on broken links (built once)."""
        if self._name_choices is None:
            names: dict[str, str] = {}
            for path in self.vault.notes:  # paths only: a cached vault builds no note for this
                name = path.rsplit("/", 1)[-1]
                names.setdefault(fold(name[:-3] if name.lower().endswith(".md") else name), path)
            self._name_choices = names
        return self._name_choices

    def suggester(self, name: str, choices: Callable[[], Iterable[str]], strictness: int = 3) -> Suggester:
        """A `Suggester` built once per run and reused (vocabularies, note names)."""
        found = self._suggesters.get(name)
        if found is None:
            found = self._suggesters[name] = Suggester(choices(), strictness)
        return found

    def vocab_keys(self, name: str, values: Iterable[str], key: Callable[[str], str]) -> dict[str, list[str]]:
        """`key(value)` -> listed values, for one vocabulary (built once per run)."""
        found = self._vocab_keys.get(name)
        if found is None:
            found = {}
            for value in values:
                found.setdefault(key(value), []).append(value)
            self._vocab_keys[name] = found
        return found


# -- positions ---------------------------------------------------------------------------------------


def line_text(note: Note, line: int) -> str:
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


def _engine_key(note: Note, key: str) -> Span | None:
    """The span of top-level `key` (None when absent): read cheaply when it can be, else from the engine.

    A key absent from `note.meta` has no position (the engine records one per top-level key of the mapping
    it parsed, and `meta` is that mapping), so asking the engine, which would parse the note again, is skipped.
    """
    meta = note.meta
    if not isinstance(meta, dict) or key not in meta:
        return None
    span = positions.key_span(note, key)
    return span if span is not None else note.key_positions.get(key)


def key_span(note: Note, key: str) -> Span:
    span = _engine_key(note, key)
    if span is not None:
        return span
    return frontmatter_start(note)


def frontmatter_start(note: Note) -> Span:
    """Where to report a finding about the frontmatter as a whole: its first line (the opening `---`)."""
    return Span(1, 1, 1, 4 if note.has_frontmatter else 1)


def value_span(note: Note, key: str) -> Span:
    """The span of a scalar value written on the key's line (`priority: 15` -> `15`); the key's span otherwise."""
    span = _engine_key(note, key)
    if span is None:
        return frontmatter_start(note)
    line = line_text(note, span.end_line)
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
    meta = note.meta
    if not isinstance(meta, dict) or key not in meta:
        return frontmatter_start(note)  # the engine has no item and no key position for an absent key
    spans = positions.item_spans(note, key)
    if spans is None:
        spans = note.item_positions.get(key) or []
    if 0 <= index < len(spans):
        return spans[index]
    return key_span(note, key)


def is_block_scalar(note: Note, key: str) -> bool:
    """Whether the value of `key` is written as a block scalar (`key: |`, `key: >-`): the fixes edit values
    written on their key's line only, so a rule offers no fix for one."""
    span = value_span(note, key)
    return line_text(note, span.line)[span.column - 1 : span.column] in ("|", ">")


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
    rule: Rule,
    message: str,
    fix: Fix | None = None,
    severity: Severity | None = None,
) -> Diagnostic:
    """`rule`'s finding on `note` at `span` (the rule's configured severity unless `severity` is given)."""
    line, column, end_line, end_column = span
    if "\n" in message or "\r" in message:  # a value quoted from a block scalar: one finding stays one line
        message = message.replace("\r", "\\r").replace("\n", "\\n")
    return new_diagnostic((note.path, line, column, end_line, end_column, rule.name, ctx.severity(rule, severity), message,
                           fix))
