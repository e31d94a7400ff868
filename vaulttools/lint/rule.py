"""A lint rule as one unit: its stable name, default severity, docs, check, fix and quick-clean predicate.

Each rule is declared once, in its family's module of `vaulttools/lint/rules/` (or, for the suppressions and
the answering profile, in the module that does that work), as a `Rule` with its documentation; the same
module attaches its check with `@RULE.check` and, for a note rule, its quick-clean predicate with
`@RULE.quick`. The fix a rule offers is built by its check (a `Fix` of `Edit`s, data that
`vaulttools.lint.fixes` applies without knowing the rule). `vaulttools.lint.registry` collects every unit:
docs/rules.md, the SARIF rule descriptors, `--select`/`--ignore` validation and the runs come from there
(docs/architecture.md, "Where a new … goes").

How the engine calls a check depends on the rule's `scope` (the family decides what its rules are given, so
that one pass over the vault can feed several rules):

- ``note``: ``check(note, ctx) -> Iterable[Diagnostic]``, on one note and the taxonomy only (its findings are
  cached by the note's digest); run in declaration order, family by family;
- ``vault``: called by its family's single pass over the vault (`rules/slugs.py`, `rules/links.py`, ...) with
  what that pass computed; the pass runs only the rules that are on, and not at all when none is;
- ``run``: called once per run by the engine or the suppression step (the profile, the suppressions).

A deselected rule (`--select`, `--ignore`, `severity = "off"`) is dropped before anything runs: its check is
never called and its quick predicate never built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from vaulttools.lint.diagnostics import Severity

__all__ = ["ENGINE_VERSION", "ERROR", "WARNING", "Rule", "QuickPredicate", "QuickFactory"]

#: Bump when a rule's findings change for the same input: cached results of older versions are dropped.
#: (Here, beside the rule unit and apart from the rules themselves, so that the cache reads it without importing
#: a single rule; `engine` and `registry` re-export it.)
ENGINE_VERSION = "6"  # 3: comments hold no links, duplicate keys, Visibility, YAML 1.2 separators; 4: math blocks;
# 5: alias bombs, CR-only files, too many links, misspelt visibility keys, publish/private/nested visibility,
# privacy folders and tags, html/obsidian-URI/reference links; 6: the book rules (PDF import), inline
# `%% vaulttools-ignore %%` suppression and unused-suppression

ERROR, WARNING = Severity.ERROR, Severity.WARNING

#: ``predicate(note, meta) -> bool``: True only when the rule certainly reports nothing on the note.
QuickPredicate = Callable[[Any, dict], bool]
#: ``factory(ctx) -> QuickPredicate | None``, called once per run: the predicate with what it derives from the
#: run's taxonomy bound, or None when the rule cannot report anything in this run (no taxonomy, no bounds).
QuickFactory = Callable[[Any], QuickPredicate | None]

_SCOPES = ("note", "vault", "run")


@dataclass(eq=False, slots=True)
class Rule:
    """One rule. The documentation fields are what docs/rules.md and SARIF show; `check` and `quick` are
    attached by the family module (`@RULE.check`, `@RULE.quick`)."""

    name: str  # stable kebab-case id, never renamed
    family: str  # frontmatter | vocabulary | slugs | links | retrieval | profile | books | suppression
    severity: Severity  # default; closed/open vocabularies and the configuration may change it
    summary: str  # one line: what is wrong
    why: str  # why it matters for GrasBot / Obsidian
    example: str  # a frontmatter or body snippet that triggers it
    fix: str | None  # what `--fix` does, or None when the fix needs a human (the check then builds no `Fix`)
    fixed: str | None = None  # the example after `--fix`
    needs_taxonomy: bool = False  # only active when the vault has a TAXONOMIE.md
    scope: str = "note"  # note | vault | run (see the module's docstring)
    run: Callable[..., Any] | None = field(default=None, repr=False)  # the check
    quick_factory: QuickFactory | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.scope not in _SCOPES:
            raise ValueError(f"rule {self.name}: scope must be one of {_SCOPES}, not {self.scope!r}")

    def check(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator: `function` is this rule's check (its signature is the scope's, see the module)."""
        if self.run is not None:
            raise ValueError(f"rule {self.name} has two checks: {self.run.__qualname__} and {function.__qualname__}")
        self.run = function
        return function

    def quick(self, factory: QuickFactory) -> QuickFactory:
        """Decorator: `factory(ctx)` gives this note rule's quick-clean predicate for a run.

        The predicate sees only notes that passed the quick gate (`vaulttools.lint.rules.quick.gate`: the note
        read without problem, a frontmatter mapping whose known fields have their expected types), so it may
        take `meta["tags"]` to be a list of strings. It must answer True only when the check would report
        nothing: when in doubt, False (the check then runs). A note rule without one turns the quick path off."""
        if self.scope != "note":
            raise ValueError(f"rule {self.name}: only note rules have a quick predicate")
        self.quick_factory = factory
        return factory

    @property
    def fixable(self) -> bool:
        return self.fix is not None
